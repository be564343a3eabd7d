"""Progress lines of a training run on stderr: every phase, a line at least every 10 s.

:meth:`Progress.phase` opens a phase as a context (an evaluation opens inside PPO, which takes over
again after it); :meth:`Progress.advance` reports how far it is. A line comes when a phase opens,
when it is done, and PROGRESS_SECONDS after the last line (from a background thread when the code
says nothing itself: a first run compiling the engine, a long evaluation). Each names the phase,
how far it is (when ``max_minutes`` ends it before its count, its share "of the time allowed"),
its rate, its time taken and left ("starting" until a rate is known); with a
:class:`train.run.plan.RunPlan` (:attr:`Progress.plan`) also the run's stage and whole time left::

    [train] [stage 5/5] PPO: 1,048,576/3,000,000 steps (35%)  5,120 steps/s  3m25s elapsed, 6m21s left;
    run: 1h02m elapsed, 6m21s left ±20%  vs expert 0.51 [0.48, 0.54]       (one line, cut here)
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, TextIO

from eval.progress import rate_text

PROGRESS_SECONDS = 9.0  # a line at least this often: with the thread's tick, never 10 s without one
TICK_SECONDS = 0.25  # how often the background thread looks


class Plan(Protocol):
    """What the lines ask of the run's plan (:class:`train.run.plan.RunPlan`, which imports this
    module: a room below the pipeline knows the plan only by these)."""

    def allowed(self) -> float: ...
    def where(self, what: str) -> str: ...
    def left(self, phases: list[Phase], now: float) -> str: ...
    def opened(self, kind: str) -> None: ...
    def closed(self, kind: str, units: int, seconds: float) -> None: ...


@dataclass
class Phase:
    what: str
    unit: str
    total: int
    done: int
    note: Callable[[], str] | None
    work: str = ""  # the run plan's kind of work it does ("": none of its own)
    started: float = 0.0
    first: int = 0  # done when the phase opened: the rate counts from there

    def line(self, now: float, plan: Plan | None, open_phases: list[Phase]) -> str:
        elapsed = now - self.started
        text = f"[train] {plan.where(self.what) if plan else ''}{self.what}"
        if self.total:
            rate = (self.done - self.first) / elapsed if elapsed > 0 else 0.0
            speed = f"  {rate_text(rate)} {self.unit}/s" if rate > 0 else ""
            seconds = max(self.total - self.done, 0) / rate if rate > 0 else 0.0
            share = f"{self.done / self.total:.0%}"
            if plan and rate > 0 and plan.allowed() < seconds:  # max_minutes ends the run, and this phase, first:
                seconds = plan.allowed()  # how far it is is its share of the phase's time
                share = f"{elapsed / (elapsed + seconds):.0%} of the time allowed"
            left = f"{duration(seconds)} left" if rate > 0 else "starting"
            text += f": {self.done:,}/{self.total:,} {self.unit} ({share}){speed}  {duration(elapsed)} elapsed, {left}"
        else:
            text += f": {duration(elapsed)} elapsed"
        if plan:
            text += "; " + plan.left(open_phases, now)
        if self.note:
            text += self.note()
        return text


class Progress:
    """The progress lines of one run (see the module docstring); ``enabled=False`` prints nothing."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream
        self._phases: list[Phase] = []
        self.plan: Plan | None = None  # the run's stages, once known: stage and time left in every line
        self._last_line = time.monotonic()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def phase(
        self, what: str, unit: str = "", total: int = 0, done: int = 0, note: Callable[[], str] | None = None,
        quiet: bool = False, work: str = "",
    ) -> Iterator[None]:
        """A phase of ``total`` ``unit`` (0: not counted), ``done`` of them already; ``note()``
        adds to each of its lines. Its first line is printed at once and its last when it is
        complete, unless ``quiet`` (a short part of a larger phase: lines only if it lasts).
        ``work``: the run plan's kind of work it does (its units and time measure that kind's rate)."""
        self._phases.append(Phase(what, unit, total, done, note, work, started=time.monotonic(), first=done))
        if self.plan and work:
            self.plan.opened(work)
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="progress", daemon=True)
            self._thread.start()
        if not quiet:
            self.show()
        try:
            yield
        finally:
            if not quiet and self._phases[-1].total and self._phases[-1].done >= self._phases[-1].total:
                self.show()
            phase = self._phases.pop()
            if self.plan and work:
                self.plan.closed(work, phase.done - phase.first, time.monotonic() - phase.started)

    def advance(self, done: int) -> None:
        """The current phase has done ``done`` (a line if PROGRESS_SECONDS have passed)."""
        if self._phases:
            self._phases[-1].done = done
            if time.monotonic() - self._last_line >= PROGRESS_SECONDS:
                self.show()

    def add(self, count: int) -> None:
        """The current phase has done ``count`` more."""
        if self._phases:
            self.advance(self._phases[-1].done + count)

    def say(self, text: str) -> None:
        """A line of its own (it counts as a line: the next one is due PROGRESS_SECONDS later)."""
        self._write(f"[train] {text}")

    def close(self) -> None:
        self._stopped.set()

    def show(self) -> None:
        """Print the current phase's line now."""
        phases = list(self._phases)  # the watching thread reads while the main thread opens and closes phases
        if phases:
            self._write(phases[-1].line(time.monotonic(), self.plan, phases))

    def _write(self, line: str) -> None:
        with self._lock:
            self._last_line = time.monotonic()
            if self.enabled:
                print(line, file=self.stream or sys.stderr, flush=True)

    def _watch(self) -> None:
        while not self._stopped.wait(TICK_SECONDS):
            if time.monotonic() - self._last_line >= PROGRESS_SECONDS:
                self.show()


def duration(seconds: float) -> str:
    """45s, 3m25s, 2h05m."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
