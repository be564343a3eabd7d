"""Play one board (two matches, or two deal episodes, with the teams swapped) and record it.

Each match runs the shared match loop (:class:`allfours_env.match.Match`): at each decision the seat
to act gets exactly what the env's ``observe`` returns and nothing else. What the record needs
is read from the engine's event log once the match is over. :func:`play_board` is public
(``eval.play_board``): its hooks see every decision and every event of both matches, for
analyses that need more than the record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import Bot
from allfours_env.cards import N_SEATS
from allfours_env.checks import brief, count, keys, number
from allfours_env.engine import AWARD_KINDS, BEGGED, GAVE_ONE, RAN, STOOD, Game
from allfours_env.match import DecisionHook, EventHook, Match
from allfours_env.rules import DEFAULT_RULES, Rules

from .boards import MATCHES_PER_BOARD, Board, make_board

# Sides of a pair: bot A and bot B (record tuples are indexed by side).
SIDE_A, SIDE_B = 0, 1
N_SIDES = 2
# Decisions counted per side, in this order: the beggar's STAND / BEG, the dealer's GIVE_ONE / RUN.
DECISION_KINDS = (STOOD, BEGGED, GAVE_ONE, RAN)
_AWARD_INDEX = {kind: i for i, kind in enumerate(AWARD_KINDS)}
_DECISION_INDEX = {kind: i for i, kind in enumerate(DECISION_KINDS)}
# Score of one match for A: win, tie (deal episodes only: equal points), loss.
WIN, TIE, LOSS = 1.0, 0.5, 0.0
# Bounds of a record read back (from_json): far above any real match (scores stay under a few
# million points, rules.MAX_POINTS), and small enough that every sum over boards stays exact.
MAX_COUNT = 2**53
MAX_SECONDS = 1e9  # a bot's thinking time in one match: 30 years


def outcome(points: Sequence[int]) -> float:
    """A's score of a match in which A's team scored ``points[0]`` and B's ``points[1]``."""
    return WIN if points[SIDE_A] > points[SIDE_B] else LOSS if points[SIDE_A] < points[SIDE_B] else TIE


@dataclass(frozen=True)
class MatchRecord:
    """One match (or one deal, with deal episodes) of a board, seen from the pair (A, B).

    ``awards[side][k]`` is the points that side's team scored with award kind
    ``AWARD_KINDS[k]``; ``decisions[side][k]`` counts the side's ``DECISION_KINDS[k]``.
    """

    a_team: int
    a_score: float
    points: tuple[int, int]
    deals: int
    awards: tuple[tuple[int, ...], tuple[int, ...]]
    decisions: tuple[tuple[int, ...], tuple[int, ...]]
    # time each side's bots spent choosing, and how many decisions they took (machine-dependent:
    # left out of comparisons, so results stay equal whatever the workers)
    think_seconds: tuple[float, float] = field(default=(0.0, 0.0), compare=False)
    moves: tuple[int, int] = field(default=(0, 0), compare=False)

    @classmethod
    def from_json(cls, data: Any, a_team: int) -> MatchRecord:
        """The match with A on team ``a_team`` from JSON-decoded ``to_json`` data; a ValueError
        naming the first field out of shape or range, or disagreeing with the others."""
        data = keys("a match", data, [f.name for f in dataclasses.fields(cls)])
        if data["a_team"] != a_team or isinstance(data["a_team"], bool):
            raise ValueError(f"a_team must be {a_team} (the match's place on its board), got {brief(data['a_team'])}")
        points = _counts(data["points"], N_SIDES, "points")
        awards = _side_counts(data, "awards", len(AWARD_KINDS))
        for side in range(N_SIDES):
            if sum(awards[side]) != points[side]:
                raise ValueError(f"awards[{side}] add up to {sum(awards[side])}, not to points[{side}] {points[side]}")
        if number("a_score", data["a_score"], 0.0, 1.0) != outcome(points):
            raise ValueError(f"a_score must be {outcome(points)} for points {list(points)}, got {data['a_score']}")
        if count("deals", data["deals"], 0, MAX_COUNT) < 1:
            raise ValueError("deals must be at least 1, got 0")
        think = "think_seconds"
        return cls(
            a_team=a_team,
            a_score=outcome(points),
            points=points,
            deals=data["deals"],
            awards=awards,
            decisions=_side_counts(data, "decisions", len(DECISION_KINDS)),
            think_seconds=tuple(number(think, t, 0.0, MAX_SECONDS) for t in _pair(data[think], think)),
            moves=_counts(data["moves"], N_SIDES, "moves"),
        )


