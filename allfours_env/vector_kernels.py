"""The compiled per-table kernels of :mod:`allfours_env.vector`: the scalar engine's rules on arrays.

Each function handles one table ``t`` of the batch and mirrors the method of
:class:`allfours_env.engine.Game` with the same name (section numbers A5.2 ... point into
docs/rules.md); the loops over tables at the bottom are what :class:`~allfours_env.vector.VectorGame`
calls. A table's state is one row of three arrays:

* ``st`` (int64): the scalar fields, columns named below (``PHASE``, ``CURRENT``, ...);
* ``bs`` (uint64): the bit sets (bit ``c`` = card ``c``): hands, cards played by each seat, cards
  won by each team, kicks set aside, cards that led their trick, trumps in hands;
* ``deck`` and ``trick_no`` (int8, 52 each): the deck of this deal, and per card the 1-based
  number of the trick it was played to (0: not played).

Randomness (shuffles, the first dealer) comes from one splitmix64 stream per table (``rng``),
seeded by the caller. Awards add to ``gained`` (points per team in this step); an award that
reaches the target ends the match at once and the kernel returns True up the call chain, the
way the scalar engine raises ``_MatchOver`` (A9.1). Everything that happens is recorded in the
event buffer ``ev`` / ``n_ev`` (see ``E_*``), in the scalar engine's order and with its fields.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import actions, cards, observation
from .actions import (
    BEG,
    CARDS_DEALT,
    DEAL_OVER,
    EVENT_KINDS,
    GIVE_ONE,
    GIVE_OR_RUN,
    MATCH_OVER,
    PLAY,
    RUN,
    RUN_CARDS,
    STAND,
    STAND_OR_BEG,
)
from .cards import CARD_GAME_VALUE, N_CARDS, N_RANKS, N_SEATS, RANK_JACK, TOTAL_GAME_VALUE
from .numba_ints import cache_depends_on, kernels_of
from .observation import LAYOUT, N_FLAGS

# ---------------------------------------------------------------- state columns

# st: int64 scalar fields of a table; TRICK_CARDS .. TRICK_CARDS + 3 hold the trick's cards.
(
    PHASE, CURRENT, DEALER, DEAL_NUMBER, NEXT_CARD, KICK, TRUMP, STOOD, BEGGED, GAVE_ONE_DONE, RAN,
    SCORE0, SCORE1, GAME0, GAME1, TRICK_CARDS,
) = range(16)
(
    TRICK_LEN, LEADER, LED_SUIT, WIN_CARD, WIN_SEAT, TRICKS_PLAYED, N_TRICKS, HIGH_CARD, LOW_CARD,
    JACK_CARD, HIGH_HOLDER, LOW_HOLDER, JACK_HOLDER, JACK_WINNER, WINNER, NEXT_DECK,
) = range(TRICK_CARDS + 4, TRICK_CARDS + 20)
N_FIELDS = NEXT_DECK + 1

# bs: uint64 bit sets of a table.
HAND, PLAYED = 0, 4  # HAND + seat, PLAYED + seat
WON = 8  # WON + team
KICKS_ASIDE, LED, TRUMPS_IN_HANDS = 10, 11, 12
N_SETS = 13

# params: the rules as int64 (see vector.rule_params).
(
    P_TARGET, P_HANG, P_GAME_POINTS, P_GAME_TIE, P_UNDERTRUMP, P_GIVE_TO_TARGET, P_GIVE_NEEDS_TRUMP,
    P_STAND_NEEDS_TRUMP, P_REDEAL, P_SINGLE_TRUMP_BOTH, P_DEAL_BATCH, P_DEAL_EPISODE,
) = range(12)
N_PARAMS = 12
# Encodings of the choice rules in params.
TIE_NONE, TIE_NON_DEALER, TIE_DEALER = 0, 1, 2
UNDER_ALLOWED, UNDER_UNLESS_ALL_TRUMPS, UNDER_WHEN_CAN_FOLLOW = 0, 1, 2

# ev: int64 (n, capacity, 7), the events of each table's latest step (or start) in order, as
# engine.Event fields (kind code, seat, team, points, card, suit, deal); n_ev: how many (past
# the capacity, an overflow the caller sees). A capacity of 0 records nothing.
(
    E_DEAL, E_KICK, E_STOOD, E_BEGGED, E_GAVE_ONE, E_RAN, E_REDEAL, E_TRUMP, E_PLAYED, E_TRICK, E_HIGH, E_LOW,
    E_JACK, E_HANG_JACK, E_GAME, E_DEAL_END, E_MATCH_END,
) = range(len(EVENT_KINDS))
EVENT_FIELDS = 7
MAX_EVENTS = 16  # a step makes at most about ten (the last card of a deal, or a run with redeal)

_ONE = np.uint64(1)
_SUIT_BITS = np.array([((1 << N_RANKS) - 1) << (N_RANKS * s) for s in range(4)], dtype=np.uint64)
_GAME_VALUE = np.array(CARD_GAME_VALUE, dtype=np.int64)
_PHASE_SLOT = np.array([0, 1, 2, 3, 3], dtype=np.int64)  # stand_or_beg, give_or_run, play, over, over

# Observation offsets (allfours_env.observation.LAYOUT).
_O_KICK = LAYOUT["kick"].offset
_O_KICKS_ASIDE = LAYOUT["kicks_aside"].offset
_O_TABLE = LAYOUT["table"].offset
_O_PLAYED = LAYOUT["played"].offset
_O_LED = LAYOUT["led"].offset
_O_TRICK_NUMBER = LAYOUT["trick_number"].offset
_O_WON = LAYOUT["won"].offset
_O_TRUMP = LAYOUT["trump"].offset
_O_PHASE = LAYOUT["phase"].offset
_O_DEALER = LAYOUT["dealer"].offset
_O_BEGGAR = LAYOUT["beggar"].offset
_O_LEADER = LAYOUT["leader"].offset
_O_PARTNER = LAYOUT["partner"].offset
_O_DECISIONS = LAYOUT["decisions"].offset
_O_SCORES = LAYOUT["scores"].offset
_O_RULES = LAYOUT["rules"].offset
_PARTNER_SEAT = 2


# ---------------------------------------------------------------- bits and randomness


@njit(inline="always", cache=True)
def _bit(card):
    return _ONE << np.uint64(card)


@njit(cache=True, nogil=True)
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def lowest(x):
    """Index of the lowest set bit of a non-zero bit set."""
    return popcount((x & (~x + _ONE)) - _ONE)


@njit(cache=True, nogil=True)
def highest(x):
    """Index of the highest set bit of a non-zero bit set."""
    for shift in (np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(8), np.uint64(16), np.uint64(32)):
        x |= x >> shift
    return popcount(x) - 1


@njit(cache=True, nogil=True)
def _next_random(rng, t):
    """splitmix64: the next 64 random bits of table t's stream."""
    rng[t] += np.uint64(0x9E3779B97F4A7C15)
    z = rng[t]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _below(rng, t, k):
    """A uniform integer in 0..k-1 (k small: the bias of the 32-bit multiply is below 1e-8)."""
    return np.int64(((_next_random(rng, t) >> np.uint64(32)) * np.uint64(k)) >> np.uint64(32))


