"""One run per folder: an exclusive lock on ``<folder>/.lock``, held while a command works there.

``python -m train`` holds it on its run folder, ``python -m eval`` on its ``--out`` folder, so a
second command on the same folder is refused at once instead of running beside the first and
mixing its files in. The lock is the kernel's (``flock``), so it ends with the process that holds
it, however that process ends; the file keeps the holder's process id and work ("training",
"evaluation", "labelling") for the messages, which name the holder's work, not the refused one's. A
lock file left by a process that no longer runs is simply taken over. The lock file is opened without
following a link and only if it is a regular file (:mod:`agents.shared.regular_file`): a link planted
as ``.lock`` is refused, never truncated through.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from agents.shared.regular_file import NotRegularFile, open_fd

LOCK_FILE = ".lock"


class RunInUseError(RuntimeError):
    """Another process works in this folder."""


class LockFileError(RunInUseError):
    """The folder's lock file is not a regular file (a link planted there, say): no lock is taken through it."""


class RunLock:
    """``with RunLock(run_dir) as lock:`` works alone in ``run_dir``; ``lock.stale_pid`` names a
    dead process whose lock file was taken over (None if there was none). ``work`` is what this
    process does there, kept in the lock file; a refusal names the holder's as ``another {work}``
    and ends with ``way_out``. The defaults word it for train. A lock file that is a link, FIFO,
    device or folder is a LockFileError, a RunInUseError: the command is refused the same way."""

    def __init__(self, run_dir: Path, work: str = "training", way_out: str = "pick another --run-name"):
        self.path = run_dir / LOCK_FILE
        self.work = work
        self.way_out = way_out
        self.stale_pid: int | None = None
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        while True:
            try:
                fd = open_fd(self.path, os.O_RDWR | os.O_CREAT)
            except NotRegularFile as err:
                raise LockFileError(f"{err}: no lock is taken through it; remove it if you did not put it there") \
                    from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid, work = _read_holder(fd)
                os.close(fd)
                raise RunInUseError(
                    f"{self.path.parent} is in use by another {work} (process {pid or 'unknown'}); "
                    f"wait for it to end, or {self.way_out}"
                ) from None
            if _same_file(fd, self.path):  # not a file its last holder removed meanwhile
                break
            os.close(fd)
        self.stale_pid, _ = _read_holder(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {self.work}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)  # while still locked: a waiting process then retries
        os.close(self._fd)
        self._fd = None


def _read_holder(fd: int) -> tuple[int | None, str]:
    """The process id and work the lock file names (None and "command" where it names none)."""
    pid, _, work = os.pread(fd, 64, 0).decode(errors="replace").strip().partition(" ")
    return (int(pid) if pid.isdigit() else None), (work if work.isalpha() else "command")


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.lstat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
