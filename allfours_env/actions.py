"""The game's vocabulary, shared by every part of the engine: action ids, phases, episodes, the
kinds of events, and the checks of a match's start (decks, dealer, scores, seed).

Card indices and action ids are a public contract (docs/rules.md "Engine conventions"): 0..51 play
that card, then STAND, BEG, GIVE_ONE, RUN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from difflib import get_close_matches
from typing import Any, NamedTuple

import numpy as np

from .cards import N_CARDS, N_RANKS, N_SEATS, RANK_JACK, card_text
from .rules import Rules

# Action ids (docs/rules.md "Engine conventions"): 0..51 play that card, then the four decisions.
STAND, BEG, GIVE_ONE, RUN = 52, 53, 54, 55
N_ACTIONS = 56
DECISION_NAMES = {STAND: "STAND", BEG: "BEG", GIVE_ONE: "GIVE_ONE", RUN: "RUN"}

# Phases: who must decide what. The last two are terminal (no seat to act).
STAND_OR_BEG, GIVE_OR_RUN, PLAY, DEAL_OVER, MATCH_OVER = range(5)
PHASE_NAMES = ("stand_or_beg", "give_or_run", "play", "deal_over", "match_over")

# Episodes: "match" plays until a team reaches the target; "deal" stops (phase DEAL_OVER) once
# one deal is scored, or earlier if the match ends in it.
EPISODES = ("match", "deal")

CARDS_DEALT = 24  # 6 to each seat (A4.2)
RUN_CARDS = 12  # 3 more to each seat (A6.5b)

# Event kinds. Awards (points > 0 change the score) are KICK, GIVE_ONE_AWARD and the four
# end-of-deal kinds; everything else is a record of what happened.
DEAL = "deal"
KICK = "kick"
STOOD = "stand"
BEGGED = "beg"
GAVE_ONE = "give_one"
RAN = "run"
REDEAL = "redeal"
TRUMP = "trump"
PLAYED = "play"
TRICK = "trick"
HIGH = "high"
LOW = "low"
JACK = "jack"
HANG_JACK = "hang_jack"
GAME = "game"
DEAL_END = "deal_end"
MATCH_END = "match_end"
AWARD_KINDS = (KICK, GAVE_ONE, HIGH, LOW, JACK, HANG_JACK, GAME)
# Every kind, in the order of their codes in the compiled engine's event buffer (vector_kernels).
EVENT_KINDS = (DEAL, KICK, STOOD, BEGGED, GAVE_ONE, RAN, REDEAL, TRUMP, PLAYED, TRICK, HIGH, LOW, JACK, HANG_JACK,
               GAME, DEAL_END, MATCH_END)  # fmt: skip


class Event(NamedTuple):
    """One thing that happened. ``seat``/``team``/``card``/``suit``/``deal`` are -1 where they do
    not apply; ``points`` is what an award scored (0 for every other kind).

    deal: seat = dealer, deal = its number (1-based, a redeal counts); kick: seat = dealer,
    team = dealer's team, card = the kick, points = its kick points; stand/beg/run: seat = who
    decided; give_one: seat = dealer, team = beggar's team; redeal: seat = dealer; trump: suit =
    the trump suit; play: seat plays card; trick: seat = winner, team = its team, card =
    winning card; high/low/jack: seat = holder, card = that trump; hang_jack: seat = trick
    winner, card = the jack; game: team with more game points; deal_end: seat = dealer, deal =
    its number; match_end: team = winner.
    """

    kind: str
    seat: int = -1
    team: int = -1
    points: int = 0
    card: int = -1
    suit: int = -1
    deal: int = -1


class IllegalActionError(ValueError):
    """An action that is not legal now; the game state is unchanged."""


def action_text(action: int) -> str:
    """Card text for 0..51, the decision name for 52..55."""
    return DECISION_NAMES[action] if action in DECISION_NAMES else card_text(action)


def illegal_message(seat: int, phase: int, action: object, legal: int) -> str:
    """Why ``action`` is refused from ``seat`` in ``phase``, naming the legal actions (the bits ``legal``)."""
    if isinstance(action, int | np.integer) and not isinstance(action, bool) and 0 <= action < N_ACTIONS:
        what = action_text(int(action))
    else:
        what = f"{action!r} (actions are ints 0..55)"
    legal_text = ", ".join(action_text(a) for a in range(N_ACTIONS) if legal >> a & 1)
    return f"player_{seat} cannot take action {what} now ({PHASE_NAMES[phase]}); legal: {legal_text}"


def check_deck(deck: Sequence[int], where: str = "deck") -> list[int]:
    """A deck as a list of ints, or a ValueError if it is not a permutation of 0..51."""
    if isinstance(deck, np.ndarray) and deck.shape == (N_CARDS,) and deck.dtype.kind in "iu":  # a shuffle: quick
        if deck.min() >= 0 and deck.max() < N_CARDS and np.bincount(deck, minlength=N_CARDS).max() == 1:
            return deck.tolist()
    if isinstance(deck, (str, bytes)) or not isinstance(deck, Sequence | np.ndarray):
        raise ValueError(f"{where} must be a sequence of 52 card indices (ints 0..51), got {type(deck).__name__}")
    bad = [c for c in deck if isinstance(c, bool) or not isinstance(c, int | np.integer)]
    if bad:
        raise ValueError(f"{where} must hold card indices as ints 0..51, got {bad[0]!r} ({type(bad[0]).__name__})")
    cards = [int(c) for c in deck]
    if len(cards) != N_CARDS:
        raise ValueError(f"{where} has {len(cards)} cards; a deck is a permutation of 0..51 (52 cards)")
    if sorted(cards) != list(range(N_CARDS)):
        bad = sorted({c for c in cards if not 0 <= c < N_CARDS} | {c for c in cards if cards.count(c) > 1})
        raise ValueError(f"{where} is not a permutation of 0..51 (out of range or repeated: {bad})")
    return cards


def check_seed(seed: object) -> int | None:
    """A seed as ``numpy.random.default_rng`` takes it: None (fresh entropy) or an int 0 or more,
    of any size (numpy integers count as ints), else a ValueError. A bool or a float is not a seed."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(
            f"seed must be None or a non-negative integer (0 or more, any size), got {seed!r} ({type(seed).__name__})"
        )
    return int(seed)


