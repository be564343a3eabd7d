"""A stronger heuristic bot: card counting, void reading, expected points and the match score.

Only Jack and Game depend on the card play (High and Low belong to whoever was dealt them), so
each legal card is scored by what it is expected to win or lose in this trick (Game value and
the jack, with the chance that a later player takes the trick from the count of unseen cards
and the voids shown) minus what the card is worth kept for later. Points are weighed by what
they do to the chance of winning the match (a small model of the match, :func:`_equity`), so
near the target every award counts for what it is worth. Stand/beg and give/run compare the
chance of winning the match after each option, from a fitted estimate of what the hand makes.
The rule variant comes from the observation (``view.rules``): the hang-jack and Game points, who
takes a Game tie, whether the dealer needs a trump to give one. The other variants reach the bot
through the action mask (what is legal) or move its estimates too little to be modelled (the
kick points of both variants have the same distribution; a lone trump, an exhausted pack).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from allfours_env import BEG, GIVE_ONE, RUN, STAND, Rules, View
from allfours_env.cards import (
    CARD_GAME_VALUE,
    N_RANKS,
    N_SEATS,
    N_SUITS,
    RANK_JACK,
    RANK_TEN,
    SUIT_MASK,
    cards_of,
)

from .hand_reading import (
    NEXT,
    PARTNER,
    PREVIOUS,
    SELF,
    TENS,
    Trick,
    above,
    beats,
    beaters,
    below,
    cards_left,
    game_value,
    highest,
    is_ours,
    lowest,
    PhaseBot,
    read_trick,
    trump_jack,
    unseen,
    voids,
)

# A Jack saved by its holder's team scores 1 under every variant (A8.3); the hang jack and
# Game points are variants, read from ``view.rules``.
JACK_POINTS = 1
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

# The match model: a deal as awards in scoring order, each to my team with chance p (High,
# Low, Game), the jack in play about half the time and saved by its holder's team mostly.
# Points a run's kicks bring, mean 0.62. The same under both kick_points variants: each gives
# one rank 1 point, one 2 and one 3 (tested).
KICK_CHANCES = ((0, 0.69), (1, 0.103), (2, 0.103), (3, 0.104))
JACK_IN_PLAY = 0.47
JACK_SAVED = 0.8
MAX_MODELLED_TARGET = 30  # beyond this the score is far away: points count at face value

# Stand/beg and give/run: the point difference the play of the deal brings, from _bid_features.
# Least-squares fits on deals played each way in expert self-play (default rules), bias first.
STAND_WEIGHTS = (-1.26, 0.31, 0.75, 0.37, 1.67, 0.95, 0.51, 1.19, 0.58, -0.32, 0.06)  # beggar's team, standing
GIVE_WEIGHTS = (-0.09, 0.35, 0.96, 0.22, 1.25, 0.77, 0.49, 0.68, 0.54, 0.23, 0.05)  # dealer's team, giving one
RUN_PLAY = 0.05  # the beggar's team's play difference after a run (kicks apart)
GIVE_PLAY = -2.3  # the beggar's team's play difference when the dealer chose to give one
GIVE_CHANCE = 0.23  # how often a dealer gives one when begged


class _Points(NamedTuple):
    """The points of the awards that rule variants change."""

    hang: int  # hang_jack_points
    game: int  # game_points

    @classmethod
    def of(cls, rules: Rules) -> _Points:
        return cls(rules.hang_jack_points, rules.game_points)


class _Weights(NamedTuple):
    """What one point, a hang jack and the Game point are worth to my team, scaled so one point is about 1."""

    us_one: float
    us_hang: float
    us_game: float
    them_one: float
    them_hang: float
    them_game: float

    @property
    def mean(self) -> float:
        return (self.us_one + self.them_one) / 2.0


def _face_value(points: _Points) -> _Weights:
    return _Weights(1.0, points.hang, points.game, 1.0, points.hang, points.game)


# ---------------------------------------------------------------- the match model

Award = tuple[tuple[float, int, int], ...]  # the options of one award: (chance, my points, their points)


def _play_awards(p: float, points: _Points) -> tuple[Award, ...]:
    """High, Low, Jack and Game when my team wins each with chance ``p``."""
    one = ((p, 1, 0), (1.0 - p, 0, 1))
    in_play, hang = JACK_IN_PLAY, points.hang
    jack = (
        (1.0 - in_play, 0, 0),
        (in_play * p * JACK_SAVED, JACK_POINTS, 0),
        (in_play * p * (1.0 - JACK_SAVED), 0, hang),
        (in_play * (1.0 - p) * JACK_SAVED, 0, JACK_POINTS),
        (in_play * (1.0 - p) * (1.0 - JACK_SAVED), hang, 0),
    )
    game = ((p, points.game, 0), (1.0 - p, 0, points.game))
    return one, one, jack, game


def _kicks(mine: bool) -> Award:
    return tuple((p, k, 0) if mine else (p, 0, k) for k, p in KICK_CHANCES)


def _win_chance(
    mine: int, theirs: int, target: int, awards: tuple[Award, ...], after: Callable[[int, int], float]
) -> float:
    """Chance to win the match with ``awards`` still to come in order, then ``after(mine, theirs)``."""
    if mine >= target:
        return 1.0
    if theirs >= target:
        return 0.0
    if not awards:
        return after(mine, theirs)
    rest = awards[1:]
    return sum(p * _win_chance(mine + x, theirs + y, target, rest, after) for p, x, y in awards[0] if p > 0.0)


@lru_cache(maxsize=4)
def _equity_table(target: int, points: _Points) -> tuple[tuple[float, ...], ...]:
    """Chance to win from each score (mine, theirs) at the start of a deal, the deal equally likely
    to be either team's. Every deal awards High and Low, so scores only grow: fill by falling total."""
    table = [[0.0] * target for _ in range(target)]

    def lookup(mine: int, theirs: int) -> float:
        return table[mine][theirs]

    kicks = tuple((p / 2.0, x, y) for p, x, y in _kicks(True) + _kicks(False))
    deal = (kicks, *_play_awards(0.5, points))
    for total in range(2 * target - 2, -1, -1):
        for mine in range(max(0, total - target + 1), min(total, target - 1) + 1):
            table[mine][total - mine] = _win_chance(mine, total - mine, target, deal, lookup)
    return tuple(tuple(row) for row in table)


