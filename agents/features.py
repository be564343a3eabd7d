"""Derived features for learned policies, computed from the observation alone.

A small network learns trick play much faster when it is told, for each card, what a card
player sees at a glance: is it legal, is it trump, would it take the trick now, can anything
still beat it; and, for the table, who is winning, what is on it, which trumps are still out and
who has shown a void. Everything here is a function of ``(observation, action_mask)``, so a
trained policy still acts from its own observation only. The policy input is the observation
followed by these features (:func:`policy_input`).

One implementation serves a single decision and a whole batch of tables: a numba kernel reads
the observation rows through the named :data:`~allfours_env.observation.LAYOUT` pieces as bit
sets, reasons with :mod:`agents.hand_reading` (the same functions the heuristic bots call), and
writes each value where its name says (:data:`FEATURE_INDEX`). The values are frozen: the shipped
pretrained policy was trained on them.

Two policy inputs are built from them. :func:`policy_input` (input layout 1, ``INPUT_SIZE``
floats) is the whole observation followed by every feature. :func:`compact_input` (input layout
2, ``COMPACT_SIZE`` floats, what training builds today) keeps what a policy needs and drops what is
mostly zeros or said twice, so that a network reads 2.4 times fewer inputs (:data:`COMPACT_PIECES`):

=========================  ====  =============================================================
piece                      size  what
=========================  ====  =============================================================
hand, kick, won            208   the observation's pieces of those names
table                      52    the cards of the current trick, whoever played them
state                      50    the observation from ``trump`` to the end (phase, dealer, ...,
                                 scores, rules block)
legal, trump,              260   the per-card features of those names (cards in hand)
takes_trick_now,
unbeatable_in_suit,
sure_winner
globals                    34    every global feature (:data:`GLOBAL`)
=========================  ====  =============================================================

Input layout 3, :func:`advised_input` (``ADVISED_SIZE`` floats), is the compact input followed
by the expert's advice (:func:`advice`, :data:`ADVICE_PIECES`): what :mod:`agents.expert`, read
from the same observation, would play (one-hot over the 56 actions), how it rates each legal
card (1 for its best, falling to 0 at ``RATING_RANGE`` points below it), and its margins for
standing over begging and for giving one over running (in chances of the match, times
``MARGIN_SCALE``, clipped to [-1, 1]). A network that reads it can play as the expert from the
start and learn where to differ.

Input layout 4, :func:`history_input` (``HISTORY_SIZE`` floats), is input layout 3 followed by the
deal's public history that the compact input drops (:func:`history`, :data:`HISTORY_PIECES`): the
cards each seat played this deal (``played``, by relative seat), the cards that led their trick,
who played each card of the current trick (``table_by_seat``), the kicks set aside by runs, and
each played card's trick number over ``MOST_TRICK_NUMBER`` (0 for a card not played). With the
seat of every card and the trick it fell in, a network can read one seat's play as search does.
The deal's bids (stood, begged, gave one, ran) are in the compact input already (its ``state``);
the kicks set aside say how often the pack was run and which suits were refused. Because layout
3's floats come first, a layout-3 network reads layout 4 unchanged once its first layer gets
zero weights for the new floats (:func:`agents.policy.widen`).

Dropped from the compact input: who played each card of the trick (the winner so far and the position are features),
the cards played by seat (captured cards are ``won``, voids are features), the trick numbers, the
kicks set aside, and the per-card features that restate the card (game value, rank, trump jack).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

import numba
import numpy as np

from allfours_env import OBS_SIZE, cards
from allfours_env import observation as observation_module
from allfours_env.cards import (
    CARD_GAME_VALUE,
    N_CARDS,
    N_RANKS,
    N_SEATS,
    N_SUITS,
    RANK_ACE,
    RANK_GAME_VALUE,
    RANK_TEN,
    SUIT_LETTERS,
    SUIT_MASK,
    beats,
    card_text,
)
from allfours_env.engine import GIVE_ONE, N_ACTIONS, STAND
from allfours_env.numba_ints import cache_depends_on
from allfours_env.observation import LAYOUT

from . import hand_reading, rows
from .hand_reading import (
    NEXT,
    PARTNER,
    PREVIOUS,
    SELF,
    TRICK_SLOTS,
    beaters,
    highest,
    lowest,
    suit_bits,
    trump_jack,
    voids_shown,
    winning_play,
)

PER_CARD = (
    "legal", "trump", "takes_trick_now", "unbeatable_in_suit", "sure_winner", "game_value", "rank", "trump_jack",
)
_OTHER_SEATS = {NEXT: "next", PARTNER: "partner", PREVIOUS: "previous"}
GLOBAL = (
    "partner_winning", "opponent_winning", "position_0", "position_1", "position_2", "position_3",
    "table_game_value", "jack_on_table", "own_trumps", "unseen_trumps", "jack_in_hand", "jack_unseen",
    "ace_unseen", "king_unseen", "queen_unseen", "own_high_trump", "own_low_trump", "unseen_high_trump",
    "unseen_low_trump", "holds_high", "holds_low", "tricks_left",
    *(f"void_{seat}_{suit}" for seat in _OTHER_SEATS.values() for suit in SUIT_LETTERS),
)
# Per-card features are named "<feature>_<card>", e.g. "takes_trick_now_JH"; then the globals.
FEATURE_NAMES = (*(f"{name}_{card_text(card)}" for name in PER_CARD for card in range(N_CARDS)), *GLOBAL)
FEATURE_INDEX = {name: i for i, name in enumerate(FEATURE_NAMES)}
N_FEATURES = len(FEATURE_NAMES)
INPUT_SIZE = OBS_SIZE + N_FEATURES

# The scales the pretrained policy was trained with.
_CARD_VALUE = np.array(CARD_GAME_VALUE, dtype=np.float32) / 10.0
_CARD_RANK = np.array([c % N_RANKS for c in range(N_CARDS)], dtype=np.float32) / (N_RANKS - 1)
_MOST_ON_TABLE = 4 * RANK_GAME_VALUE[RANK_TEN]  # at most four tens: 40
_MOST_IN_HAND = 12.0  # the scale of tricks_left


# Where each feature goes, by name, as constants the kernels compile in: _AT.<name> is the index of
# global feature <name>, _CARD_AT.<name> that of per-card feature <name> for card 0 (card c: + c).
_CARD_AT = namedtuple("_CardAt", PER_CARD)(*(FEATURE_INDEX[f"{name}_{card_text(0)}"] for name in PER_CARD))
_AT = namedtuple("_At", GLOBAL)(*(FEATURE_INDEX[name] for name in GLOBAL))
_POSITION = np.array([FEATURE_INDEX[f"position_{k}"] for k in range(N_SEATS)])
_HONOURS_UNSEEN = np.array(  # (rank, feature index)
    [(RANK_ACE - k, FEATURE_INDEX[f"{honour}_unseen"]) for k, honour in enumerate(("ace", "king", "queen"))]
)
_VOID = np.array(  # [relative seat, suit]; -1 for myself
    [[FEATURE_INDEX.get(f"void_{_OTHER_SEATS.get(s)}_{x}", -1) for x in SUIT_LETTERS] for s in range(N_SEATS)]
)

@numba.njit(cache=True)
def _card_features(f: np.ndarray, hand: int, unseen: int, best: int, trump: int) -> None:
    """The per-card features of the cards in hand, ``best`` the card now winning the trick (-1)."""
    for card in range(N_CARDS):
        if not hand >> card & 1:
            continue
        beaten_by = beaters(card, trump) & unseen
        wins_now = best < 0 or beats(card, best, trump)
        if best >= 0 and wins_now:
            f[_CARD_AT.takes_trick_now + card] = 1.0
        if not beaten_by & suit_bits(card):
            f[_CARD_AT.unbeatable_in_suit + card] = 1.0
        if wins_now and not beaten_by:
            f[_CARD_AT.sure_winner + card] = 1.0
        if trump >= 0 and card // N_RANKS == trump:
            f[_CARD_AT.trump + card] = 1.0
        f[_CARD_AT.game_value + card] = _CARD_VALUE[card]
        f[_CARD_AT.rank + card] = _CARD_RANK[card]


@numba.njit(cache=True)
def _trump_features(f: np.ndarray, hand: int, unseen: int, table: int, trump: int) -> None:
    """Where the trumps are: mine, still unseen, the jack and the honours."""
    jack = trump_jack(trump)
    own, out_there = hand & SUIT_MASK[trump], unseen & SUIT_MASK[trump]
    f[_CARD_AT.trump_jack + jack] = hand >> jack & 1
    f[_AT.jack_on_table] = table >> jack & 1
    f[_AT.own_trumps] = own.bit_count() / N_RANKS
    f[_AT.unseen_trumps] = out_there.bit_count() / N_RANKS
    f[_AT.jack_in_hand] = hand >> jack & 1
    f[_AT.jack_unseen] = unseen >> jack & 1
    for k in range(len(_HONOURS_UNSEEN)):
        f[_HONOURS_UNSEEN[k, 1]] = unseen >> (trump * N_RANKS + _HONOURS_UNSEEN[k, 0]) & 1
    if own:
        f[_AT.own_high_trump] = (highest(own) % N_RANKS + 1) / N_RANKS
        f[_AT.own_low_trump] = (lowest(own) % N_RANKS + 1) / N_RANKS
        f[_AT.holds_high] = highest(own | out_there) == highest(own)
        f[_AT.holds_low] = lowest(own | out_there) == lowest(own)
    if out_there:
        f[_AT.unseen_high_trump] = (highest(out_there) % N_RANKS + 1) / N_RANKS
        f[_AT.unseen_low_trump] = (lowest(out_there) % N_RANKS + 1) / N_RANKS


@numba.njit(cache=True)
def _void_features(
    f: np.ndarray, row: np.ndarray, played: np.ndarray, trump: int, trick_of: np.ndarray, shown: np.ndarray,
    lead_of_trick: np.ndarray,
) -> None:
    """The suits the other seats have shown they lack, from this deal's tricks (the last three
    arrays are the kernel's, reused from table to table)."""
    for s in range(N_SEATS):
        for card in range(N_CARDS):
            if played[s] >> card & 1:
                trick_of[card] = rows.trick_number(row, card)
    voids_shown(played, rows.cards(row, rows.LED), trick_of, trump, shown, lead_of_trick)
    for s in range(N_SEATS):
        for suit in range(N_SUITS):
            if s != SELF and shown[s] >> suit & 1:
                f[_VOID[s, suit]] = 1.0


