"""The one loop that plays bots at many tables of a :class:`~allfours_env.vector.VectorGame`.

Every seat of every table has an owner (:attr:`Arena.owner`): ``LEARNER``, a seat its caller
plays (a learner in the vector env, nobody in an evaluation); a batch bot (one that offers
``act_batch``: memoryless and deterministic, such as the expert or a network sampling from its
own generator), one instance asked once a tick for every table where one of its seats is to
act; or ``OWN_BOT``, a bot of the table's own, asked table by table with exactly what
``env.observe`` would give it (and the hands, to a bot that sees them: the ``oracle``).
:meth:`Arena.run` plays until every table waits for a learner seat or is over; at each tick it
observes only the tables where a bot is to act and steps only those. With ``compiled``, a batch
bot that offers ``play_vector(game, seats)`` (the expert) first plays its seats of every table in
compiled code, as far as it can without another player or a new deck: the moves ``act_batch``
would make, with no event log to report.

Before every step of a tick ``on_decisions(tables, observations, masks, actions)`` gets what the
bots decided (rows in the order of ``tables``); after it ``on_step(moved, points)`` gets the
tables that moved and their points (n, 2) (compiled moves included);
each table can draw its decks from its own source (``decks[t]()``, one per deal as the deal
begins, so a table plays the deals the one-match :class:`~allfours_env.engine.Game` fed by the
same generator plays). ``think_seconds[t, seat]`` and ``moves[t, seat]`` add up how long each
seat's bot took and how many decisions (a batch call's time shared equally among its rows).
A table's own bot that fails (:class:`~allfours_env.match.BotFailure`) stops the run, its table and seat named.

Users: evaluation (:mod:`eval.batch`), labelling (:mod:`train.rounds.labels`), the warm start's
recording (:mod:`train.imitation`) and the vector env's opponents (:mod:`allfours_env.gym_vector`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from .cards import N_SEATS
from .match import Bot, BotFailure, sees_hands, with_hands
from .vector import VectorGame

LEARNER, OWN_BOT = -2, -1  # owner codes of a seat besides a batch bot's key (its id)
DeckSource = Callable[[], Sequence[int]]  # the table's next deck, a permutation of 0..51
StepHook = Callable[[np.ndarray, np.ndarray], None]  # (tables that moved, their points (n, 2))
DecisionHook = Callable[
    [np.ndarray, np.ndarray, np.ndarray, np.ndarray], None
]  # (tables, observations, masks, actions)


def owner_code(bot: Bot | None) -> int:
    """The owner code of a seat played by ``bot`` (None: the learner)."""
    return LEARNER if bot is None else id(bot) if hasattr(bot, "act_batch") else OWN_BOT


class Arena:
    """Bots at the tables of ``game`` (see the module docstring). ``bots[t][seat]``, if given,
    seats every table at once (None: a learner seat); :meth:`seat` seats one table."""

    def __init__(
        self,
        game: VectorGame,
        bots: Sequence[Sequence[Bot | None]] | None = None,
        decks: Sequence[DeckSource] | None = None,
        on_step: StepHook | None = None,
        compiled: bool = False,
        on_decisions: DecisionHook | None = None,
    ) -> None:
        n = game.n
        if bots is not None and (len(bots) != n or any(len(seats) != N_SEATS for seats in bots)):
            raise ValueError(f"bots must name a bot for each of the {N_SEATS} seats of each of the {n} tables")
        self.game, self.decks, self.on_step, self.compiled = game, decks, on_step, compiled
        self.on_decisions = on_decisions
        self.owner = np.full((n, N_SEATS), LEARNER, dtype=np.int64)
        self.bots: list[list[Bot | None]] = [[None] * N_SEATS for _ in range(n)]
        self.batch: dict[int, Bot] = {}  # the batch bots seated, by key
        self.think_seconds = np.zeros((n, N_SEATS))
        self.moves = np.zeros((n, N_SEATS), dtype=np.int64)
        for t, seats in enumerate(bots or ()):
            self.seat(t, seats)
        self._top_up(np.ones(n, dtype=bool))

    def seat(self, t: int, seats: Sequence[Bot | None]) -> None:
        """Seat ``seats[seat]`` (None: the learner) at table ``t``."""
        self.bots[t] = list(seats)
        self.owner[t] = [owner_code(bot) for bot in seats]
        self.batch.update((id(bot), bot) for bot in seats if hasattr(bot, "act_batch"))

    def forget_unseated(self) -> None:
        """Drop the batch bots no table seats any more."""
        seated = set(np.unique(self.owner).tolist())
        self.batch = {key: bot for key, bot in self.batch.items() if key in seated}

    def run(self) -> None:
        """Play until every table waits for a learner seat or is over."""
        while self.tick():
            pass

    def tick(self) -> bool:
        """One round of decisions: every table where a bot is to act moves once (after the
        compiled bots have played as far as they can); False if no bot had anything to do."""
        game, n = self.game, self.game.n
        if self.compiled and self._play_compiled():
            return True  # the tables a compiled bot left for a deck have one now
        current = game.current
        owners = np.where(current >= 0, self.owner[np.arange(n), np.maximum(current, 0)], LEARNER)
        waiting = owners != LEARNER
        if not waiting.any():
            return False
        moving = np.flatnonzero(waiting)
        observations, masks, owners = game.observe(tables=moving), game.legal_mask()[moving], owners[moving]
        seats = current[moving]
        actions = np.zeros(n, dtype=np.int64)
        keys, first = np.unique(owners[owners >= 0], return_index=True)
        for key in keys[np.argsort(first)]:  # in the order of the tables: a state replays the same draws
            bot, mine = self.batch[key], np.flatnonzero(owners == key)
            start = time.perf_counter()
            everyone = len(mine) == len(moving)  # one bot at every moving table (the usual case): no copies
            asked = (observations, masks) if everyone else (observations[mine], masks[mine])
            actions[moving[mine]] = bot.act_batch(*asked)
            self._charge(moving[mine], seats[mine], (time.perf_counter() - start) / len(mine))
        for i in np.flatnonzero(owners == OWN_BOT):
            t, seat = moving[i], seats[i]
            bot = self.bots[t][seat]
            observation = {"observation": observations[i], "action_mask": masks[i].view(np.int8)}
            if sees_hands(bot):  # the oracle (evaluation only)
                observation = with_hands(observation, game.hands[t], seat)
            start = time.perf_counter()
            try:
                actions[t] = bot.act(observation)
            except BotFailure as failure:
                failure.table, failure.seat = int(t), int(seat)
                raise
            self._charge(t, seat, time.perf_counter() - start)
        if self.on_decisions is not None:
            self.on_decisions(moving, observations, masks, actions[moving])
        self._stepped(waiting, game.step(actions, tables=waiting))
        return True

    def _play_compiled(self) -> bool:
        """Let every batch bot with ``play_vector`` play its seats in compiled code; whether any moved."""
        any_moved = False
        for key, bot in self.batch.items():
            if hasattr(bot, "play_vector"):
                points, moved = bot.play_vector(self.game, self.owner == key)
                if moved.any():
                    any_moved = True
                    self._stepped(moved, points)
        return any_moved

    def _stepped(self, moved: np.ndarray, points: np.ndarray) -> None:
        if self.on_step is not None:
            self.on_step(moved, points)
        self._top_up(moved)

    def _charge(self, tables: np.ndarray | int, seats: np.ndarray | int, seconds: float) -> None:
        self.think_seconds[tables, seats] += seconds
        self.moves[tables, seats] += 1

    def _top_up(self, tables: np.ndarray) -> None:
        """Give every table in ``tables`` that has no deck waiting the next of its source."""
        if self.decks is None:
            return
        game = self.game
        for t in np.flatnonzero(tables & ~game.is_over & (game.decks_waiting() == 0)):
            game.give_deck(int(t), self.decks[t]())
