"""What the commands that write one file (``python -m train.labels``, ``python -m train.distil``)
share: the check of an ``.npz`` ``--out`` before the work, and the line of a write the disk refused."""

from __future__ import annotations

import os
from pathlib import Path

from agents.shared.regular_file import NotRegularFile, check_target


def check_npz_out(out: Path) -> None:
    """A ValueError unless ``--out`` names an ``.npz`` file (a regular file or none yet) in a folder
    that exists and can be written: checked before the work, so that a fit is never lost to a path
    typed wrong."""
    if out.suffix != ".npz":
        raise ValueError(f"--out must name an .npz file (a policy file), got {out}")
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; name the .npz file to write")
    try:
        check_target(out)  # a device or FIFO would be replaced by the file, a link too
    except NotRegularFile as err:
        raise ValueError(f"--out {err}; name the .npz file to write") from None
    folder = out.parent
    if not folder.is_dir():
        raise ValueError(f"--out {out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):  # read-only file systems included (EROFS)
        raise ValueError(f"--out {out}: the folder {folder} cannot be written")


def write_failed(err: OSError) -> str:
    """The one line of a write the disk refused: which file and why."""
    return f"cannot write {err.filename or 'a file'}: {err.strerror or err}"
