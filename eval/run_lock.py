"""One run per folder: an exclusive lock on ``<folder>/.lock``, held while a command works there.

``python -m train`` holds it on its run folder, ``python -m eval`` on its ``--out`` folder, so a
second command on the same folder is refused at once instead of running beside the first and
mixing its files in. The lock is the kernel's (``flock``), so it ends with the process that holds
it, however that process ends; the file keeps the holder's process id for the messages. A lock
file left by a process that no longer runs is simply taken over.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class RunInUseError(RuntimeError):
    """Another process works in this folder."""


class RunLock:
    """``with RunLock(run_dir) as lock:`` works alone in ``run_dir``; ``lock.stale_pid`` names a
    dead process whose lock file was taken over (None if there was none). The refusal names the
    holder as ``another {work}`` and ends with ``way_out``; the defaults word it for train."""

    def __init__(self, run_dir: Path, work: str = "training", way_out: str = "pick another --run-name"):
        self.path = run_dir / LOCK_FILE
        self.work = work
        self.way_out = way_out
        self.stale_pid: int | None = None
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                raise RunInUseError(
                    f"{self.path.parent} is in use by another {self.work} (process {holder or 'unknown'}); "
                    f"wait for it to end, or {self.way_out}"
                ) from None
            if _same_file(fd, self.path):  # not a file its last holder removed meanwhile
                break
            os.close(fd)
        self.stale_pid = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)  # while still locked: a waiting process then retries
        os.close(self._fd)
        self._fd = None


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