@njit(cache=True, nogil=True)
def shuffle(rng, t, out):
    """out[:] = a uniform permutation of 0..51 (Fisher-Yates)."""
    for i in range(N_CARDS):
        out[i] = i
    for i in range(N_CARDS - 1, 0, -1):
        j = _below(rng, t, i + 1)
        out[i], out[j] = out[j], out[i]


# ---------------------------------------------------------------- dealing, kicks, runs (A3-A6)


@njit(inline="always", cache=True)
def _event(ev, n_ev, t, kind, seat, team, points, card, suit, deal):
    if ev.shape[1] == 0:  # not recording: nothing to do
        return
    i = n_ev[t]
    if i < ev.shape[1]:
        ev[t, i, 0], ev[t, i, 1], ev[t, i, 2], ev[t, i, 3] = kind, seat, team, points
        ev[t, i, 4], ev[t, i, 5], ev[t, i, 6] = card, suit, deal
    n_ev[t] = i + 1


@njit(cache=True, nogil=True)
def _award(st, t, team, points, params, gained, ev, n_ev, kind, seat, card):
    st[t, SCORE0 + team] += points
    gained[t, team] += points
    _event(ev, n_ev, t, kind, seat, team, points, card, -1, -1)
    if st[t, SCORE0 + team] >= params[P_TARGET]:
        st[t, PHASE] = MATCH_OVER
        st[t, CURRENT] = -1
        st[t, WINNER] = team
        _event(ev, n_ev, t, E_MATCH_END, -1, team, 0, -1, -1, -1)
        return True
    return False


