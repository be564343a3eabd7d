"""The matches the server holds: played, watched or replayed, each under an unguessable id.

A :class:`LiveMatch` owns the engine (:class:`allfours_env.engine.Game`) and the bots, driven
through the shared match loop (:class:`allfours_env.match.Match`) with a :class:`agents.apps.match_log.Recorder`
as its event hook, so every match can be saved as a log. The page sends only actions: the
person's action goes to the engine like any bot's (an illegal one is refused and changes nothing);
a bot's move is made on request, one at a time, so the page shows them at its own pace. A
:class:`ReplayMatch` holds a checked match log and rebuilds the game at any step.

Seeds: a match's seed deals every hand, so in play mode the page never gets it while the match
is on (:meth:`LiveMatch.shown_seed`), whoever chose it; it is shown once the match is over (the
log holds it then). A seed the server draws has 128 random bits (:func:`agents.apps.match_log.draw_seed`), so it cannot
be found by trying seeds against the cards a person sees. The bots and the hinter draw from
streams of their own, spawned from the seed (:func:`side_seeds`), never the game's stream or the
seed itself.

Memory: a match takes at most ``MAX_STEPS`` actions (a match to the page's largest target takes
about a sixth of that; a longer log is refused on upload), and :class:`Store` refuses a new match
while the matches it holds take more than its ``budget_bytes`` by :meth:`Session.estimated_bytes`
(the bots' networks, and a measured size per action and per deck). Held matches may grow past the
budget only up to their step limit.

:class:`Store` keeps them by id (``secrets.token_urlsafe``: 144 random bits), drops a match idle
for longer than its ``idle_seconds``, and refuses new ones beyond ``max_matches`` (503), and a
client's beyond its share, a quarter of the matches and of the memory budget (429): one client
cannot take the whole server from the others (a client is what the server tells apart,
:func:`agents.apps.web.app.client_of`). Each match has
a lock, so two requests for one match (two tabs, a double click) take turns; a request that moves
a match names the step it saw, and is refused once the match has moved past it. A replay may hold
a review (:mod:`agents.apps.web.reviews`), cancelled when the replay is ended or expires.
"""

from __future__ import annotations

import math
import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from allfours_env.cards import N_SEATS
from allfours_env.engine import DEAL_OVER, Game, IllegalActionError
from allfours_env.match import Match
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules

from ...base import Bot
from ..match_log import MatchLog, Recorder, Replay, side_seeds
from . import views
from .hints import Hinter
from .release import ReleaseSchedule

IDLE_SECONDS = 30 * 60
MAX_IDLE_SECONDS = 7 * 24 * 3600  # a week: longer is a match that never expires
MAX_MATCHES = 200
MEMORY_BUDGET = 512 * 2**20  # bytes the held matches may take, by their estimates
CLIENT_SHARE = 0.25  # the part of the matches and of the memory budget one client may hold
LOCK_SECONDS = 10.0  # how long a request waits for another request of the same match
MAX_STEPS = 10_000  # actions in a match or replay: a match to 100 points takes up to about 1,600
# Measured with tracemalloc (tests/test_web_security.py checks an estimate against it): a match holds
# about 200 bytes an action (its events, the logged action, its share of the decks) and 13 KB more
# with bots that hold no network. The estimates take about twice that, to be on the safe side.
STEP_BYTES, DECK_BYTES, MATCH_BYTES = 400, 600, 64 * 1024
PERSON = "person"  # the person's seat in a log's players
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def held_bytes(obj: object, depth: int = 4) -> int:
    """Bytes of the numpy arrays ``obj`` holds, ``depth`` levels into its attributes, lists, tuples
    and dicts: a bot's network weights (a search bot's ``keep`` network among them)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if depth == 0:
        return 0
    if isinstance(obj, dict):
        parts: Any = obj.values()
    elif isinstance(obj, list | tuple):
        parts = obj
    else:
        parts = getattr(obj, "__dict__", {}).values()
    return sum(held_bytes(part, depth - 1) for part in parts)


class Refused(Exception):
    """A request that cannot be done: an HTTP status and a message saying what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int in low..high, or a 400 saying what is allowed (a bool is not an int)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Refused(400, f"{name} must be an integer {low}..{high}, got {str(value)[:40]!r}")
    return value


