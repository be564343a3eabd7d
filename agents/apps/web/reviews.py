"""Reviews on the web page: a match's decisions reviewed in a background thread, one match at a time.

A review (:mod:`agents.apps.review`) searches every decision that had a choice from its seat's own
observation: a match to 14 (70 to 150 such decisions) takes 5 to 20 s of one core at the
review's default precision (15 s for 149 decisions on this project's machine, under load from
other work). So no request waits for one. The page asks for the review of a
finished match or of an uploaded log; the server makes it a replay (:class:`~agents.apps.web.sessions.ReplayMatch`)
with a :class:`ReviewJob`, queues the job and answers at once; the page polls the job and shows
each decision's figures as they come, in the order of the match (the graph grows from the left).
The figures are the command line's at its defaults (``REVIEW_WORLDS`` = 512 worlds, seed 0, each
decision seeded by its step): ``python -m agents.review LOG`` on the downloaded log gives the same
numbers, so the log is all there is to share. The hands-open analysis is always computed (one
world a decision, a few per cent more time) and shown only on request.

Bounds, so that no client holds the server for long:

- one thread reviews for the whole server, one job at a time (``ReviewQueue``): at most one core,
  whatever the clients ask; at most ``MAX_QUEUED`` jobs wait, and a request beyond that is refused
  (503, "try again"); one client has at most ``MAX_CLIENT_JOBS`` jobs waiting or running (429
  beyond), so it cannot keep the queue full for others. The server answers meanwhile: a replay's
  state took 1.1 ms (median, 17 ms at most) during a review, 1.0 ms without;
- a job reviews at most ``MAX_REVIEW_DECISIONS`` decisions (a match to about 40 points; a longer
  log is refused with 413 and the command that reviews it) and runs at most ``REVIEW_SECONDS``:
  then it stops, what it reviewed is kept and shown, and the page says so;
- a job whose replay is ended or expires (idle, see :class:`~agents.apps.web.sessions.Store`) is
  cancelled before its next decision; its memory (about ``REVIEW_DECISION_BYTES`` a decision,
  counted in the replay's :meth:`~agents.apps.web.sessions.Session.estimated_bytes`) goes with it;
- a poll returns the decisions from the index the page asks for (``since``), so each is sent once.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from ..match_log import MatchLog
from ..review import (
    ACCURATE_WITHIN,
    DEFAULT_WORLDS,
    THRESHOLDS,
    DecisionReview,
    MatchReview,
    Reviewer,
    Settings,
    command_line,
    deal_starts,
    iter_decisions,
    legal_counts,
)
from .sessions import Refused

REVIEW_WORLDS = DEFAULT_WORLDS
MAX_REVIEW_DECISIONS = 600
MAX_QUEUED = 4
MAX_CLIENT_JOBS = 2  # jobs of one client waiting or running (the review of one match, and the next)
REVIEW_SECONDS = 120.0
REVIEW_DECISION_BYTES = 4096  # a reviewed decision held (its figures and the table's text), measured about 2 KB


class ReviewJob:
    """The review of one log, made by the review thread, read by the page's polls."""

    def __init__(self, log: MatchLog, worlds: int = REVIEW_WORLDS, seconds: float = REVIEW_SECONDS) -> None:
        self.log = log
        self.settings = Settings(worlds=worlds, open=True)
        self.budget = seconds
        # (step, seat) of each decision with a choice
        self.steps = [(step, seat) for step, (seat, n) in enumerate(legal_counts(log)) if n > 1]
        if len(self.steps) > MAX_REVIEW_DECISIONS:
            raise Refused(
                413, f"this match has more than {MAX_REVIEW_DECISIONS} decisions with a choice, more than the "
                "page reviews: download the log and review it with python -m agents.review LOG",
            )  # fmt: skip
        self.deal_starts = deal_starts(log)
        self.results: list[DecisionReview] = []
        self.status = "queued"
        self.error = ""
        self.seconds = 0.0
        self.cancelled = threading.Event()
        self.client = ""  # who asked for it, set by ReviewQueue.submit
        self._lock = threading.Lock()

    def estimated_bytes(self) -> int:
        return REVIEW_DECISION_BYTES * len(self.steps)

    def cancel(self) -> None:
        self.cancelled.set()
        if self.status == "queued":
            self.status = "cancelled"

    def run(self) -> None:
        """Review every decision in the order of the match (in the review thread)."""
        if self.cancelled.is_set():
            self.status = "cancelled"
            return
        self.status = "running"
        start = time.perf_counter()
        reviewer = Reviewer(self.settings, self.log.rules)
        status = "done"
        for decision in iter_decisions(self.log, [step for step, _ in self.steps], open_hands=True):
            if self.cancelled.is_set():
                status = "cancelled"
                break
            if time.perf_counter() - start > self.budget:
                status = "stopped"
                break
            review = reviewer.review(decision)
            with self._lock:
                self.results.append(review)
                self.seconds = time.perf_counter() - start
        self.seconds = time.perf_counter() - start
        self.status = status

    def review(self) -> MatchReview:
        """What is reviewed so far, as a :class:`~agents.apps.review.MatchReview`."""
        with self._lock:
            results = tuple(self.results)
        return MatchReview(self.log, (0, 1, 2, 3), self.settings, results, self.seconds)

    def state(self, since: int = 0, position: int | None = None) -> dict[str, Any]:
        """The job for the page: status, progress, per-seat figures so far, decisions from ``since``."""
        review = self.review()
        out = {
            "status": self.status, "done": len(review.decisions), "total": len(self.steps),
            "steps": [list(pair) for pair in self.steps], "worlds": self.settings.worlds,
            "seconds": round(self.seconds, 1), "budget_seconds": self.budget, "command": command_line(review),
            "thresholds": dict(THRESHOLDS), "accurate_within": ACCURATE_WITHIN, "deal_starts": self.deal_starts,
            "seats": [review.summary(seat).to_json() for seat in range(4)],
            "result": {"scores": list(self.log.scores), "winner": self.log.winner},
            "since": since, "decisions": [_decision(d) for d in review.decisions[since:]],
        }  # fmt: skip
        if position is not None:
            out["queue_position"] = position
        if self.error:
            out["error"] = self.error
        return out


