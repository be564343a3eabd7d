"""Many matches at once: tables of the vector engine played to their end, every seat by a bot.

:class:`Arena` drives a :class:`~allfours_env.vector.VectorGame` in ticks. At each tick it
computes the observations and masks of every table once, asks each bot for the tables where one
of its seats is to act, and steps the tables that moved. A bot that offers ``act_batch`` is
memoryless and deterministic (the expert, a deterministic policy), so one instance serves all of
its seats at every table in one call; any other bot has an instance per table and seat, asked
table by table with exactly what ``env.observe`` would give it. Each table can draw its decks
from its own source, one per deal as the deal begins (so a table plays the same deals as the
one-match :class:`~allfours_env.engine.Game` fed by the same generator), and every step's events
go to ``on_events`` (the buffers of :meth:`VectorGame.event_buffers`) for the caller to tally.

Evaluation plays its boards through an arena (:mod:`eval.runner`); what a table's bots see and do
is the same as in :class:`allfours_env.match.Match`, so results do not depend on which loop played them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from allfours_env.cards import N_SEATS
from allfours_env.vector import VectorGame

from .base import Bot

DeckSource = Callable[[], Sequence[int]]  # the table's next deck, a permutation of 0..51
EventHook = Callable[[np.ndarray, np.ndarray, np.ndarray], None]  # (moved tables, events, counts)


class Arena:
    """``bots[t][seat]`` plays ``seat`` at table ``t`` of ``game`` (see the module docstring).

    ``game`` is started already; ``decks[t]``, if given, deals table t's next deals. After
    :meth:`run`, ``think_seconds[t, seat]`` and ``moves[t, seat]`` say how long each seat's bot
    took and how many decisions (a batch call's time shared equally among its rows).
    """

    def __init__(
        self,
        game: VectorGame,
        bots: Sequence[Sequence[Bot]],
        decks: Sequence[DeckSource] | None = None,
        on_events: EventHook | None = None,
    ) -> None:
        if len(bots) != game.n or any(len(seats) != N_SEATS for seats in bots):
            raise ValueError(f"bots must name a bot for each of the {N_SEATS} seats of each of the {game.n} tables")
        self.game, self.decks, self.on_events = game, decks, on_events
        # Who answers where: batch bots by identity (one call a tick), the others table by table.
        self._batch: dict[int, Bot] = {}
        self._owner = np.full((game.n, N_SEATS), -1, dtype=np.int64)  # batch bot key, or -1: a bot of its own
        for t, seats in enumerate(bots):
            for seat, bot in enumerate(seats):
                if hasattr(bot, "act_batch"):
                    self._batch[id(bot)] = bot
                    self._owner[t, seat] = id(bot)
        self.bots = [list(seats) for seats in bots]
        self.think_seconds = np.zeros((game.n, N_SEATS))
        self.moves = np.zeros((game.n, N_SEATS), dtype=np.int64)
        self._top_up(np.ones(game.n, dtype=bool))

    def run(self) -> None:
        """Play every table until its match (or deal episode) is over."""
        game = self.game
        rows = np.arange(game.n)
        while True:
            live = ~game.is_over
            if not live.any():
                return
            seats = game.current
            observations, masks = game.observe(), game.legal_mask()
            actions = np.zeros(game.n, dtype=np.int64)
            owners = np.where(live, self._owner[rows, np.maximum(seats, 0)], -2)
            for key, bot in self._batch.items():
                mine = np.flatnonzero(owners == key)
                if len(mine):
                    start = time.perf_counter()
                    actions[mine] = bot.act_batch(observations[mine], masks[mine])
                    self._charge(mine, seats, (time.perf_counter() - start) / len(mine))
            for t in np.flatnonzero(owners == -1):
                seat = seats[t]
                start = time.perf_counter()
                actions[t] = self.bots[t][seat].act({"observation": observations[t], "action_mask": masks[t].view(np.int8)})
                self._charge(t, seats, time.perf_counter() - start)
            game.step(actions, tables=live)
            if self.on_events is not None:
                self.on_events(live, *game.event_buffers())
            self._top_up(live)

    def _charge(self, tables: np.ndarray | int, seats: np.ndarray, seconds: float) -> None:
        self.think_seconds[tables, seats[tables]] += seconds
        self.moves[tables, seats[tables]] += 1

    def _top_up(self, tables: np.ndarray) -> None:
        """Give every table in ``tables`` that has no deck waiting the next of its source."""
        if self.decks is None:
            return
        game = self.game
        for t in np.flatnonzero(tables & ~game.is_over & (game.decks_waiting() == 0)):
            game.give_deck(int(t), self.decks[t]())