@numba.njit(cache=True)
def _features_into(observations: np.ndarray, out: np.ndarray, start: int) -> None:
    """Write the features of each observation row into ``out[i, start:start + N_FEATURES]``,
    all but the ``legal`` cards (the caller copies those from the masks)."""
    played = np.empty(N_SEATS, np.int64)  # cards played this deal, by relative seat
    seats = np.empty(N_SEATS, np.int64)  # the current trick in play order: who...
    cards = np.empty(N_SEATS, np.int64)  # ...played what
    trick_of = np.zeros(N_CARDS, np.int64)  # the number of the trick each played card fell in
    shown = np.empty(N_SEATS, np.int64)  # suits each seat has shown it lacks
    lead_of_trick = np.empty(TRICK_SLOTS, np.int64)
    for i in range(observations.shape[0]):
        row, f = observations[i], out[i, start : start + N_FEATURES]
        f[:] = 0.0
        hand, kick, unseen = rows.seen(row, played)
        trump = rows.one_hot(row, rows.TRUMP)
        if trump < 0 and kick >= 0:
            trump = kick // N_RANKS  # the kick's suit, before anyone stood or ran

        n_played = rows.current_trick(row, seats, cards)
        win = winning_play(cards[:n_played], trump)
        table = table_value = 0
        for k in range(n_played):
            table |= 1 << cards[k]
            table_value += CARD_GAME_VALUE[cards[k]]
        if win >= 0:  # the trick's winner so far: my partner, or not (an opponent; me only off turn)
            f[_AT.partner_winning if seats[win] == PARTNER else _AT.opponent_winning] = 1.0
        if n_played < N_SEATS:
            f[_POSITION[n_played]] = 1.0
        f[_AT.table_game_value] = table_value / _MOST_ON_TABLE

        _card_features(f, hand, unseen, cards[win] if win >= 0 else -1, trump)
        if trump >= 0:
            _trump_features(f, hand, unseen, table, trump)
        f[_AT.tricks_left] = hand.bit_count() / _MOST_IN_HAND
        _void_features(f, row, played, trump, trick_of, shown, lead_of_trick)


