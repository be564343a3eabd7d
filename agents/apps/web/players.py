"""Which bots the page may seat: every name ``agents.make`` accepts, but never a file the page names.

A spec from the page is either a registered bot name (``known_bots()``), with options as
``agents.make`` reads them (``search:worlds=32,ms=50``), or the label of a policy file given on
the server's command line (:class:`BotChoices`). Anything else, a path above all, is refused: the
server loads only the files its operator named. That holds for search's options that take a
network too (``keep``, ``rollout``): their value is one of the bot's own names or the label of a
command-line policy file (``search:keep=final.npz``); any other value is refused with the same
words whether or not such a file exists, and before anything is looked up.

Search options are capped tighter here than :class:`agents.search.SearchBot` caps them (4,096
worlds, a minute a move), so that one request cannot hold the server for long: ``worlds`` at
most 512, ``confirm`` at most 1,024, ``ms`` at most 2,000 (a search bot with ``ms=0`` and
``confirm=1024`` takes about a second a move).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...base import Bot, make, parse_options, player_bots
from ...search import ROLLOUTS, SearchBot

MAX_SPEC_CHARS = 200
SEARCH_CAPS: dict[str, float] = {"worlds": 512, "confirm": 1024, "ms": 2000.0}  # see the module docstring
NETWORK_OPTIONS = {"keep": ("expert",), "rollout": ROLLOUTS}  # search options that may name a network
SEARCH_EXAMPLES = ("search:worlds=32", "search:worlds=128,ms=45", "search:ms=0")


class BotChoices:
    """The bots the page may choose: registered names and the command line's policy files."""

    def __init__(self, policy_files: Sequence[str | Path] = ()) -> None:
        self.names = player_bots()  # never the oracle, which sees every hand
        self.policies: dict[str, Path] = {}
        for path in map(Path, policy_files):
            label, k = path.name, 1
            while label in self.policies or label in self.names:
                k += 1
                label = f"{path.name}#{k}"
            make(str(path))  # loaded once now, so a bad file stops the server at start, not a match
            self.policies[label] = path

    def listing(self) -> dict[str, list[str]]:
        """What the page offers: names, examples with options, and the policy files' labels."""
        return {"names": list(self.names), "examples": list(SEARCH_EXAMPLES), "policies": list(self.policies)}

    def make(self, spec: object) -> Bot:
        """A new bot for ``spec``, or a ValueError saying what the page may choose."""
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError(f"a bot is named by text, got {spec!r}; {self._allowed()}")
        spec = spec.strip()
        if len(spec) > MAX_SPEC_CHARS:
            raise ValueError(f"a bot name is at most {MAX_SPEC_CHARS} characters; {self._allowed()}")
        if spec in self.policies:
            bot = make(str(self.policies[spec]))
            bot.name = spec
            return bot
        name, sep, options = spec.partition(":")
        if name not in self.names:
            raise ValueError(f"unknown bot {spec[:40]!r}; {self._allowed()} (the server loads no file the page names)")
        bot = self._search(parse_options(spec, options)) if sep and name == "search" else make(spec)
        bot.name = spec
        return bot

    def _search(self, options: dict[str, Any]) -> Bot:
        """A search bot of the page's options: capped, and networks only by a policy file's label."""
        for key, cap in SEARCH_CAPS.items():
            value = options.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
                raise ValueError(f"search option {key} is at most {cap:g} here, got {value}")
        for key, names in NETWORK_OPTIONS.items():
            if key in options:
                options[key] = self._network(key, options[key], names)
        try:
            return SearchBot(**options)  # a ValueError for a value out of the bot's own range
        except TypeError as error:  # an option the bot does not take
            raise ValueError(f"bot 'search' does not take the options {sorted(options)} ({error})") from None

    def _network(self, option: str, value: object, names: Sequence[str]) -> str:
        """The value of a search option naming a network: one of ``names``, or a policy file's path by its label."""
        if isinstance(value, str) and value in self.policies:
            return str(self.policies[value])
        if value in names:
            return str(value)
        labels = ", ".join(self.policies) or "none given"
        raise ValueError(
            f"search option {option} must be one of {', '.join(names)} or the label of a policy file given on the "
            f"server's command line ({labels}), got {str(value)[:40]!r}: the server loads no file the page names"
        )

    def _allowed(self) -> str:
        files = f"; policy files: {', '.join(self.policies)}" if self.policies else ""
        return f"bots: {', '.join(self.names)} (options as NAME:KEY=VALUE,..., e.g. {SEARCH_EXAMPLES[0]}){files}"

