"""Result dataclasses and how board records add up to them.

Definitions (per pair of bots A, B, over n board pairs):

* board-pair score: the mean of A's two match scores (1 win, 0 loss; in deal-level mode a deal
  with equal points scores 0.5), so 1 when A won both matches, 0.5 for a split, 0 when B won
  both. ``wins``/``splits``/``losses`` count board pairs scoring above / at / below 0.5.
* ``win_rate``: the mean board-pair score; ``win_rate_ci``: its 95% interval from the board-pair
  scores themselves (:func:`eval.stats.pair_score_interval`: most pairs split, so a pair's score
  varies far less than a coin flip and a Wilson interval on n board pairs would be twice too wide).
* ``point_diff_per_deal``: per board pair, A's points minus B's summed over both matches and
  divided by the deals of both matches (a deal cut short by the end of the match counts, and
  so does a redeal); the mean over board pairs with a 95% normal interval (mean ± 1.96 s/√n).
* per bot (:class:`BotStats`): ``award_shares[kind]`` = points of that award kind scored by the
  bot's team / points of that kind scored by both teams (kick points go to the dealer's team,
  give-one points to the beggar's); ``beg_rate`` = begs / times the bot was the beggar;
  ``give_one_rate`` and ``run_rate`` = gave one / ran, over the times the bot as dealer was
  begged (a run forced by the rules counts as a run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from allfours_env.engine import AWARD_KINDS

from .play import DECISION_KINDS, SIDE_A, SIDE_B, BoardRecord
from .stats import mean_interval, pair_score_interval

SPLIT = 0.5  # board-pair score of a split


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else math.nan


def _fields(result: Any, names: Sequence[str]) -> dict[str, Any]:
    """The attributes ``names`` of ``result``, a result of its own (:class:`BotStats`) as its
    ``to_dict()`` (:func:`eval.report.to_json` makes tuples lists, NaN null)."""
    values = {name: getattr(result, name) for name in names}
    return {name: value.to_dict() if hasattr(value, "to_dict") else value for name, value in values.items()}


# What BotStats.to_dict gives, in this order: the shares and rates, the counts they come from, the time
_BOT_STATS_KEYS = (
    "award_shares", "beg_rate", "give_one_rate", "run_rate", "award_points", "award_totals", "decisions", "ms_per_decision",
)  # fmt: skip


@dataclass(frozen=True)
class BotStats:
    """Award points and decision counts of one bot, with the shares and rates derived from them."""

    award_points: dict[str, int]  # points per award kind scored by the bot's team
    award_totals: dict[str, int]  # points per award kind scored by both teams
    decisions: dict[str, int]  # stand, beg (as beggar), give_one, run (as dealer)
    think_seconds: float = field(default=0.0, compare=False)  # time in act(), machine-dependent
    moves: int = field(default=0, compare=False)  # decisions taken

    @property
    def ms_per_decision(self) -> float:
        """Mean time the bot took to choose an action, in milliseconds."""
        return 1000 * self.think_seconds / self.moves if self.moves else math.nan

    @property
    def award_shares(self) -> dict[str, float]:
        return {k: _ratio(self.award_points[k], self.award_totals[k]) for k in AWARD_KINDS}

    @property
    def beg_rate(self) -> float:
        d = self.decisions
        return _ratio(d["beg"], d["stand"] + d["beg"])

    @property
    def give_one_rate(self) -> float:
        d = self.decisions
        return _ratio(d["give_one"], d["give_one"] + d["run"])

    @property
    def run_rate(self) -> float:
        d = self.decisions
        return _ratio(d["run"], d["give_one"] + d["run"])

    def __add__(self, other: BotStats) -> BotStats:
        def add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            return {k: a[k] + b[k] for k in a}

        return BotStats(
            add(self.award_points, other.award_points),
            add(self.award_totals, other.award_totals),
            add(self.decisions, other.decisions),
            self.think_seconds + other.think_seconds,
            self.moves + other.moves,
        )

    def to_dict(self) -> dict[str, Any]:
        return _fields(self, _BOT_STATS_KEYS)


@dataclass(frozen=True)
class PairResult:
    """Duplicate result of bot A against bot B (see the module docstring for the definitions)."""

    bot_a: str
    bot_b: str
    boards: int
    first_board: int
    episode: str  # "match" or "deal"
    wins: int
    splits: int
    losses: int
    win_rate: float
    win_rate_ci: tuple[float, float]
    point_diff_per_deal: float
    point_diff_ci: tuple[float, float]
    matches: int
    deals: int
    stats_a: BotStats
    stats_b: BotStats
    board_scores: tuple[float, ...] = field(repr=False)  # per board pair, in board order
    board_points: tuple[float, ...] = field(repr=False, default=())  # per board pair: points a deal, A's less B's

    def to_dict(self) -> dict[str, Any]:
        """Everything but the per-board figures."""
        return _fields(self, [f.name for f in fields(self) if f.name not in ("board_scores", "board_points")])


@dataclass(frozen=True)
class Rating:
    """Bradley-Terry rating on the Elo scale (mean 0 over the bots) with a 95% bootstrap interval."""

    bot: str
    elo: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class TournamentResult:
    """A round robin: every pair, the cross-table of win rates and (3+ bots) the ratings."""

    bots: tuple[str, ...]
    rules: dict[str, Any]  # rules that differ from the defaults
    pairs: tuple[PairResult, ...]
    ratings: tuple[Rating, ...] | None
    # an interrupted evaluation's result: the boards each pair was to play (each pair's own
    # ``boards`` says how many it did; pairs without a finished board are left out); None: complete
    boards_planned: int | None = None

    @property
    def partial(self) -> bool:
        return self.boards_planned is not None

    @property
    def cross_table(self) -> list[list[float]]:
        """``table[i][j]`` = win rate of bot i against bot j (nan on the diagonal)."""
        index = {name: i for i, name in enumerate(self.bots)}
        table = [[math.nan] * len(self.bots) for _ in self.bots]
        for p in self.pairs:
            i, j = index[p.bot_a], index[p.bot_b]
            table[i][j], table[j][i] = p.win_rate, 1.0 - p.win_rate
        return table

    def bot_stats(self) -> dict[str, BotStats]:
        """Each bot's :class:`BotStats` summed over all its pairs."""
        totals: dict[str, BotStats] = {}
        for p in self.pairs:
            for name, stats in ((p.bot_a, p.stats_a), (p.bot_b, p.stats_b)):
                totals[name] = totals[name] + stats if name in totals else stats
        return {name: totals[name] for name in self.bots if name in totals}  # (a partial result may miss some)