def _decision(review: DecisionReview) -> dict[str, Any]:
    out = review.to_json()
    del out["table"]  # (the page draws the table itself, from the seat's view)
    return out


class ReviewQueue:
    """One thread reviewing the queued jobs one at a time; at most ``max_queued`` wait, and at most
    ``max_client_jobs`` of one client wait or run. ``worlds`` and ``seconds``: each job's precision
    and time budget."""

    def __init__(
        self, max_queued: int = MAX_QUEUED, worlds: int = REVIEW_WORLDS, seconds: float = REVIEW_SECONDS,
        max_client_jobs: int = MAX_CLIENT_JOBS,
    ) -> None:  # fmt: skip
        Settings(worlds=worlds)  # (a ValueError now for a bad one)
        if not (isinstance(seconds, int | float) and 0 < seconds <= 3600):
            raise ValueError(f"a review's time budget must be above 0 and at most 3,600 s, got {seconds!r}")
        self.max_queued, self.worlds, self.seconds = max_queued, worlds, float(seconds)
        self.max_client_jobs = max_client_jobs
        self._jobs: deque[ReviewJob] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.current: ReviewJob | None = None

    def submit(self, job: ReviewJob, client: str = "") -> None:
        """Queue ``job`` for ``client``; a 429 past the client's jobs, a 503 when too many wait."""
        with self._cond:
            waiting = [j for j in self._jobs if not j.cancelled.is_set()]
            running = [] if self.current is None or self.current.cancelled.is_set() else [self.current]
            mine = [j for j in (*waiting, *running) if j.client == client]
            if len(mine) >= self.max_client_jobs:
                raise Refused(
                    429, f"you have {len(mine)} reviews waiting or running, the most one client has at once: "
                    "try again when one is done",
                )  # fmt: skip
            if len(waiting) >= self.max_queued:
                raise Refused(503, f"the server is reviewing other matches ({len(waiting)} waiting): try again in a minute")
            job.client = client
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="reviews", daemon=True)
                self._thread.start()
            self._cond.notify()

    def position(self, job: ReviewJob) -> int | None:
        """How many jobs come before ``job`` (0: it runs now or is next), None once it has started."""
        with self._cond:
            if job.status != "queued":
                return None
            waiting = [j for j in self._jobs if not j.cancelled.is_set()]
            return waiting.index(job) + (self.current is not None) if job in waiting else None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job = self._jobs.popleft()
                self.current = job
            try:
                job.run()
            except Exception as error:  # noqa: BLE001  (a bug: said on the page, and the thread goes on)
                job.error = f"the review failed: {type(error).__name__}: {str(error)[:200]}"
                job.status = "failed"
            finally:
                with self._cond:
                    self.current = None