@njit(cache=True, nogil=True)
def _turn_kick(st, deck, t, params, kick_points, gained, ev, n_ev):
    """A5: turn up the next card; the dealer's team scores its kick points at once."""
    card = deck[t, st[t, NEXT_CARD]]
    st[t, NEXT_CARD] += 1
    st[t, KICK] = card
    points = kick_points[card % N_RANKS]
    dealer = st[t, DEALER]
    if points > 0:
        return _award(st, t, dealer % 2, points, params, gained, ev, n_ev, E_KICK, dealer, card)
    _event(ev, n_ev, t, E_KICK, dealer, dealer % 2, 0, card, -1, -1)
    return False


@njit(cache=True, nogil=True)
def _deal_cards(st, bs, deck, t, start, count, batch):
    """Deal deck[start:start+count] from the seat after the dealer, one or three at a time (A4.2)."""
    first = st[t, DEALER] + 1
    for k in range(count):
        seat = (first + k // batch) % N_SEATS
        bs[t, HAND + seat] |= _bit(deck[t, start + k])


@njit(cache=True, nogil=True)
def _start_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev):
    """A4-A5: a fresh deck, six cards each from the seat after the dealer, then the kick."""
    d = st[t, NEXT_DECK]
    if d < n_given[t]:
        deck[t] = given[t, d]
    else:
        shuffle(rng, t, deck[t])
    st[t, NEXT_DECK] = d + 1
    st[t, DEAL_NUMBER] += 1
    for i in range(N_SETS):
        bs[t, i] = 0
    trick_no[t] = 0
    _deal_cards(st, bs, deck, t, 0, CARDS_DEALT, params[P_DEAL_BATCH])
    st[t, NEXT_CARD] = CARDS_DEALT
    st[t, KICK] = st[t, TRUMP] = -1
    st[t, STOOD] = st[t, BEGGED] = st[t, GAVE_ONE_DONE] = st[t, RAN] = 0
    st[t, GAME0] = st[t, GAME1] = 0
    st[t, TRICK_LEN] = 0
    st[t, LEADER] = st[t, LED_SUIT] = st[t, WIN_CARD] = st[t, WIN_SEAT] = -1
    st[t, TRICKS_PLAYED] = st[t, N_TRICKS] = 0
    st[t, PHASE] = STAND_OR_BEG
    st[t, CURRENT] = -1
    _event(ev, n_ev, t, E_DEAL, st[t, DEALER], -1, 0, -1, -1, st[t, DEAL_NUMBER])
    if _turn_kick(st, deck, t, params, kick_points, gained, ev, n_ev):
        return True
    st[t, CURRENT] = (st[t, DEALER] + 1) % N_SEATS  # the beggar
    return False