class Session:
    """What every held match has: an id, a lock, and the time of its last request."""

    mode = ""

    def __init__(self, seed: int) -> None:
        self.id = ""
        self.client = ""  # who asked for it (:func:`agents.apps.web.app.client_of`), set by Store.add
        self.lock = threading.Lock()
        self.last_used = 0.0
        self._hinter: Hinter | None = None
        self.hint_seed = side_seeds(seed, N_SEATS + 1)[N_SEATS]  # (the bots take the first four)

    def hinter(self) -> Hinter:
        if self._hinter is None:
            self._hinter = Hinter(self.hint_seed)
        return self._hinter

    def estimated_bytes(self) -> int:
        """About what the match holds in memory (see the module docstring)."""
        raise NotImplementedError

    def close(self) -> None:
        """The match is dropped (ended or expired): stop what works for it (a review)."""


class LiveMatch(Session):
    """A match in play (``person`` is the person's seat) or watched (``person`` None, four bots)."""

    def __init__(
        self, bots: Sequence[Bot | None], names: Sequence[str], rules: Rules, seed: int, person: int | None = None
    ) -> None:
        super().__init__(seed)
        self.mode = "watch" if person is None else "play"
        self.person = person
        self.names = list(names)
        self.seed = seed
        self.game = Game(rules, np.random.default_rng(seed))
        for bot, bot_seed in zip(bots, side_seeds(seed, N_SEATS)):
            if bot is not None:
                bot.reset(bot_seed)
        self.recorder = Recorder(self.game)
        self.match = Match(self.game, list(bots), on_event=self.recorder)
        self.release = ReleaseSchedule(list(bots)) if person is not None else None  # (play mode: see .release)
        self.bot_bytes = sum(held_bytes(bot) for bot in bots)

    @property
    def step(self) -> int:
        """Actions taken so far."""
        return len(self.recorder.actions)

    @property
    def over(self) -> bool:
        return self.game.phase >= DEAL_OVER

    def estimated_bytes(self) -> int:
        return MATCH_BYTES + self.bot_bytes + STEP_BYTES * self.step + DECK_BYTES * len(self.recorder.decks)

    def shown_seed(self) -> str | None:
        """The seed as the page gets it (text: it may have 128 bits, beyond JavaScript's numbers);
        in play mode None until the match is over, since it deals every hand."""
        return None if self.person is not None and not self.over else str(self.seed)

    def check_step(self, step: Any) -> None:
        """Refuse a move asked for from another position than the match's, or at its step limit."""
        if step is None:
            raise Refused(400, "step is required: the match's step the page saw (so a stale page cannot move it)")
        check_int("step", step, 0, 10**9)
        if step != self.step:
            raise Refused(409, f"the match has moved on: it is at step {self.step}, the request was made at step {step}")
        if self.step >= MAX_STEPS:
            raise Refused(409, f"the match has reached {MAX_STEPS:,} actions, the most a match here takes: start a new one")

    def _to_act(self) -> int:
        if self.over:
            winner, scores = self.game.winner, self.game.scores
            raise Refused(409, f"the match is over: team {winner} won {scores[winner]}-{scores[1 - winner]}")
        return self.game.current

    def act(self, action: Any, step: Any) -> dict[str, Any]:
        """The person's action, checked by the engine; a Refused and nothing changed if it is not legal."""
        if self.person is None:
            raise Refused(409, "this is a watch: four bots play, no seat takes actions from the page")
        self.check_step(step)
        seat = self._to_act()
        if seat != self.person:
            raise Refused(409, f"it is player_{seat}'s turn ({self.names[seat]}), not yours (player_{self.person})")
        if isinstance(action, bool) or not isinstance(action, int):
            raise Refused(400, f"action must be an action id, an integer 0..55, got {str(action)[:40]!r}")
        try:
            self.match.step(action)
        except IllegalActionError as error:
            raise Refused(400, str(error)) from None
        return {"seat": seat, "action": action, "label": views.action_label(action)}

    def advance(self, step: Any) -> dict[str, Any]:
        """One bot move: the bot of the seat to act decides from its observation."""
        self.check_step(step)
        seat = self._to_act()
        bot = self.match.bots[seat]
        if bot is None:
            raise Refused(409, f"it is your turn (player_{seat}): send your action, bots do not play for you")
        observation = self.match.observe(seat)
        start = time.perf_counter()
        action = int(bot.act(observation))
        think_ms = 1000 * (time.perf_counter() - start)
        self.match.step(action, observation)  # a bot's illegal action raises: a server error, loudly
        move = {"seat": seat, "action": action, "label": views.action_label(action)}
        if self.person is None:  # a watch shows the time; in play mode it would tell the bot's hand (.release)
            move["think_ms"] = round(think_ms, 2)
        return move

    def viewer(self, seat: Any, open_all: bool) -> int:
        """The seat whose view a request gets; in play mode only the person's, hands closed."""
        if self.person is not None:
            if open_all:
                raise Refused(403, "in play mode the page sees only your own cards: all hands open is for watching")
            if seat is not None and seat != self.person:
                raise Refused(403, f"in play mode the page sees only your seat, player_{self.person}")
            return self.person
        return 0 if seat is None else check_int("seat", seat, 0, N_SEATS - 1)

    def state(self, seat: Any = None, open_all: bool = False, since: int = 0) -> dict[str, Any]:
        viewer = self.viewer(seat, open_all)
        extra = {
            "id": self.id, "mode": self.mode, "person": self.person, "players": self.names, "seed": self.shown_seed(),
        }  # fmt: skip
        return views.state(self.game, viewer, open_all, since, self.step, extra)

    def hint(self, seat: Any = None, open_all: bool = False) -> dict[str, Any]:
        """What expert and search would play, from the seat to act's observation."""
        viewer = self.viewer(seat, open_all)
        to_act = self._to_act()
        if to_act != viewer and not open_all:
            raise Refused(409, f"a hint is for the seat to act (player_{to_act}), seen from its own cards")
        return {"seat": to_act, "step": self.step, **self.hinter().hint(self.match.observe(to_act))}

    def log(self) -> MatchLog:
        """The match's log; in play mode only once the match is over (it holds every hand)."""
        if self.person is not None and not self.over:
            raise Refused(409, "the log holds every hand of the match: it can be had once the match is over")
        players = [PERSON if s == self.person else name for s, name in enumerate(self.names)]
        return self.recorder.log(players, self.seed, "agents.web")


