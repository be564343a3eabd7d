"""Which bots the page may seat: every name ``agents.make`` accepts, but never a file the page names.

A spec from the page is either a registered bot name (``player_bots()``: never the oracle), with options as
``agents.make`` reads them (``search:worlds=32,ms=50``), or the label of a policy file given on the
server's command line (:class:`BotChoices`). Anything else, a path above all, is refused: the
server loads only the files its operator named. That holds for every search option that names a
bot or a file (``NAMED_OPTIONS``: ``keep``, ``rollout``, ``opponents``): each goes through one
check, :meth:`BotChoices._named`, and its value is one of the names the option takes or the
label of a command-line policy file (``search:keep=final.npz``). Any other value is refused with
the same words whether or not such a file exists, and before anything is looked up.

Search options are capped tighter here than :class:`agents.search.SearchBot` caps them (4,096
worlds, a minute a move), so that one request cannot hold the server for long: ``worlds`` at
most 512, ``confirm`` at most 1,024, ``ms`` at most 2,000, and the work a decision may ask for,
the most worlds it searches (``worlds``, or ``confirm``) times what its options cost a world, at
most ``MAX_SEARCH_WORK`` = 1,024 (the plain search at ``ms=0,confirm=1024``, about a second a
move). What an option costs a world, against the plain search's expert rollouts, measured at
positions with 5 or 6 legal actions and rounded up (``COST``): a network in the rollouts
(``rollout=`` a policy file) 16 (12 to 14 measured), a network as ``opponents`` 16 (9), ``expert``
as ``opponents`` 4 (2.5), a bot asked table by table as ``opponents`` (``rule_based``,
``random``) 32 (4 to 14, more late in a deal, where more of its decisions are checked in every
world); ``keep`` and the rest add no cost a world. The time budget ``ms`` does not lower the
work: a batch of worlds, once begun, runs to its end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...base import Bot, build, make, parse_options, player_bots
from ...search import DEFAULT_WORLDS, ROLLOUTS, SearchBot

MAX_SPEC_CHARS = 200
SEARCH_CAPS: dict[str, float] = {"worlds": 512, "confirm": 1024, "ms": 2000.0}  # see the module docstring
MAX_SEARCH_WORK = 1024  # worlds a decision searches x what its options cost a world (the module docstring)
NETWORKS = ("pretrained", "student")  # the registered bots that are networks
# Each search option that names a bot or a file: the names the page may give it (besides a command-line
# policy file's label).
NAMED_OPTIONS: dict[str, tuple[str, ...]] = {
    "keep": ("expert",),
    "rollout": ROLLOUTS,
    "opponents": ("random", "rule_based", "expert", *NETWORKS),  # (no search: search.py refuses it)
}
NETWORK_COST = 16  # see the module docstring
COST = {"rollout": {"expert": 1, "greedy": 1}, "opponents": {"expert": 4, "random": 32, "rule_based": 32}}
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
        """A search bot of the page's options: capped, and bots or files only by the names the page may give."""
        for key, cap in SEARCH_CAPS.items():
            value = options.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
                raise ValueError(f"search option {key} is at most {cap:g} here, got {value}")
        labels = {key: options[key] for key in NAMED_OPTIONS if key in options}
        for key, value in labels.items():
            options[key] = self._named(key, value)
        self._check_work(options, labels)
        return build("search", SearchBot, options)  # a ValueError for a value out of the bot's own range

    def _named(self, option: str, value: object) -> str:
        """The value of a search option that names a bot or a file: one of its ``NAMED_OPTIONS``,
        or a command-line policy file's path by its label; else one refusal, whatever the value names."""
        names = NAMED_OPTIONS[option]
        if isinstance(value, str) and value in self.policies:
            return str(self.policies[value])
        if value in names:
            return str(value)
        allowed = f"one of {', '.join(names)} or the label of a policy file given on the server's command line "
        allowed += f"({', '.join(self.policies) or 'none given'})"
        raise ValueError(
            f"search option {option} takes {allowed}, got {str(value)[:40]!r}: the server loads no file the page names"
        )

    @staticmethod
    def _check_work(options: dict[str, Any], named: dict[str, Any]) -> None:
        """Refuse options that ask a decision for more than ``MAX_SEARCH_WORK`` (the module docstring)."""
        worlds, confirm = options.get("worlds", DEFAULT_WORLDS), options.get("confirm", 0)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (worlds, confirm)):
            return  # (SearchBot says what is wrong)
        costs = {key: cost for key, value in named.items() if (cost := option_cost(key, value)) > 1}
        factor = math.prod(costs.values())
        if max(worlds, confirm) * factor > MAX_SEARCH_WORK:
            priced = ", ".join(
                f"{key}={str(named[key])[:40]} costs {cost} times a world" for key, cost in costs.items()
            )
            raise ValueError(
                f"search options ask for {max(worlds, confirm):,} worlds a decision where {priced}: more work than the "
                f"page's search takes ({MAX_SEARCH_WORK:,} plain worlds); with these options ask for at most "
                f"{MAX_SEARCH_WORK // factor} worlds"
            )

    def _allowed(self) -> str:
        files = f"; policy files: {', '.join(self.policies)}" if self.policies else ""
        return f"bots: {', '.join(self.names)} (options as NAME:KEY=VALUE,..., e.g. {SEARCH_EXAMPLES[0]}){files}"


def option_cost(option: str, value: str) -> int:
    """What a search option's value costs a decision per world, against the plain search (the module docstring)."""
    if option in COST:
        return COST[option].get(value, NETWORK_COST)  # (any other value is a network: checked by _named)
    return 1


def world_cost(bot: SearchBot) -> int:
    """What a world costs ``bot``'s decisions, against the plain search (its options' costs multiplied)."""
    named = {"rollout": bot.rollout, "opponents": bot.opponents}
    return math.prod(option_cost(key, str(value)) for key, value in named.items() if value is not None)
