"""A plain-text progress bar on stderr: boards done, matches per second and time left."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

BAR_WIDTH = 30
MIN_REDRAW_SECONDS = 0.2


class Progress:
    """Counts finished boards of ``total`` and redraws one status line (at most every 0.2 s).

    The speed is shown in ``unit`` ("matches" or "deals") per second, ``games_per_board`` a board.
    """

    def __init__(
        self, total: int, games_per_board: int, unit: str, stream: TextIO | None = None, done: int = 0
    ) -> None:
        self.total = total
        self.games_per_board = games_per_board
        self.unit = unit
        self.stream = stream or sys.stderr
        self.done = self.first = done  # done: boards finished before (a resumed evaluation)
        self.start = time.perf_counter()
        self._last_draw = -math.inf
        self._draw()

    def update(self, boards: int) -> None:
        self.done += boards
        if time.perf_counter() - self._last_draw >= MIN_REDRAW_SECONDS:
            self._draw()

    def close(self) -> None:
        """Draw the final state and end the line."""
        self._draw()
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self) -> None:
        now = time.perf_counter()
        self._last_draw = now
        elapsed = now - self.start
        fraction = self.done / self.total
        filled = round(BAR_WIDTH * fraction)
        played = self.done - self.first
        rate = played * self.games_per_board / elapsed if elapsed > 0 else 0.0
        left = f"{_clock(elapsed * (self.total - self.done) / played)} left" if played else "starting"
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} boards"
            f"  {rate_text(rate)} {self.unit}/s  {_clock(elapsed)} elapsed, {left} "
        )
        self.stream.flush()


def rate_text(rate: float) -> str:
    """A rate with the precision it needs: 5,120 / 41.3 / 0.35."""
    if rate >= 100:
        return f"{rate:,.0f}"
    return f"{rate:.1f}" if rate >= 10 else f"{rate:.2f}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"