class ReplayMatch(Session):
    """A checked match log, shown at any step, forwards or backwards."""

    mode = "replay"

    def __init__(self, log: MatchLog) -> None:
        super().__init__(log.seed or 0)
        self.replay = Replay(log)  # a MatchLogError (a ValueError) if it does not replay
        self.log = log
        self.review: Any = None  # a ReviewJob (agents.apps.web.reviews), once the page asks for the review

    def estimated_bytes(self) -> int:
        """At its last step, where its game holds the most (and its review, if any, done)."""
        review = self.review.estimated_bytes() if self.review is not None else 0
        return MATCH_BYTES + STEP_BYTES * self.replay.steps + DECK_BYTES * len(self.log.decks) + review

    def close(self) -> None:
        if self.review is not None:
            self.review.cancel()

    def _step(self, step: Any) -> int:
        return self.replay.steps if step is None else check_int("step", step, 0, self.replay.steps)

    def state(self, step: Any = None, seat: Any = None, open_all: bool = True, since: int = 0) -> dict[str, Any]:
        at = self._step(step)
        viewer = 0 if seat is None else check_int("seat", seat, 0, N_SEATS - 1)
        game = self.replay.game_at(at)
        extra = {
            "id": self.id, "mode": self.mode, "person": None, "players": list(self.log.players),
            "seed": None if self.log.seed is None else str(self.log.seed), "steps": self.replay.steps,
            "source": self.log.source,
        }  # fmt: skip
        return views.state(game, viewer, open_all, since, at, extra)

    def hint(self, step: Any = None, seat: Any = None, open_all: bool = True) -> dict[str, Any]:
        at = self._step(step)
        game = self.replay.game_at(at)
        if game.phase >= DEAL_OVER:
            raise Refused(409, "the match is over at this step: there is nothing to decide")
        if not open_all and seat != game.current:
            raise Refused(409, f"a hint is for the seat to act (player_{game.current}), seen from its own cards")
        observation, mask = encode_with_mask(game, game.current)
        hint = self.hinter().hint({"observation": observation, "action_mask": mask})
        return {"seat": game.current, "step": at, **hint}