def _equity(mine: int, theirs: int, target: int, points: _Points) -> float:
    if mine >= target:
        return 1.0
    if theirs >= target:
        return 0.0
    return _equity_table(target, points)[mine][theirs]


def match_equity(mine: int, theirs: int, rules: Rules) -> float:
    """My team's chance to win the match from the score (mine, theirs) at the start of a deal,
    by the match model above (used by :mod:`agents.search` to score the end of a deal)."""
    return _equity(mine, theirs, rules.target_score, _Points.of(rules))


def _deal_chance(
    scores: tuple[int, int], target: int, points: _Points, first: tuple[Award, ...], play_diff: float
) -> float:
    """Chance to win the match if ``first`` is awarded now and the play brings ``play_diff`` on average."""
    if target > MAX_MODELLED_TARGET:  # the target is far: compare expected points instead
        return play_diff + sum(p * (x - y) for award in first for p, x, y in award)
    # High, Low and Game make up most of the difference; p in whole percents keeps the cache small.
    percent = min(98, max(2, round(50 + play_diff * 100 / 6)))
    return _deal_chance_cached(*scores, target, points, first, percent)


@lru_cache(maxsize=4096)
def _deal_chance_cached(
    mine: int, theirs: int, target: int, points: _Points, first: tuple[Award, ...], percent: int
) -> float:
    awards = first + _play_awards(percent / 100, points)
    return _win_chance(mine, theirs, target, awards, lambda a, b: _equity(a, b, target, points))


@lru_cache(maxsize=1024)
def _point_weights(scores: tuple[int, int], target: int, points: _Points) -> _Weights:
    """How much each award would change my chance to win the match, scaled to about 1 a point."""
    if target > MAX_MODELLED_TARGET:
        return _face_value(points)
    mine, theirs = scores
    now = _equity(mine, theirs, target, points)

    def gain(won: int) -> float:  # what ``won`` points to my team bring
        return _equity(mine + won, theirs, target, points) - now

    def loss(lost: int) -> float:  # what ``lost`` points to theirs cost
        return now - _equity(mine, theirs + lost, target, points)

    gains = _Weights(
        gain(JACK_POINTS), gain(points.hang), gain(points.game), loss(JACK_POINTS), loss(points.hang), loss(points.game)
    )
    scale = gains.mean
    return _Weights(*(g / scale for g in gains)) if scale > 1e-9 else _face_value(points)


