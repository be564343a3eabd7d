"""The match loop: ask the seat's bot, step the engine, report what happened.

Every place that lets bots play one match drives the engine through :class:`Match`: terminal
play and watching (:mod:`agents.apps.play`), the web page, :func:`eval.play_board`, the
notebooks and the tests (many matches at once, and the Gymnasium envs, go through
:mod:`allfours_env.arena`, which gives bots the same observations). At each
decision the seat to act gets exactly what the env's ``observe`` returns,
``{"observation": ..., "action_mask": ...}``, and nothing else.

Two hooks watch a match without changing it:

* ``on_decision(decision)``: a :class:`Decision` (the game, the seat, its bot, what it saw and
  the action it chose), called before the engine applies the action;
* ``on_event(event)``: each :class:`allfours_env.Event` of the engine's log, once, in order,
  starting with those of the first deal (dealt when the game was made).

One kind of bot sees more, for evaluation only: a bot whose ``sees_hands`` is true (the
``oracle``, a ceiling to measure players against, never a player) also gets ``"hands"``, the four
hands as bit sets by seat relative to it (:func:`with_hands`), here and in the arena; the places
where a person plays refuse to seat it.

A seat whose bot is None is played from outside (a person, a learning agent): :meth:`Match.run`
stops when such a seat is to act, and the caller gives its action to :meth:`Match.step`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from .actions import DEAL_OVER, Event
from .cards import N_SEATS
from .engine import Game
from .observation import encode_with_mask

Observation = dict[str, np.ndarray]  # what env.observe(agent) returns: {"observation", "action_mask"}


@runtime_checkable
class Bot(Protocol):
    """What plays a seat (the bots of :mod:`agents`, or yours): ``reset(seed)`` as a match starts,
    ``act(observation) -> action id``, legal under ``observation["action_mask"]``."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """A match starts; ``seed`` makes any randomness of the bot reproducible."""

    def act(self, observation: Observation) -> int:
        """The action id (0..55) to take; it must be legal under ``observation["action_mask"]``."""


class BotFailure(RuntimeError):
    """A bot could not give a legal action: a program behind it crashed, hung or answered what is not
    a legal move (:mod:`agents.program`). The loops that seat bots say where it sat: :meth:`Match.run`
    the seat, :class:`~allfours_env.arena.Arena` the table and seat, and an evaluation the board."""

    def __init__(self, bot: str, decision: str, reason: str) -> None:
        super().__init__(bot, decision, reason)
        self.bot, self.decision, self.reason = bot, decision, reason
        self.seat: int | None = None
        self.table: int | None = None
        self.board: int | None = None

    def __str__(self) -> str:
        where = "" if self.seat is None else f" at seat {self.seat}"
        if self.board is not None:
            where += f" on board {self.board}"
        return f"bot {self.bot!r}{where}, {self.decision}: {self.reason}"


class Decision(NamedTuple):
    """One decision, as ``on_decision`` sees it: before the engine applies ``action``."""

    game: Game
    seat: int
    bot: Bot | None  # None for a seat played from outside
    observation: Observation
    action: int


DecisionHook = Callable[[Decision], None]
EventHook = Callable[[Event], None]


def sees_hands(bot: object) -> bool:
    """Whether ``bot`` is one that sees every seat's hand (evaluation only; see the module docstring)."""
    return bool(getattr(bot, "sees_hands", False))


def with_hands(observation: Observation, hands: Sequence[int], seat: int) -> Observation:
    """``observation`` with ``"hands"``: the hands of ``seat`` and of the seats after it (next,
    partner, previous), as bit sets (uint64), from ``hands`` by absolute seat."""
    relative = [int(hands[(seat + r) % N_SEATS]) for r in range(N_SEATS)]
    return {**observation, "hands": np.array(relative, dtype=np.uint64)}


def bot_name(bot: Bot) -> str:
    return str(getattr(bot, "name", type(bot).__name__))


class Match:
    """A game with a bot (or None, played from outside) at each seat; see the module docstring."""

    def __init__(
        self,
        game: Game,
        bots: Sequence[Bot | None],
        on_decision: DecisionHook | None = None,
        on_event: EventHook | None = None,
    ) -> None:
        if len(bots) != N_SEATS:
            raise ValueError(f"a match needs one bot (or None) per seat, {N_SEATS} in all; got {len(bots)}")
        self.game = game
        self.bots = tuple(bots)
        self.on_decision = on_decision
        self.on_event = on_event
        self._reported = 0  # events already given to on_event
        self.think_seconds = [0.0] * N_SEATS  # time each seat's bot spent in act() in run()
        self.moves = [0] * N_SEATS  # decisions each seat's bot took in run()
        self._report()

    @property
    def over(self) -> bool:
        """True once the match (or the deal, for deal episodes) is over."""
        return self.game.phase >= DEAL_OVER

    def observe(self, seat: int) -> Observation:
        """What ``env.observe(f"player_{seat}")`` returns for this game."""
        observation, mask = encode_with_mask(self.game, seat)
        return {"observation": observation, "action_mask": mask}

    def step(self, action: int, observation: Observation | None = None) -> None:
        """Apply ``action`` for the seat to act; an illegal one raises ValueError and changes nothing.

        ``observation`` is what the seat saw (computed for the hook if not given).
        """
        game = self.game
        if self.on_decision is not None:
            seat = game.current
            seen = observation if observation is not None else self.observe(seat)
            self.on_decision(Decision(game, seat, self.bots[seat], seen, action))
        game.step(action)
        if self.on_event is not None:
            self._report()

    def run(self) -> None:
        """Let the bots decide until the game is over or a seat played from outside is to act.

        A bot's illegal action raises the engine's ValueError with a note naming the bot and seat.
        """
        game = self.game
        bots = self.bots
        while game.phase < DEAL_OVER and bots[game.current] is not None:
            seat = game.current
            observation = self.observe(seat)
            if sees_hands(bots[seat]):
                observation = with_hands(observation, game.hands, seat)
            start = time.perf_counter()
            try:
                action = bots[seat].act(observation)
            except BotFailure as failure:
                failure.seat = seat
                raise
            self.think_seconds[seat] += time.perf_counter() - start
            self.moves[seat] += 1
            try:
                self.step(action, observation)
            except ValueError as error:  # an illegal action (the engine changed nothing)
                error.add_note(f"bot {bot_name(bots[seat])!r} at seat {seat}")
                raise

    def _report(self) -> None:
        events = self.game.events
        if self.on_event is not None:
            for event in events[self._reported :]:
                self.on_event(event)
        self._reported = len(events)
