"""The compiled parts of :mod:`agents.search`: sampling worlds, and the greedy rollout policy.

:func:`sample_worlds` deals the unseen cards to the other seats and the stock, consistently with
what the searcher has seen (see its docstring).

:func:`rollout_actions` is the rollout policy of ``search:rollout=greedy`` (the default rollout
is the expert, :mod:`agents.expert`); it plays sampled worlds to the end of the deal on the
vector engine's state (:mod:`allfours_env.vector_kernels`):

* stand or give one with a high trump (queen or better to stand, king or better or three trumps to
  give one), beg or run otherwise (the beginner's advice of :mod:`agents.rule_based`);
* in play, the seat to act tries each legal card against the rest of the trick as the world
  has it (it sees the world's hands, as double-dummy play does in bridge), the later players
  answering by simple habits from what they know, their hand and the cards seen (feed the
  partner a ten when no unseen card can take the trick back; else take a trick holding Game
  value or the jack with the cheapest card no unseen card beats, or, playing last, with any
  card that wins; else throw the cheapest card), and the card with the best outcome for this
  trick is played: Game value
  at ``GAME_UNIT`` points a ten, the trump jack at 1 point to its holder's team or the hang to
  the takers, less ``TRUMP_COST`` a rank for spending a trump.

"Cheapest" orders cards by (is trump, Game value, rank): trumps and counting cards stay home.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from allfours_env import actions, cards, vector_kernels
from allfours_env.actions import BEG, GIVE_ONE, GIVE_OR_RUN, PLAY, RUN, STAND, STAND_OR_BEG
from allfours_env.cards import CARD_GAME_VALUE, N_CARDS, N_RANKS, N_SEATS, RANK_JACK, RANK_TEN
from allfours_env.numba_ints import cache_depends_on, kernels_of
from allfours_env.vector_kernels import (
    CURRENT,
    HAND,
    KICK,
    KICKS_ASIDE,
    LEADER,
    LED_SUIT,
    P_HANG,
    P_UNDERTRUMP,
    PHASE,
    PLAYED,
    TRICK_CARDS,
    TRICK_LEN,
    TRUMP,
    WIN_CARD,
    WIN_SEAT,
    highest,
    legal_bits,
    legal_cards,
    lowest,
    popcount,
)

STAND_RANK = 10  # queen
GIVE_RANK = 11  # king
GIVE_COUNT = 3
GAME_UNIT = 0.25  # points a ten's worth of Game value is worth in a trick, roughly
TRUMP_COST = 0.02  # per rank: spend low trumps before high ones
_ONE = np.uint64(1)
_SUIT_BITS = np.array([((1 << N_RANKS) - 1) << (N_RANKS * s) for s in range(4)], dtype=np.uint64)
_TENS = np.uint64(sum(1 << (s * N_RANKS + RANK_TEN) for s in range(4)))
_GAME_VALUE = np.array(CARD_GAME_VALUE, dtype=np.int64)
_FULL_DECK = np.uint64((1 << N_CARDS) - 1)


@njit(cache=True, nogil=True)
def _winners(cards, best, trump):
    """The cards of ``cards`` that would take the lead from ``best`` (A7.5)."""
    suit = best // N_RANKS
    higher = cards & _SUIT_BITS[suit] & ~((_ONE << np.uint64(best + 1)) - _ONE)
    return higher if suit == trump else higher | (cards & _SUIT_BITS[trump])


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _unseen_by(st, bs, t, seat):
    """The cards ``seat`` has not seen: not in its hand, not played, not kicked."""
    seen = bs[t, HAND + seat] | bs[t, KICKS_ASIDE]
    for s in range(N_SEATS):
        seen |= bs[t, PLAYED + s]
    if st[t, KICK] >= 0:
        seen |= _ONE << np.uint64(st[t, KICK])
    return _FULL_DECK & ~seen


@njit(cache=True, nogil=True)
def _respond(st, bs, t, seat, legal, played, best, best_seat, value, trump):
    """A later player's card in a simulated trick, from what that player knows: its hand and the
    cards seen (``played``: cards already in the trick). A card "nobody can beat" is one that no
    unseen card beats; the last player takes a trick worth something with any card that can."""
    threat = _unseen_by(st, bs, t, seat)
    if best_seat % 2 == seat % 2:  # the partner is winning: feed it a ten if nobody can take it back
        tens = legal & _TENS & ~_SUIT_BITS[trump]
        if tens and not _winners(threat, best, trump):
            return lowest(tens)
        return _cheapest(legal, trump)
    wins = _winners(legal, best, trump)
    safe = np.uint64(0)
    bits = wins
    while bits:
        c = lowest(bits)
        bits &= bits - _ONE
        if not _winners(threat, c, trump):
            safe |= _ONE << np.uint64(c)
    if value > 0 and (safe or wins and played == N_SEATS - 1):
        return _cheapest(safe if safe else wins, trump)
    return _cheapest(legal, trump)


@njit(cache=True, nogil=True)
def _finish(st, bs, t, seat, n, k0, led, best, best_seat, value, jack_seat, trump, undertrump):
    """The trick's later players from position ``k0`` on (the seat that played position n is
    ``seat``) answer with :func:`_respond`: (winning seat, Game value, jack's seat or -1)."""
    jack = trump * N_RANKS + RANK_JACK
    for k in range(k0, N_SEATS):
        other = (seat + k - n) % N_SEATS
        legal = legal_cards(bs[t, HAND + other], k, led, trump, best, undertrump)
        c = _respond(st, bs, t, other, legal, k, best, best_seat, value + (jack_seat >= 0), trump)
        if _winners(_ONE << np.uint64(c), best, trump):
            best, best_seat = c, other
        value += _GAME_VALUE[c]
        if c == jack:
            jack_seat = other
    return best_seat, value, jack_seat


@njit(cache=True, nogil=True)
def _score(winner, value, jack_seat, team, hang):
    """A trick's outcome for ``team``, in points: Game value at ``GAME_UNIT`` a ten, the jack."""
    ours = winner % 2 == team
    score = GAME_UNIT * value / 10.0 * (1.0 if ours else -1.0)
    if jack_seat >= 0:
        holder_ours = jack_seat % 2 == team
        if ours:
            score += 1.0 if holder_ours else hang
        else:
            score -= hang if holder_ours else 1.0
    return score


@njit(cache=True, nogil=True)
def _trick_result(st, bs, t, card, undertrump):
    """Play ``card`` for the seat to act at table t (the state is not changed) and let the later
    seats answer with :func:`_respond`: (winning seat, Game value of the trick, seat that played
    the trump jack or -1)."""
    trump, n, seat = st[t, TRUMP], st[t, TRICK_LEN], st[t, CURRENT]
    jack = trump * N_RANKS + RANK_JACK
    value, jack_seat = 0, -1
    for i in range(n):
        c = st[t, TRICK_CARDS + i]
        value += _GAME_VALUE[c]
        if c == jack:
            jack_seat = (st[t, LEADER] + i) % N_SEATS
    if n == 0:
        led, best, best_seat = card // N_RANKS, card, seat
    else:
        led, best, best_seat = st[t, LED_SUIT], st[t, WIN_CARD], st[t, WIN_SEAT]
        if _winners(_ONE << np.uint64(card), best, trump):
            best, best_seat = card, seat
    value += _GAME_VALUE[card]
    if card == jack:
        jack_seat = seat
    return _finish(st, bs, t, seat, n, n + 1, led, best, best_seat, value, jack_seat, trump, undertrump)


@njit(cache=True, nogil=True)
def _play(st, bs, t, legal, params):
    """The rollout's card: the best outcome of this trick by :func:`_trick_result`, in points
    (Game value at ``GAME_UNIT`` a ten, the jack at 1 or the hang), less a little for spending a
    high trump."""
    trump, team, hang = st[t, TRUMP], st[t, CURRENT] % 2, params[P_HANG]
    choice, best_score = -1, -1e9
    bits = legal
    while bits:
        card = lowest(bits)
        bits &= bits - _ONE
        winner, value, jack_seat = _trick_result(st, bs, t, card, params[P_UNDERTRUMP])
        score = _score(winner, value, jack_seat, team, hang)
        if card // N_RANKS == trump:
            score -= TRUMP_COST * (card % N_RANKS + 1)
        if score > best_score:
            choice, best_score = card, score
    return choice


@njit(cache=True, nogil=True)
def rollout_actions(st, bs, params, out):
    """out[t] = the greedy rollout policy's action at every live table (0 where it is over)."""
    for t in range(st.shape[0]):
        out[t] = 0
        legal = legal_bits(st, bs, t, params)
        if not legal:
            continue
        phase = st[t, PHASE]
        if legal & (legal - _ONE) == 0:
            out[t] = lowest(legal)
        elif phase == PLAY:
            out[t] = _play(st, bs, t, legal, params)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


# The kernels compile in the vector engine's kernels and constants: a change there must recompile them.
cache_depends_on(kernels_of(__name__), (actions, cards, vector_kernels))
