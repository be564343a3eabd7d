"""The finished boards of an evaluation, kept in its output folder as they finish.

``python -m eval`` appends every task's board records to ``<out>/.eval-journal.jsonl`` the moment
the task is done: the first line names the evaluation (bots, boards, rules, episode), each further
line holds one pair's records of a run of boards. An evaluation stopped by Ctrl-C or SIGTERM
therefore keeps every finished board: its partial results are written from them, and the same
command with ``--resume`` plays only the boards that are missing, to exactly the result an
uninterrupted evaluation gives (a board plays the same deals whoever plays it and when). Once
the results are written, the journal is removed.

A journal is data from the disk, so every line is checked against the evaluation's plan before
any of it is used: a pair index of the plan, boards of the plan's range, each (pair, board) once,
and every record whole (:meth:`eval.play.BoardRecord.from_json`: shapes, types, ranges, each
match consistent). A line that does not fit is refused, naming the line and what is wrong. The
one damage a crash can do, a last line cut short (no newline at its end), is dropped: its boards
are played again, and before the journal grows again the cut line is removed, so new lines
follow whole ones. A line that cannot be appended (a full disk) is taken back out, so the
journal stays whole.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import IO, Any

from agents.shared.atomic_file import write_text
from agents.shared.regular_file import NotRegularFile, check_target, open_fd, open_regular
from allfours_env.checks import brief

from .api import Plan, identity
from .play import BoardRecord

JOURNAL_NAME = ".eval-journal.jsonl"
# A line holds one task's records (at most runner.MAX_TASK_BOARDS, under 1 KB each): a longer one
# is not this program's, and reading stops there rather than taking it into memory.
MAX_LINE_BYTES = 1 << 20
Finished = dict[tuple[int, int], BoardRecord]  # (pair index, board id) -> record
NOT_JSON = object()


class JournalError(ValueError):
    """A journal that belongs to another evaluation, or does not fit this evaluation's plan."""


class JournalWriteError(OSError):
    """The journal could not be written (a full or read-only disk); the message says what is kept."""


