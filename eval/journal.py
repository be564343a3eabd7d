"""The finished boards of an evaluation, kept in its output folder as they finish.

``python -m eval`` appends every task's board records to ``<out>/.eval-journal.jsonl`` the moment
the task is done: the first line names the evaluation (bots, boards, rules, episode), each further
line holds one pair's records of a run of boards. An evaluation stopped by Ctrl-C or SIGTERM
therefore keeps every finished board: its partial results are written from them, and the same
command with ``--resume`` plays only the boards that are missing, to exactly the result an
uninterrupted evaluation gives (a board plays the same deals whoever plays it and when). Once
the results are written, the journal is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .play import BoardRecord

JOURNAL_NAME = ".eval-journal.jsonl"
Finished = dict[tuple[int, int], BoardRecord]  # (pair index, board id) -> record


class JournalError(ValueError):
    """A journal that belongs to another evaluation, or cannot be read."""


class Journal:
    """The journal of the evaluation ``identity`` (JSON-ready) in ``folder``."""

    def __init__(self, folder: Path, identity: dict[str, Any]) -> None:
        self.path = Path(folder) / JOURNAL_NAME
        self.identity = identity

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> Finished:
        """The boards this evaluation finished before; JournalError if the journal is another's."""
        try:
            lines = self.path.read_text().splitlines()
            head = json.loads(lines[0]) if lines else None
            if head != self.identity:
                raise JournalError(
                    f"{self.path} holds the finished boards of another evaluation ({_describe(head)}); "
                    "resume it with its own command, or add --restart to discard it"
                )
            finished: Finished = {}
            for number, line in enumerate(lines[1:], start=2):
                try:
                    entry = json.loads(line)
                except ValueError:
                    if number == len(lines):  # the last line, cut short by a kill: its boards are played again
                        break
                    raise
                for data in entry["records"]:
                    record = BoardRecord.from_json(data)
                    finished[(int(entry["pair"]), record.board)] = record
        except JournalError:
            raise
        except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
            raise JournalError(f"{self.path} cannot be read ({type(err).__name__}: {err}); add --restart to discard it") from None
        return finished

    def start(self) -> None:
        """A new journal (replacing any) that names this evaluation."""
        self.path.write_text(json.dumps(self.identity) + "\n")

    def add(self, pair: int, records: list[BoardRecord]) -> None:
        """Keep ``records`` of pair ``pair`` (one line, flushed at once)."""
        line = json.dumps({"pair": pair, "records": [r.to_json() for r in records]}, separators=(",", ":"))
        with open(self.path, "a") as f:
            f.write(line + "\n")

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _describe(head: Any) -> str:
    if not isinstance(head, dict):
        return "unreadable"
    return f"bots {head.get('bots')}, {head.get('boards')} boards from {head.get('first_board')}"
