"""Each kind of work's rate as measured on this machine, kept for later runs: ``<output_dir>/rates.json``.

Without them a kind this process had not timed was only named ("not timed yet"): the default run
showed no whole-run estimate for its first two minutes, and fit, evaluation and PPO stayed untimed
for most of an hour. Every phase that closes keeps its units and seconds here, under its kind and
the config's fingerprint (its options but those that name or size the run: a run of the same
config here, resumed or new, any length, shares them). A missing, damaged or foreign file only
leaves kinds untimed; rates are numbers, never code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from agents.shared.atomic_file import write_text

FILE = "rates.json"
MAX_BYTES = 1_000_000
MAX_ENTRIES = 200  # fingerprint-kind pairs kept (the newest)
# What names or sizes a run, not how fast its work goes.
NOT_RATE = ("run_name", "output_dir", "seed", "total_steps", "max_minutes", "imitation_steps", "distil_labels",
            "step_labels", "student_pull_steps", "checkpoint_minutes")  # fmt: skip


class KeptRates:
    """The rates of one config kept in ``folder``: read once, added to as phases close."""

    def __init__(self, folder: Path, options: dict[str, Any]) -> None:
        self.path = folder / FILE
        rated = {key: value for key, value in options.items() if key not in NOT_RATE}
        self.prefix = hashlib.sha256(json.dumps(rated, sort_keys=True, default=str).encode()).hexdigest()[:16] + " "
        self._all = _read(self.path)

    def rate(self, kind: str) -> float:
        """Units a second of ``kind`` in earlier runs (0: none kept)."""
        units, seconds = self._all.get(self.prefix + kind, (0.0, 0.0))
        return units / seconds if units > 0 and seconds > 0 else 0.0

    def keep(self, kind: str, units: float, seconds: float) -> None:
        """This process's measure of ``kind`` (all its phases so far) replaces the kept one; a write
        that fails (a full disk, a read-only folder) keeps nothing and stops nothing."""
        if units <= 0 or seconds <= 0:
            return
        self._all.pop(self.prefix + kind, None)  # (then the newest, last)
        self._all[self.prefix + kind] = (float(units), float(seconds))
        newest = dict(list(self._all.items())[-MAX_ENTRIES:])
        with contextlib.suppress(OSError):
            write_text(self.path, json.dumps({key: list(value) for key, value in newest.items()}) + "\n")


def _read(path: Path) -> dict[str, tuple[float, float]]:
    try:
        data = json.loads(path.read_text()) if path.stat().st_size <= MAX_BYTES else {}
    except (OSError, ValueError):
        return {}
    pairs = data.items() if isinstance(data, dict) else ()
    return {
        str(key): (float(value[0]), float(value[1]))
        for key, value in pairs
        if isinstance(value, list) and len(value) == 2 and all(type(v) in (int, float) and 0 < v < 1e15 for v in value)
    }
