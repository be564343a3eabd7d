"""Checkpoints of a training run, written atomically, read back without running code from them.

A checkpoint is a folder ``checkpoints/step_<N>/`` holding ``model.zip`` (SB3: weights and
optimizer state) and ``state.pkl`` (the envs' games and generators, the global RNG states SB3
draws from, the opponent snapshots, the trainer's schedule, SB3's counters and last
observations). It is written under a temporary name and renamed into place; then the text file
``checkpoints/latest`` is replaced to point at it. An interrupted write leaves the previous
checkpoint as the latest.

Reading one runs no code from it: ``model.zip`` gives only its weights (torch's weights-only
loader; SB3's pickled metadata is not read) and ``state.pkl`` is read by an unpickler that
builds only the project's own classes and plain numpy and gymnasium objects. When the newest
checkpoint cannot be read, :func:`newest_intact` falls back to the newest one that can.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

KEEP = 2  # checkpoints kept on disk; older ones are removed after a new one is in place
MODEL_FILE = "model.zip"
STATE_FILE = "state.pkl"
STEP_PREFIX = "step_"
# what a damaged or hostile pickle raises while it is read
UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError, IndexError)
STATE_KEYS = ("trainer", "env_state", "sb3", "torch_rng", "numpy_global_rng", "python_rng")
SAFE_PACKAGES = ("allfours_env.", "agents.")  # classes of the project's own bots and games
SAFE_GLOBALS = {
    ("agents.policy", "_relu"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("collections", "OrderedDict"),
    ("collections", "deque"),
    ("gymnasium.spaces.box", "Box"),
    ("gymnasium.spaces.dict", "Dict"),
    ("gymnasium.spaces.discrete", "Discrete"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy", "tanh"),
    *((f"numpy.{core}.multiarray", name) for core in ("core", "_core") for name in ("_reconstruct", "scalar")),
    *((f"numpy.{core}.numeric", "_frombuffer") for core in ("core", "_core")),
    *(("numpy.random._pickle", f"__{kind}_ctor") for kind in ("bit_generator", "generator", "randomstate")),
    *(("numpy.random._pcg64", n) for n in ("PCG64", "PCG64DXSM")),
    ("numpy.random._mt19937", "MT19937"),
    ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
}


class ResumeError(RuntimeError):
    """A run that cannot be resumed (no checkpoint, or only damaged ones)."""


class _DataUnpickler(pickle.Unpickler):
    """Builds only allow-listed globals: a pickled call to anything else is refused, not run."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_GLOBALS:
            return super().find_class(module, name)
        if module.startswith(SAFE_PACKAGES):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a checkpoint")


