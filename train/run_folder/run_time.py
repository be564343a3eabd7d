"""The run's time across its legs: ``run_time.json`` in the run folder.

A checkpoint keeps the minutes the run had taken when it was written, so a resumed run used to
leave out every leg's time after its last checkpoint: a whole leg of labelling and fitting when a
stop came in expert iteration's rounds (those resume from the warm start's checkpoint). This file
holds the run's minutes so far, written at every checkpoint and when the process ends (a stop
included); ``--resume`` goes on from the larger of it and the checkpoint's. A file that is missing
or unreadable leaves the checkpoint's figure (a run from before this file, a process killed at once).
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.shared.atomic_file import write_text
from allfours_env.checks import number

FILE = "run_time.json"
MAX_BYTES = 1000
MAX_MINUTES = 1e9  # any figure above is damage, not time


def read_minutes(run_dir: Path) -> float | None:
    """The run's minutes the file holds, or None if it is missing or is not such a file."""
    try:
        path = run_dir / FILE
        if path.stat().st_size > MAX_BYTES:
            return None
        return number(FILE, json.loads(path.read_text())["minutes"], 0.0, MAX_MINUTES)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_minutes(run_dir: Path, minutes: float) -> None:
    """Keep ``minutes`` as the run's time so far (whole or not at all)."""
    write_text(run_dir / FILE, json.dumps({"minutes": round(minutes, 4)}) + "\n")
