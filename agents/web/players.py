"""Which bots the page may seat: every name ``agents.make`` accepts, but never a file the page names.

A spec from the page is either a registered bot name (``known_bots()``), with options as
``agents.make`` reads them (``search:worlds=32,ms=50``), or the label of a policy file given on
the server's command line (:class:`BotChoices`). Anything else, a path above all, is refused: the
server loads only the files its operator named. Search options are capped so that one request
cannot hold the server for long.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..base import Bot, known_bots, make, parse_options

MAX_SPEC_CHARS = 200
MAX_SEARCH_WORLDS = 512
MAX_SEARCH_MS = 2000.0
SEARCH_EXAMPLES = ("search:worlds=32", "search:worlds=128,ms=45", "search:ms=0")


class BotChoices:
    """The bots the page may choose: registered names and the command line's policy files."""

    def __init__(self, policy_files: Sequence[str | Path] = ()) -> None:
        self.names = known_bots()
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
        if sep and name == "search":
            _check_search(parse_options(spec, options))
        bot = make(spec)  # a ValueError for an option the bot does not take
        bot.name = spec
        return bot

    def _allowed(self) -> str:
        files = f"; policy files: {', '.join(self.policies)}" if self.policies else ""
        return f"bots: {', '.join(self.names)} (options as NAME:KEY=VALUE,..., e.g. {SEARCH_EXAMPLES[0]}){files}"


def _check_search(options: Mapping[str, object]) -> None:
    worlds, ms = options.get("worlds", 1), options.get("ms", 1)
    if isinstance(worlds, int) and worlds > MAX_SEARCH_WORLDS:
        raise ValueError(f"search option worlds is at most {MAX_SEARCH_WORLDS} here, got {worlds}")
    if isinstance(ms, int | float) and ms > MAX_SEARCH_MS:
        raise ValueError(f"search option ms is at most {MAX_SEARCH_MS:g} here, got {ms}")