RESET_OPTIONS = ("decks", "dealer", "scores")  # a match's start, as every env's reset takes it


def check_options(
    rules: Rules, options: Any, what: str = "options", on_unknown: Callable[[list], None] | None = None
) -> tuple[list[list[int]], int | None, tuple[int, int]]:
    """One match's reset options (None, or a dict with keys of ``RESET_OPTIONS``), checked:
    ``(decks as lists of ints, dealer or None, scores)``, or a ValueError naming ``what`` and
    saying what is allowed. An unknown key is an error, unless ``on_unknown`` takes the unknown
    keys (the AEC env warns: generic tools pass keys of their own); a misspelt one always is."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise ValueError(f"{what} must be None or a dict with keys {list(RESET_OPTIONS)}, got {type(options).__name__}")
    unknown = sorted(set(options) - set(RESET_OPTIONS), key=repr)  # keys of any type, not only str
    close = [hint for key in unknown if isinstance(key, str) for hint in get_close_matches(key, RESET_OPTIONS, n=1)]
    if unknown and (close or on_unknown is None):
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{what} has unknown reset option(s) {unknown}{hint}; allowed: {list(RESET_OPTIONS)}")
    if unknown:
        on_unknown(unknown)
    dealer = options.get("dealer")
    try:
        decks, scores = check_start(rules, options.get("decks"), dealer, options.get("scores"))
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None
    return decks, None if dealer is None else int(dealer), scores


def check_start(
    rules: Rules, decks: Sequence[Sequence[int]] | None, dealer: int | None, scores: Sequence[int] | None
) -> tuple[list[list[int]], tuple[int, int]]:
    """The reset options of a match, checked: ``(decks as lists of ints, scores)``, or a ValueError
    that says what is allowed. ``dealer`` must be None or a seat 0..3."""
    if decks is None:
        decks = []
    elif isinstance(decks, (str, bytes)) or not isinstance(decks, Sequence | np.ndarray):
        raise ValueError("decks must be a list of decks, each a permutation of 0..51")
    elif len(decks) and not isinstance(decks[0], Sequence | np.ndarray):
        raise ValueError("decks must be a list of decks (a list of lists), each a permutation of 0..51")
    checked = [check_deck(d, f"decks[{i}]") for i, d in enumerate(decks)]
    if dealer is not None and (isinstance(dealer, bool) or not isinstance(dealer, int | np.integer) or not 0 <= dealer < N_SEATS):
        raise ValueError(f"dealer must be a seat 0..3, got {dealer!r}")
    if scores is None:
        scores = (0, 0)
    if (
        isinstance(scores, (str, bytes))
        or not isinstance(scores, Sequence | np.ndarray)
        or len(scores) != 2
        or any(isinstance(s, bool) or not isinstance(s, int | np.integer) for s in scores)
    ):
        raise ValueError(f"scores must be two integers [team0, team1], got {scores!r}")
    if min(scores) < 0 or max(scores) >= rules.target_score:
        raise ValueError(
            f"scores must be in 0..{rules.target_score - 1} (below target_score {rules.target_score}), got {list(scores)}"
        )
    return checked, (int(scores[0]), int(scores[1]))


FIRST_DEALER_DRAWS = ("random", "first_jack", "cut")  # the first_dealer rules that draw, by code
ALL_SEATS = (1 << N_SEATS) - 1


def first_dealer(rule: str | int, permutation: Callable[[], Sequence[int]]) -> int:
    """A3.1: the first dealer by the ``first_dealer`` rule, every draw a fresh ``permutation()`` of
    0..51 (the engine's generator): a seat as given, else :func:`dealer_draw` until it decides."""
    if isinstance(rule, int):
        return rule
    code, seats = FIRST_DEALER_DRAWS.index(rule), ALL_SEATS
    while True:
        dealer, seats = dealer_draw(code, permutation(), seats)
        if dealer >= 0:
            return dealer


def dealer_draw(code: int, deck: Sequence[int], seats: int) -> tuple[int, int]:
    """One draw of the first-dealer rule ``FIRST_DEALER_DRAWS[code]`` from the permutation
    ``deck``, among the seats of the bit set ``seats``: "random", the first card's seat (card %
    4); "first_jack", cards face up to seats 0, 1, 2, 3, ... until a jack (NLCB); "cut", every seat
    draws a card (in seat order), the highest rank deals. Returns (the dealer, 0), or (-1, the
    tied seats) when they must draw again."""
    if code == 0:
        return int(deck[0]) % N_SEATS, 0
    if code == 1:
        i = 0
        while int(deck[i]) % N_RANKS != RANK_JACK:
            i += 1
        return i % N_SEATS, 0
    best, tied, i = -1, 0, 0
    for seat in range(N_SEATS):
        if seats >> seat & 1:
            rank = int(deck[i]) % N_RANKS
            i += 1
            if rank > best:
                best, tied = rank, 1 << seat
            elif rank == best:
                tied |= 1 << seat
    if tied & (tied - 1):
        return -1, tied
    return tied.bit_length() - 1, 0


def _deal_order(first_seat: int, n_cards: int, batch: int) -> tuple[int, ...]:
    """Seat receiving each card, one at a time (batch 1) or in packets of three (A4.2)."""
    return tuple((first_seat + k // batch) % N_SEATS for k in range(n_cards))


# _DEAL_SEATS[batch][dealer][n] -> seat of each of the n cards dealt from the seat after dealer.
_DEAL_SEATS = {
    b: [{n: _deal_order((d + 1) % N_SEATS, n, b) for n in (CARDS_DEALT, RUN_CARDS)} for d in range(N_SEATS)]
    for b in (1, 3)
}


def deal_seats(dealer: int, n_cards: int, batch: int) -> tuple[int, ...]:
    """The seat receiving each card of a first deal (24 cards) or a run (12), dealer ``dealer``."""
    return _DEAL_SEATS[batch][dealer][n_cards]


__all__ = [
    "ALL_SEATS",
    "AWARD_KINDS",
    "BEG",
    "BEGGED",
    "CARDS_DEALT",
    "DEAL",
    "DEAL_END",
    "DEAL_OVER",
    "DECISION_NAMES",
    "EPISODES",
    "EVENT_KINDS",
    "FIRST_DEALER_DRAWS",
    "GAME",
    "GAVE_ONE",
    "GIVE_ONE",
    "GIVE_OR_RUN",
    "HANG_JACK",
    "HIGH",
    "JACK",
    "KICK",
    "LOW",
    "MATCH_END",
    "MATCH_OVER",
    "N_ACTIONS",
    "PHASE_NAMES",
    "PLAY",
    "PLAYED",
    "RAN",
    "REDEAL",
    "RESET_OPTIONS",
    "RUN",
    "RUN_CARDS",
    "STAND",
    "STAND_OR_BEG",
    "STOOD",
    "TRICK",
    "TRUMP",
    "Event",
    "IllegalActionError",
    "action_text",
    "check_deck",
    "check_options",
    "check_seed",
    "check_start",
    "deal_seats",
    "dealer_draw",
    "first_dealer",
    "illegal_message",
]
