"""Files opened as themselves: only regular files, and for writing never through a symbolic link.

Folders the project writes in may be shared (``runs/``, an ``--out`` folder) and a path on a
command line may name anything, so every file the project writes, locks or reads goes through
this module:

- a lock or a file written in place is opened with ``O_NOFOLLOW`` and kept only if ``fstat`` says
  it is a regular file (:func:`open_fd`): a ``.lock`` link planted in a run folder cannot make a
  command truncate the file it points to;
- a file written whole (:mod:`agents.shared.atomic_file`) replaces its target only if the target is
  absent or a regular file (:func:`check_target`): ``--log /dev/null`` is refused, never replaced
  by a regular file, and a link there is refused, not replaced;
- a reader opens without blocking (a FIFO would hang it) and refuses anything but a regular file (a
  device such as ``/dev/zero`` never ends), before reading a byte (:func:`open_regular`); it may
  follow a link (reading changes nothing) and reads at most the bytes it allows (:func:`read_bytes`).

Every refusal is a :class:`NotRegularFile` (an OSError) whose text names the path and what it is.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
NON_BLOCK = getattr(os, "O_NONBLOCK", 0)
KINDS = (
    (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)  # fmt: skip


class NotRegularFile(OSError):
    """A path that names something other than a regular file (a link where none is followed). Its
    text names the path; ``strerror`` and ``filename`` are set as the system's errors set them, for
    messages that name the path themselves."""

    def __str__(self) -> str:
        return str(self.args[0])


def kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for a message: "a FIFO", "a regular file"..."""
    return next((name for test, name in KINDS if test(mode)), "a regular file")


def refusal(path: str | Path, mode: int) -> NotRegularFile:
    error = NotRegularFile(f"{path} is {kind(mode)}, not a regular file")
    error.strerror, error.filename = f"{kind(mode)}, not a regular file", str(path)
    return error


def open_fd(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags)`` without following a link or blocking; NotRegularFile (the
    descriptor closed) unless it is a regular file. Give no ``O_TRUNC``: a caller truncates once
    the file is known to be its own."""
    try:
        fd = os.open(path, flags | NO_FOLLOW | NON_BLOCK, mode)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK on FreeBSD)
            raise refusal(path, stat.S_IFLNK) from None
        raise
    return _only_regular(fd, path)


def _only_regular(fd: int, path: str | Path) -> int:
    """``fd``, or NotRegularFile (the descriptor closed) unless it is a regular file's."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise refusal(path, info.st_mode)
    return fd


def open_regular(path: str | Path, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, without blocking; NotRegularFile unless it is a
    regular file (with ``follow_links`` False, a link is refused too)."""
    fd = _only_regular(os.open(path, os.O_RDONLY | NON_BLOCK), path) if follow_links else open_fd(path, os.O_RDONLY)
    return os.fdopen(fd, "rb")


def read_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (through a link), at most ``max_bytes + 1`` of them:
    a caller refuses a longer result as too large, without having read the rest."""
    with open_regular(path) as file:
        return file.read(max_bytes + 1)


def check_target(path: str | Path) -> None:
    """NotRegularFile if ``path`` exists as anything but a regular file (a link included): a
    file written there would replace it."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise refusal(path, info.st_mode)


def create_new(path: str | Path) -> None:
    """Create ``path`` empty and this process's own (whatever a link or file held the name before is
    removed, never followed), so that a writer given the path by name writes into a new regular file."""
    Path(path).unlink(missing_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, 0o666))
