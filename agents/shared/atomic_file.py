"""Files written whole or not at all: policies, label shards, match logs, checkpoints' pointers, curves.

A writer writes a temporary file beside the target (same folder, so the rename cannot cross
file systems; same suffix, for writers that choose the format by it), flushes it to the disk and
renames it over the target. A failure or a stop in between leaves the old file (or none) and no
temporary file behind. The target must be absent or a regular file, checked before and again just
before the rename (a device, FIFO, folder or link there is refused, never replaced), and the temporary
file is created new, never opened through a link (:mod:`agents.shared.regular_file`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .regular_file import NO_FOLLOW, check_target, create_new


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; it replaces ``path`` when the block
    ends without an error, and is removed in any case. A NotRegularFile (an OSError) if ``path``
    is anything but a regular file or absent."""
    path = Path(path)
    check_target(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        create_new(tmp)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY | NO_FOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        check_target(path)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    write_bytes(path, text.encode())