# ---------------------------------------------------------------- the bot


class ExpertBot(PhaseBot):
    name = "expert"

    def stand_or_beg(self, view: View, legal: int) -> int:
        return _stand_or_beg(view, legal)

    def give_or_run(self, view: View, legal: int) -> int:
        return _give_or_run(view, legal)

    def play(self, view: View, legal: int) -> int:
        if legal & (legal - 1) == 0:
            return highest(legal)
        table = _read_table(view, view.trump, voids(view, view.trump))
        return max(cards_of(legal), key=lambda c: (_card_value(table, c), -c))


# ---------------------------------------------------------------- card play


@dataclass(frozen=True)
class _Table:
    """What the expert knows in the play phase, read once per decision."""

    trump: int
    jack: int
    hand: int
    out: int  # unseen cards: another hand or the stock
    pools: tuple[int, int, int, int]  # unseen cards each seat may hold (its voids removed)
    share: tuple[float, float, float, float]  # chance a card of its pool is in that seat's hand
    trick: Trick
    game_lead: float  # our captured Game value minus theirs, shifted by who takes a tie
    game_left: float  # Game value still to be played (expected)
    weights: _Weights
    per_unit: float  # worth of one unit of Game value won (slope of the Game chance)

    def p_holds(self, seat: int, bits: int) -> float:
        return 1.0 - _p_none(self.share[seat], (bits & self.pools[seat]).bit_count())


def _p_none(q: float, k: int) -> float:
    """Chance a seat that holds each candidate card with probability ``q`` holds none of ``k``."""
    return (1.0 - q) ** k if k else 1.0


def _spread(game_left: float) -> float:
    return max(MIN_SPREAD, GAME_SPREAD * game_left)


def _game_worth(lead: float, spread: float, weights: _Weights) -> float:
    """Expected worth of the Game point for a Game lead ``lead`` with ``spread`` still to decide."""
    p_win = 0.5 * (1.0 + math.erf(lead / (spread * math.sqrt(2.0))))
    return p_win * weights.us_game - (1.0 - p_win) * weights.them_game


def _tie_lead(view: View) -> float:
    """The Game lead a tie is worth: +TIE_LEAD if a tie goes to my team, -TIE_LEAD if to theirs."""
    tie = view.rules.game_tie
    if tie == "none":
        return 0.0
    dealers_tie = tie == "dealer"
    return TIE_LEAD if is_ours(view.dealer) == dealers_tie else -TIE_LEAD


def _read_table(view: View, trump: int, shown_voids: tuple[int, ...]) -> _Table:
    out = unseen(view)
    left = cards_left(view)
    pools, share = [0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0]
    for seat in range(1, N_SEATS):
        pool = out
        for suit in range(N_SUITS):
            if shown_voids[seat] >> suit & 1:
                pool &= ~SUIT_MASK[suit]
        pools[seat] = pool
        size = pool.bit_count()
        share[seat] = min(1.0, left[seat] / size) if size else 0.0
    n_out = out.bit_count()
    in_hands = sum(left[1:]) / n_out if n_out else 0.0
    game_left = game_value(view.hand_bits) + game_value(out) * in_hands
    lead = view.game_points[0] - view.game_points[1] + _tie_lead(view)
    weights = _point_weights(view.scores, view.target, _Points.of(view.rules))
    spread = _spread(game_left)
    density = math.exp(-0.5 * (lead / spread) ** 2) / (spread * math.sqrt(2.0 * math.pi))
    per_unit = (weights.us_game + weights.them_game) * density
    return _Table(
        trump, trump_jack(trump), view.hand_bits, out, tuple(pools), tuple(share),
        read_trick(view, trump), lead, game_left, weights, per_unit,
    )


