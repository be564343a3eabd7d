"""Many boards at once: both matches of every board as tables of the vector engine (an arena).

:func:`play_boards` plays a run of boards of one pair through :class:`allfours_env.arena.Arena` and
returns the same :class:`~eval.play.BoardRecord` per board that :func:`eval.play.play_board`
gives (tested): each table deals the decks of its board's generator, one as each deal begins,
from the board's first dealer; each bot instance is reset with the board's seed for its seat; a
bot with ``act_batch`` (memoryless and deterministic) serves every table through one instance,
any other has its own per table and seat. The records are tallied from the engine's event
buffers in a few numpy operations per tick, as :func:`eval.play.match_record` reads a game's log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from agents import Bot
from allfours_env.actions import EVENT_KINDS
from allfours_env.arena import Arena
from allfours_env.match import BotFailure
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.rules import Rules
from allfours_env.vector import VectorGame

from .boards import MATCHES_PER_BOARD, Board
from .play import _AWARD_INDEX, _DECISION_INDEX, N_SIDES, BoardRecord, MatchRecord, outcome, per_side

BotFactory = Callable[[], Bot]
# event code -> index in the record's award / decision tuples (-1: not one)
_AWARD_OF_CODE = np.array([_AWARD_INDEX.get(kind, -1) for kind in EVENT_KINDS])
_DECISION_OF_CODE = np.array([_DECISION_INDEX.get(kind, -1) for kind in EVENT_KINDS])


class _Tally:
    """Each table's awards and decisions per side, summed from the events of every step."""

    def __init__(self, a_team: np.ndarray) -> None:
        n = len(a_team)
        self.a_team = a_team
        self.awards = np.zeros((n, N_SIDES, len(_AWARD_INDEX)), dtype=np.int64)
        self.decisions = np.zeros((n, N_SIDES, len(_DECISION_INDEX)), dtype=np.int64)

    def __call__(self, moved: np.ndarray, ev: np.ndarray, n_ev: np.ndarray) -> None:
        counts = np.where(moved, np.minimum(n_ev, ev.shape[1]), 0)
        table, slot = np.nonzero(np.arange(ev.shape[1]) < counts[:, None])
        rows = ev[table, slot]
        code, seat, team, points = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
        award, decision = _AWARD_OF_CODE[code], _DECISION_OF_CODE[code]
        won = (award >= 0) & (points > 0)
        side = (team != self.a_team[table]).astype(np.int64)  # 0: A's team, 1: B's
        np.add.at(self.awards, (table[won], side[won], award[won]), points[won])
        decided = decision >= 0
        seat_side = (seat % 2 != self.a_team[table]).astype(np.int64)
        np.add.at(self.decisions, (table[decided], seat_side[decided], decision[decided]), 1)


def play_boards(
    boards: Sequence[Board], a_factory: BotFactory, b_factory: BotFactory, rules: Rules, episode: str,
    shared: dict[int, Bot] | None = None,
) -> list[BoardRecord]:
    """Both matches of each of ``boards`` for the pair (A, B), at once; a record per board.

    ``shared`` keeps the one instance of each batch bot between calls (keyed by factory id)."""
    shared = {} if shared is None else shared
    n = MATCHES_PER_BOARD * len(boards)
    a_team = np.tile(np.arange(MATCHES_PER_BOARD), len(boards))  # table 2i + m: board i, A on team m
    game = VectorGame(n, episode=episode, events=True, rules=rules)
    decks = [board.deck_rng() for board in boards for _ in range(MATCHES_PER_BOARD)]
    game.reset(options=[
        {"decks": [decks[t].permutation(N_CARDS).tolist()], "dealer": boards[t // MATCHES_PER_BOARD].dealer}
        for t in range(n)
    ])  # fmt: skip
    bots = [
        [_bot(a_factory if seat % 2 == a_team[t] else b_factory, boards[t // MATCHES_PER_BOARD].bot_seeds[seat], shared)
         for seat in range(N_SEATS)]
        for t in range(n)
    ]  # fmt: skip
    tally = _Tally(a_team)
    tally(np.ones(n, dtype=bool), *game.event_buffers())  # the first deal's kicks
    decks_of = [lambda rng=rng: rng.permutation(N_CARDS).tolist() for rng in decks]
    arena = Arena(game, bots, decks_of, lambda moved, points: tally(moved, *game.event_buffers()))
    try:
        arena.run()
    except BotFailure as failure:  # a program bot that crashed, hung or answered wrong: name its board
        failure.board = boards[failure.table // MATCHES_PER_BOARD].board
        raise
    scores, deals = game.scores, game.deal_number
    return [
        BoardRecord(board.board, tuple(
            _record(scores[t], int(deals[t]), arena, tally, t) for t in range(MATCHES_PER_BOARD * i, MATCHES_PER_BOARD * (i + 1))
        ))
        for i, board in enumerate(boards)
    ]  # fmt: skip


def _bot(factory: BotFactory, seed: int, shared: dict[int, Bot]) -> Bot:
    """The batch bot of ``factory`` (one instance for every table), or a new instance reset with ``seed``."""
    if id(factory) in shared:
        return shared[id(factory)]
    bot = factory()
    if hasattr(bot, "act_batch"):
        shared[id(factory)] = bot
        return bot
    bot.reset(seed)
    return bot


def _record(scores: np.ndarray, deals: int, arena: Arena, tally: _Tally, t: int) -> MatchRecord:
    """Table ``t``'s match as the pair sees it (as :func:`eval.play.match_record` reads a game)."""
    a_team = int(tally.a_team[t])
    points = (int(scores[a_team]), int(scores[1 - a_team]))
    return MatchRecord(
        a_team=a_team,
        a_score=outcome(points),
        points=points,
        deals=deals,
        awards=tuple(tuple(int(x) for x in tally.awards[t, side]) for side in range(N_SIDES)),
        decisions=tuple(tuple(int(x) for x in tally.decisions[t, side]) for side in range(N_SIDES)),
        think_seconds=per_side(arena.think_seconds[t].tolist(), a_team),
        moves=per_side(arena.moves[t].tolist(), a_team),
    )