class Store:
    """The matches held, by id; idle ones expire, and there are at most ``max_matches``, of
    at most ``budget_bytes`` together by their estimates; one client holds at most ``client_share``
    of each (at least one match), so that another client still gets a match."""

    def __init__(
        self,
        idle_seconds: float = IDLE_SECONDS,
        max_matches: int = MAX_MATCHES,
        clock: Callable[[], float] = time.monotonic,
        budget_bytes: int = MEMORY_BUDGET,
        client_share: float = CLIENT_SHARE,
    ) -> None:
        if not (isinstance(idle_seconds, int | float) and math.isfinite(idle_seconds) and 0 < idle_seconds <= MAX_IDLE_SECONDS):
            raise ValueError(f"the idle time must be above 0 and at most {MAX_IDLE_SECONDS:,} s, got {idle_seconds!r}")
        if isinstance(max_matches, bool) or not isinstance(max_matches, int) or max_matches < 1:
            raise ValueError(f"the most matches held must be an integer 1 or more, got {max_matches!r}")
        if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int) or budget_bytes < MATCH_BYTES:
            raise ValueError(f"the memory budget must be an integer of {MATCH_BYTES:,} bytes or more, got {budget_bytes!r}")
        if not (isinstance(client_share, int | float) and 0 < client_share <= 1):
            raise ValueError(f"a client's share of the matches must be above 0 and at most 1, got {client_share!r}")
        self.idle_seconds = idle_seconds
        self.max_matches = max_matches
        self.budget_bytes = budget_bytes
        self.client_matches = max(1, int(max_matches * client_share))
        self.client_bytes = max(MATCH_BYTES, int(budget_bytes * client_share))
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def expire(self) -> None:
        """Forget the matches idle for longer than ``idle_seconds``."""
        limit = self.clock() - self.idle_seconds
        with self._lock:
            for key in [k for k, s in self._sessions.items() if s.last_used < limit]:
                self._sessions.pop(key).close()

    def add(self, session: Session, client: str = "") -> str:
        """Hold ``session`` for ``client``; a 429 past the client's share, a 503 past the server's bounds."""
        self.expire()
        with self._lock:
            wait = f"end one, or wait for idle ones to expire ({self.idle_seconds / 60:g} minutes without a request)"
            if len(self._sessions) >= self.max_matches:
                raise Refused(503, f"the server holds {self.max_matches} matches, the most it keeps: {wait}")
            held, new = sum(s.estimated_bytes() for s in self._sessions.values()), session.estimated_bytes()
            if held + new > self.budget_bytes:
                raise Refused(
                    503, f"the matches held take about {held / 2**20:,.1f} MB and this one {new / 2**20:,.1f} MB, "
                    f"more than the {self.budget_bytes / 2**20:,.0f} MB the server keeps for matches: {wait}",
                )  # fmt: skip
            mine = [s for s in self._sessions.values() if s.client == client]
            if len(mine) >= self.client_matches:
                raise Refused(429, f"you hold {len(mine)} matches, the most one client keeps here: {wait}")
            held = sum(s.estimated_bytes() for s in mine)
            if held + new > self.client_bytes:
                raise Refused(
                    429, f"your matches take about {held / 2**20:,.1f} MB and this one {new / 2**20:,.1f} MB, more "
                    f"than the {self.client_bytes / 2**20:,.0f} MB the server keeps for one client's matches: {wait}",
                )  # fmt: skip
            session.id = secrets.token_urlsafe(18)
            session.client = client
            session.last_used = self.clock()
            self._sessions[session.id] = session
        return session.id

    def get(self, match_id: str) -> Session:
        self.expire()
        session = self._sessions.get(match_id) if ID_PATTERN.fullmatch(match_id) else None
        if session is None:
            raise Refused(
                404, f"no match with this id: it never existed, was ended, or expired after "
                f"{self.idle_seconds / 60:g} minutes without a request",
            )  # fmt: skip
        session.last_used = self.clock()
        return session

    def remove(self, match_id: str) -> None:
        self.get(match_id)
        with self._lock:
            session = self._sessions.pop(match_id, None)
        if session is not None:
            session.close()
