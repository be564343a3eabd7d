"""Checkpoints of a training run, written atomically, read back without running code from them.

A checkpoint is a folder ``checkpoints/step_<N>/`` holding ``model.zip`` (SB3: weights and
optimizer state), the run's state as data, ``state.json`` with ``state.npz``
(:mod:`train.run_folder.state_file`: the envs' games and generators, the bots' generators, the global RNG
states SB3 draws from, the opponent snapshots, the trainer's schedule, SB3's counters and last
observations, an overlapped run's rollout collected ahead), and a copy of the run's
``config.yaml``. It is written under a temporary name and renamed into place; then the text
file ``checkpoints/latest`` is replaced to point at it. An interrupted write leaves the previous
checkpoint as the latest; so does a write the disk refuses (full, read-only), which is a
:class:`WriteFailed` naming the checkpoint and the cause, with no temporary folder left.

Reading one runs no code from it: ``model.zip`` gives only its weights and optimizer state
(torch's weights-only loader; SB3's pickled metadata is not read) and the state is JSON and
plain arrays; nothing in a checkpoint is unpickled. Nothing in it chooses how much is read
either: each file must be a regular file (a FIFO or a link to a device is refused unopened)
within the sizes the run's own objects take, and each member of ``model.zip`` is checked
against the run's networks before it is read; a checkpoint folder that is a symbolic link is
skipped unread (its files would come from anywhere, and pruning could not remove it). The
restore then checks every value against the run before it is used (:mod:`train.run_folder.state_checks`).
A tampered or damaged checkpoint is a :class:`ResumeError` that says which file and what is
wrong; :func:`newest_intact` then falls back to the newest checkpoint that reads and fits, and
says which ones it skipped and why.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agents.shared.atomic_file import write_text
from agents.shared.processes import WRITE_FAILED_EXIT
from agents.shared.regular_file import read_bytes
from allfours_env.checks import brief, keys, number

from train.config import RUN_CONFIG_FILE
from train.run_folder.state_file import JSON_FILE, StateFileError, read_state, regular_file, write_state

KEEP = 2  # checkpoints kept on disk; older ones are removed after a new one is in place
MODEL_FILE = "model.zip"
OLD_STATE_FILE = "state.pkl"  # the pickled state of versions before 2026-12-02, no longer read
STEP_PREFIX = "step_"
STATE_KEYS = ("trainer", "env_state", "sb3", "torch_rng", "numpy_global_rng", "python_rng")
POINTER_BYTES = 64  # checkpoints/latest: a checkpoint's name
TORCH_FILE_BYTES = 2**20  # what a torch file adds around its tensors (pickle, headers, alignment): a few KB


class ResumeError(RuntimeError):
    """A run that cannot be resumed (no checkpoint, or only damaged ones)."""


class WriteFailed(RuntimeError):
    """A file of the run that cannot be written (a full or read-only disk): the run stops with
    this one line and exit code ``code`` (74, EX_IOERR); what was written before stays whole."""

    code = WRITE_FAILED_EXIT


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during training (either backend); the message says what was kept and how
    to resume, ``code`` is the exit code (130 or 143)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def checkpoint_root(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def say(text: str) -> None:
    """One progress or status line of training on stderr."""
    print(f"[train] {text}", file=sys.stderr, flush=True)


def write_checkpoint(run_dir: Path, step: int, fill: Callable[[Path], None]) -> Path:
    """The checkpoint folder of ``step``: ``fill(folder)`` writes into it (made, with a copy of the
    run's config) under a temporary name, then it is renamed into place and made the latest; the
    oldest beyond KEEP are removed.

    A write that fails (a full or read-only disk: any OSError) is a :class:`WriteFailed` naming
    the checkpoint and the cause; it leaves no temporary folder and the previous checkpoint the latest.
    """
    root = checkpoint_root(run_dir)
    name = f"{STEP_PREFIX}{step:010d}"
    final, tmp, old = root / name, root / f".{name}.tmp", root / f".{name}.old"
    placed = False
    try:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        if (run_dir / RUN_CONFIG_FILE).is_file():  # a copy, so that a lost run config can be recovered
            shutil.copyfile(run_dir / RUN_CONFIG_FILE, tmp / RUN_CONFIG_FILE)
        fill(tmp)
        _into_place(tmp, final, old)
        placed = True
        write_text(root / "latest", name + "\n")
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if placed:  # not the latest: not kept
            shutil.rmtree(final, ignore_errors=True)
        if old.is_dir() and not final.exists():  # the same step's checkpoint, set aside: put back
            with contextlib.suppress(OSError):
                os.replace(old, final)
        raise WriteFailed(f"cannot write checkpoint {name} in {root}: {err.strerror or err}") from None
    shutil.rmtree(old, ignore_errors=True)
    for older in sorted(p for p in root.glob(f"{STEP_PREFIX}*") if p.is_dir())[:-KEEP]:
        shutil.rmtree(older, ignore_errors=True)
    return final


def _into_place(tmp: Path, final: Path, old: Path) -> None:
    """Rename ``tmp`` to ``final``; a checkpoint already there (of the same step) is set aside as
    ``old`` first, so that it is there again if this fails."""
    if final.is_dir():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)


def save_checkpoint(run_dir: Path, step: int, model: Any, state: dict[str, Any]) -> Path:
    def fill(folder: Path) -> None:
        model.save(folder / MODEL_FILE)
        write_state(folder, state)

    return write_checkpoint(run_dir, step, fill)


def resumed_config(given: Any, saved: Any, path: Path, extend: bool) -> Any:
    """The config of a resume: the run's own (``saved``, read from ``path``); ``given`` may differ
    from it only in ``total_steps``, and only with ``extend``. Writes nothing: the caller writes a
    changed config (:func:`write_run_config`) once the run has resumed."""
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
    return given


def check_extension(config: Any, saved: Any, step: int) -> None:
    """A ResumeError if ``config`` changes ``total_steps`` of ``saved`` to no more than ``step``, where the run is."""
    if config.total_steps != saved.total_steps and config.total_steps <= step:
        raise ResumeError(f"the run is at step {step:,} already; --total-steps must be more than that to extend it")


def write_run_config(config: Any, before: Any | None = None) -> None:
    """Write the run's ``config.yaml`` (atomically); say so when it changes ``total_steps`` of ``before``."""
    path = config.run_dir / RUN_CONFIG_FILE
    write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
    if before is not None and before.total_steps != config.total_steps:
        say(f"total_steps of the run changed from {before.total_steps:,} to {config.total_steps:,} (written to {path})")


def saved_config_file(run_dir: Path) -> Path | None:
    """The run's ``config.yaml``, or if it was lost the copy in its newest checkpoint (None if neither)."""
    if (run_dir / RUN_CONFIG_FILE).is_file():
        return run_dir / RUN_CONFIG_FILE
    kept = (f / RUN_CONFIG_FILE for f in candidates(run_dir) if not f.is_symlink())  # (as newest_intact)
    return next((path for path in kept if path.is_file()), None)


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
    try:
        named = root / read_bytes(root / "latest", POINTER_BYTES).decode().strip()
    except (OSError, ValueError):  # none, or a damaged pointer (not UTF-8 text): the newest folder leads
        named = None
    return sorted(folders, key=lambda p: p != named)  # stable: the rest stays newest first


Loaded = TypeVar("Loaded")


def newest_intact(run_dir: Path, read: Callable[[Path], Loaded]) -> tuple[Path, Loaded, list[str]]:
    """The newest checkpoint ``read`` accepts, what it returned, and why newer ones were skipped.

    ``read(folder)`` raises ResumeError for a checkpoint that is damaged or does not fit the run;
    it must leave nothing changed when it does, so that the next one can be tried.
    """
    skipped: list[str] = []
    for folder in candidates(run_dir):
        if folder.is_symlink():  # its files would be read from elsewhere, and pruning could not remove it
            skipped.append(f"{folder} is a symbolic link, not a folder this run wrote: refused unread")
            continue
        try:
            return folder, read(folder), skipped
        except ResumeError as err:
            skipped.append(str(err))
    raise ResumeError(
        f"no intact checkpoint in {checkpoint_root(run_dir)}:\n  " + "\n  ".join(skipped)
        + f"\nThe run cannot be resumed. To start it again from the beginning, remove {run_dir} "
        "(its checkpoints are damaged) and run the same command without --resume, or pick another --run-name"
    )


def load_state(folder: Path, max_json_bytes: int, max_array_bytes: int) -> dict[str, Any]:
    """The state of a checkpoint (:mod:`train.run_folder.state_file`, no code runs, within the sizes given),
    its top-level layout checked; its values are checked by the restore (:mod:`train.run_folder.state_checks`)."""
    path = folder / JSON_FILE
    if not path.is_file() and (folder / OLD_STATE_FILE).is_file():
        raise ResumeError(
            f"{folder} was written by an older version as a pickle ({OLD_STATE_FILE}), which this version no longer "
            "reads: a pickle can run code. Start the run again under a new --run-name"
        )
    try:
        state = read_state(folder, max_json_bytes, max_array_bytes)
    except (OSError, StateFileError) as err:
        raise ResumeError(f"cannot read the state of {folder}: {err}") from None
    try:
        keys("the state", state, STATE_KEYS)
        keys("env_state", state["env_state"], ("learner", "monitor"))
    except ValueError as err:
        raise ResumeError(f"{path} is not a checkpoint state: {err}") from None
    return state


def load_model_params(folder: Path, policy: Any, max_file_bytes: int) -> dict[str, Any]:
    """The weights and optimizer state in ``model.zip`` (at most ``max_file_bytes``), for
    ``policy`` (the run's new policy): each member's size checked against ``policy``'s tensors
    before it is read, read through torch's weights-only loader only (SB3's pickled data is not
    read), then checked to fit ``policy`` (:func:`check_model_params`)."""
    import torch

    path = folder / MODEL_FILE
    tensor_bytes = sum(p.numel() * p.element_size() for p in policy.parameters())
    limits = {"policy": tensor_bytes + TORCH_FILE_BYTES, "policy.optimizer": 2 * tensor_bytes + TORCH_FILE_BYTES}
    params = {}
    try:
        regular_file(path, max_file_bytes)
        with open(path, "rb") as file, zipfile.ZipFile(file) as archive:
            for name, limit in limits.items():
                info = archive.getinfo(f"{name}.pth")  # a KeyError if it is missing
                if info.file_size > limit:
                    raise ResumeError(
                        f"{path}: {info.filename} holds {info.file_size:,} bytes, more than this run's networks "
                        f"take ({limit:,}); refused unread"
                    )
                with archive.open(info) as member:
                    params[name] = torch.load(member, map_location="cpu", weights_only=True)
    except ResumeError:
        raise
    except Exception as err:  # zipfile and torch raise many kinds on a damaged or hostile zip
        raise ResumeError(f"cannot read {path}: {type(err).__name__}: {str(err)[:300]}") from None
    try:
        check_model_params(params, policy)
    except (ValueError, TypeError, RuntimeError) as err:  # (comparing what torch read may raise any of them)
        raise ResumeError(f"{path} does not fit this run: {err}") from None
    return params


def check_model_params(params: dict[str, Any], policy: Any) -> None:
    """A ValueError unless ``params`` are ``policy``'s tensors (names, shapes, dtypes, finite
    values) and the state of its Adam optimizer (its settings, moments of the same shapes, finite,
    second moments at least 0, step counts whole and at least 0)."""
    import torch

    keys("model.zip", params, ("policy", "policy.optimizer"))
    weights, mine = params["policy"], policy.state_dict()
    if not isinstance(weights, dict) or list(weights) != list(mine):
        raise ValueError(f"the policy's tensors must be {list(mine)}")
    for name, tensor in weights.items():
        _tensor_like(f"policy {name}", tensor, mine[name])
    optimizer = keys("the optimizer's state", params["policy.optimizer"], ("state", "param_groups"))
    groups, mine = optimizer["param_groups"], policy.optimizer.state_dict()["param_groups"]
    if not isinstance(groups, list) or len(groups) != len(mine) or not all(isinstance(g, dict) for g in groups):
        raise ValueError(f"the optimizer's param_groups must be {len(mine)} dicts")
    for group, own in zip(groups, mine):  # the rate is PPO's (or the warm start's): SB3 sets it before each update
        number("the optimizer's learning rate", group.get("lr"), 0.0, 1.0)
        if {k: v for k, v in group.items() if k != "lr"} != {k: v for k, v in own.items() if k != "lr"}:
            raise ValueError("the optimizer's settings (param_groups) differ from this run's")
    parameters = [p for group in policy.optimizer.param_groups for p in group["params"]]  # (the state's numbering)
    if not isinstance(optimizer["state"], dict) or not set(optimizer["state"]) <= set(range(len(parameters))):
        raise ValueError(f"the optimizer's state must be a dict of parameter numbers 0 .. {len(parameters) - 1}")
    for i, moments in optimizer["state"].items():
        keys(f"Adam's state of parameter {i}", moments, ("step", "exp_avg", "exp_avg_sq"))
        step = _tensor_like(f"Adam's step of parameter {i}", moments["step"], torch.zeros(()))
        if not (step >= 0 and step == step.round()):
            raise ValueError(f"Adam's step of parameter {i} must be a whole number at least 0, got {step.item()}")
        _tensor_like(f"Adam's exp_avg of parameter {i}", moments["exp_avg"], parameters[i])
        if (_tensor_like(f"Adam's exp_avg_sq of parameter {i}", moments["exp_avg_sq"], parameters[i]) < 0).any():
            raise ValueError(f"Adam's exp_avg_sq of parameter {i} must be at least 0")


def _tensor_like(name: str, value: Any, reference: Any) -> Any:
    """``value``, if it is a tensor of ``reference``'s shape and dtype holding finite values."""
    import torch

    if not isinstance(value, torch.Tensor) or value.shape != reference.shape or value.dtype != reference.dtype:
        got = f"shape {tuple(value.shape)} of {value.dtype}" if isinstance(value, torch.Tensor) else brief(value)
        raise ValueError(f"{name} must be a tensor of shape {tuple(reference.shape)} of {reference.dtype}, got {got}")
    if not torch.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return value
