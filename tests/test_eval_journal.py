"""An evaluation's journal is data from the disk: every line is checked against the plan before use.

A hostile or damaged journal gives ``--resume`` either a correct resume or a clear refusal (a
JournalError, exit code 2, naming the line and what is wrong), never a traceback, a hang or a run
beyond the plan; the one damage a crash does (a last line cut short) is dropped and repaired. A
full or read-only disk while the journal, the results or the match logs are written is one line
and exit code 1, with no temporary file left and the journal whole.
"""

from __future__ import annotations

import copy
import errno
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from agents.shared.processes import WRITE_FAILED_EXIT
from eval.__main__ import main
from eval.api import plan_round_robin, play_plan
from eval.journal import JOURNAL_NAME, Journal, JournalError

BOTS = ["random", "rule_based", "random"]  # three pairs; "random" twice: names "random", "random#2"
BOARDS = 6
COMMAND = [*BOTS, "--boards", str(BOARDS), "--workers", "1", "--no-progress", "--bootstrap", "20"]


def make_plan():
    return plan_round_robin(BOTS, boards=BOARDS, workers=1, bootstrap=20)


def comparable(result) -> list[tuple]:
    """What a result says, without the machine-dependent times (compare=False fields)."""
    return [(p.bot_a, p.bot_b, p.boards, p.wins, p.splits, p.losses, p.board_scores, p.stats_a, p.stats_b)
            for p in result.pairs]  # fmt: skip


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> tuple[list[str], Any]:
    """The lines of a real, complete journal of the plan, and the uninterrupted result."""
    folder = tmp_path_factory.mktemp("real")
    plan = make_plan()
    journal = Journal(folder, plan)
    journal.start()
    result = play_plan(plan, on_task=journal.add)
    lines = (folder / JOURNAL_NAME).read_text().splitlines()
    assert len(lines) > 4  # a head and a line per task: several tasks per pair
    return lines, result


def write_journal(folder: Path, lines: list[str], tail: str = "") -> Path:
    path = folder / JOURNAL_NAME
    path.write_text("".join(line + "\n" for line in lines) + tail)
    return path


def records_line(lines: list[str], number: int) -> dict:
    return json.loads(lines[number - 1])


# ---------------------------------------------------------------- the reproductions


def mutate(lines: list[str], number: int, change) -> list[str]:
    entry = records_line(lines, number)
    change(entry)
    return [*lines[: number - 1], json.dumps(entry), *lines[number:]]


def set_match(key: str, value: Any):
    def change(entry: dict) -> None:
        entry["records"][0]["matches"][1][key] = value

    return change


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


REPRODUCTIONS = {
    "board 10**9": (lambda e: e["records"][0].update(board=10**9), "board 1000000000 is not one of this evaluation's"),
    "pair 99": (lambda e: e.update(pair=99), "pair must be a pair index 0..2, got int 99"),
    "pair -1": (lambda e: e.update(pair=-1), "pair must be a pair index 0..2, got int -1"),
    "NaN score": (set_match("a_score", math.nan), "a_score must be a finite number in [0, 1], got float nan"),
    "1e300 score": (set_match("a_score", 1e300), "a_score must be a finite number in [0, 1], got float 1e+300"),
    "1e300 points": (set_match("points", [1e300, 0]), "points[0] must be an integer, got float 1e+300"),
    "strings for numbers": (set_match("points", ["7", "14"]), "points[0] must be an integer, got str '7'"),
    "empty matches": (lambda e: e["records"][0].update(matches=[]), "matches must be a list of 2, got list []"),
    "huge think time": (set_match("think_seconds", [1e308, 0.0]), "think_seconds must be a finite number in [0, 1e+09]"),
    "missing key": (lambda e: e["records"][0]["matches"][0].pop("deals"), "a match must be a dict of"),
}  # fmt: skip


@pytest.mark.parametrize("case", REPRODUCTIONS)
def test_each_reproduction_is_refused_naming_the_line(real, tmp_path, capsys, case):
    lines, _ = real
    change, message = REPRODUCTIONS[case]
    path = write_journal(tmp_path, mutate(lines, 3, change))
    before = path.read_bytes()
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMAND, "--out", str(tmp_path), "--resume"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and time.monotonic() - started < 10, err
    assert f"{path} line 3: " in err and message in err, err
    assert "add --restart to discard it" in err and "Traceback" not in err
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL_NAME]


def test_nested_json_and_overlong_lines_are_refused(real, tmp_path, capsys):
    lines, _ = real
    for line, message in [(nested(100_000), "line 3 is not JSON (or is nested too deep)"),
                          ("[" * (2 << 20), "line 3 is longer than 1,048,576 bytes")]:  # fmt: skip
        write_journal(tmp_path, [*lines[:2], line, *lines[2:]])
        with pytest.raises(SystemExit) as exit_info:
            main([*COMMAND, "--out", str(tmp_path), "--resume"])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err and "Traceback" not in err, err