# numba keys a kernel's on-disk cache on this file alone; the kernels also compile in the card
# reasoning of hand_reading and cards, and the layout's offsets: editing those recompiles them.
cache_depends_on(
    (_card_features, _trump_features, _void_features, _features_into),
    (hand_reading, rows, cards, observation_module),
)


def check_batch(observations: np.ndarray, masks: np.ndarray) -> None:
    if not isinstance(observations, np.ndarray) or observations.ndim != 2 or observations.shape[1] != OBS_SIZE:
        raise ValueError(f"observations must be an array of shape (n, {OBS_SIZE}), got {_shape(observations)}")
    if observations.dtype != np.float32:
        raise ValueError(f"observations must be float32 (as the env gives them), got {observations.dtype}")
    n = len(observations)
    if not isinstance(masks, np.ndarray) or masks.shape != (n, N_ACTIONS) or masks.dtype.kind not in "biuf":
        raise ValueError(
            f"masks must be an array of shape ({n}, {N_ACTIONS}) of bool or numbers, got {_shape(masks)}"
            f"{f' of {masks.dtype}' if isinstance(masks, np.ndarray) else ''}"
        )


def _one_row(batch: Callable[..., np.ndarray], observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``batch`` (a ``batch_..._input``) of one observation and its action mask, checked as one row."""
    if not isinstance(observation, np.ndarray) or observation.shape != (OBS_SIZE,):
        raise ValueError(f"an observation must be an array of shape ({OBS_SIZE},), got {_shape(observation)}")
    if not isinstance(mask, np.ndarray) or mask.shape != (N_ACTIONS,):
        raise ValueError(f"an action mask must be an array of shape ({N_ACTIONS},), got {_shape(mask)}")
    return batch(observation[None], mask[None])[0]


def _shape(value: object) -> str:
    return f"shape {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__


def _fill(observations: np.ndarray, masks: np.ndarray, out: np.ndarray, start: int) -> None:
    _features_into(np.ascontiguousarray(observations), out, start)
    out[:, start + _CARD_AT.legal : start + _CARD_AT.legal + N_CARDS] = masks[:, :N_CARDS]


def batch_features(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The derived features (float32[n, N_FEATURES]) of n observations (float32[n, OBS_SIZE])
    and their action masks ([n, 56], bool or numbers); row i is ``features(observations[i], masks[i])``."""
    check_batch(observations, masks)
    out = np.empty((len(observations), N_FEATURES), dtype=np.float32)
    _fill(observations, masks, out, 0)
    return out


def batch_policy_input(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """What a learned policy reads for n tables (float32[n, INPUT_SIZE]): each observation, then
    its features; row i is ``policy_input(observations[i], masks[i])``."""
    check_batch(observations, masks)
    out = np.empty((len(observations), INPUT_SIZE), dtype=np.float32)
    out[:, :OBS_SIZE] = observations
    _fill(observations, masks, out, OBS_SIZE)
    return out


_COMPACT_CARD_FEATURES = ("legal", "trump", "takes_trick_now", "unbeatable_in_suit", "sure_winner")
COMPACT_PIECES = (  # (name, size) in order
    *((name, LAYOUT[name].size) for name in ("hand", "kick", "won")),
    ("table", N_CARDS),
    ("state", OBS_SIZE - LAYOUT["trump"].offset),
    *((name, N_CARDS) for name in _COMPACT_CARD_FEATURES),
    ("globals", len(GLOBAL)),
)
COMPACT_SIZE = sum(size for _, size in COMPACT_PIECES)
# where compact_input copies from: observation columns, then feature columns; the table is built
_COMPACT_FROM_OBS = np.concatenate(
    [np.arange(LAYOUT[name].offset, LAYOUT[name].offset + LAYOUT[name].size) for name in ("hand", "kick", "won")]
)
_COMPACT_TABLE = slice(len(_COMPACT_FROM_OBS), len(_COMPACT_FROM_OBS) + N_CARDS)
_COMPACT_STATE = slice(_COMPACT_TABLE.stop, _COMPACT_TABLE.stop + OBS_SIZE - LAYOUT["trump"].offset)
_COMPACT_FROM_FEATURES = np.concatenate(
    [*(np.arange(N_CARDS) + getattr(_CARD_AT, name) for name in _COMPACT_CARD_FEATURES), list(_AT)]
)


def batch_compact_input(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The compact policy input (float32[n, COMPACT_SIZE], see the module docstring) of n
    observations and their masks; row i is ``compact_input(observations[i], masks[i])``."""
    check_batch(observations, masks)
    n = len(observations)
    feats = np.empty((n, N_FEATURES), dtype=np.float32)
    _fill(observations, masks, feats, 0)
    out = np.empty((n, COMPACT_SIZE), dtype=np.float32)
    out[:, : len(_COMPACT_FROM_OBS)] = observations[:, _COMPACT_FROM_OBS]
    table = observations[:, rows.TABLE : rows.TABLE + N_SEATS * N_CARDS].reshape(n, N_SEATS, N_CARDS)
    out[:, _COMPACT_TABLE] = table.max(axis=1)
    out[:, _COMPACT_STATE] = observations[:, LAYOUT["trump"].offset :]
    out[:, _COMPACT_STATE.stop :] = feats[:, _COMPACT_FROM_FEATURES]
    return out


def compact_input(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The compact policy input of one observation and its action mask (see the module docstring)."""
    return _one_row(batch_compact_input, observation, mask)


def features(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The derived features (float32[N_FEATURES]) of one observation and its action mask."""
    return _one_row(batch_features, observation, mask)


def policy_input(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """What a learned policy reads: the observation, then :func:`features`."""
    return _one_row(batch_policy_input, observation, mask)


# ---------------------------------------------------------------- the expert's advice (layout 3)

ADVICE_PIECES = (("expert_choice", N_ACTIONS), ("expert_card_rating", N_CARDS), ("expert_bid_margins", 2))
ADVICE_SIZE = sum(size for _, size in ADVICE_PIECES)
ADVISED_SIZE = COMPACT_SIZE + ADVICE_SIZE
RATING_RANGE = 3.0  # points of match equity below the expert's best card at which a card's rating reaches 0
MARGIN_SCALE = 10.0  # the stand and give margins are chances of the match: 0.1 reads as 1
_RATING = slice(N_ACTIONS, N_ACTIONS + N_CARDS)
_MARGINS = slice(_RATING.stop, _RATING.stop + 2)


def advice(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The expert's advice (float32[n, ADVICE_SIZE], see the module docstring) for n observations
    and their masks; its ``expert_choice`` is :func:`agents.expert.expert_actions` of the same rows."""
    from .expert import card_values  # the expert reads its tables through this module's checks

    values = card_values(observations, masks)
    n = len(values)
    out = np.zeros((n, ADVICE_SIZE), dtype=np.float32)
    out[np.arange(n), values.argmax(axis=1)] = 1.0
    cards = values[:, :N_CARDS]
    legal = np.isfinite(cards)
    best = np.where(legal, cards, -np.inf).max(axis=1, keepdims=True)
    rating = 1.0 + np.maximum(cards - np.where(np.isfinite(best), best, 0.0), -RATING_RANGE) / RATING_RANGE
    out[:, _RATING] = np.where(legal, rating, 0.0)
    for slot, action in enumerate((STAND, GIVE_ONE)):
        margin = values[:, action]
        out[:, _MARGINS.start + slot] = np.where(np.isfinite(margin), np.clip(margin * MARGIN_SCALE, -1.0, 1.0), 0.0)
    return out


def batch_advised_input(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Input layout 3 (float32[n, ADVISED_SIZE]): the compact input, then :func:`advice`."""
    return np.concatenate([batch_compact_input(observations, masks), advice(observations, masks)], axis=1)


def advised_input(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Input layout 3 of one observation and its action mask."""
    return _one_row(batch_advised_input, observation, mask)


# ---------------------------------------------------------------- the public history (layout 4)

MOST_TRICK_NUMBER = 15  # the observation's trick numbers are 4 bits
HISTORY_PIECES = (  # (name, size) in order, after the advised input
    ("played", N_SEATS * N_CARDS),  # the observation's piece: every card each relative seat played this deal
    ("led", N_CARDS),  # the observation's piece: the cards that led their trick
    ("table_by_seat", N_SEATS * N_CARDS),  # the observation's ``table``: who played each card of the current trick
    ("kicks_aside", N_CARDS),  # the observation's piece: this deal's kicks set aside by runs
    ("trick_of_card", N_CARDS),  # each played card's trick number / MOST_TRICK_NUMBER; 0 if not played
)
HISTORY_SIZE = ADVISED_SIZE + sum(size for _, size in HISTORY_PIECES)
_HISTORY_FLAGS = np.concatenate(  # the observation columns the flag pieces copy, in order
    [np.arange(LAYOUT[name].slice.start, LAYOUT[name].slice.stop) for name in ("played", "led", "table", "kicks_aside")]
)
_TRICK_BITS = LAYOUT["trick_number"].slice
_BIT_VALUES = (2.0 ** np.arange(4)).astype(np.float32)  # 4 bits a card, low bit first


def history(observations: np.ndarray) -> np.ndarray:
    """The public history of this deal (float32[n, HISTORY_SIZE - ADVISED_SIZE], :data:`HISTORY_PIECES`)
    of n observations: what the compact input drops of what every seat has seen."""
    n = len(observations)
    out = np.empty((n, HISTORY_SIZE - ADVISED_SIZE), dtype=np.float32)
    out[:, : len(_HISTORY_FLAGS)] = observations[:, _HISTORY_FLAGS]
    numbers = observations[:, _TRICK_BITS].reshape(n, N_CARDS, 4) @ _BIT_VALUES
    out[:, len(_HISTORY_FLAGS) :] = numbers / np.float32(MOST_TRICK_NUMBER)
    return out


def batch_history_input(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Input layout 4 (float32[n, HISTORY_SIZE]): the advised input (layout 3), then :func:`history`."""
    return np.concatenate([batch_advised_input(observations, masks), history(observations)], axis=1)


def history_input(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Input layout 4 of one observation and its action mask."""
    return _one_row(batch_history_input, observation, mask)