@dataclass(frozen=True)
class BoardRecord:
    """Both matches of one board: ``matches[m]`` has bot A on team ``m``."""

    board: int
    matches: tuple[MatchRecord, ...]

    def to_json(self) -> dict:
        """As JSON-ready data (:meth:`from_json` builds it back, equal)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> BoardRecord:
        """The record :meth:`to_json` gave (JSON-decoded), checked whole: every field's shape,
        type and range, and each match against itself (its awards add up to its points, its
        score follows from them). A ValueError naming the board and what is wrong if it is not one."""
        data = keys("a board record", data, [f.name for f in dataclasses.fields(cls)])
        board = count("board", data["board"], 0, MAX_COUNT)
        matches = data["matches"]
        if not isinstance(matches, list) or len(matches) != MATCHES_PER_BOARD:
            raise ValueError(f"board {board}: matches must be a list of {MATCHES_PER_BOARD}, got {brief(matches)}")
        checked = []
        for a_team, match in enumerate(matches):
            try:
                checked.append(MatchRecord.from_json(match, a_team))
            except ValueError as err:
                raise ValueError(f"board {board}, match {a_team}: {err}") from None
        return cls(board, tuple(checked))

    @property
    def score(self) -> float:
        """The board pair's score for A: mean of its match scores (0, 0.5 or 1 with matches)."""
        return sum(m.a_score for m in self.matches) / len(self.matches)

    @property
    def point_diff_per_deal(self) -> float:
        """A's points minus B's over both matches, divided by the deals of both matches."""
        diff = sum(m.points[SIDE_A] - m.points[SIDE_B] for m in self.matches)
        return diff / sum(m.deals for m in self.matches)


def board_games(
    board: Board, a_bots: Sequence[Bot], b_bots: Sequence[Bot], rules: Rules, episode: str
) -> Iterator[tuple[int, list[Bot], Game]]:
    """Each match (or deal) of ``board``, A on team 0 then on team 1: ``(a_team, the bot of each
    seat, reset with the board's seed for that seat, the engine with the board's decks and first dealer)``."""
    for a_team in range(MATCHES_PER_BOARD):
        seat_bots = [(a_bots if seat % 2 == a_team else b_bots)[seat // 2] for seat in range(N_SEATS)]
        for seat, bot in enumerate(seat_bots):
            bot.reset(board.bot_seeds[seat])
        yield a_team, seat_bots, Game(rules, board.deck_rng(), dealer=board.dealer, episode=episode)


def match_record(game: Game, a_team: int, match: Match) -> MatchRecord:
    """Summarize a finished game for the pair, bot A having played team ``a_team`` (with the
    bots' think times from the ``match`` that played it)."""
    awards = [[0] * len(AWARD_KINDS) for _ in range(N_SIDES)]
    decisions = [[0] * len(DECISION_KINDS) for _ in range(N_SIDES)]
    for event in game.events:
        kind = event.kind
        if kind in _DECISION_INDEX:  # give_one is both: the dealer's decision and an award
            decisions[int(event.seat % 2 != a_team)][_DECISION_INDEX[kind]] += 1  # side 0 = A, 1 = B
        if event.points and kind in _AWARD_INDEX:
            awards[int(event.team != a_team)][_AWARD_INDEX[kind]] += event.points
    # The match winner always has more points (it reached the target, the other did not), so
    # comparing points scores matches and single deals alike.
    points = (game.scores[a_team], game.scores[1 - a_team])
    return MatchRecord(
        a_team=a_team,
        a_score=outcome(points),
        points=points,
        deals=game.deal_number,
        awards=(tuple(awards[SIDE_A]), tuple(awards[SIDE_B])),
        decisions=(tuple(decisions[SIDE_A]), tuple(decisions[SIDE_B])),
        think_seconds=per_side(match.think_seconds, a_team),
        moves=per_side(match.moves, a_team),
    )


def per_side(per_seat: Sequence, a_team: int) -> tuple:
    """Per-seat values summed per side (A's team first)."""
    sides = [0, 0]
    for seat, value in enumerate(per_seat):
        sides[int(seat % 2 != a_team)] += value
    return tuple(sides)


def play_board(
    board: int | Board,
    a_bots: Sequence[Bot],
    b_bots: Sequence[Bot],
    rules: Rules = DEFAULT_RULES,
    episode: str = "match",
    on_decision: DecisionHook | None = None,
    on_event: EventHook | None = None,
) -> BoardRecord:
    """Play ``board`` (an id, or a :class:`Board`) twice, A on team 0 (seats 0, 2) then on team 1.

    ``a_bots``/``b_bots`` hold one bot per seat of the team (partners 0 and 1); every bot is
    reset with the board's seed for its seat before the match starts. ``episode``: "match" or
    "deal". The hooks see both matches: ``on_decision`` every :class:`allfours_env.match.Decision`,
    ``on_event`` every event of the engine's log (see :mod:`allfours_env.match`).
    """
    if not isinstance(board, Board):
        board = make_board(board, rules)
    matches = []
    for a_team, seat_bots, game in board_games(board, a_bots, b_bots, rules, episode):
        match = Match(game, seat_bots, on_decision, on_event)
        match.run()
        matches.append(match_record(game, a_team, match))
    return BoardRecord(board.board, tuple(matches))


def _pair(value: Any, what: str) -> list:
    """``value`` as a list of one item per side."""
    if not isinstance(value, list) or len(value) != N_SIDES:
        raise ValueError(f"{what} must be a list of {N_SIDES} (one per side), got {brief(value)}")
    return value


def _counts(value: Any, length: int, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) != length:
        raise ValueError(f"{what} must be a list of {length} integers, got {brief(value)}")
    return tuple(count(f"{what}[{i}]", v, 0, MAX_COUNT) for i, v in enumerate(value))


def _side_counts(data: dict[str, Any], key: str, length: int) -> tuple[tuple[int, ...], ...]:
    """``data[key]``: per side, a list of ``length`` counts."""
    return tuple(_counts(v, length, f"{key}[{side}]") for side, v in enumerate(_pair(data[key], key)))