@njit(cache=True, nogil=True)
def _run_the_pack(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev):
    """A6.5-A6.6: set the kick aside, deal three more each, kick again until the suit changes."""
    begged_suit = st[t, KICK] // N_RANKS
    while True:
        bs[t, KICKS_ASIDE] |= _bit(st[t, KICK])
        st[t, KICK] = -1
        left = N_CARDS - st[t, NEXT_CARD]
        if left >= RUN_CARDS + 1:
            _deal_cards(st, bs, deck, t, st[t, NEXT_CARD], RUN_CARDS, params[P_DEAL_BATCH])
            st[t, NEXT_CARD] += RUN_CARDS
        elif left == 0 or params[P_REDEAL]:
            # same dealer, points kept (A6.6, A3.2)
            _event(ev, n_ev, t, E_REDEAL, st[t, DEALER], -1, 0, -1, -1, -1)
            return _start_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev)
        if _turn_kick(st, deck, t, params, kick_points, gained, ev, n_ev):
            return True
        if st[t, KICK] // N_RANKS != begged_suit:
            _start_play(st, bs, t, st[t, KICK] // N_RANKS, ev, n_ev)
            return False


# ---------------------------------------------------------------- trick play (A7)


@njit(cache=True, nogil=True)
def _start_play(st, bs, t, trump, ev, n_ev):
    """Fix the trump and take the A8.2 snapshot of who holds High, Low and the Jack."""
    st[t, TRUMP] = trump
    _event(ev, n_ev, t, E_TRUMP, -1, -1, 0, -1, trump, -1)
    in_hands = (bs[t, HAND] | bs[t, HAND + 1] | bs[t, HAND + 2] | bs[t, HAND + 3]) & _SUIT_BITS[trump]
    bs[t, TRUMPS_IN_HANDS] = in_hands
    st[t, HIGH_CARD] = st[t, LOW_CARD] = st[t, JACK_CARD] = -1
    st[t, HIGH_HOLDER] = st[t, LOW_HOLDER] = st[t, JACK_HOLDER] = st[t, JACK_WINNER] = -1
    if in_hands:
        high, low, jack = highest(in_hands), lowest(in_hands), trump * N_RANKS + RANK_JACK
        st[t, HIGH_CARD], st[t, LOW_CARD] = high, low
        for seat in range(N_SEATS):
            hand = bs[t, HAND + seat]
            if hand & _bit(high):
                st[t, HIGH_HOLDER] = seat
            if hand & _bit(low):
                st[t, LOW_HOLDER] = seat
            if hand & _bit(jack):
                st[t, JACK_HOLDER], st[t, JACK_CARD] = seat, jack
    st[t, N_TRICKS] = popcount(bs[t, HAND])
    st[t, PHASE] = PLAY
    st[t, LEADER] = st[t, CURRENT] = (st[t, DEALER] + 1) % N_SEATS


@njit(cache=True, nogil=True)
def _play(st, bs, deck, trick_no, given, n_given, rng, t, card, params, kick_points, gained, ev, n_ev):
    seat = st[t, CURRENT]
    bit = _bit(card)
    bs[t, HAND + seat] ^= bit
    bs[t, PLAYED + seat] |= bit
    _event(ev, n_ev, t, E_PLAYED, seat, -1, 0, card, -1, -1)
    trick_no[t, card] = st[t, TRICKS_PLAYED] + 1
    suit = card // N_RANKS
    n = st[t, TRICK_LEN]
    if n == 0:
        bs[t, LED] |= bit
        st[t, LED_SUIT], st[t, WIN_CARD], st[t, WIN_SEAT] = suit, card, seat
    else:
        win_suit = st[t, WIN_CARD] // N_RANKS
        if suit == win_suit:
            if card > st[t, WIN_CARD]:
                st[t, WIN_CARD], st[t, WIN_SEAT] = card, seat
        elif suit == st[t, TRUMP]:  # first trump in the trick
            st[t, WIN_CARD], st[t, WIN_SEAT] = card, seat
    st[t, TRICK_CARDS + n] = card
    st[t, TRICK_LEN] = n + 1
    if n + 1 < N_SEATS:
        st[t, CURRENT] = (seat + 1) % N_SEATS
        return False
    # A7.5: the trick is complete.
    winner = st[t, WIN_SEAT]
    team = winner % 2
    bits = np.uint64(0)
    for i in range(N_SEATS):
        c = st[t, TRICK_CARDS + i]
        bits |= _bit(c)
        st[t, GAME0 + team] += _GAME_VALUE[c]
    bs[t, WON + team] |= bits
    if st[t, JACK_CARD] >= 0 and bits & _bit(st[t, JACK_CARD]):
        st[t, JACK_WINNER] = winner
    _event(ev, n_ev, t, E_TRICK, winner, team, 0, st[t, WIN_CARD], -1, -1)
    st[t, TRICK_LEN] = 0
    st[t, TRICKS_PLAYED] += 1
    st[t, LEADER] = st[t, CURRENT] = winner
    if st[t, TRICKS_PLAYED] == st[t, N_TRICKS]:
        return _score_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev)
    return False


# ---------------------------------------------------------------- scoring (A8, A9)


