"""Files written whole or not at all: policies, label shards, match logs, checkpoints' pointers, curves.

A writer writes a temporary file beside the target (same folder, so the rename cannot cross
file systems; same suffix, for writers that choose the format by it), flushes it to the disk and
renames it over the target. A failure or a stop in between leaves the old file (or none) and no
temporary file behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; it replaces ``path`` when the block
    ends without an error, and is removed in any case."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
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
