"""Checkpoints of a training run, written atomically, with everything needed to resume exactly.

A checkpoint is a folder ``checkpoints/step_<N>/`` holding ``model.zip`` (SB3: weights, optimizer,
last observations, counters) and ``state.pkl`` (the envs' games and generators, the global RNG
states SB3 draws from, the opponent snapshots, the trainer's schedule). It is written under a
temporary name and renamed into place; then the text file ``checkpoints/latest`` is replaced
to point at it. An interrupted write leaves the previous checkpoint as the latest.
"""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

KEEP = 2  # checkpoints kept on disk; older ones are removed after a new one is in place


class ResumeError(RuntimeError):
    """A run that cannot be resumed (no checkpoint, or a damaged one)."""


def checkpoint_root(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def save_checkpoint(run_dir: Path, step: int, model: Any, state: dict[str, Any]) -> Path:
    root = checkpoint_root(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:010d}"
    final = root / name
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.save(tmp / "model.zip")
    with open(tmp / "state.pkl", "wb") as f:
        pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    write_text_atomic(root / "latest", name + "\n")
    for old in sorted(p for p in root.glob("step_*") if p.is_dir())[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path:
    pointer = checkpoint_root(run_dir) / "latest"
    if not pointer.is_file():
        raise ResumeError(f"nothing to resume in {run_dir}: no checkpoint was written there (no {pointer})")
    folder = checkpoint_root(run_dir) / pointer.read_text().strip()
    if not (folder / "model.zip").is_file() or not (folder / "state.pkl").is_file():
        raise ResumeError(f"the latest checkpoint {folder} is incomplete (model.zip and state.pkl expected)")
    return folder


def load_state(folder: Path) -> dict[str, Any]:
    try:
        with open(folder / "state.pkl", "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as err:
        raise ResumeError(f"cannot read {folder / 'state.pkl'}: {err}") from None
