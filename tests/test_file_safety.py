"""Files are opened as themselves (issue 57, items 3, 4 and 9): a lock or a written file is never
followed through a link, a device or FIFO is never replaced by an output nor read as an input, and
every command's folder lock names the holder's work. Device nodes and FIFOs are the test's own
(``os.mknod``, ``os.mkfifo`` in ``tmp_path``), never the system's."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.shared.atomic_file import atomic_path, write_text
from agents.shared.regular_file import NotRegularFile, read_bytes
from eval.run_lock import LOCK_FILE, LockFileError, RunLock
from tests.test_reliability import ROOT, eval_main

VICTIM_TEXT = "a file the operator can write, which no command of this project may touch\n"
NULL, ZERO = os.makedev(1, 3), os.makedev(1, 5)  # the numbers of /dev/null and /dev/zero, on a node of the test's own
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.mknod of a device needs root")


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text(VICTIM_TEXT)
    return path


def device(path: Path, numbers: int = NULL) -> Path:
    os.mknod(path, stat.S_IFCHR | 0o666, numbers)
    return path


def untouched(path: Path, target: Path) -> bool:
    """``path`` is still a link to ``target``, and ``target`` holds what it held."""
    return path.is_symlink() and os.readlink(path) == str(target) and target.read_text() == VICTIM_TEXT


def one_line(err: str) -> str:
    """The one line of a refusal (after argparse's usage lines, where the command's parser refused)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage: ", " "))]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- item 3: locks and written files never follow a link


def test_a_planted_lock_link_is_refused_and_its_target_kept(tmp_path):
    target = victim(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK_FILE).symlink_to(target)
    with pytest.raises(LockFileError, match="is a symbolic link, not a regular file: no lock is taken through it"):
        RunLock(tmp_path / "run").__enter__()
    assert untouched(tmp_path / "run" / LOCK_FILE, target)
    (tmp_path / "run" / LOCK_FILE).unlink()
    os.mkfifo(tmp_path / "run" / LOCK_FILE)
    with pytest.raises(LockFileError, match="is a FIFO, not a regular file"):
        RunLock(tmp_path / "run").__enter__()


def train_folder(tmp_path: Path) -> tuple[list[str], Path]:
    """``python -m train``'s arguments for a tiny run, and its folder."""
    from tests.test_train_safety import args, tiny_config

    return args(tiny_config(tmp_path), tmp_path), tmp_path / "tiny"


def run_cli(capsys, command: str, argv: list[str]) -> tuple[int, str]:
    """The exit code and stderr of ``command``'s main run in this process."""
    if command == "train":
        from train.__main__ import main
    elif command == "train.exploit":
        from train.exploit import main
    elif command == "train.labels":
        from train.rounds.labels import main
    else:
        from eval.__main__ import main

        argv = [*argv, "--workers", "1", "--no-progress"]
    try:
        code = main(argv)
    except SystemExit as end:
        code = end.code
    return code, capsys.readouterr().err


def lock_cases(tmp_path: Path) -> dict[str, tuple[list[str], Path]]:
    return {
        "train": train_folder(tmp_path),
        "eval": (["random", "rule_based", "--boards", "2", "--out", str(tmp_path / "out")], tmp_path / "out"),
        "train.exploit": (["random", "--output-dir", str(tmp_path), "--quiet"], tmp_path / "exploit-random"),
        "train.labels": (
            ["--out", str(tmp_path / "labels"), "--count", "12", "--worlds", "4", "--shard-rows", "12", "--tables", "2",
             "--workers", "1", "--quiet"], tmp_path / "labels",
        ),
    }  # fmt: skip


@pytest.mark.parametrize("command", ["train", "eval", "train.exploit", "train.labels"])
def test_every_command_refuses_a_lock_link_in_its_folder_in_one_line(tmp_path, capsys, monkeypatch, command):
    """Issue 57, item 3: train, eval and train.exploit truncated the file a planted ``.lock`` link
    named and wrote their process id into it; train.labels took no lock at all."""
    if command in ("train", "train.exploit"):
        import train.run.pipeline

        monkeypatch.setattr(train.run.pipeline, "train_in_held_run", lambda *args, **kwargs: pytest.fail("training started"))
    argv, folder = lock_cases(tmp_path)[command]
    target = victim(tmp_path)
    folder.mkdir()
    (folder / LOCK_FILE).symlink_to(target)
    code, err = run_cli(capsys, command, argv)
    assert code == 2, err
    assert f"{folder / LOCK_FILE} is a symbolic link, not a regular file" in one_line(err)
    assert untouched(folder / LOCK_FILE, target)


@pytest.mark.parametrize("command", ["eval", "train.labels"])
def test_a_folder_in_use_names_the_holders_work(tmp_path, capsys, command):
    """Issue 57: an evaluation refused on a training's folder said it was in use by "another
    evaluation" (its own work, not the holder's); train.labels took no lock and ran beside another."""
    argv, folder = lock_cases(tmp_path)[command]
    folder.mkdir()
    with RunLock(folder, work="training"):
        code, err = run_cli(capsys, command, argv)
    assert code == 2, err
    assert f"{folder} is in use by another training (process {os.getpid()}); wait for it to end" in one_line(err)
    assert list(folder.iterdir()) == []  # nothing written beside the holder, and its lock file gone with it


def test_a_second_labelling_on_the_same_folder_is_refused(tmp_path, capsys):
    argv, folder = lock_cases(tmp_path)["train.labels"]
    folder.mkdir()
    with RunLock(folder, work="labelling", way_out="pick another --out"):
        code, err = run_cli(capsys, "train.labels", argv)
    assert code == 2 and "is in use by another labelling" in one_line(err) and "pick another --out" in err


