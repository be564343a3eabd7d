"""The matches the server holds: played, watched or replayed, each under an unguessable id.

A :class:`LiveMatch` owns the engine (:class:`allfours_env.engine.Game`) and the bots, driven
through the shared match loop (:class:`allfours_env.match.Match`) with a :class:`agents.match_log.Recorder`
as its event hook, so every match can be saved as a log. The page sends only actions: the
person's action goes to the engine like any bot's (an illegal one is refused and changes nothing);
a bot's move is made on request, one at a time, so the page shows them at its own pace. A
:class:`ReplayMatch` holds a checked match log and rebuilds the game at any step.

:class:`Store` keeps them by id (``secrets.token_urlsafe``: 144 random bits), drops a match idle
for longer than its ``idle_seconds``, and refuses new ones beyond ``max_matches``. Each match has
a lock, so two requests for one match (two tabs, a double click) take turns; a request naming the
step it saw is refused once the match has moved past it.
"""

from __future__ import annotations

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

from ..base import Bot
from ..match_log import MatchLog, Recorder, Replay
from . import views
from .hints import Hinter

IDLE_SECONDS = 30 * 60
MAX_MATCHES = 200
LOCK_SECONDS = 10.0  # how long a request waits for another request of the same match
PERSON = "person"  # the person's seat in a log's players
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


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

    def __init__(self) -> None:
        self.id = ""
        self.lock = threading.Lock()
        self.last_used = 0.0
        self._hinter: Hinter | None = None
        self.hint_seed = 0

    def hinter(self) -> Hinter:
        if self._hinter is None:
            self._hinter = Hinter(self.hint_seed)
        return self._hinter


class LiveMatch(Session):
    """A match in play (``person`` is the person's seat) or watched (``person`` None, four bots)."""

    def __init__(
        self, bots: Sequence[Bot | None], names: Sequence[str], rules: Rules, seed: int, person: int | None = None
    ) -> None:
        super().__init__()
        self.mode = "watch" if person is None else "play"
        self.person = person
        self.names = list(names)
        self.seed = seed
        self.hint_seed = seed
        self.game = Game(rules, np.random.default_rng(seed))
        for seat, bot in enumerate(bots):
            if bot is not None:
                bot.reset(seed + seat)  # distinct streams, as agents.play does
        self.recorder = Recorder(self.game)
        self.match = Match(self.game, list(bots), on_event=self.recorder)
        self.bot_ms: list[float] = []  # each bot move's time in act()

    @property
    def step(self) -> int:
        """Actions taken so far."""
        return len(self.recorder.actions)

    @property
    def over(self) -> bool:
        return self.game.phase >= DEAL_OVER

    def check_step(self, step: Any) -> None:
        """Refuse a request made from an older position than the match's (None: no check)."""
        if step is None:
            return
        check_int("step", step, 0, 10**9)
        if step != self.step:
            raise Refused(409, f"the match has moved on: it is at step {self.step}, the request was made at step {step}")

    def _to_act(self) -> int:
        if self.over:
            raise Refused(409, f"the match is over: team {self.game.winner} won {self.game.scores[0]}-{self.game.scores[1]}")
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
        self.bot_ms.append(think_ms)
        self.match.step(action, observation)  # a bot's illegal action raises: a server error, loudly
        return {"seat": seat, "action": action, "label": views.action_label(action), "think_ms": round(think_ms, 2)}

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
        extra = {"id": self.id, "mode": self.mode, "person": self.person, "players": self.names, "seed": self.seed}
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
        super().__init__()
        self.replay = Replay(log)  # a MatchLogError (a ValueError) if it does not replay
        self.log = log
        self.hint_seed = log.seed or 0

    def _step(self, step: Any) -> int:
        return self.replay.steps if step is None else check_int("step", step, 0, self.replay.steps)

    def state(self, step: Any = None, seat: Any = None, open_all: bool = True, since: int = 0) -> dict[str, Any]:
        at = self._step(step)
        viewer = 0 if seat is None else check_int("seat", seat, 0, N_SEATS - 1)
        game = self.replay.game_at(at)
        extra = {
            "id": self.id, "mode": self.mode, "person": None, "players": list(self.log.players),
            "seed": self.log.seed, "steps": self.replay.steps, "source": self.log.source,
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
    """The matches held, by id; idle ones expire, and there are at most ``max_matches``."""

    def __init__(
        self, idle_seconds: float = IDLE_SECONDS, max_matches: int = MAX_MATCHES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.idle_seconds = idle_seconds
        self.max_matches = max_matches
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
                del self._sessions[key]

    def add(self, session: Session) -> str:
        self.expire()
        with self._lock:
            if len(self._sessions) >= self.max_matches:
                raise Refused(
                    503, f"the server holds {self.max_matches} matches, the most it keeps: end one, or wait "
                    f"for idle ones to expire ({self.idle_seconds / 60:g} minutes without a request)",
                )  # fmt: skip
            session.id = secrets.token_urlsafe(18)
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
            self._sessions.pop(match_id, None)