def _bot_stats(records: Sequence[BoardRecord], side: int) -> BotStats:
    points = dict.fromkeys(AWARD_KINDS, 0)
    totals = dict.fromkeys(AWARD_KINDS, 0)
    decisions = dict.fromkeys(DECISION_KINDS, 0)
    think, moves = 0.0, 0
    for record in records:
        for match in record.matches:
            think += match.think_seconds[side]
            moves += match.moves[side]
            for kind, own, other in zip(AWARD_KINDS, match.awards[side], match.awards[1 - side]):
                points[kind] += own
                totals[kind] += own + other
            for kind, count in zip(DECISION_KINDS, match.decisions[side]):
                decisions[kind] += count
    return BotStats(points, totals, decisions, think, moves)


def summarize_pair(bot_a: str, bot_b: str, records: Sequence[BoardRecord], episode: str) -> PairResult:
    """The :class:`PairResult` of one pair's board records (in board order)."""
    scores = tuple(r.score for r in records)
    n = len(scores)
    win_rate = sum(scores) / n
    points = tuple(r.point_diff_per_deal for r in records)
    diff, diff_low, diff_high = mean_interval(points)
    return PairResult(
        bot_a=bot_a,
        bot_b=bot_b,
        boards=n,
        first_board=records[0].board,
        episode=episode,
        wins=sum(s > SPLIT for s in scores),
        splits=sum(s == SPLIT for s in scores),
        losses=sum(s < SPLIT for s in scores),
        win_rate=win_rate,
        win_rate_ci=pair_score_interval(scores),
        point_diff_per_deal=diff,
        point_diff_ci=(diff_low, diff_high),
        matches=sum(len(r.matches) for r in records),
        deals=sum(m.deals for r in records for m in r.matches),
        stats_a=_bot_stats(records, SIDE_A),
        stats_b=_bot_stats(records, SIDE_B),
        board_scores=scores,
        board_points=points,
    )
