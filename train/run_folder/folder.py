"""A run's folder and the ways into it: start, start again, resume; checked and locked before any work.

``runs/<name>/`` holds ``config.yaml`` (the run's config), ``.lock`` (held while a process trains
there, :mod:`eval.run_lock`), ``checkpoints/`` (:mod:`train.run_folder.checkpoints`; each checkpoint keeps a copy
of the config), the logs (``tensorboard_1/``, ``imitation/``, ``evaluations.csv``,
``learning_curve.png``) and at the end ``final.zip`` and ``final.npz``.

Every state a stopped or killed run can leave has one way out, and the messages name it:

- no checkpoint yet (stopped during the warm start, or killed while writing its first
  checkpoint): ``--resume`` says there is nothing to resume and how to start again; starting
  again (the same command without ``--resume``) removes the abandoned start's files first;
- checkpoints: ``--resume`` continues from the newest intact one; a new start is refused;
- ``config.yaml`` lost: ``--resume`` uses the newest checkpoint's copy and writes it back;
- only damaged checkpoints: ``--resume`` lists them and says how to start again.

:func:`hold_run` does all of this with the lock held, before torch or Ray is imported, so that a
second run of the same folder is refused at once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from eval.run_lock import RunLock

from train.config import ConfigError
from train.run_folder.checkpoints import ResumeError, candidates, say, write_run_config

FINAL_FILES = ("final.zip", "final.npz")
# what an abandoned start may have left (removed when the run starts again); other files are never touched
ABANDONED = ("checkpoints", "imitation", "evaluations.csv", "learning_curve.png", ".final.tmp.zip", "tensorboard_*")


# A command built on ``python -m train`` (``python -m train.exploit``) names itself in the lines that say
# how to start or resume a run: ``(config, *flags) -> its command line``.
own_command: ContextVar[Callable[..., str] | None] = ContextVar("own_command", default=None)


def command(config: Any, *more: str, backend: str = "sb3") -> str:
    """The command line that runs ``config``'s run with ``more`` flags (:data:`own_command`'s if set)."""
    own = own_command.get()
    if own is not None:
        return own(config, *more)
    flags = ["--backend", backend] if backend != "sb3" else []
    return " ".join(["python -m train", *flags, "--run-name", config.run_name, "--output-dir", config.output_dir, *more])


def make_run_dir(config: Any) -> Path:
    """Create the run folder if needed and check that it can be written; ConfigError if not."""
    run_dir = config.run_dir
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=run_dir):
            pass
    except OSError as err:
        raise ConfigError(
            f"cannot write the run folder {run_dir} (--output-dir {config.output_dir!r}): "
            f"{err.strerror or err}; pick a writable --output-dir"
        ) from None
    return run_dir


@contextmanager
def hold_run(config: Any, resume: bool, backend: str = "sb3") -> Iterator[None]:
    """The run's folder, locked for this process, ready for a new start or a resume.

    A new start writes ``config.yaml``; a resume checks only that there is a checkpoint (the
    trainer then picks the newest intact one). Raises ConfigError, ResumeError or RunInUseError
    with the way out, before anything is changed.
    """
    run_dir = make_run_dir(config)
    with RunLock(run_dir) as lock:
        if lock.stale_pid is not None:
            say(f"took over the lock of process {lock.stale_pid}, which no longer runs")
        if resume and not candidates(run_dir):
            raise ResumeError(
                f"nothing to resume in {run_dir}: no checkpoint was written there (the run stopped before its "
                f"first one). Start it again with: {command(config, backend=backend)} (add --config if it used one)"
            )
        if not resume:
            _start_again_if_abandoned(config, backend)
            write_run_config(config)
        yield


def _start_again_if_abandoned(config: Any, backend: str) -> None:
    """Refuse a folder that holds a run to continue; clear what a start without checkpoints left."""
    run_dir = config.run_dir
    kept = candidates(run_dir)
    finals = [name for name in FINAL_FILES if (run_dir / name).exists()]
    if kept or finals:
        what = f"checkpoint {kept[0].name}" if kept else " and ".join(finals)
        raise ConfigError(
            f"{run_dir} already holds a run ({what}); continue it with: {command(config, '--resume', backend=backend)}"
            ", or pick another --run-name"
        )
    left = sorted({p for pattern in ABANDONED for p in run_dir.glob(pattern)})
    for path in left:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    if left:
        say(f"starting {run_dir} again: removed what its earlier start left ({', '.join(p.name for p in left)})")
