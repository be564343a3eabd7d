"""A stronger heuristic bot: card counting, void reading, expected points and the match score.

Only Jack and Game depend on the card play (High and Low belong to whoever was dealt them), so
each legal card is scored by what it is expected to win or lose in this trick (Game value and
the jack, with the chance that a later player takes the trick from the count of unseen cards
and the voids shown) minus what the card is worth kept for later. Points are weighed by what
they do to the chance of winning the match (:mod:`allfours_env.match_model`), so near the target
every award counts for what it is worth. Stand/beg and give/run compare the chance of winning
the match after each option, from a fitted estimate of what the hand makes. The rule variant
comes from the observation's rules block: the hang-jack and Game points, who takes a Game tie,
whether the dealer needs a trump to give one. The other variants reach the bot through the
action mask (what is legal) or move its estimates too little to be modelled (the kick points of
both variants have the same distribution; a lone trump, an exhausted pack).

The reasoning is compiled (numba) and reads observation rows (:mod:`agents.rows`), so one
implementation serves a single decision (:class:`ExpertBot`), every table of the vector engine
at once (:func:`expert_actions`: training's opponents, search's rollouts) and the worth of each
card (:func:`card_values`: the policy features, search's inference). Seats are relative to the
observer, as in the observation: 0 self, 1 next, 2 partner, 3 previous.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from allfours_env import BEG, GIVE_ONE, RUN, STAND, decode
from allfours_env import vector_kernels as kernels
from allfours_env.cards import (
    CARD_GAME_VALUE,
    FULL_DECK,
    N_CARDS,
    N_RANKS,
    N_SEATS,
    RANK_JACK,
    RANK_TEN,
    SUIT_MASK,
    beats,
)
from allfours_env import match_model
from allfours_env.match_model import JACK_POINTS, KICK_CHANCES, MAX_AWARDS, MAX_MODELLED_TARGET, MAX_OPTIONS
from allfours_env.numba_ints import cache_depends_on, kernels_of
from allfours_env.observation import OBS_SIZE
from allfours_env.vector import VectorGame

from . import hand_reading, rows
from .base import Observation
from .hand_reading import (
    NEXT,
    PARTNER,
    PREVIOUS,
    SELF,
    TENS,
    TRICK_SLOTS,
    above,
    beaters,
    below,
    game_value,
    highest,
    lowest,
    voids_shown,
    winning_play,
)
from .rows import GIVE_OR_RUN, PLAY, STAND_OR_BEG, TIE_DEALER, TIE_NONE

# Game values are whole numbers: a Game tie that goes to my team (``game_tie``) counts as a
# lead of half a unit, one that goes to theirs as half a unit behind.
TIE_LEAD = 0.5

# Card play. Game values are in units of the Game count (10 = 10, A = 4, ...).
WIN_TRICK_VALUE = 16.0  # Game value a future trick taken by a kept winner is expected to bring
KEEP_HOME = 0.45  # chance a kept card that cannot win by itself still ends in our tricks
# Chance a kept jack still finds a safe trick while an opponent holds a higher trump, by the
# number of other trumps guarding it (measured in rule_based self-play).
JACK_ESCAPE = (0.4, 0.7, 0.85, 0.95)
JACK_HOLDER_EDGE = 0.2  # points a jack still out is worth to its holder's team
HUNT_VALUE = 0.5  # points a trump above the jack is worth while an opponent may hold the jack
GAME_SPREAD = 0.5  # spread of the final Game difference per unit of Game value still to play
MIN_SPREAD = 4.0

# Stand/beg and give/run: the point difference the play of the deal brings, from _bid_value's
# features. Least-squares fits on deals played each way in expert self-play (default rules), bias first.
STAND_WEIGHTS = (-1.26, 0.31, 0.75, 0.37, 1.67, 0.95, 0.51, 1.19, 0.58, -0.32, 0.06)  # beggar's team, standing
GIVE_WEIGHTS = (-0.09, 0.35, 0.96, 0.22, 1.25, 0.77, 0.49, 0.68, 0.54, 0.23, 0.05)  # dealer's team, giving one
RUN_PLAY = 0.05  # the beggar's team's play difference after a run (kicks apart)
GIVE_PLAY = -2.3  # the beggar's team's play difference when the dealer chose to give one
GIVE_CHANCE = 0.23  # how often a dealer gives one when begged

# What is awarded before the play in a bid's outcome (see _deal_chance).
NOTHING, KICKS_MINE, KICKS_THEIRS, GIFT_MINE, GIFT_THEIRS = range(5)
# The worth of awards to my team (_point_weights): one point, a hang jack, the Game point, won or lost.
US_ONE, US_HANG, US_GAME, THEM_ONE, THEM_HANG, THEM_GAME = range(6)
NO_VALUE = -np.inf  # card_values of the cards that may not be played


# ---------------------------------------------------------------- the match model, in points


@njit(cache=True, nogil=True)
def _equity(equity: np.ndarray, mine: int, theirs: int, target: int) -> float:
    if mine >= target:
        return 1.0
    if theirs >= target:
        return 0.0
    return equity[mine, theirs]


@njit(cache=True, nogil=True)
def _point_weights(mine: int, theirs: int, target: int, hang: int, game: int, equity: np.ndarray):
    """How much each award would change my chance to win the match, scaled to about 1 a point
    (indexed by US_ONE ... THEM_GAME); face values where the target is far."""
    face = (1.0, float(hang), float(game), 1.0, float(hang), float(game))
    if target > MAX_MODELLED_TARGET:
        return face
    now = _equity(equity, mine, theirs, target)
    gains = (
        _equity(equity, mine + JACK_POINTS, theirs, target) - now,
        _equity(equity, mine + hang, theirs, target) - now,
        _equity(equity, mine + game, theirs, target) - now,
        now - _equity(equity, mine, theirs + JACK_POINTS, target),
        now - _equity(equity, mine, theirs + hang, target),
        now - _equity(equity, mine, theirs + game, target),
    )
    scale = (gains[US_ONE] + gains[THEM_ONE]) / 2.0
    if not scale > 1e-9:
        return face
    return (
        gains[0] / scale, gains[1] / scale, gains[2] / scale, gains[3] / scale, gains[4] / scale, gains[5] / scale,
    )


@njit(cache=True, nogil=True)
def _deal_chance(
    mine: int, theirs: int, target: int, hang: int, game: int, equity: np.ndarray, first: int, play_diff: float
) -> float:
    """Chance to win the match if ``first`` (NOTHING, KICKS_MINE, ...) is awarded now and the
    play brings ``play_diff`` points on average; where the target is far, the expected points."""
    if target > MAX_MODELLED_TARGET:  # the target is far: compare expected points instead
        now = 0.0
        if first == KICKS_MINE or first == KICKS_THEIRS:
            for i in range(len(KICK_CHANCES)):
                points, chance = KICK_CHANCES[i]
                now += chance * (points if first == KICKS_MINE else -points)
        elif first == GIFT_MINE:
            now = 1.0
        elif first == GIFT_THEIRS:
            now = -1.0
        return play_diff + now
    # High, Low and Game make up most of the difference; whole percents, as the expert was fitted.
    percent = min(98, max(2, round(50 + play_diff * 100 / 6)))
    awards = np.zeros((MAX_AWARDS, MAX_OPTIONS, 3))
    counts = np.zeros(MAX_AWARDS, np.int64)
    n = 0
    if first == KICKS_MINE or first == KICKS_THEIRS:
        match_model.kick_award(awards, counts, 0, first == KICKS_MINE, 1.0, 0)
        n = 1
    elif first == GIFT_MINE or first == GIFT_THEIRS:
        awards[0, 0, match_model.CHANCE] = 1.0
        awards[0, 0, match_model.MINE if first == GIFT_MINE else match_model.THEIRS] = 1
        counts[0] = 1
        n = 1
    n = match_model.play_awards(awards, counts, n, percent / 100, hang, game)
    return match_model.win_chance(mine, theirs, target, awards, counts, n, equity)


# ---------------------------------------------------------------- what the expert knows in play


class _Table(NamedTuple):
    """What the expert reads from the observation in the play phase, once per decision."""

    trump: int
    jack: int
    hand: int
    out: int  # unseen cards: another hand or the stock
    pools: tuple  # (4 ints) unseen cards each seat may hold (its voids removed); 0 for me
    share: tuple  # (4 floats) chance a card of its pool is in that seat's hand
    n_trick: int  # cards in the current trick before mine
    trick_seats: tuple  # (3 ints) who played them, in order
    trick_cards: tuple  # (3 ints) what they played
    best: int  # the card now winning the trick, -1 if none
    winner: int  # the seat now winning it, -1 if none
    game_lead: float  # our captured Game value minus theirs, shifted by who takes a tie
    game_left: float  # Game value still to be played (expected)
    weights: tuple  # (6 floats) _point_weights
    per_unit: float  # worth of one unit of Game value won (slope of the Game chance)


@njit(cache=True, nogil=True)
def _p_none(q: float, k: int) -> float:
    """Chance a seat that holds each candidate card with probability ``q`` holds none of ``k``."""
    return math.pow(1.0 - q, np.float64(k)) if k else 1.0  # a float power, as Python computes it


@njit(cache=True, nogil=True)
def _p_holds(table: _Table, seat: int, bits: int) -> float:
    return 1.0 - _p_none(table.share[seat], (bits & table.pools[seat]).bit_count())


@njit(cache=True, nogil=True)
def _mean(weights) -> float:
    return (weights[US_ONE] + weights[THEM_ONE]) / 2.0


@njit(cache=True, nogil=True)
def _spread(game_left: float) -> float:
    return max(MIN_SPREAD, GAME_SPREAD * game_left)


@njit(cache=True, nogil=True)
def _game_worth(lead: float, spread: float, weights) -> float:
    """Expected worth of the Game point for a Game lead ``lead`` with ``spread`` still to decide."""
    p_win = 0.5 * (1.0 + math.erf(lead / (spread * math.sqrt(2.0))))
    return p_win * weights[US_GAME] - (1.0 - p_win) * weights[THEM_GAME]


@njit(cache=True, nogil=True)
def _tie_lead(game_tie: int, dealer: int) -> float:
    """The Game lead a tie is worth: +TIE_LEAD if a tie goes to my team, -TIE_LEAD if to theirs."""
    if game_tie == TIE_NONE:
        return 0.0
    dealers_tie = game_tie == TIE_DEALER
    return TIE_LEAD if (dealer % 2 == 0) == dealers_tie else -TIE_LEAD


@njit(cache=True, nogil=True)
def _known(row: np.ndarray, played: np.ndarray) -> tuple[int, int, int]:
    """My hand, the unseen cards, and how many cards each seat was dealt; fills ``played``
    (a seat holds what it was dealt less what it played)."""
    hand, _, out = rows.seen(row, played)
    return hand, out, hand.bit_count() + played[SELF].bit_count()


@njit(cache=True, nogil=True)
def _pool(out: int, voids: int) -> int:
    """The unseen cards a seat may hold: ``out`` less the suits it has shown it lacks."""
    for suit in range(4):
        if voids >> suit & 1:
            out &= ~SUIT_MASK[suit]
    return out


@njit(cache=True, nogil=True)
def _share(left: int, pool: int) -> float:
    size = pool.bit_count()
    return min(1.0, left / size) if size else 0.0


# _read_table's working arrays, in one int64 scratch array its callers reuse for every decision
# (allocating them per decision took about a third of its time): the cards each seat played,
# the trick of each card, the voids shown, the lead of each trick, the current trick's seats
# and cards.
_PLAYED, _TRICK_OF, _SHOWN, _LEAD_OF, _TRICK_SEATS, _TRICK_CARDS, SCRATCH_SIZE = np.cumsum(
    [0, N_SEATS, N_CARDS, N_SEATS, TRICK_SLOTS, N_SEATS, N_SEATS]
).tolist()


@njit(cache=True, nogil=True)
def _read_table(row: np.ndarray, equity: np.ndarray, scratch: np.ndarray) -> _Table:
    played = scratch[_PLAYED:_TRICK_OF]
    hand, out, dealt = _known(row, played)
    trump = rows.one_hot(row, rows.TRUMP)
    trick_of = scratch[_TRICK_OF:_SHOWN]
    trick_of[:] = 0
    for s in range(N_SEATS):
        bits = played[s]
        while bits:
            card = lowest(bits)
            trick_of[card] = rows.trick_number(row, card)
            bits &= bits - 1
    shown = scratch[_SHOWN:_LEAD_OF]
    voids_shown(played, rows.cards(row, rows.LED), trick_of, trump, shown, scratch[_LEAD_OF:_TRICK_SEATS])
    left1, left2, left3 = dealt - played[1].bit_count(), dealt - played[2].bit_count(), dealt - played[3].bit_count()
    pools = (0, _pool(out, shown[1]), _pool(out, shown[2]), _pool(out, shown[3]))
    share = (0.0, _share(left1, pools[1]), _share(left2, pools[2]), _share(left3, pools[3]))
    n_out = out.bit_count()
    in_hands = (left1 + left2 + left3) / n_out if n_out else 0.0
    game_left = game_value(hand) + game_value(out) * in_hands

    target = rows.target(row)
    dealer = rows.one_hot(row, rows.DEALER)
    lead = rows.game_points(row, 0) - rows.game_points(row, 1) + _tie_lead(rows.game_tie(row), dealer)
    weights = _point_weights(
        rows.scaled(row, rows.SCORES, target), rows.scaled(row, rows.SCORES + 1, target), target,
        rows.scaled(row, rows.HANG_JACK_POINTS, target), rows.scaled(row, rows.GAME_POINTS_RULE, target), equity,
    )
    spread = _spread(game_left)
    density = math.exp(-0.5 * (lead / spread) ** 2) / (spread * math.sqrt(2.0 * math.pi))
    per_unit = (weights[US_GAME] + weights[THEM_GAME]) * density

    seats, cards = scratch[_TRICK_SEATS:_TRICK_CARDS], scratch[_TRICK_CARDS:SCRATCH_SIZE]
    seats[:] = -1
    cards[:] = -1
    n_trick = rows.current_trick(row, seats, cards)
    win = winning_play(cards[:n_trick], trump)
    return _Table(
        trump, trump * N_RANKS + RANK_JACK, hand, out, pools, share,
        n_trick, (seats[0], seats[1], seats[2]), (cards[0], cards[1], cards[2]),
        cards[win] if win >= 0 else -1, seats[win] if win >= 0 else -1,
        lead, game_left, weights, per_unit,
    )  # fmt: skip


# ---------------------------------------------------------------- card play


@njit(cache=True, nogil=True)
def _card_value(table: _Table, card: int) -> float:
    """Expected worth (my team's chance of the match, in points) of playing ``card`` now, less its worth kept."""
    weights = table.weights
    p_ours = _p_take(table, card)
    cards = 1 << card
    for k in range(table.n_trick):
        cards |= 1 << table.trick_cards[k]
    value = game_value(cards)
    spread = _spread(table.game_left - CARD_GAME_VALUE[card])
    ev = p_ours * _game_worth(table.game_lead + value, spread, weights)
    ev += (1.0 - p_ours) * _game_worth(table.game_lead - value, spread, weights)
    jack = table.jack
    if cards >> jack & 1:
        holder = SELF
        for k in range(table.n_trick):
            if table.trick_cards[k] == jack:
                holder = table.trick_seats[k]
        ev += _jack_swing(holder % 2 == 0, p_ours, weights)
    elif table.out >> jack & 1:
        led = table.trick_cards[0] if table.n_trick else card
        ev += _jack_to_come(table, p_ours, led // N_RANKS == table.trump)
    return ev - _keep_value(table, card)


@njit(cache=True, nogil=True)
def _p_take(table: _Table, card: int) -> float:
    """Chance my team takes the trick if I play ``card``, from what the later players may hold.

    Two states are followed: we win (with probability ``p``) or they win. An opponent may move
    us to the second state, my partner the other way; each state keeps the card that wins it
    for most of its probability, a player taking the lead being assumed to use a middling card
    of those that can. The later players are seats 1 .. 3 - n_trick.
    """
    trump = table.trump
    best, winner = table.best, table.winner
    if best < 0 or beats(card, best, trump):
        best, winner = card, SELF
    ours, theirs = (best, -1) if winner % 2 == 0 else (-1, best)
    p = 1.0 if ours >= 0 else 0.0
    for seat in range(1, N_SEATS - table.n_trick):
        if seat == PARTNER and theirs >= 0:
            rescue = beaters(theirs, trump) & table.pools[seat]
            moved = (1.0 - p) * _p_holds(table, seat, rescue)
            if moved > p:
                ours = _typical(rescue, trump)
            p += moved
        elif seat != PARTNER and ours >= 0:
            threat = beaters(ours, trump) & table.pools[seat]
            moved = p * _p_holds(table, seat, threat)
            if moved > 1.0 - p:
                theirs = _typical(threat, trump)
            p -= moved
    return p


@njit(cache=True, nogil=True)
def _typical(bits: int, trump: int) -> int:
    """The middle card of ``bits`` by strength (plain cards below trumps)."""
    trumps = bits & SUIT_MASK[trump]
    plain = bits & ~trumps
    middle = bits.bit_count() // 2
    n_plain = plain.bit_count()
    if middle < n_plain:
        return _nth_lowest(plain, middle)
    return _nth_lowest(trumps, middle - n_plain)


@njit(cache=True, nogil=True)
def _nth_lowest(bits: int, n: int) -> int:
    for _ in range(n):
        bits &= bits - 1
    return lowest(bits)


@njit(cache=True, nogil=True)
def _jack_swing(ours: bool, p_ours: float, weights) -> float:
    """Worth of a trick holding the trump jack: 1 to its holder's team if it takes it, else 3 to the takers."""
    if ours:
        return p_ours * weights[US_ONE] - (1.0 - p_ours) * weights[THEM_HANG]
    return p_ours * weights[US_HANG] - (1.0 - p_ours) * weights[THEM_ONE]


@njit(cache=True, nogil=True)
def _jack_to_come(table: _Table, p_ours: float, trump_led: bool) -> float:
    """The unseen jack may still fall into this trick: a trump lead forces it from a player after
    me who has no other trump. Valued against what it brings if it stays out (``JACK_HOLDER_EDGE``)."""
    if not trump_led:
        return 0.0
    jack, trumps_out, weights = table.jack, table.out & SUIT_MASK[table.trump], table.weights
    edge = JACK_HOLDER_EDGE * _mean(weights)
    value = 0.0
    for seat in range(1, N_SEATS - table.n_trick):
        pool = table.pools[seat]
        if pool >> jack & 1:
            share = table.share[seat]
            p_forced = share * _p_none(share, (trumps_out & pool).bit_count() - 1)
            ours = seat == PARTNER
            value += p_forced * (_jack_swing(ours, p_ours, weights) + (-edge if ours else edge))
    return value


@njit(cache=True, nogil=True)
def _p_master(table: _Table, card: int) -> float:
    """Chance that no opponent can beat ``card`` if it were led now."""
    threat = beaters(card, table.trump)
    return (1.0 - _p_holds(table, NEXT, threat)) * (1.0 - _p_holds(table, PREVIOUS, threat))


@njit(cache=True, nogil=True)
def _jack_future(table: _Table, hand: int) -> float:
    """What my unplayed jack is expected to bring, given the trumps guarding it in ``hand``."""
    higher = above(table.jack) & table.out
    p_clear = (1.0 - _p_holds(table, NEXT, higher)) * (1.0 - _p_holds(table, PREVIOUS, higher))
    guards = (hand & SUIT_MASK[table.trump]).bit_count() - 1
    p_safe = p_clear + (1.0 - p_clear) * JACK_ESCAPE[min(guards, len(JACK_ESCAPE) - 1)]
    return p_safe * table.weights[US_ONE] - (1.0 - p_safe) * table.weights[THEM_HANG]


@njit(cache=True, nogil=True)
def _keep_value(table: _Table, card: int) -> float:
    """What ``card`` is expected to bring if kept for a later trick."""
    p_win = _p_master(table, card)
    p_home = max(p_win, KEEP_HOME)
    value = table.per_unit * (CARD_GAME_VALUE[card] * (2.0 * p_home - 1.0) + WIN_TRICK_VALUE * p_win)
    if card // N_RANKS != table.trump:
        return value
    jack, hand = table.jack, table.hand
    if card == jack:
        return value + _jack_future(table, hand)
    if hand >> jack & 1:  # a guard of my jack
        return value + _jack_future(table, hand) - _jack_future(table, hand & ~(1 << card))
    if card > jack and table.out >> jack & 1:  # may yet hang their jack
        p_theirs = _p_holds(table, NEXT, 1 << jack) + _p_holds(table, PREVIOUS, 1 << jack)
        value += HUNT_VALUE * _mean(table.weights) * p_theirs
    return value


@njit(cache=True, nogil=True)
def _play(row: np.ndarray, legal: int, equity: np.ndarray, scratch: np.ndarray) -> int:
    """The legal card of the highest worth (ties: the lowest card)."""
    if legal & (legal - 1) == 0:
        return highest(legal)
    table = _read_table(row, equity, scratch)
    choice, best = -1, -np.inf
    bits = legal
    while bits:
        card = lowest(bits)
        bits &= bits - 1
        value = _card_value(table, card)
        if value > best:
            choice, best = card, value
    return choice


# ---------------------------------------------------------------- stand or beg, give or run


@njit(cache=True, nogil=True)
def _bid_value(weights, hand: int, kick: int) -> float:
    """The point difference the play brings with ``hand`` and the kick's suit as trump, by a
    linear fit over: trumps held, the trump jack, the trump ten, High mine (no unseen trump
    above my highest), one or two unseen above it, Low mine, one unseen below my lowest, a bare
    jack, tens of the other suits."""
    suit = kick // N_RANKS
    trumps = hand & SUIT_MASK[suit]
    unseen_trumps = SUIT_MASK[suit] & ~trumps & ~(1 << kick)
    jack = suit * N_RANKS + RANK_JACK
    if trumps:
        over = (above(highest(trumps)) & unseen_trumps).bit_count()
        under = (below(lowest(trumps)) & unseen_trumps).bit_count()
    else:
        over = under = N_RANKS
    features = (
        trumps.bit_count(),
        trumps >> jack & 1,
        trumps >> (suit * N_RANKS + RANK_TEN) & 1,
        int(trumps != 0 and over == 0),
        int(over == 1),
        int(over == 2),
        int(trumps != 0 and under == 0),
        int(under == 1),
        int(trumps == 1 << jack),
        (hand & ~trumps & TENS).bit_count(),
    )
    total = 0.0
    for i in range(len(features)):
        total += weights[i + 1] * features[i]
    return weights[0] + total


@njit(cache=True, nogil=True)
def _comb(n: int, k: int) -> int:
    if k < 0 or k > n:
        return 0
    c = 1
    for i in range(k):
        c = c * (n - i) // (i + 1)
    return c


@njit(cache=True, nogil=True)
def _bid_state(row: np.ndarray):
    """(mine, theirs, target, hang, game, hand, kick) before the play."""
    target = rows.target(row)
    return (
        rows.scaled(row, rows.SCORES, target), rows.scaled(row, rows.SCORES + 1, target), target,
        rows.scaled(row, rows.HANG_JACK_POINTS, target), rows.scaled(row, rows.GAME_POINTS_RULE, target),
        rows.cards(row, rows.HAND), highest(rows.cards(row, rows.KICK)),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _p_dealer_may_give(row: np.ndarray) -> float:
    """Chance the dealer is allowed to give one: 1, or with give_one_requires_trump the chance
    that its hand holds a card of the kick's suit (its cards drawn from those I have not seen)."""
    if not row[rows.GIVE_ONE_REQUIRES_TRUMP] > 0.5:
        return 1.0
    played = np.empty(N_SEATS, np.int64)
    _, out, dealt = _known(row, played)
    kick = highest(rows.cards(row, rows.KICK))
    n_out = out.bit_count()
    n_trumps = (out & SUIT_MASK[kick // N_RANKS]).bit_count()
    held = dealt - played[rows.one_hot(row, rows.DEALER)].bit_count()
    return 1.0 - _comb(n_out - n_trumps, held) / _comb(n_out, held)


@njit(cache=True, nogil=True)
def _stand_margin(row: np.ndarray, equity: np.ndarray) -> float:
    """My team's chance of the match if I stand, less if I beg (points where the target is far)."""
    mine, theirs, target, hang, game, hand, kick = _bid_state(row)
    stand = _deal_chance(mine, theirs, target, hang, game, equity, NOTHING, _bid_value(STAND_WEIGHTS, hand, kick))
    run = _deal_chance(mine, theirs, target, hang, game, equity, KICKS_THEIRS, RUN_PLAY)
    beg = run
    # A point that would end the match is not given: the default rule forbids it, and a dealer
    # allowed to (give_one_to_reach_target "allowed") would lose the match by giving it.
    if mine + 1 < target:
        give = _deal_chance(mine, theirs, target, hang, game, equity, GIFT_MINE, GIVE_PLAY)
        give_chance = GIVE_CHANCE * _p_dealer_may_give(row)
        beg = give_chance * give + (1.0 - give_chance) * run
    return stand - beg


@njit(cache=True, nogil=True)
def _give_margin(row: np.ndarray, equity: np.ndarray) -> float:
    """My team's chance of the match if I give one, less if I run the pack."""
    mine, theirs, target, hang, game, hand, kick = _bid_state(row)
    give = _deal_chance(mine, theirs, target, hang, game, equity, GIFT_THEIRS, _bid_value(GIVE_WEIGHTS, hand, kick))
    run = _deal_chance(mine, theirs, target, hang, game, equity, KICKS_MINE, -RUN_PLAY)
    return give - run


@njit(cache=True, nogil=True)
def _decide(row: np.ndarray, legal: int, equity: np.ndarray, scratch: np.ndarray) -> int:
    """The expert's action; ``scratch``: int64 working space of ``SCRATCH_SIZE``."""
    phase = rows.one_hot(row, rows.PHASE)
    if phase == STAND_OR_BEG:
        want = STAND if _stand_margin(row, equity) >= 0.0 else BEG
        return want if legal >> want & 1 else STAND + BEG - want  # the other one
    if phase == GIVE_OR_RUN:
        if not legal >> GIVE_ONE & 1:
            return RUN
        return GIVE_ONE if _give_margin(row, equity) >= 0.0 else RUN
    return _play(row, legal & FULL_DECK, equity, scratch)


@njit(cache=True, nogil=True)
def _legal_bits(mask: np.ndarray) -> int:
    bits = 0
    for a in range(mask.shape[0]):
        if mask[a]:
            bits |= 1 << a
    return bits


@njit(cache=True, nogil=True)
def _actions_kernel(observations: np.ndarray, masks: np.ndarray, equity: np.ndarray, out: np.ndarray) -> None:
    scratch = np.empty(SCRATCH_SIZE, np.int64)
    for i in range(observations.shape[0]):
        out[i] = _decide(observations[i], _legal_bits(masks[i]), equity, scratch)


@njit(cache=True, nogil=True)
def _values_kernel(observations: np.ndarray, masks: np.ndarray, equity: np.ndarray, out: np.ndarray) -> None:
    scratch = np.empty(SCRATCH_SIZE, np.int64)
    for i in range(observations.shape[0]):
        out[i, :] = NO_VALUE
        row = observations[i]
        phase = rows.one_hot(row, rows.PHASE)
        if phase == PLAY:
            table = _read_table(row, equity, scratch)
            for card in range(N_CARDS):
                if masks[i, card]:
                    out[i, card] = _card_value(table, card)
        elif phase == STAND_OR_BEG:
            if masks[i, STAND]:
                out[i, STAND] = _stand_margin(row, equity)
            if masks[i, BEG]:
                out[i, BEG] = 0.0
        elif phase == GIVE_OR_RUN:
            if masks[i, GIVE_ONE]:
                out[i, GIVE_ONE] = _give_margin(row, equity)
            out[i, RUN] = 0.0


@njit(cache=True, nogil=True)
def _play_kernel(
    st, bs, deck, trick_no, given, n_given, rng, params, kick_points, gained, ev, n_ev, rules_block,
    mine, equity, row, moved,
):  # fmt: skip
    """Play every table while its seat to act is ``mine[t, seat]`` and its next deal would not
    find its queue of given decks used up (tables that deal from their stream never stop for
    that): observe, decide and step as ``_actions_kernel`` and ``VectorGame.step`` would, one table
    at a time. ``gained[t]``: the points of all the table's steps; ``moved[t]``: whether it moved."""
    scratch = np.empty(SCRATCH_SIZE, np.int64)
    for t in range(st.shape[0]):
        gained[t, :] = 0
        moved[t] = False
        while (
            st[t, kernels.PHASE] < kernels.DEAL_OVER
            and mine[t, st[t, kernels.CURRENT]]
            and n_given[t] != st[t, kernels.NEXT_DECK]
        ):
            legal = np.int64(kernels.legal_bits(st, bs, t, params))
            if st[t, kernels.PHASE] == kernels.PLAY and legal & (legal - 1) == 0:
                action = highest(legal)  # a forced card, played as _play plays it, with no row to write
            else:
                kernels.observe_row(st, bs, trick_no, t, st[t, kernels.CURRENT], params, rules_block, row)
                action = _decide(row, legal, equity, scratch)
            n_ev[t] = 0
            kernels.apply_action(
                st, bs, deck, trick_no, given, n_given, rng, t, action, params, kick_points, gained, ev, n_ev
            )
            moved[t] = True


# ---------------------------------------------------------------- batches and the bot


def _by_rules(observations: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Groups of rows that share the match model's rules: (row indices, equity table) each."""
    if len(observations) == 1:
        return [(np.zeros(1, dtype=np.int64), _equity_of(observations[0]))]
    key = np.concatenate([observations[:, part] for part in rows.RULES_KEY], axis=1)
    if (key == key[0]).all():
        return [(np.arange(len(key)), _equity_of(observations[0]))]
    _, group = np.unique(key, axis=0, return_inverse=True)
    group = group.reshape(-1)
    out = []
    for g in range(group.max() + 1):
        where = np.flatnonzero(group == g)
        out.append((where, _equity_of(observations[where[0]])))
    return out


_EQUITY_BY_KEY: dict[bytes, np.ndarray] = {}  # the rules key's bytes (few distinct ones per process)
_EQUITY_BY_GAME_RULES: dict[bytes, np.ndarray] = {}  # a VectorGame's rule arrays' bytes: the same tables


def _equity_of(row: np.ndarray) -> np.ndarray:
    key = b"".join(row[part].tobytes() for part in rows.RULES_KEY)
    equity = _EQUITY_BY_KEY.get(key)
    if equity is None:
        equity = _EQUITY_BY_KEY[key] = match_model.equity_table(decode(row).rules)
    return equity


def _check(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from .features import check_batch  # the same checks as the policy inputs

    check_batch(observations, masks)
    return np.ascontiguousarray(observations), np.ascontiguousarray(masks).astype(np.bool_, copy=False)


def expert_actions(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The expert's action (int64[n]) for n observation rows (float32[n, OBS_SIZE]) and their
    action masks ([n, 56]); row i is ``ExpertBot().act`` of that observation."""
    observations, masks = _check(observations, masks)
    if not masks.any(axis=1).all():
        raise ValueError("no legal action in a mask: that seat is not the one to act")
    out = np.empty(len(observations), dtype=np.int64)
    groups = _by_rules(observations)
    if len(groups) == 1:  # one rule set (the usual case): no copies
        _actions_kernel(observations, masks, groups[0][1], out)
        return out
    for where, equity in groups:
        picked = np.empty(len(where), dtype=np.int64)
        _actions_kernel(observations[where], masks[where], equity, picked)
        out[where] = picked
    return out


def card_values(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """What the expert reads into each legal action (float64[n, 56], ``NO_VALUE`` elsewhere): in
    play each card's worth (points of match equity won in this trick, less its worth kept), at
    stand/beg the margin of standing over begging (in match-win chance; points where the target
    is far) at STAND and 0 at BEG, at give/run the margin of giving over running at GIVE_ONE and
    0 at RUN. The expert plays the argmax (ties: the lowest action id): :func:`expert_actions`."""
    observations, masks = _check(observations, masks)
    out = np.empty((len(observations), masks.shape[1]))
    for where, equity in _by_rules(observations):
        values = np.empty((len(where), masks.shape[1]))
        _values_kernel(observations[where], masks[where], equity, values)
        out[where] = values
    return out


class ExpertBot:
    """The expert as a bot: deterministic and without memory (see the module docstring)."""

    name = "expert"

    def reset(self, seed: int | None = None) -> None:
        """Deterministic and without memory: the seed is not used."""

    def act(self, observation: Observation) -> int:
        obs, mask = observation["observation"], observation["action_mask"]
        return int(expert_actions(obs[None], np.asarray(mask)[None])[0])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` of every row at once (the bot has no memory): :func:`expert_actions`."""
        return expert_actions(observations, masks)

    def play_vector(self, game: VectorGame, seats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play the tables of ``game`` where the seat to act is one of ``seats`` (bool (n, 4)), each
        until another seat is to act, its episode is over or no given deck waits for its next deal
        (``decks_waiting() == 0``; tables dealing from their own stream never stop for that): the
        moves ``act_batch`` would make, without leaving compiled code. Returns the points (int64
        (n, 2)) each team gained at each table and which tables moved (bool (n,))."""
        seats = np.asarray(seats)
        if seats.shape != (game.n, N_SEATS) or seats.dtype != np.bool_:
            raise ValueError(f"seats must be a bool array of shape ({game.n}, {N_SEATS}), got {seats.dtype} {seats.shape}")
        arrays = game.step_arrays()
        key = arrays.params.tobytes() + arrays.rules_block.tobytes()  # one rule set per game
        equity = _EQUITY_BY_GAME_RULES.get(key)
        if equity is None:
            live = np.flatnonzero(~game.is_over)
            if len(live) == 0:
                return np.zeros((game.n, 2), dtype=np.int64), np.zeros(game.n, dtype=bool)
            equity = _EQUITY_BY_GAME_RULES[key] = _equity_of(game.observe(tables=live[:1])[0])
        row = np.empty(OBS_SIZE, dtype=np.float32)
        moved = np.empty(game.n, dtype=bool)
        _play_kernel(*arrays, np.ascontiguousarray(seats), equity, row, moved)
        return arrays.gained.copy(), moved


# The kernels compile in the match model, the row readers, the card reasoning and the engine's
# kernels: a change there recompiles them.
cache_depends_on(kernels_of(__name__), (match_model, rows, hand_reading, kernels, *kernels.COMPILED_IN))
