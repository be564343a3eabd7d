"""The compiled parts of :mod:`agents.search`: sampling worlds, and a fast rollout policy.

:func:`sample_worlds` deals the unseen cards to the other seats and the stock, consistently with
what the searcher has seen (see its docstring).

:func:`rollout_actions` plays sampled worlds to the end of the deal on the vector engine's
state (:mod:`allfours_env.vector_kernels`). Each seat acts from
its own hand and the cards on the table (the rest of the world is hidden from it too), with the
beginner's habits of :mod:`agents.rule_based`, kept to what a few bit operations can do:

* stand or give one with a high trump (queen or better to stand, king or better or three trumps to
  give one), beg or run otherwise;
* lead the cheapest plain card (no ten), keeping trumps and tens;
* when the partner is winning the trick, give it a plain ten, else throw the cheapest card;
* otherwise take the trick with the cheapest card that beats it when the trick holds Game value
  or the trump jack, or when playing last; else throw the cheapest card;
* with chance ``explore`` a uniformly random legal card instead, so that worlds do not all play
  alike.

"Cheapest" orders cards by (is trump, Game value, rank): trumps and counting cards stay home.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allfours_env.cards import CARD_GAME_VALUE, N_RANKS, N_SEATS, RANK_JACK, RANK_TEN
from allfours_env.engine import BEG, GIVE_ONE, GIVE_OR_RUN, PLAY, RUN, STAND, STAND_OR_BEG
from allfours_env.vector_kernels import (
    CURRENT, HAND, KICK, PHASE, TRICK_CARDS, TRICK_LEN, TRUMP, WIN_CARD, WIN_SEAT, highest, legal_bits, lowest, popcount,
)

STAND_RANK = 10  # queen
GIVE_RANK = 11  # king
GIVE_COUNT = 3
_ONE = np.uint64(1)
_SUIT_BITS = np.array([((1 << N_RANKS) - 1) << (N_RANKS * s) for s in range(4)], dtype=np.uint64)
_TENS = np.uint64(sum(1 << (s * N_RANKS + RANK_TEN) for s in range(4)))
_GAME_VALUE = np.array(CARD_GAME_VALUE, dtype=np.int64)


@njit(cache=True)
def _beats(card, best, trump):
    if card // N_RANKS == best // N_RANKS:
        return card > best
    return card // N_RANKS == trump


@njit(cache=True)
def _cheapest(cards, trump):
    """The card of ``cards`` (non-empty) with the least (is trump, Game value, rank)."""
    best, best_key = -1, 1 << 30
    bits = cards
    while bits:
        c = lowest(bits)
        bits &= bits - _ONE
        key = (c // N_RANKS == trump) * 10_000 + _GAME_VALUE[c] * 100 + c % N_RANKS
        if key < best_key:
            best, best_key = c, key
    return best


@njit(cache=True)
def _nth(bits, n):
    for _ in range(n):
        bits &= bits - _ONE
    return lowest(bits)


@njit(cache=True)
def _play(st, bs, t, legal, uniform, explore):
    if uniform < explore:
        return _nth(legal, np.int64(uniform / explore * popcount(legal)))
    trump = st[t, TRUMP]
    trump_bits = _SUIT_BITS[trump]
    n = st[t, TRICK_LEN]
    if n == 0:  # lead: the cheapest plain card that is not a ten
        plain = legal & ~trump_bits & ~_TENS
        return _cheapest(plain if plain else legal, trump)
    seat = st[t, CURRENT]
    best = st[t, WIN_CARD]
    if st[t, WIN_SEAT] % 2 == seat % 2:  # the partner is winning
        tens = legal & _TENS & ~trump_bits
        return lowest(tens) if tens else _cheapest(legal, trump)
    winners = np.uint64(0)
    bits = legal
    while bits:
        c = lowest(bits)
        bits &= bits - _ONE
        if _beats(c, best, trump):
            winners |= _ONE << np.uint64(c)
    if winners:
        value = 0
        for i in range(n):
            c = st[t, TRICK_CARDS + i]
            value += _GAME_VALUE[c] + (c == trump * N_RANKS + RANK_JACK) * 10
        if value > 0 or n == N_SEATS - 1:
            return _cheapest(winners, trump)
    return _cheapest(legal, trump)


@njit(cache=True)
def rollout_actions(st, bs, params, uniforms, explore, out):
    """out[t] = the rollout policy's action at every live table (0 where it is over)."""
    for t in range(st.shape[0]):
        out[t] = 0
        legal = legal_bits(st, bs, t, params)
        if not legal:
            continue
        phase = st[t, PHASE]
        if legal & (legal - _ONE) == 0:
            out[t] = lowest(legal)
        elif phase == PLAY:
            out[t] = _play(st, bs, t, legal, uniforms[t], explore)
        else:
            suit = st[t, KICK] // N_RANKS
            trumps = bs[t, HAND + st[t, CURRENT]] & _SUIT_BITS[suit]
            top = highest(trumps) % N_RANKS if trumps else -1
            if phase == STAND_OR_BEG:
                out[t] = STAND if top >= STAND_RANK else BEG
            elif phase == GIVE_OR_RUN:
                strong = top >= GIVE_RANK or popcount(trumps) >= GIVE_COUNT
                out[t] = GIVE_ONE if strong and legal & (_ONE << np.uint64(GIVE_ONE)) else RUN


