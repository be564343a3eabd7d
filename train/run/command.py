"""``python -m train`` and ``python -m train.exploit`` after their arguments: the run of a config
in its held folder, torch and SB3 loaded only once the folder is held (so that a bad config, or a
folder another run holds, is refused at once)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from train.config import TrainConfig


def train_config(
    config: TrainConfig, resume: bool, quiet: bool, source: Path, extend: bool, prog: str = "python -m train",
    address: str | None = None,
) -> int:  # fmt: skip
    """Train (or resume) ``config`` in its run folder (the rounds' labels made on the Ray cluster at
    ``address``, if given): 0 once done (its last line printed), or 74 after one line for a write
    the disk refused; a bad config or resume, or a run folder in use, is one line and SystemExit(2)."""
    from agents.shared.processes import USAGE_EXIT
    from eval.run_lock import RunInUseError

    from train.config import ConfigError, check_memory, config_name
    from train.run_folder.checkpoints import ResumeError, WriteFailed
    from train.run_folder.folder import hold_run
    from train.run_folder.progress import Progress

    try:
        check_memory(config)
        progress = Progress(not quiet)
        try:
            with hold_run(config, resume):
                with progress.phase("starting (loading torch and SB3)"):
                    # torch and SB3 load only now, with the run folder held
                    from train.run.pipeline import train_in_held_run

                final = train_in_held_run(
                    config, resume, progress, extend=extend, source=config_name(source), address=address
                )
        finally:
            progress.close()
    except (ConfigError, ResumeError, RunInUseError) as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        sys.exit(USAGE_EXIT)  # as argparse exits on a bad option
    except WriteFailed as err:  # a full or read-only disk: the line says what was kept and how to go on
        print(err, file=sys.stderr)
        return err.code
    print(f"final policy: {final} (and {final.with_suffix('.npz')}); tensorboard --logdir {config.run_dir}")
    return 0
