"""Reading observation rows in compiled code: what :func:`allfours_env.decode` reads, for numba kernels.

The batched policy features (:mod:`agents.features`) and the expert (:mod:`agents.expert`) read
float32 observation rows (one per table, as :meth:`allfours_env.vector.VectorGame.observe` and
the env give them) through the named :data:`~allfours_env.observation.LAYOUT` pieces, as bit
sets and small ints. Every reader gives what :func:`~allfours_env.decode` gives for the same
row: the scalars are rounded back exactly as it rounds them, and a one-hot piece is read as
its highest flag set (-1 if none).
"""

from __future__ import annotations

import numba
import numpy as np

from allfours_env.cards import N_CARDS, N_SEATS, TOTAL_GAME_VALUE
from allfours_env.observation import LAYOUT, RULE_SLOTS, _slot_size

from .hand_reading import TRICK_NUMBER_BITS, highest, unseen_bits

HAND = LAYOUT["hand"].offset
KICK = LAYOUT["kick"].offset
KICKS_ASIDE = LAYOUT["kicks_aside"].offset
TABLE = LAYOUT["table"].offset
PLAYED = LAYOUT["played"].offset
LED = LAYOUT["led"].offset
TRICK_NUMBER = LAYOUT["trick_number"].offset
WON = LAYOUT["won"].offset
TRUMP = LAYOUT["trump"].offset
PHASE = LAYOUT["phase"].offset
DEALER = LAYOUT["dealer"].offset
LEADER = LAYOUT["leader"].offset
SCORES = LAYOUT["scores"].offset
TARGET = LAYOUT["target"].offset
GAME_POINTS = LAYOUT["game_points"].offset
_ONE_HOT = LAYOUT["leader"].size  # the size of the one-hot pieces (trump, phase, dealer, leader)
# phase slots (the observation's order)
STAND_OR_BEG, GIVE_OR_RUN, PLAY = 0, 1, 2


def _rule_offsets() -> dict[str, int]:
    out, offset = {}, LAYOUT["rules"].offset
    for key, kind in RULE_SLOTS:
        out[key] = offset
        offset += _slot_size(kind)
    return out


_RULE_AT = _rule_offsets()
HANG_JACK_POINTS = _RULE_AT["hang_jack_points"]
GAME_POINTS_RULE = _RULE_AT["game_points"]
GAME_TIE = _RULE_AT["game_tie"]  # one-hot: none, non_dealer, dealer
GIVE_ONE_REQUIRES_TRUMP = _RULE_AT["give_one_requires_trump"]
TIE_NONE, TIE_NON_DEALER, TIE_DEALER = 0, 1, 2
RULES_KEY = slice(TARGET, TARGET + 1), LAYOUT["rules"].slice  # what the match model depends on lies in these

# Explicit signatures: one compiled version, not one per constant offset the kernels pass.
_ROW_AND_INT = "(float32[::1], int64)"


@numba.njit("int64" + _ROW_AND_INT, cache=True)
def cards(row: np.ndarray, start: int) -> int:
    """The 52 card flags from ``row[start]`` as a bit set."""
    flags = row[start : start + N_CARDS]  # indices known non-negative: 4x faster than row[start + card]
    bits = 0
    for card in range(N_CARDS):
        if flags[card] > 0.5:
            bits |= 1 << card
    return bits


@numba.njit(cache=True)
def seen(row: np.ndarray, played: np.ndarray) -> tuple[int, int, int]:
    """My hand, the live kick (-1: none) and the cards I have not seen (bit sets; the kick a card
    index); fills ``played[s]`` with the cards relative seat s has played this deal."""
    hand = cards(row, HAND)
    kick = highest(cards(row, KICK))
    everyone = 0
    for s in range(N_SEATS):
        played[s] = cards(row, PLAYED + s * N_CARDS)
        everyone |= played[s]
    return hand, kick, unseen_bits(hand, kick, cards(row, KICKS_ASIDE), everyone)


@numba.njit("int64" + _ROW_AND_INT, cache=True)
def one_hot(row: np.ndarray, start: int) -> int:
    """The highest flag set among the four from ``row[start]``, -1 if none (as ``decode``)."""
    for i in range(_ONE_HOT - 1, -1, -1):
        if row[start + i] > 0.5:
            return i
    return -1


@numba.njit("int64" + _ROW_AND_INT, cache=True)
def trick_number(row: np.ndarray, card: int) -> int:
    number = 0
    for b in range(TRICK_NUMBER_BITS):
        if row[TRICK_NUMBER + TRICK_NUMBER_BITS * card + b] > 0.5:
            number |= 1 << b
    return number


@numba.njit(cache=True)
def current_trick(row: np.ndarray, seats: np.ndarray, cards_out: np.ndarray) -> int:
    """Fill ``seats``/``cards_out`` with the current trick in play order, from its leader round
    the table; return how many cards it has."""
    leader = one_hot(row, LEADER)
    if leader < 0:
        return 0
    n_played = 0
    for s in range(N_SEATS):
        n_played += cards(row, TABLE + s * N_CARDS) != 0
    seat = leader
    for k in range(n_played):
        seats[k] = seat
        cards_out[k] = highest(cards(row, TABLE + seat * N_CARDS))
        seat = (seat + 1) % N_SEATS
    return n_played


@numba.njit(cache=True)
def target(row: np.ndarray) -> int:
    return round(1.0 / np.float64(row[TARGET]))


@numba.njit(cache=True)
def scaled(row: np.ndarray, index: int, scale: int) -> int:
    """A scalar stored as value / scale (scores, game points, point rules), read back."""
    return round(np.float64(row[index]) * scale)


@numba.njit(cache=True)
def game_points(row: np.ndarray, team: int) -> int:
    """Game value captured this deal by my team (0) or the other (1)."""
    return scaled(row, GAME_POINTS + team, TOTAL_GAME_VALUE)


@numba.njit(cache=True)
def game_tie(row: np.ndarray) -> int:
    """The game_tie rule: TIE_NONE, TIE_NON_DEALER or TIE_DEALER (the first largest flag, as ``decode``)."""
    best = 0
    for i in range(1, 3):
        if row[GAME_TIE + i] > row[GAME_TIE + best]:
            best = i
    return best