def _card_value(table: _Table, card: int) -> float:
    """Expected worth (my team's chance of the match, in points) of playing ``card`` now, less its worth kept."""
    trick, weights = table.trick, table.weights
    p_ours = _p_take(table, card)
    cards = trick.cards | 1 << card
    value = game_value(cards)
    spread = _spread(table.game_left - CARD_GAME_VALUE[card])
    ev = p_ours * _game_worth(table.game_lead + value, spread, weights)
    ev += (1.0 - p_ours) * _game_worth(table.game_lead - value, spread, weights)
    jack = table.jack
    if cards >> jack & 1:
        holder = SELF if card == jack else next(s for s, c in trick.order if c == jack)
        ev += _jack_swing(is_ours(holder), p_ours, weights)
    elif table.out >> jack & 1:
        trump_led = (trick.led_suit if trick.order else card // N_RANKS) == table.trump
        ev += _jack_to_come(table, p_ours, trump_led)
    return ev - _keep_value(table, card)


def _p_take(table: _Table, card: int) -> float:
    """Chance my team takes the trick if I play ``card``, from what the later players may hold.

    Two states are followed: we win (with probability ``p``) or they win. An opponent may move
    us to the second state, my partner the other way; each state keeps the card that wins it
    for most of its probability, a player taking the lead being assumed to use a middling card
    of those that can.
    """
    trump, trick = table.trump, table.trick
    best, winner = trick.best, trick.winner
    if best is None or beats(card, best, trump):
        best, winner = card, SELF
    ours, theirs = (best, None) if is_ours(winner) else (None, best)
    p = 1.0 if ours is not None else 0.0
    for seat in trick.after:
        if seat == PARTNER and theirs is not None:
            rescue = beaters(theirs, trump) & table.pools[seat]
            moved = (1.0 - p) * table.p_holds(seat, rescue)
            if moved > p:
                ours = _typical(rescue, trump)
            p += moved
        elif seat != PARTNER and ours is not None:
            threat = beaters(ours, trump) & table.pools[seat]
            moved = p * table.p_holds(seat, threat)
            if moved > 1.0 - p:
                theirs = _typical(threat, trump)
            p -= moved
    return p


def _typical(bits: int, trump: int) -> int:
    """The middle card of ``bits`` by strength (plain cards below trumps)."""
    trumps = bits & SUIT_MASK[trump]
    plain = bits & ~trumps
    middle = bits.bit_count() // 2
    n_plain = plain.bit_count()
    if middle < n_plain:
        return _nth_lowest(plain, middle)
    return _nth_lowest(trumps, middle - n_plain)


def _nth_lowest(bits: int, n: int) -> int:
    for _ in range(n):
        bits &= bits - 1
    return lowest(bits)


def _jack_swing(ours: bool, p_ours: float, weights: _Weights) -> float:
    """Worth of a trick holding the trump jack: 1 to its holder's team if it takes it, else 3 to the takers."""
    if ours:
        return p_ours * weights.us_one - (1.0 - p_ours) * weights.them_hang
    return p_ours * weights.us_hang - (1.0 - p_ours) * weights.them_one


def _jack_to_come(table: _Table, p_ours: float, trump_led: bool) -> float:
    """The unseen jack may still fall into this trick: a trump lead forces it from a player after
    me who has no other trump. Valued against what it brings if it stays out (``JACK_HOLDER_EDGE``)."""
    if not trump_led:
        return 0.0
    jack, trumps_out, weights = table.jack, table.out & SUIT_MASK[table.trump], table.weights
    edge = JACK_HOLDER_EDGE * weights.mean
    value = 0.0
    for seat in table.trick.after:
        pool = table.pools[seat]
        if pool >> jack & 1:
            share = table.share[seat]
            p_forced = share * _p_none(share, (trumps_out & pool).bit_count() - 1)
            ours = seat == PARTNER
            value += p_forced * (_jack_swing(ours, p_ours, weights) + (-edge if ours else edge))
    return value


def _p_master(table: _Table, card: int) -> float:
    """Chance that no opponent can beat ``card`` if it were led now."""
    threat = beaters(card, table.trump)
    return (1.0 - table.p_holds(NEXT, threat)) * (1.0 - table.p_holds(PREVIOUS, threat))


def _jack_future(table: _Table, hand: int) -> float:
    """What my unplayed jack is expected to bring, given the trumps guarding it in ``hand``."""
    higher = above(table.jack) & table.out
    p_clear = (1.0 - table.p_holds(NEXT, higher)) * (1.0 - table.p_holds(PREVIOUS, higher))
    guards = (hand & SUIT_MASK[table.trump]).bit_count() - 1
    p_safe = p_clear + (1.0 - p_clear) * JACK_ESCAPE[min(guards, len(JACK_ESCAPE) - 1)]
    return p_safe * table.weights.us_one - (1.0 - p_safe) * table.weights.them_hang


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
        p_theirs = table.p_holds(NEXT, 1 << jack) + table.p_holds(PREVIOUS, 1 << jack)
        value += HUNT_VALUE * table.weights.mean * p_theirs
    return value


# ---------------------------------------------------------------- stand or beg, give or run

BID_FEATURES = (
    "trumps",  # how many trumps I hold
    "jack",  # I hold the trump jack
    "trump_ten",  # I hold the ten of trumps (10 for Game)
    "top",  # no unseen trump above my highest: High is mine
    "top_but_one",  # one unseen trump above my highest
    "top_but_two",
    "bottom",  # no unseen trump below my lowest: Low is mine
    "bottom_but_one",
    "bare_jack",  # the jack is my only trump
    "side_tens",  # tens of the other suits
)


def _bid_features(hand: int, kick: int) -> tuple[int, ...]:
    """The features of BID_FEATURES for ``hand`` with the kick's suit as trump."""
    suit = kick // N_RANKS
    trumps = hand & SUIT_MASK[suit]
    unseen_trumps = SUIT_MASK[suit] & ~trumps & ~(1 << kick)
    jack = suit * N_RANKS + RANK_JACK
    if trumps:
        over = (above(highest(trumps)) & unseen_trumps).bit_count()
        under = (below(lowest(trumps)) & unseen_trumps).bit_count()
    else:
        over = under = N_RANKS
    return (
        trumps.bit_count(),
        trumps >> jack & 1,
        trumps >> (suit * N_RANKS + RANK_TEN) & 1,
        bool(trumps) and over == 0,
        over == 1,
        over == 2,
        bool(trumps) and under == 0,
        under == 1,
        trumps == 1 << jack,
        (hand & ~trumps & TENS).bit_count(),
    )


def _bid_value(weights: tuple[float, ...], hand: int, kick: int) -> float:
    return weights[0] + sum(w * f for w, f in zip(weights[1:], _bid_features(hand, kick)))


def _stand_or_beg(view: View, legal: int) -> int:
    """Stand when that leaves my team the better chance of the match than begging."""
    scores, target, points = view.scores, view.target, _Points.of(view.rules)
    stand = _deal_chance(scores, target, points, (), _bid_value(STAND_WEIGHTS, view.hand_bits, view.kick))
    run = _deal_chance(scores, target, points, (_kicks(False),), RUN_PLAY)
    beg = run
    # A point that would end the match is not given: the default rule forbids it, and a dealer
    # allowed to (give_one_to_reach_target "allowed") would lose the match by giving it.
    if scores[0] + 1 < target:
        give = _deal_chance(scores, target, points, (((1.0, 1, 0),),), GIVE_PLAY)
        give_chance = GIVE_CHANCE * _p_dealer_may_give(view)
        beg = give_chance * give + (1.0 - give_chance) * run
    want = STAND if stand >= beg else BEG
    return want if legal >> want & 1 else STAND + BEG - want  # the other one


def _p_dealer_may_give(view: View) -> float:
    """Chance the dealer is allowed to give one: 1, or with give_one_requires_trump the chance
    that its hand holds a card of the kick's suit (its cards drawn from those I have not seen)."""
    if not view.rules.give_one_requires_trump:
        return 1.0
    out = unseen(view)
    n_out = out.bit_count()
    n_trumps = (out & SUIT_MASK[view.kick // N_RANKS]).bit_count()
    held = cards_left(view)[view.dealer]
    return 1.0 - math.comb(n_out - n_trumps, held) / math.comb(n_out, held)


def _give_or_run(view: View, legal: int) -> int:
    """Give one when keeping this trump is worth more to my team's match than a new one."""
    if not legal >> GIVE_ONE & 1:
        return RUN
    scores, target, points = view.scores, view.target, _Points.of(view.rules)
    give = _deal_chance(scores, target, points, (((1.0, 0, 1),),), _bid_value(GIVE_WEIGHTS, view.hand_bits, view.kick))
    run = _deal_chance(scores, target, points, (_kicks(True),), -RUN_PLAY)
    return GIVE_ONE if give >= run else RUN
