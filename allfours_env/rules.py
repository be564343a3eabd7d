"""The rule variants of docs/rules.md table A0 as one validated, frozen dataclass.

Every field is named exactly as its A0 key, so ``Rules(**kwargs)`` is how the env reads its
keyword arguments. Part B of docs/rules.md gives the sources behind each default.
``target_score``, ``hang_jack_points`` and ``game_points`` are integers 1..``MAX_POINTS`` (1,000,000).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .cards import N_SEATS
from .checks import brief, cut

# Kick points by rank index (2..A); A0 `kick_points`.
KICK_POINTS = {
    "trinidad": (0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 1),  # six 2, jack 3, ace 1
    "tobago": (2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1),  # two 2, jack 3, ace 1
}

_CHOICES: dict[str, tuple[Any, ...]] = {
    "kick_points": tuple(KICK_POINTS),
    "game_tie": ("none", "non_dealer", "dealer"),
    "undertrump": ("allowed", "forbidden_unless_all_trumps", "forbidden_when_can_follow"),
    "give_one_to_reach_target": ("forbidden", "allowed"),
    "exhausted_pack": ("kick_remaining", "redeal"),
    "deal_batch": (1, 3),
}
_FIRST_DEALER_NAMES = ("cut", "first_jack", "random")
_POSITIVE_INTS = ("target_score", "hang_jack_points", "game_points")
# The largest value of a _POSITIVE_INTS rule. Far above any real match, and small enough that a
# score plus any award fits the engines' int64 state and that every score, 1 / target_score and
# points / target_score in the float32 observation decodes back exactly (that needs < 2**23).
MAX_POINTS = 1_000_000
_BOOLS = ("give_one_requires_trump", "stand_requires_trump", "single_trump_counts_high_and_low")


@dataclass(frozen=True)
class Rules:
    target_score: int = 14
    kick_points: str = "trinidad"
    hang_jack_points: int = 3
    game_points: int = 1
    game_tie: str = "none"
    undertrump: str = "allowed"
    give_one_to_reach_target: str = "forbidden"
    give_one_requires_trump: bool = False
    stand_requires_trump: bool = False
    exhausted_pack: str = "kick_remaining"
    single_trump_counts_high_and_low: bool = True
    first_dealer: str | int = "cut"
    deal_batch: int = 1

    def __post_init__(self) -> None:
        for key in RULE_KEYS:  # numpy integers, booleans and strings count as Python ones
            value = getattr(self, key)
            if isinstance(value, np.integer | np.bool_ | np.str_):
                object.__setattr__(self, key, value.item())
        for key in _POSITIVE_INTS:
            value = getattr(self, key)
            if not _is_int(value) or not 1 <= value <= MAX_POINTS:
                raise ValueError(f"rule {key!r} must be a positive integer, 1..{MAX_POINTS}, got {brief(value)}")
        for key in _BOOLS:
            value = getattr(self, key)
            if not isinstance(value, bool):
                raise ValueError(f"rule {key!r} must be True or False, got {brief(value)}")
        for key, allowed in _CHOICES.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, type(allowed[0])) or value not in allowed:  # not 3.0
                raise ValueError(f"rule {key!r} must be one of {allowed}, got {brief(value)}")
        fd = self.first_dealer
        if not ((isinstance(fd, str) and fd in _FIRST_DEALER_NAMES) or (_is_int(fd) and 0 <= fd < N_SEATS)):
            raise ValueError(
                f"rule 'first_dealer' must be one of {_FIRST_DEALER_NAMES} or a seat 0..3, got {brief(fd)}"
            )

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> Rules:
        """Like ``Rules(**kwargs)`` but an unknown key is a ValueError listing the known ones."""
        unknown = sorted(set(kwargs) - set(RULE_KEYS))
        if unknown:
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            named = ", ".join(cut(repr(key)) for key in unknown[:3]) + more
            raise ValueError(f"unknown rule {named}; known rules: {', '.join(RULE_KEYS)}")
        return cls(**kwargs)

    def changed(self) -> dict[str, Any]:
        """The rules that differ from the defaults."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v != getattr(DEFAULT_RULES, k)}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


RULE_KEYS = tuple(f.name for f in dataclasses.fields(Rules))
DEFAULT_RULES = Rules()


TRUE_WORDS = ("true", "yes", "on")
FALSE_WORDS = ("false", "no", "off")


def parse_rule_value(text: str) -> int | bool | str:
    """``"7"`` -> 7, ``"true"``/``"false"`` (also yes/no, on/off) -> bool, anything else stays text."""
    lowered = text.strip().lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    try:
        return int(text)
    except ValueError:
        return text.strip()


def rule_values(options: Sequence[str]) -> dict[str, Any]:
    """Command-line ``--rule KEY=VALUE`` options -> keyword arguments, not yet checked against the
    rules (to merge into others before the one :class:`Rules` is made)."""
    rules: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--rule expects KEY=VALUE, got {option!r}; keys: {', '.join(RULE_KEYS)}")
        rules[key.strip()] = parse_rule_value(value)
    return rules


def parse_rule_options(options: Sequence[str]) -> Rules:
    """Command-line ``--rule KEY=VALUE`` options -> their :class:`Rules`; a clear ValueError for a
    malformed option, an unknown key or a bad value."""
    return Rules.from_kwargs(**rule_values(options))


def as_rules(rules: Rules | Mapping[str, Any] | None) -> Rules:
    """A :class:`Rules` from None (the defaults), a ``Rules`` (as it is) or a mapping of A0 keys (checked)."""
    if rules is None:
        return DEFAULT_RULES
    if isinstance(rules, Rules):
        return rules
    return Rules.from_kwargs(**dict(rules))


def given_rules(rules: Rules | None, rule_kwargs: dict[str, Any]) -> Rules:
    """The rules a constructor was given: ``rules``, a :class:`Rules` taken as it is, or rule
    keyword arguments, checked (a ValueError for both, or for a ``rules`` of another type)."""
    if rules is None:
        return Rules.from_kwargs(**rule_kwargs)
    if not isinstance(rules, Rules):
        raise ValueError(
            f"rules must be a Rules (allfours_env.rules), got {type(rules).__name__}; or give rule keywords"
        )
    if rule_kwargs:
        raise ValueError(f"give rules= or rule keywords, not both (got rules= and {', '.join(sorted(rule_kwargs))})")
    return rules