def test_a_repeated_board_is_refused(real, tmp_path):
    lines, _ = real
    write_journal(tmp_path, [*lines, lines[2]])
    with pytest.raises(JournalError, match=f"line {len(lines) + 1} holds board . of pair . a second time"):
        Journal(tmp_path, make_plan()).load()


def test_a_record_must_add_up(real, tmp_path):
    lines, _ = real
    match = records_line(lines, 2)["records"][0]["matches"][0]
    points = match["points"][0]
    changes = [
        (set_match("a_team", 0), "match 1: a_team must be 1 (the match's place on its board), got int 0"),
        (set_match("awards", [[points + 1, 0, 0, 0, 0, 0, 0], match["awards"][1]]), "awards[0] add up to"),
        (set_match("deals", 0), "deals must be at least 1"),
        (set_match("a_score", 0.5), "a_score must be"),  # a tie where the points say otherwise
        (set_match("extra", 1), "a match must be a dict of"),
        (set_match("moves", [True, 1]), "moves[0] must be an integer"),
    ]
    for change, message in changes:
        write_journal(tmp_path, mutate(lines, 2, change))
        with pytest.raises(JournalError, match="line 2: board ") as refused:
            Journal(tmp_path, make_plan()).load()
        assert message in str(refused.value)


def test_a_journal_that_is_a_link_is_refused_and_restart_leaves_its_target(real, tmp_path, capsys):
    lines, _ = real
    target = write_journal(tmp_path, lines).rename(tmp_path / "elsewhere.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    (out / JOURNAL_NAME).symlink_to(target)
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMAND, "--out", str(out), "--resume"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "cannot be read: a symbolic link, not a regular file" in err, err
    before = target.read_bytes()
    assert main([*COMMAND, "--out", str(out), "--restart"]) == 0
    assert target.read_bytes() == before and not (out / JOURNAL_NAME).exists()


# ---------------------------------------------------------------- a journal cut by a crash


def test_a_cut_last_line_is_dropped_and_the_journal_repaired(real, tmp_path):
    lines, whole = real
    for cut in (1, len(lines[-1]) // 2, len(lines[-1])):  # even a whole line without its newline is cut
        write_journal(tmp_path, lines[:-1], tail=lines[-1][:cut])
        plan = make_plan()
        journal = Journal(tmp_path, plan)
        finished = journal.load()
        last = records_line(lines, len(lines))
        assert len(finished) == 3 * BOARDS - len(last["records"])
        journal.drop_torn_tail()
        resumed = play_plan(plan, finished=finished, on_task=journal.add)  # appends after whole lines only
        assert comparable(resumed) == comparable(whole)
        assert len(Journal(tmp_path, plan).load()) == 3 * BOARDS  # every line whole again


def test_resume_after_a_cut_line_gives_the_uninterrupted_result(real, tmp_path, capsys):
    lines, whole = real
    write_journal(tmp_path, lines[:3], tail=lines[3][:40])
    assert main([*COMMAND, "--out", str(tmp_path), "--resume"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert [(p["wins"], p["splits"], p["losses"]) for p in results["pairs"]] == [
        (p.wins, p.splits, p.losses) for p in whole.pairs
    ]
    assert not (tmp_path / JOURNAL_NAME).exists()


# ---------------------------------------------------------------- fuzz

ODD_VALUES: list[Any] = [
    None, True, False, -1, 0, 1, 2, 7, 10**9, 2**53 + 1, 10**30, -(10**30), 0.5, 1.5, -0.0, math.nan, math.inf,
    -math.inf, 1e300, "7", "", "board", [], {}, [1, 2], [[1, 2], [3]], {"a": 1}, {"board": 1}, json.loads(nested(50)),
]  # fmt: skip


def _containers(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every dict and list inside ``value``."""
    found = [path] if isinstance(value, dict | list) else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found += _containers(child, (*path, key))
    return found


def _at(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def mutate_value(entry: Any, rng: random.Random) -> None:
    """One random change somewhere in a decoded line: a field's value, a key or an item removed or added."""
    container = _at(entry, rng.choice(_containers(entry)))
    keys = list(container) if isinstance(container, dict) else list(range(len(container)))
    kind = rng.randrange(4)
    if kind == 0 and keys:
        container[rng.choice(keys)] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif kind == 1 and keys:
        del container[rng.choice(keys)]
    elif kind == 2 and keys:  # a plausible number nearby: type right, value maybe not
        key = rng.choice(keys)
        if isinstance(container[key], int | float) and not isinstance(container[key], bool):
            container[key] = container[key] + rng.choice([-1, 1, 2**31, 0.5])
    elif isinstance(container, dict):
        container[rng.choice(["extra", "board", "pair", "records"])] = copy.deepcopy(rng.choice(ODD_VALUES))
    else:
        container.append(copy.deepcopy(rng.choice([*ODD_VALUES, container[0] if container else 1])))


def mutate_journal(lines: list[str], rng: random.Random) -> tuple[list[str], str]:
    """Lines of the journal after one random damage, and a tail (a cut line)."""
    lines = list(lines)
    kind = rng.randrange(10)
    number = rng.randrange(1, len(lines))  # a records line (index into lines)
    if kind < 5:
        entry = json.loads(lines[number])
        for _ in range(rng.choice([1, 1, 2, 3])):
            mutate_value(entry, rng)
        lines[number] = json.dumps(entry)  # NaN and Infinity as JSON's extensions
        return lines, ""
    if kind == 5:  # a line twice
        lines.insert(rng.randrange(1, len(lines) + 1), lines[number])
        return lines, ""
    if kind == 6:  # a line lost, or two swapped
        other = rng.randrange(1, len(lines))
        lines[number], lines[other] = lines[other], lines[number]
        if rng.random() < 0.5:
            del lines[number]
        return lines, ""
    if kind == 7:  # bytes changed
        line = lines[number]
        at = rng.randrange(len(line))
        lines[number] = line[:at] + rng.choice(['"', "}", "]", ",", "9", "-", "x", "\\", "\x00", "é"]) + line[at + 1 :]
        return lines, ""
    if kind == 8:  # cut short: at the end (a crash) or in the middle (not a crash)
        cut = lines[number][: rng.randrange(len(lines[number]))]
        if number == len(lines) - 1:
            return lines[:-1], cut
        lines[number] = cut
        return lines, ""
    lines.insert(rng.randrange(1, len(lines) + 1), rng.choice(["", " ", "null", "[]", "{}", "7", nested(5000)]))
    return lines, ""


FUZZ_CASES = 400


def test_fuzzed_journals_resume_correctly_or_are_refused(real, tmp_path):
    lines, whole = real
    plan = make_plan()
    write_journal(tmp_path, lines)
    expected = Journal(tmp_path, plan).load()
    rng = random.Random(20240)
    outcomes = {"refused": 0, "resumed": 0}
    started = time.monotonic()
    for case in range(FUZZ_CASES):
        damaged, tail = mutate_journal(lines, rng)
        write_journal(tmp_path, damaged, tail)
        journal = Journal(tmp_path, plan)
        began = time.monotonic()
        try:
            finished = journal.load()
        except JournalError as err:
            assert str(err).startswith(str(journal.path)) and "add --restart" in str(err), (case, err)
            outcomes["refused"] += 1
            continue
        finally:
            assert time.monotonic() - began < 2.0, case  # no hang, whatever the file holds (a load takes ms)
        assert set(finished) <= set(expected), case  # only boards of the plan
        for key, record in finished.items():
            assert record.board == key[1] and len(record.matches) == 2, case
        if finished != expected:  # boards lost or changed (a plausible count): resume plays the rest
            result = play_plan(plan, finished=finished)
            assert [p.boards for p in result.pairs] == [BOARDS] * 3, case
            if all(finished[k] == expected[k] for k in finished):  # only lost: the result is exact
                assert comparable(result) == comparable(whole), case
        outcomes["resumed"] += 1
    assert outcomes["refused"] > FUZZ_CASES / 2 and outcomes["resumed"] > 20, outcomes
    assert time.monotonic() - started < 30, outcomes  # about 2 s; generous for a shared machine


# ---------------------------------------------------------------- full and read-only disks


def test_a_full_disk_while_the_journal_grows_stops_in_one_line_and_keeps_it_whole(real, tmp_path, capsys, monkeypatch):
    import eval.journal

    _, whole = real
    real_write = os.write
    lines = []

    def full_in_the_third_line(fd: int, data: Any) -> int:
        if len(lines) == 3:  # half of the third line reached the disk: now it is full
            raise OSError(errno.ENOSPC, "No space left on device")
        if bytes(data[:8]) == b'{"pair":':
            lines.append(fd)
            if len(lines) == 3:
                return real_write(fd, bytes(data[: len(data) // 2]))
        return real_write(fd, data)

    monkeypatch.setattr(eval.journal.os, "write", full_in_the_third_line)
    code = main([*COMMAND, "--out", str(tmp_path)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == WRITE_FAILED_EXIT and "Traceback" not in err, err
    assert f"could not add to the journal {tmp_path / JOURNAL_NAME}: No space left on device; the evaluation " in err
    assert "the same command with --resume plays only the rest" in err
    assert (tmp_path / JOURNAL_NAME).read_bytes().endswith(b"\n")  # the cut line was taken back out
    assert len(Journal(tmp_path, make_plan()).load()) > 0  # two whole lines kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL_NAME]  # no lock, no temporary file
    assert main([*COMMAND, "--out", str(tmp_path), "--resume"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert [p["wins"] for p in results["pairs"]] == [p.wins for p in whole.pairs]


def test_a_full_disk_when_the_journal_starts_is_one_line(tmp_path, capsys, monkeypatch):
    def full(self: Path, data: bytes) -> int:
        with open(self, "wb") as f:
            f.write(data[:3])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    code = main([*COMMAND, "--out", str(tmp_path)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == WRITE_FAILED_EXIT and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"could not start the journal {tmp_path / JOURNAL_NAME}: No space left on device; nothing was played" in err
    assert list(tmp_path.iterdir()) == []  # no temporary file, no lock


def test_a_read_only_out_when_the_results_are_written_is_one_line(tmp_path, capsys, monkeypatch):
    import eval.report

    def read_only(**kwargs: Any) -> str:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(eval.report.tempfile, "mkdtemp", read_only)
    code = main([*COMMAND, "--out", str(tmp_path)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == WRITE_FAILED_EXIT and "Traceback" not in err, err
    assert f"could not write the results to {tmp_path}: Read-only file system; nothing was written there" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL_NAME]  # the boards kept for --resume


def test_match_logs_on_a_full_disk_are_one_line_and_leave_no_temporary_file(tmp_path, capsys, monkeypatch):
    logs = tmp_path / "logs"
    real_replace = os.replace
    replaced = []

    def full_after_one(src: Any, dst: Any) -> None:
        if Path(dst).parent == logs:
            if replaced:
                raise OSError(errno.ENOSPC, "No space left on device")
            replaced.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full_after_one)
    code = main([*COMMAND, "--out", str(tmp_path / "out"), "--logs", str(logs)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == WRITE_FAILED_EXIT and "Traceback" not in err, err
    assert f"could not write the match logs to {logs}: No space left on device" in err
    assert all(not p.name.startswith(".") for p in logs.iterdir()) and len(list(logs.iterdir())) == 1
    # The journal stays until the logs are written: --resume writes them, playing nothing again.
    assert (tmp_path / "out" / JOURNAL_NAME).is_file()
    assert main([*COMMAND, "--out", str(tmp_path / "out"), "--logs", str(logs), "--resume"]) == 0
    assert len(list(logs.iterdir())) == 3 * 2 and not (tmp_path / "out" / JOURNAL_NAME).exists()


def test_a_stop_while_the_match_logs_are_written_says_how_to_write_them(tmp_path, capsys, monkeypatch):
    import eval.match_logs

    logs, out = tmp_path / "logs", tmp_path / "out"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(eval.match_logs, "write_match_logs", stopped)
        assert main([*COMMAND, "--out", str(out), "--logs", str(logs)]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "interrupted while writing match logs; the results are written, and the same command with --resume" in last
    assert main([*COMMAND, "--out", str(out), "--logs", str(logs), "--resume"]) == 0
    assert len(list(logs.iterdir())) == 3 * 2 and not (out / JOURNAL_NAME).exists()


def test_an_unwritable_logs_folder_is_named_as_logs(tmp_path, capsys):
    (tmp_path / "a_file").write_text("")
    logs = tmp_path / "a_file" / "logs"  # under a file: not writable, even for root
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMAND, "--out", str(tmp_path / "out"), "--logs", str(logs)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"--logs {str(logs)!r} is not a writable folder" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "head, boards, rules, message",
    [
        (None, 4, [], "(boards 6 where this command has 4)"),
        (None, BOARDS, ["--rule", "target_score=7"], '(rules {} where this command has {"target_score": 7})'),
        ("", BOARDS, [], "(its first line is empty)"),
        ("[1, 2", BOARDS, [], "(its first line is unreadable)"),
    ],
)
def test_another_evaluations_journal_is_refused_naming_what_differs(
    real, tmp_path, capsys, head, boards, rules, message
):
    lines, _ = real
    out = tmp_path / "out"
    out.mkdir()
    write_journal(out, lines if head is None else [head, *lines[1:]])
    command = [*BOTS, "--boards", str(boards), "--workers", "1", "--no-progress", "--bootstrap", "20", *rules]
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--out", str(out), "--resume", "--logs", str(tmp_path / "new" / "logs")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "holds the finished boards of another evaluation " + message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the --logs folders made before the refusal: gone