@njit(cache=True, nogil=True)
def _score_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev):
    """A8.3: High, Low, Jack, Game in this order, the match ending at the first to the target."""
    if bs[t, TRUMPS_IN_HANDS]:
        high = st[t, HIGH_HOLDER]
        if _award(st, t, high % 2, 1, params, gained, ev, n_ev, E_HIGH, high, st[t, HIGH_CARD]):
            return True
        if st[t, LOW_CARD] != st[t, HIGH_CARD] or params[P_SINGLE_TRUMP_BOTH]:
            low = st[t, LOW_HOLDER]
            if _award(st, t, low % 2, 1, params, gained, ev, n_ev, E_LOW, low, st[t, LOW_CARD]):
                return True
        if st[t, JACK_HOLDER] >= 0:
            holder, winner, jack = st[t, JACK_HOLDER], st[t, JACK_WINNER], st[t, JACK_CARD]
            if winner % 2 == holder % 2:
                if _award(st, t, holder % 2, 1, params, gained, ev, n_ev, E_JACK, holder, jack):
                    return True
            elif _award(st, t, winner % 2, params[P_HANG], params, gained, ev, n_ev, E_HANG_JACK, winner, jack):
                return True
    g0, g1 = st[t, GAME0], st[t, GAME1]
    if g0 != g1:
        if _award(st, t, 0 if g0 > g1 else 1, params[P_GAME_POINTS], params, gained, ev, n_ev, E_GAME, -1, -1):
            return True
    elif g0 > 0 and params[P_GAME_TIE] != TIE_NONE:
        dealer_team = st[t, DEALER] % 2
        team = dealer_team if params[P_GAME_TIE] == TIE_DEALER else 1 - dealer_team
        if _award(st, t, team, params[P_GAME_POINTS], params, gained, ev, n_ev, E_GAME, -1, -1):
            return True
    _event(ev, n_ev, t, E_DEAL_END, st[t, DEALER], -1, 0, -1, -1, st[t, DEAL_NUMBER])
    st[t, CURRENT] = -1
    if params[P_DEAL_EPISODE]:
        st[t, PHASE] = DEAL_OVER
        return False
    st[t, DEALER] = (st[t, DEALER] + 1) % N_SEATS
    return _start_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev)


# ---------------------------------------------------------------- legal actions per phase


@njit(cache=True, nogil=True)
def legal_cards(hand, trick_len, led, trump, win_card, undertrump):
    """The cards of ``hand`` (a bit set) that may be played to a trick of ``trick_len`` cards so
    far, led suit ``led``, best card ``win_card`` (A7.2-A7.4)."""
    if trick_len == 0:
        return hand  # A7.2: any lead
    trump_mask = _SUIT_BITS[trump]
    if led == trump:
        trumps = hand & trump_mask
        return trumps if trumps else hand  # A7.3: follow trump if able
    follow = hand & _SUIT_BITS[led]
    legal = (follow | (hand & trump_mask)) if follow else hand  # void: anything, trumping optional
    if undertrump != UNDER_ALLOWED and win_card // N_RANKS == trump:  # A7.4
        under = hand & trump_mask & (_bit(win_card) - _ONE)  # trumps below the best one played
        blocked = follow if undertrump == UNDER_WHEN_CAN_FOLLOW else hand & ~trump_mask
        if under and blocked:
            legal &= ~under
    return legal


