"""A small model of the match: a team's chance to win it from a score, as the expert and search weigh points.

A deal is modelled as its awards in scoring order, each an option list of (chance, my points,
their points): the kicks (dealer's team, :data:`KICK_CHANCES`), High, Low, the Jack (in play
about half the time and saved by its holder's team mostly) and Game, my team taking each of
High, Low, Jack and Game with one chance ``p``. :func:`win_chance` is my chance to win the match
if some awards come now and then the match goes on from the resulting score (a table of chances
at the start of a deal); the match ends at the first award that reaches the target (A9.1).
:func:`equity_table` is that table for equal teams (``p`` = 1/2, the deal equally likely to be
either team's). Beyond :data:`MAX_MODELLED_TARGET` the target is far and points count at face value.

Compiled (numba), without recursion: numba cannot reload a recursive kernel from its disk cache,
so :func:`win_chance` walks the awards with an explicit stack, in the order a recursive sum would.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from .rules import Rules

JACK_POINTS = 1  # a Jack saved by its holder's team scores 1 under every variant (A8.3)
# Points a run's kicks bring, mean 0.62. The same under both kick_points variants: each gives
# one rank 1 point, one 2 and one 3 (tested).
KICK_CHANCES = ((0, 0.69), (1, 0.103), (2, 0.103), (3, 0.104))
JACK_IN_PLAY = 0.47
JACK_SAVED = 0.8
MAX_MODELLED_TARGET = 30  # beyond this the score is far away: points count at face value

MAX_AWARDS = 5  # one award decided now (kicks or a gift), then High, Low, Jack and Game
MAX_OPTIONS = 2 * len(KICK_CHANCES)  # the equity table's kicks: either team's
CHANCE, MINE, THEIRS = 0, 1, 2  # the columns of an option


@njit(cache=True, nogil=True)
def _option(awards: np.ndarray, row: int, i: int, chance: float, mine: int, theirs: int) -> None:
    awards[row, i, CHANCE], awards[row, i, MINE], awards[row, i, THEIRS] = chance, mine, theirs


@njit(cache=True, nogil=True)
def play_awards(awards: np.ndarray, counts: np.ndarray, first: int, p: float, hang: int, game: int) -> int:
    """Write High, Low, Jack and Game, my team winning each with chance ``p``, at award rows
    ``first`` .. ``first + 3`` of ``awards`` (options: chance, my points, their points); returns
    the number of awards written so far."""
    for k in range(2):  # High, Low
        _option(awards, first + k, 0, p, 1, 0)
        _option(awards, first + k, 1, 1.0 - p, 0, 1)
        counts[first + k] = 2
    jack = first + 2
    in_play = JACK_IN_PLAY
    _option(awards, jack, 0, 1.0 - in_play, 0, 0)
    _option(awards, jack, 1, in_play * p * JACK_SAVED, JACK_POINTS, 0)
    _option(awards, jack, 2, in_play * p * (1.0 - JACK_SAVED), 0, hang)
    _option(awards, jack, 3, in_play * (1.0 - p) * JACK_SAVED, 0, JACK_POINTS)
    _option(awards, jack, 4, in_play * (1.0 - p) * (1.0 - JACK_SAVED), hang, 0)
    counts[jack] = 5
    _option(awards, first + 3, 0, p, game, 0)
    _option(awards, first + 3, 1, 1.0 - p, 0, game)
    counts[first + 3] = 2
    return first + 4


@njit(cache=True, nogil=True)
def kick_award(awards: np.ndarray, counts: np.ndarray, row: int, mine: bool, weight: float, start: int) -> None:
    """The kick points of a new kick for my team (``mine``) or theirs, each chance times
    ``weight``, as options ``start`` .. ``start + 3`` of award ``row``."""
    for i in range(len(KICK_CHANCES)):
        points, chance = KICK_CHANCES[i]
        _option(awards, row, start + i, chance * weight, points if mine else 0, 0 if mine else points)
    counts[row] = start + len(KICK_CHANCES)


@njit(cache=True, nogil=True)
def win_chance(
    mine: int, theirs: int, target: int, awards: np.ndarray, counts: np.ndarray, n_awards: int, after: np.ndarray
) -> float:
    """My chance to win the match from (mine, theirs) if awards 0 .. n_awards - 1 come in order,
    then ``after[mine, theirs]`` (a chance, for scores below the target)."""
    if mine >= target:
        return 1.0
    if theirs >= target:
        return 0.0
    if n_awards == 0:
        return after[mine, theirs]
    # the stack of a depth-first walk: per award, the score before it, the next option to try,
    # the sum so far, and the chance of the option that led here
    at_mine = np.empty(n_awards, np.int64)
    at_theirs = np.empty(n_awards, np.int64)
    option = np.zeros(n_awards, np.int64)
    total = np.zeros(n_awards)
    chance_in = np.empty(n_awards)
    level = 0
    at_mine[0], at_theirs[0] = mine, theirs
    while True:
        if option[level] < counts[level]:
            i = option[level]
            option[level] += 1
            p = awards[level, i, CHANCE]
            if not p > 0.0:
                continue
            m = at_mine[level] + np.int64(awards[level, i, MINE])
            t = at_theirs[level] + np.int64(awards[level, i, THEIRS])
            if m >= target:
                value = 1.0
            elif t >= target:
                value = 0.0
            elif level + 1 == n_awards:
                value = after[m, t]
            else:  # go down: this option's own awards first
                level += 1
                at_mine[level], at_theirs[level] = m, t
                option[level], total[level], chance_in[level] = 0, 0.0, p
                continue
            total[level] += p * value
        else:  # this award's options are all summed
            if level == 0:
                return total[0]
            value = total[level]
            p = chance_in[level]
            level -= 1
            total[level] += p * value


@njit(cache=True, nogil=True)
def _fill_equity(target: int, hang: int, game: int, table: np.ndarray) -> None:
    awards = np.zeros((MAX_AWARDS, MAX_OPTIONS, 3))
    counts = np.zeros(MAX_AWARDS, np.int64)
    kick_award(awards, counts, 0, True, 0.5, 0)  # the deal equally likely to be either team's
    kick_award(awards, counts, 0, False, 0.5, len(KICK_CHANCES))
    n_awards = play_awards(awards, counts, 1, 0.5, hang, game)
    # every deal awards High and Low, so scores only grow: fill by falling total
    for total in range(2 * target - 2, -1, -1):
        for mine in range(max(0, total - target + 1), min(total, target - 1) + 1):
            table[mine, total - mine] = win_chance(mine, total - mine, target, awards, counts, n_awards, table)


@lru_cache(maxsize=8)
def _equity_cached(target: int, hang: int, game: int) -> np.ndarray:
    table = np.zeros((target, target))
    _fill_equity(target, hang, game, table)
    table.setflags(write=False)
    return table


def equity_table(rules: Rules) -> np.ndarray:
    """float64 (target, target): my team's chance to win from each score at the start of a deal;
    a 1 x 1 dummy beyond MAX_MODELLED_TARGET, where the compiled users count points instead."""
    if rules.target_score > MAX_MODELLED_TARGET:
        return np.zeros((1, 1))
    return _equity_cached(rules.target_score, rules.hang_jack_points, rules.game_points)


def match_equity(mine: int, theirs: int, rules: Rules) -> float:
    """My team's chance to win the match from the score (mine, theirs) at the start of a deal
    (target at most MAX_MODELLED_TARGET)."""
    if mine >= rules.target_score:
        return 1.0
    if theirs >= rules.target_score:
        return 0.0
    return float(equity_table(rules)[mine, theirs])