STOCK = 3  # index of the stock among the places a card can go (the three other seats are 0..2)
N_PLACES = 4


@njit(cache=True)
def _placeable(room, may_hold, remaining):
    """Hall's condition: every group of seats can be filled from the cards one of them may hold."""
    for group in range(1, 1 << STOCK):
        need = 0
        suits = 0
        for i in range(STOCK):
            if group >> i & 1:
                need += room[i]
                suits |= may_hold[i]
        if need:
            have = 0
            for u in range(4):
                if suits >> u & 1:
                    have += remaining[u]
            if have < need:
                return False
    return True


@njit(cache=True)
def sample_worlds(orders, room, may_hold, uniforms, out):
    """Deal the unseen cards, in the order ``orders[w]`` (a random permutation), in each world w.

    ``room[i]``: cards other seat i (0..2) holds and the stock's size (i = 3); ``may_hold[i]``:
    the suits seat i has not shown it lacks, as 4 bits. Each card goes to a place with room that
    may hold it, chosen with chances proportional to the room left (``uniforms[w, j]`` for card
    j of world w); a choice that breaks Hall's condition is dropped and the draw made again
    among the rest (``uniforms[w, len(cards) + j]``), so every world is complete and consistent.
    ``out[w, i]``: the cards of other seat i in world w, as a bit set.
    """
    n = orders.shape[1]
    for w in range(out.shape[0]):
        cards = orders[w]
        left = room.copy()
        remaining = np.zeros(4, dtype=np.int64)
        for j in range(n):
            remaining[cards[j] // N_RANKS] += 1
        for i in range(STOCK):
            out[w, i] = 0
        for j in range(n):
            card = cards[j]
            suit = card // N_RANKS
            remaining[suit] -= 1
            allowed = np.zeros(N_PLACES, dtype=np.bool_)
            for i in range(N_PLACES):
                allowed[i] = left[i] > 0 and (i == STOCK or may_hold[i] >> suit & 1)
            u = uniforms[w, j]
            while True:
                total = 0
                for i in range(N_PLACES):
                    if allowed[i]:
                        total += left[i]
                x = u * total
                pick = -1
                for i in range(N_PLACES):
                    if allowed[i]:
                        pick = i
                        x -= left[i]
                        if x < 0:
                            break
                left[pick] -= 1
                if _placeable(left, may_hold, remaining):
                    break
                left[pick] += 1
                allowed[pick] = False
                u = uniforms[w, n + j]
            if pick != STOCK:
                out[w, pick] |= _ONE << np.uint64(card)