@njit(cache=True, nogil=True)
def legal_bits(st, bs, t, params):
    """Legal actions of table t as a bit set over action ids 0..55 (0 when it is over)."""
    phase = st[t, PHASE]
    if phase == PLAY:
        hand = bs[t, HAND + st[t, CURRENT]]
        return legal_cards(hand, st[t, TRICK_LEN], st[t, LED_SUIT], st[t, TRUMP], st[t, WIN_CARD], params[P_UNDERTRUMP])
    if phase == STAND_OR_BEG:
        if params[P_STAND_NEEDS_TRUMP] and not bs[t, HAND + st[t, CURRENT]] & _SUIT_BITS[st[t, KICK] // N_RANKS]:
            return _bit(BEG)
        return _bit(STAND) | _bit(BEG)
    if phase == GIVE_OR_RUN:
        give = True
        beggar_team = (st[t, DEALER] + 1) % 2
        if not params[P_GIVE_TO_TARGET] and st[t, SCORE0 + beggar_team] + 1 >= params[P_TARGET]:
            give = False  # A6.8: the point would end the match, the dealer must run
        if params[P_GIVE_NEEDS_TRUMP] and not bs[t, HAND + st[t, CURRENT]] & _SUIT_BITS[st[t, KICK] // N_RANKS]:
            give = False
        return (_bit(RUN) | _bit(GIVE_ONE)) if give else _bit(RUN)
    return np.uint64(0)


# ---------------------------------------------------------------- apply


@njit(cache=True, nogil=True)
def apply_action(st, bs, deck, trick_no, given, n_given, rng, t, action, params, kick_points, gained, ev, n_ev):
    """Apply the legal ``action`` of table t's seat to act (:func:`step_all`'s body, for compiled
    players that step their tables themselves)."""
    if action < N_CARDS:
        _play(st, bs, deck, trick_no, given, n_given, rng, t, action, params, kick_points, gained, ev, n_ev)
    elif action == STAND:
        st[t, STOOD] = 1
        _event(ev, n_ev, t, E_STOOD, st[t, CURRENT], -1, 0, -1, -1, -1)
        _start_play(st, bs, t, st[t, KICK] // N_RANKS, ev, n_ev)
    elif action == BEG:
        st[t, BEGGED] = 1
        _event(ev, n_ev, t, E_BEGGED, st[t, CURRENT], -1, 0, -1, -1, -1)
        st[t, PHASE] = GIVE_OR_RUN
        st[t, CURRENT] = st[t, DEALER]
    elif action == GIVE_ONE:
        st[t, GAVE_ONE_DONE] = 1
        dealer = st[t, DEALER]
        if not _award(st, t, (dealer + 1) % 2, 1, params, gained, ev, n_ev, E_GAVE_ONE, dealer, -1):
            _start_play(st, bs, t, st[t, KICK] // N_RANKS, ev, n_ev)
    else:
        st[t, RAN] = 1
        _event(ev, n_ev, t, E_RAN, st[t, CURRENT], -1, 0, -1, -1, -1)
        _run_the_pack(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev)


# ---------------------------------------------------------------- loops over the tables


@njit(cache=True, nogil=True)
def start_matches(st, bs, deck, trick_no, given, n_given, dealers, scores, rng, tables, params, kick_points, gained, ev, n_ev):
    """Start a match at every table with ``tables[t]``: its scores, its first dealer."""
    for t in range(st.shape[0]):
        if not tables[t]:
            continue
        st[t] = -1
        n_ev[t] = 0
        st[t, SCORE0], st[t, SCORE1] = scores[t, 0], scores[t, 1]
        st[t, DEAL_NUMBER] = st[t, NEXT_DECK] = 0
        st[t, DEALER] = dealers[t]
        _start_deal(st, bs, deck, trick_no, given, n_given, rng, t, params, kick_points, gained, ev, n_ev)


@njit(cache=True, nogil=True)
def first_illegal(st, bs, actions, active, params):
    """The first live active table whose action is not legal, or -1 if every action is."""
    for t in range(st.shape[0]):
        if st[t, PHASE] >= DEAL_OVER or not active[t]:
            continue
        a = actions[t]
        if a < 0 or a >= 64 or not legal_bits(st, bs, t, params) & _bit(a):
            return t
    return -1


@njit(cache=True, nogil=True)
def step_all(st, bs, deck, trick_no, given, n_given, rng, actions, active, params, kick_points, gained, ev, n_ev):
    """Apply ``actions[t]`` at every live table where ``active[t]`` (all already checked legal);
    ``n_ev`` counts the events of this step at each table that moved."""
    gained[:] = 0
    for t in range(st.shape[0]):
        if st[t, PHASE] < DEAL_OVER and active[t]:
            n_ev[t] = 0
            apply_action(st, bs, deck, trick_no, given, n_given, rng, t, actions[t], params, kick_points, gained, ev, n_ev)


@njit(cache=True, nogil=True)
def step_one(st, bs, deck, trick_no, given, n_given, rng, t, action, params, kick_points, gained, ev, n_ev):
    """:func:`step_all` at table t alone, its live seat's ``action`` checked legal (what a one-table
    view calls: two arrays fewer to pass than step_all's). Returns the number of events recorded."""
    gained[t, 0] = gained[t, 1] = 0
    n_ev[t] = 0
    apply_action(st, bs, deck, trick_no, given, n_given, rng, t, action, params, kick_points, gained, ev, n_ev)
    return n_ev[t]


@njit(cache=True, nogil=True)
def legal_masks(st, bs, params, out):
    """out[t, a] = whether action a is legal at table t (bool, all False when it is over)."""
    for t in range(st.shape[0]):
        bits = legal_bits(st, bs, t, params)
        for a in range(out.shape[1]):
            out[t, a] = (bits >> np.uint64(a)) & _ONE != 0


@njit(cache=True, nogil=True)
def _set_bits(row, offset, bits):
    while bits:
        low = lowest(bits)
        row[offset + low] = 1.0
        bits &= bits - _ONE


@njit(cache=True, nogil=True)
def observe_row(st, bs, trick_no, t, s, params, rules_block, row):
    """row[:] = the observation of seat ``s`` at table t: the layout of allfours_env.observation,
    written here and nowhere else; ``rules_block``: its rules piece (observation.rules_block)."""
    target = params[P_TARGET]
    row[:N_FLAGS] = 0.0
    _set_bits(row, 0, bs[t, HAND + s])
    if st[t, KICK] >= 0:
        row[_O_KICK + st[t, KICK]] = 1.0
    _set_bits(row, _O_KICKS_ASIDE, bs[t, KICKS_ASIDE])
    rel = (st[t, LEADER] - s) % N_SEATS
    for i in range(st[t, TRICK_LEN]):
        row[_O_TABLE + rel * N_CARDS + st[t, TRICK_CARDS + i]] = 1.0
        rel = (rel + 1) % N_SEATS
    for r in range(N_SEATS):
        _set_bits(row, _O_PLAYED + r * N_CARDS, bs[t, PLAYED + (s + r) % N_SEATS])
    _set_bits(row, _O_LED, bs[t, LED])
    for c in range(N_CARDS):
        number = trick_no[t, c]
        for b in range(4):
            if number >> b & 1:
                row[_O_TRICK_NUMBER + 4 * c + b] = 1.0
    team = s % 2
    _set_bits(row, _O_WON, bs[t, WON + team])
    _set_bits(row, _O_WON + N_CARDS, bs[t, WON + 1 - team])
    if st[t, TRUMP] >= 0:
        row[_O_TRUMP + st[t, TRUMP]] = 1.0
    phase = st[t, PHASE]
    row[_O_PHASE + _PHASE_SLOT[phase]] = 1.0
    dealer_rel = (st[t, DEALER] - s) % N_SEATS
    row[_O_DEALER + dealer_rel] = 1.0
    row[_O_BEGGAR + (dealer_rel + 1) % N_SEATS] = 1.0
    if phase == PLAY:
        row[_O_LEADER + (st[t, LEADER] - s) % N_SEATS] = 1.0
    row[_O_PARTNER + _PARTNER_SEAT] = 1.0
    for i in range(4):
        row[_O_DECISIONS + i] = st[t, STOOD + i]
    row[_O_SCORES] = min(st[t, SCORE0 + team] / target, 1.0)
    row[_O_SCORES + 1] = min(st[t, SCORE0 + 1 - team] / target, 1.0)
    row[_O_SCORES + 2] = 1.0 / target
    row[_O_SCORES + 3] = st[t, GAME0 + team] / TOTAL_GAME_VALUE
    row[_O_SCORES + 4] = st[t, GAME0 + 1 - team] / TOTAL_GAME_VALUE
    row[_O_RULES : _O_RULES + len(rules_block)] = rules_block


@njit(cache=True, nogil=True)
def observe_all(st, bs, trick_no, seats, params, rules_block, out):
    """out[t] = the observation of seat ``seats[t]`` at table t (see :func:`observe_row`)."""
    for t in range(st.shape[0]):
        observe_row(st, bs, trick_no, t, seats[t], params, rules_block, out[t])


@njit(cache=True, nogil=True)
def observe_one(st, bs, trick_no, t, seat, params, rules_block, row, mask):
    """row[:] = seat's observation at table t, and mask[:] (int8, 56) its legal actions if it is
    the seat to act (else all 0): what a one-table view hands to a player, in one call. Returns
    the mask's bits."""
    observe_row(st, bs, trick_no, t, seat, params, rules_block, row)
    bits = legal_bits(st, bs, t, params) if st[t, CURRENT] == seat else np.uint64(0)
    for a in range(mask.shape[0]):
        mask[a] = (bits >> np.uint64(a)) & _ONE
    return bits


@njit(cache=True, nogil=True)
def sample_legal_all(st, bs, params, uniforms, out):
    """out[t] = the legal action of rank floor(uniforms[t] * count) at table t (0 when it is over)."""
    for t in range(st.shape[0]):
        bits = legal_bits(st, bs, t, params)
        out[t] = 0
        if bits:
            for _ in range(np.int64(uniforms[t] * popcount(bits))):
                bits &= bits - _ONE
            out[t] = lowest(bits)


# The kernels compile in constants of actions, cards and observation: a change there must
# recompile them (and any kernel elsewhere that compiles these in).
COMPILED_IN = (actions, cards, observation)
cache_depends_on(kernels_of(__name__), COMPILED_IN)