def checkpoint_root(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def say(text: str) -> None:
    """One progress or status line of training on stderr."""
    print(f"[train] {text}", file=sys.stderr, flush=True)


def write_checkpoint(run_dir: Path, step: int, fill: Callable[[Path], None]) -> Path:
    """The checkpoint folder of ``step``: ``fill(folder)`` writes it under a temporary name, then it
    is renamed into place and made the latest; the oldest beyond KEEP are removed."""
    root = checkpoint_root(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    name = f"{STEP_PREFIX}{step:010d}"
    final, tmp = root / name, root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    fill(tmp)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    write_text_atomic(root / "latest", name + "\n")
    for old in sorted(p for p in root.glob(f"{STEP_PREFIX}*") if p.is_dir())[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def save_checkpoint(run_dir: Path, step: int, model: Any, state: dict[str, Any]) -> Path:
    def fill(folder: Path) -> None:
        folder.mkdir()
        model.save(folder / MODEL_FILE)
        with open(folder / STATE_FILE, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)

    return write_checkpoint(run_dir, step, fill)


def resumed_config(given: Any, saved: Any, path: Path, step: int, extend: bool) -> Any:
    """The run's own config (``saved``, read from ``path``) for a resume: ``given`` may differ
    from it only in ``total_steps``, and only with ``extend`` (the change is then written)."""
    identity = ("run_name", "output_dir", "total_steps")  # the folder names the run; total_steps: below
    mine, theirs = saved.to_dict(), given.to_dict()
    differ = [
        f"{k} (run: {mine[k]!r}, given: {theirs[k]!r})" for k in mine if k not in identity and mine[k] != theirs[k]
    ]
    if differ:
        raise ResumeError(
            f"--resume continues {given.run_dir} with its own config ({path}), but the config given differs in "
            f"{'; '.join(differ)}. Resume without --config and --seed, or start a new run with another --run-name"
        )
    if given.total_steps == saved.total_steps:
        return given
    if not extend:
        raise ResumeError(
            f"total_steps of {given.run_dir} is {saved.total_steps:,}, the config given says {given.total_steps:,}; "
            f"pass --total-steps {given.total_steps} to change it explicitly"
        )
    if given.total_steps <= step:
        raise ResumeError(f"the run is at step {step:,} already; --total-steps must be more than that to extend it")
    write_text_atomic(path, yaml.safe_dump(given.to_dict(), sort_keys=False))
    say(f"total_steps of the run changed from {saved.total_steps:,} to {given.total_steps:,} (written to {path})")
    return given


def checkpoint_step(folder: Path) -> int:
    return int(folder.name[len(STEP_PREFIX) :])


def candidates(run_dir: Path) -> list[Path]:
    """Checkpoint folders, newest first (the one ``latest`` names leads)."""
    root = checkpoint_root(run_dir)
    folders = sorted(
        (p for p in root.glob(f"{STEP_PREFIX}*") if p.is_dir() and p.name[len(STEP_PREFIX) :].isdigit()),
        key=checkpoint_step,
        reverse=True,
    )
    pointer = root / "latest"
    named = root / pointer.read_text().strip() if pointer.is_file() else None
    return sorted(folders, key=lambda p: p != named)  # stable: the rest stays newest first


Loaded = TypeVar("Loaded")


def newest_intact(run_dir: Path, read: Callable[[Path], Loaded]) -> tuple[Path, Loaded, list[str]]:
    """The newest checkpoint ``read`` accepts, what it returned, and why newer ones were skipped.

    ``read(folder)`` raises ResumeError for a damaged checkpoint.
    """
    folders = candidates(run_dir)
    if not folders:
        raise ResumeError(f"nothing to resume in {run_dir}: no checkpoint was written there")
    skipped: list[str] = []
    for folder in folders:
        try:
            return folder, read(folder), skipped
        except ResumeError as err:
            skipped.append(str(err))
    raise ResumeError(f"no intact checkpoint in {checkpoint_root(run_dir)}:\n  " + "\n  ".join(skipped))


def load_state(folder: Path) -> dict[str, Any]:
    """``state.pkl`` of a checkpoint, read without running code, with its top-level layout checked."""
    path = folder / STATE_FILE
    try:
        with open(path, "rb") as f:
            state = _DataUnpickler(f).load()
    except UNREADABLE as err:
        raise ResumeError(f"cannot read {path}: {type(err).__name__}: {err}") from None
    if not isinstance(state, dict) or set(state) != set(STATE_KEYS):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ResumeError(f"{path} is not a checkpoint state (expected a dict of {list(STATE_KEYS)}, got {got})")
    env_state = state["env_state"]
    if not isinstance(env_state, dict) or not all(isinstance(env_state.get(k), dict) for k in ("selfplay", "monitor")):
        raise ResumeError(f"{path}: env_state must be a dict of the self-play env's and its monitor's states")
    counters = state["sb3"]
    if not isinstance(counters, dict) or not isinstance(counters.get("num_timesteps"), int):
        raise ResumeError(f"{path}: sb3 must be a dict of SB3's counters with an integer num_timesteps")
    return state


def load_model_params(folder: Path) -> dict[str, Any]:
    """The weights and optimizer state in ``model.zip``, through torch's weights-only loader only."""
    from stable_baselines3.common.save_util import load_from_zip_file

    path = folder / MODEL_FILE
    try:
        _, params, _ = load_from_zip_file(path, load_data=False, device="cpu")
    except Exception as err:  # SB3 and torch raise many kinds on a damaged or hostile zip
        raise ResumeError(f"cannot read {path}: {type(err).__name__}: {err}") from None
    if not params:
        raise ResumeError(f"{path} holds no weights")
    return params