def test_a_written_file_never_goes_through_a_link_planted_as_its_temporary(tmp_path):
    target = victim(tmp_path)
    out = tmp_path / "match.json"
    planted = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")  # the temporary's name is predictable
    planted.symlink_to(target)
    write_text(out, "the log\n")
    assert out.read_text() == "the log\n" and target.read_text() == VICTIM_TEXT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json", "victim.txt"]


# ---------------------------------------------------------------- item 4: a device or FIFO is never replaced


@needs_root
def test_a_file_written_whole_refuses_a_device_fifo_or_link_and_keeps_it(tmp_path):
    cases = {"null": device(tmp_path / "null"), "fifo": tmp_path / "fifo", "link": tmp_path / "link"}
    os.mkfifo(cases["fifo"])
    cases["link"].symlink_to(victim(tmp_path))
    for name, path in cases.items():
        with pytest.raises(NotRegularFile, match=f"{path} is a (character device|FIFO|symbolic link), not a regular"):
            with atomic_path(path) as tmp:
                tmp.write_text("a report")
    assert stat.S_ISCHR(os.lstat(cases["null"]).st_mode) and os.lstat(cases["null"]).st_rdev == NULL
    assert stat.S_ISFIFO(os.lstat(cases["fifo"]).st_mode) and untouched(cases["link"], tmp_path / "victim.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "null", "victim.txt"]  # no temporary left


def output_cases(tmp_path: Path, node: Path) -> dict[str, list[str]]:
    return {
        "agents.play --log": ["--watch", "--pace", "0", "--log", str(node)],
        "agents.play --save": ["--watch", "--pace", "0", "--save", str(node.with_suffix(".gif"))],
        "agents.review --html": [str(tmp_path / "match.json"), "--html", str(node)],
        "agents.review --json": [str(tmp_path / "match.json"), "--json", str(node)],
        "train.distil --out": ["--labels", str(tmp_path / "labels"), "--out", str(node.with_suffix(".npz"))],
    }


@needs_root
@pytest.mark.parametrize("kind", ["device", "fifo"])
@pytest.mark.parametrize("option", ["agents.play --log", "agents.play --save", "agents.review --html",
                                    "agents.review --json", "train.distil --out"])  # fmt: skip
def test_an_output_that_is_a_device_or_fifo_is_refused_before_any_work(tmp_path, capsys, monkeypatch, option, kind):
    """Issue 57, item 4: ``--log /dev/null`` run as root replaced the device by a regular file."""
    import importlib

    (tmp_path / "match.json").write_text("not read: the output is checked first")
    node = tmp_path / "sink"
    suffix = {"--save": ".gif", "--out": ".npz"}.get(option.split()[1], "")
    node = node.with_suffix(suffix)
    if kind == "device":
        device(node)
    else:
        os.mkfifo(node)
    command, flag = option.split()
    module = importlib.import_module({"agents.play": "agents.apps.play", "agents.review": "agents.apps.review",
                                      "train.distil": "train.rounds.distil"}[command])  # fmt: skip
    if command == "agents.review":
        monkeypatch.setattr(module, "read_log", lambda path: None)  # (the log is read first; the output is the point)
    started = time.monotonic()
    try:
        code = module.main(output_cases(tmp_path, node)[option])
    except SystemExit as end:
        code = end.code
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - started < 10, err
    what = "a character device" if kind == "device" else "a FIFO"
    assert flag in one_line(err) and f"{node} is {what}, not a regular file" in err
    mode = os.lstat(node).st_mode
    assert stat.S_ISCHR(mode) if kind == "device" else stat.S_ISFIFO(mode)


# ---------------------------------------------------------------- item 9: inputs that are not regular files


def review(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m agents.review`` with at most 4 GB of address space: a regression that reads a
    device without end fails here instead of taking the machine's memory."""

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "agents.review", *argv, "--workers", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=capped)  # fmt: skip


@needs_root
@pytest.mark.parametrize("kind", ["fifo", "zero", "link to zero"])
def test_review_refuses_a_fifo_or_device_log_before_reading(tmp_path, kind):
    """Issue 57, item 9: a FIFO hung the review (a stop then printed a traceback), and /dev/zero
    (or a link to it) was read until memory ran out."""
    log = tmp_path / "match.json"
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "zero":
        device(log, ZERO)
    else:
        log.symlink_to(device(tmp_path / "zero", ZERO))
    done = review([str(log)])
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert done.returncode == 2, done.stderr
    assert f"cannot read {log}: {what}, not a regular file" in one_line(done.stderr)
    assert not list(tmp_path.glob("*.review.*"))


def test_the_reader_helper_reads_a_regular_file_through_a_link_and_no_more_than_asked(tmp_path):
    (tmp_path / "data").write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "data")
    assert read_bytes(tmp_path / "link", 10) == b"x" * 11  # one more than allowed: the caller says "too large"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegularFile, match="is a FIFO"):
        read_bytes(tmp_path / "fifo", 10)  # at once: not waiting for a writer


@pytest.mark.parametrize("flags", [[], ["--resume"]])
def test_a_journal_that_is_a_fifo_is_refused_not_waited_on(tmp_path, capsys, flags):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".eval-journal.jsonl")
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        eval_main(["random", "rule_based", "--boards", "2", "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and time.monotonic() - started < 30
    line = one_line(err)
    assert "jsonl cannot be read: a FIFO, not a regular file; this evaluation did not write it: add --restart" in line
    assert eval_main(["random", "rule_based", "--boards", "2", "--out", str(out), "--restart"]) == 0
    assert (out / "results.json").is_file() and not os.path.lexists(out / ".eval-journal.jsonl")