class Journal:
    """The journal of the evaluation ``plan`` in ``folder``."""

    def __init__(self, folder: Path, plan: Plan) -> None:
        self.path = Path(folder) / JOURNAL_NAME
        self.identity = identity(plan)
        self.boards = plan.boards
        self.n_pairs = len(plan.pairs)
        self._intact = 0  # bytes of whole lines, as load() found them

    def exists(self) -> bool:
        """Something is at the journal's name (a link or FIFO too: :meth:`load` then refuses it)."""
        return os.path.lexists(self.path)

    def load(self) -> Finished:
        """The boards this evaluation finished before; JournalError if the journal is another's
        or a line does not fit the plan (module docstring)."""
        try:
            with open_regular(self.path, follow_links=False) as f:  # itself, never through a link
                return self._read(f)
        except OSError as err:
            raise self._refused(f"cannot be read: {err.strerror or err}") from None

    def _read(self, f: IO[bytes]) -> Finished:
        head = f.readline(MAX_LINE_BYTES)
        if not head.endswith(b"\n") or _decode(head) != self.identity:
            raise JournalError(
                f"{self.path} holds the finished boards of another evaluation ({_differences(head, self.identity)}); "
                "resume it with its own command, or add --restart to discard it"
            )
        # Every whole line must add boards of the plan not seen before, so reading stops at the
        # plan's size whatever the file holds.
        finished: Finished = {}
        self._intact = f.tell()
        number = 1
        while True:
            number += 1
            line = f.readline(MAX_LINE_BYTES + 1)
            if len(line) > MAX_LINE_BYTES:
                raise self._refused(f"line {number} is longer than {MAX_LINE_BYTES:,} bytes")
            if not line.endswith(b"\n"):  # the end, or a last line cut short by a kill: dropped
                return finished
            pair, records = self._entry(line, number)
            for record in records:
                if (pair, record.board) in finished:
                    raise self._refused(f"line {number} holds board {record.board} of pair {pair} a second time")
                finished[(pair, record.board)] = record
            self._intact = f.tell()

    def _entry(self, line: bytes, number: int) -> tuple[int, list[BoardRecord]]:
        """The pair index and records of journal line ``number``, checked against the plan."""
        entry = _decode(line)
        if entry is NOT_JSON:
            raise self._refused(f"line {number} is not JSON (or is nested too deep)")
        if not isinstance(entry, dict) or sorted(entry) != ["pair", "records"]:
            raise self._refused(f'line {number} is not an object with the keys "pair" and "records"')
        pair, records = entry["pair"], entry["records"]
        if isinstance(pair, bool) or not isinstance(pair, int) or not 0 <= pair < self.n_pairs:
            raise self._refused(f"line {number}: pair must be a pair index 0..{self.n_pairs - 1}, got {brief(pair)}")
        if not isinstance(records, list) or not records:
            raise self._refused(f"line {number}: records must be a non-empty list, got {brief(records)}")
        checked = []
        for data in records:
            try:
                record = BoardRecord.from_json(data)
            except ValueError as err:
                raise self._refused(f"line {number}: {err}") from None
            if record.board not in self.boards:
                raise self._refused(
                    f"line {number}: board {record.board} is not one of this evaluation's boards "
                    f"{self.boards.start:,}..{self.boards.stop - 1:,}"
                )
            checked.append(record)
        return pair, checked

    def _refused(self, what: str) -> JournalError:
        return JournalError(f"{self.path} {what}; this evaluation did not write it: add --restart to discard it")

    def drop_torn_tail(self) -> None:
        """Cut off what follows the whole lines :meth:`load` read (a line a kill cut short), so
        that the lines appended next start on a line of their own."""
        try:
            fd = open_fd(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, self._intact)
            finally:
                os.close(fd)
        except OSError as err:
            raise JournalWriteError(f"could not repair the journal {self.path}: {err.strerror or err}") from None

    def start(self) -> None:
        """A new journal (replacing any, whole or not at all) that names this evaluation; a link or
        FIFO at its name (refused by :meth:`load`, so discarded by ``--restart``) is removed first."""
        try:
            try:
                check_target(self.path)
            except NotRegularFile:
                self.path.unlink()  # the entry itself, never what a link names
            write_text(self.path, json.dumps(self.identity) + "\n")
        except OSError as err:
            raise JournalWriteError(f"could not start the journal {self.path}: {err.strerror or err}") from None

    def add(self, pair: int, records: list[BoardRecord]) -> None:
        """Keep ``records`` of pair ``pair`` (one line, written at once); JournalWriteError if it
        cannot be, with the journal as it was before."""
        line = json.dumps({"pair": pair, "records": [r.to_json() for r in records]}, separators=(",", ":"))
        try:
            _append(self.path, line.encode() + b"\n")
        except OSError as err:
            raise JournalWriteError(f"could not add to the journal {self.path}: {err.strerror or err}") from None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` to the file ``path`` (not through a link) whole, or leave it as it was."""
    fd = open_fd(path, os.O_WRONLY | os.O_APPEND)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)  # no cut line left behind (shrinking a file needs no space)
            raise
    finally:
        os.close(fd)


def _decode(line: bytes) -> Any:
    """A line's JSON value, or NOT_JSON (RecursionError: nested too deep)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return NOT_JSON


IDENTITY_WORDS = {"first_board": "first board", "eval_namespace": "evaluation version"}  # how a message names them


def _differences(line: bytes, mine: dict[str, Any]) -> str:
    """What the journal's first ``line`` (an evaluation's identity) says that this one's (``mine``) does not."""
    if not line.strip():
        return "its first line is empty"
    head = _decode(line)
    if not isinstance(head, dict):
        return "its first line is unreadable"
    differ = [
        f"{IDENTITY_WORDS.get(key, key)} {_shown(head.get(key))} where this command has {_shown(value)}"
        for key, value in mine.items()
        if head.get(key) != value
    ]
    return "; ".join(differ) or "its first line is cut"


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
