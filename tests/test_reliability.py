"""Commands under stress, run as subprocesses: Ctrl-C, ``kill -9``, forked workers, bad output folders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
STARTUP_SECONDS = 90  # generous: the CI machine is shared
STOP_SECONDS = 5


STARTED: list[subprocess.Popen] = []  # every command start() ran; the fixture below ends what is left


def start(args: list[str]) -> subprocess.Popen:
    """``python -m ...`` in its own session (so that a Ctrl-C can reach its whole group), no OMP_NUM_THREADS."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    process = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    STARTED.append(process)
    return process


@pytest.fixture(autouse=True)
def no_command_outlives_its_test():
    """A test that fails before it stops its command (a line never came) leaves no process running."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def children(pid: int) -> set[int]:
    """Live child processes of ``pid`` (Linux)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.1)


def wait_for_workers(process: subprocess.Popen, n: int) -> set[int]:
    wait_for(lambda: len(children(process.pid)) >= n or process.poll() is not None, STARTUP_SECONDS, f"{n} workers")
    assert process.poll() is None, process.communicate()
    time.sleep(1.0)  # let the workers get into their tasks
    return children(process.pid)


LONG_EVAL = ["-m", "eval", "random", "rule_based", "--boards", "100000", "--workers", "2", "--no-progress"]


@linux_only
def test_ctrl_c_stops_eval_with_two_workers_at_once(tmp_path):
    out = tmp_path / "new" / "out"
    process = start([*LONG_EVAL, "--out", str(out)])
    workers = wait_for_workers(process, 2)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    sent = time.monotonic()
    _, err = process.communicate(timeout=30)
    assert time.monotonic() - sent < STOP_SECONDS
    assert process.returncode == 130 and "Traceback" not in err
    if "interrupted; nothing was written" in err:  # no task had finished
        assert list(tmp_path.iterdir()) == []  # the folders made for --out are gone too
    else:  # some had: their boards are kept, and the partial results written
        assert "the same command with --resume plays only the rest" in err
        assert json.loads((out / "results.json").read_text())["partial"] is True
    wait_for(lambda: not any(alive(w) for w in workers), STOP_SECONDS, "the workers to end")


@linux_only
@pytest.mark.parametrize("command", [LONG_EVAL], ids=["eval"])
def test_workers_die_with_a_killed_parent(tmp_path, command):
    process = start([*command, "--out", str(tmp_path / "out")])
    workers = wait_for_workers(process, 2)
    process.kill()  # kill -9: the parent cannot clean up
    process.communicate(timeout=30)
    wait_for(lambda: not any(alive(w) for w in workers), STOP_SECONDS, "orphaned workers to die")


def run(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    process = start(args)
    out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def test_a_zip_checkpoint_evaluates_with_two_forked_workers(tmp_path):
    pytest.importorskip("sb3_contrib")
    from tests.tiny_policy import save_tiny_checkpoint

    policy = save_tiny_checkpoint(tmp_path / "tiny.zip")
    done = run(["-m", "eval", str(policy), "random", "--boards", "8", "--workers", "2", "--no-progress",
                "--out", str(tmp_path / "out")], timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "results.json").is_file()


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_eval_checks_the_output_folder_before_playing(tmp_path, kind, capsys):
    from eval.__main__ import main

    out = tmp_path / "out"
    if kind == "file":
        out.write_text("a file")
        expected = "is a file"
    else:
        if os.geteuid() == 0:
            out = Path("/proc/no_such_folder")  # root may write anywhere else
        else:
            tmp_path.chmod(0o500)
        expected = "not a writable folder"
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main(["random", "rule_based", "--boards", "100000", "--workers", "1", "--no-progress", "--out", str(out)])
    assert exit_info.value.code == 2 and time.monotonic() - started < STOP_SECONDS
    assert expected in capsys.readouterr().err


@linux_only
@pytest.mark.parametrize("seconds", [0.2, 0.5, 1.0])
def test_ctrl_c_while_eval_starts_is_one_line(tmp_path, seconds):
    process = start([*LONG_EVAL, "--out", str(tmp_path / "out")])
    time.sleep(seconds)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err  # -2: before Python's handler
    assert len(err.strip().splitlines()) <= 1, err


def eval_main(argv: list[str]) -> int:
    from eval.__main__ import main

    return main([*argv, "--workers", "1", "--no-progress"])


def test_eval_results_are_written_all_or_nothing(tmp_path, capsys, monkeypatch):
    import errno

    import eval.report

    out = tmp_path / "out"
    assert eval_main(["random", "rule_based", "expert", "--boards", "2", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "ratings.csv" in before  # three bots: a rating each
    plot = eval.report._plot_writer

    def full_disk(result):
        def write(f):
            plot(result)(f)
            raise OSError(errno.ENOSPC, "No space left on device")

        return write

    monkeypatch.setattr(eval.report, "_plot_writer", full_disk)
    capsys.readouterr()
    assert eval_main(["random", "rule_based", "--boards", "3", "--out", str(out)]) == 74  # EX_IOERR, as every command on a write the disk refused
    captured = capsys.readouterr()
    assert f"could not write the results to {out}: No space left on device; nothing was written there" in captured.err
    assert "random" in captured.out  # the report came first
    results = {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".eval-journal.jsonl"}
    assert results == before  # the result files are as they were: no mix, no leftovers
    assert "the same command with --resume writes them without playing again" in captured.err
    monkeypatch.undo()
    assert eval_main(["random", "rule_based", "--boards", "3", "--out", str(out), "--resume"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["bots.csv", "crosstable.png", "pairs.csv", "results.json"]


def test_ctrl_c_while_eval_writes_its_results_finishes_them(tmp_path, capsys, monkeypatch):
    import eval.report

    plot = eval.report._plot_writer

    def interrupted(result):
        def write(f):
            signal.raise_signal(signal.SIGINT)
            plot(result)(f)

        return write

    monkeypatch.setattr(eval.report, "_plot_writer", interrupted)
    out = tmp_path / "out"
    assert eval_main(["random", "rule_based", "--boards", "2", "--out", str(out)]) == 0
    assert "a stop signal came while the results were written; they were written whole" in capsys.readouterr().err
    assert (out / "crosstable.png").stat().st_size > 0 and (out / "results.json").is_file()


def test_an_empty_out_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        eval_main(["random", "rule_based", "--boards", "2", "--out", ""])
    assert exit_info.value.code == 2 and "--out is empty" in capsys.readouterr().err


def test_play_checks_that_it_can_save_before_the_match(capsys):
    from agents.apps.play import main

    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main(["--watch", "--save", "/proc/match.gif"])
    assert exit_info.value.code == 2 and time.monotonic() - started < STOP_SECONDS
    assert "--save: cannot write in the folder '/proc'" in capsys.readouterr().err


def comparable(out: Path) -> list[dict]:
    """The pairs of a results.json without the machine-dependent times."""
    pairs = json.loads((out / "results.json").read_text())["pairs"]
    for pair in pairs:
        for side in ("stats_a", "stats_b"):
            pair[side].pop("ms_per_decision", None)
            pair[side].pop("think_seconds", None)
    return pairs


@linux_only
def test_an_interrupted_eval_keeps_its_boards_and_resumes_to_the_same_result(tmp_path):
    command = ["-m", "eval", "random", "rule_based", "expert", "--boards", "96", "--no-progress"]
    whole = run([*command, "--workers", "1", "--out", str(tmp_path / "whole")])
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "split"
    process = start([*command, "--workers", "2", "--out", str(out)])
    journal = out / ".eval-journal.jsonl"
    wait_for(lambda: journal.is_file() and len(journal.read_text().splitlines()) >= 4 or process.poll() is not None,
             STARTUP_SECONDS, "some finished boards")  # fmt: skip
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 143 and "Traceback" not in err, err
    assert "terminated (SIGTERM) after" in err and "the same command with --resume plays only the rest" in err
    partial = json.loads((out / "results.json").read_text())
    assert partial["partial"] is True and 0 < sum(p["boards"] for p in partial["pairs"]) < 3 * 96
    # Without --resume the kept boards are not thrown away by accident.
    again = run([*command, "--workers", "1", "--out", str(out)])
    assert again.returncode == 2 and "add --resume to go on with it" in again.stderr
    resumed = run([*command, "--workers", "1", "--out", str(out), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "results.json").read_text())["partial"] is False
    assert comparable(out) == comparable(tmp_path / "whole")
    assert not journal.exists()


@linux_only
def test_a_second_eval_on_a_used_folder_is_refused_even_with_restart(tmp_path, capsys):
    """Issue 40, item 4: a second evaluation told to ``--restart`` on a folder in use ran beside
    the first, and their boards mixed. Now it is refused while the first runs, whatever its flags."""
    out, journal = tmp_path / "out", tmp_path / "out" / ".eval-journal.jsonl"
    first = start([*LONG_EVAL[:-3], "--workers", "1", "--no-progress", "--out", str(out)])
    try:
        wait_for(lambda: journal.is_file() and len(journal.read_text().splitlines()) >= 2 or first.poll() is not None,
                 STARTUP_SECONDS, "the first evaluation's first boards")  # fmt: skip
        head = journal.read_text().splitlines()[0]
        second = ["random", "rule_based", "--boards", "20"]
        for flags in (["--restart"], ["--resume"], []):
            with pytest.raises(SystemExit) as exit_info:
                eval_main([*second, "--out", str(out), *flags])
            err = capsys.readouterr().err
            assert exit_info.value.code == 2, err
            assert f"{out} is in use by another evaluation (process {first.pid}); wait for it to end, or pick " \
                   "another --out" in err  # fmt: skip
        assert first.poll() is None  # it ran all along, alone: its journal is its own
        lines = journal.read_text().splitlines()
        assert lines[0] == head and all(line.startswith('{"pair":') for line in lines[1:])
    finally:
        first.kill()  # kill -9: its lock file stays, and its lock ends with it
        first.communicate(timeout=30)
    assert eval_main([*second, "--out", str(out), "--restart"]) == 0
    assert f"took over the lock of process {first.pid}, which no longer runs" in capsys.readouterr().err
    assert eval_main([*second, "--out", str(tmp_path / "clean")]) == 0  # the same evaluation in a fresh folder
    assert comparable(out) == comparable(tmp_path / "clean")  # nothing of the first mixed in
    assert sorted(p.name for p in out.iterdir()) == ["bots.csv", "crosstable.png", "pairs.csv", "results.json"]


def _frame() -> object:
    return sys._getframe()


def frame_inside(module: str, module_level: bool):
    """A real frame running code of ``module``: its module-level code (as when it is imported) or a function."""
    code = _frame.__code__.replace(co_name="<module>") if module_level else _frame.__code__
    return types.FunctionType(code, {"__name__": module, "sys": sys})()


def test_a_stop_waits_while_torch_is_imported_or_numba_compiles():
    from agents.shared.processes import stop_must_wait

    assert stop_must_wait(frame_inside("torch.distributed", module_level=True))  # C++ checks signals: would abort
    assert not stop_must_wait(frame_inside("torch.nn.functional", module_level=False))  # a function: raise now
    assert not stop_must_wait(frame_inside("agents.expert", module_level=True))
    assert stop_must_wait(frame_inside("numba.core.compiler", module_level=False))
    assert not stop_must_wait(sys._getframe())


STOP_BEFORE_BIND = """
import os, signal, sys, time
from concurrent.futures import ProcessPoolExecutor
from agents.shared.processes import bind_to_parent, handle_stops, stops_held, worker_context

def slow_start(parent):
    time.sleep(0.5)  # the Ctrl-C below comes before the worker ignores it
    bind_to_parent(parent)

handle_stops()
with ProcessPoolExecutor(1, mp_context=worker_context(), initializer=slow_start, initargs=(os.getpid(),)) as pool:
    try:
        with stops_held():
            future = pool.submit(abs, -7)
            os.killpg(0, signal.SIGINT)  # reaches the new worker too, as a Ctrl-C on the terminal would
            print("held", flush=True)
    except KeyboardInterrupt:
        print("raised after the block", flush=True)
    print("worker answered", future.result(timeout=30), flush=True)
"""


@linux_only
def test_a_stop_while_workers_fork_waits_and_never_reaches_them():
    process = start(["-c", STOP_BEFORE_BIND])
    out, err = process.communicate(timeout=60)
    assert out.split("\n")[:3] == ["held", "raised after the block", "worker answered 7"], (out, err)
    assert process.returncode == 0 and err == "", err


BLAS_THREADS = """
import os
from concurrent.futures import ProcessPoolExecutor
import numpy
from threadpoolctl import threadpool_info
from agents.shared.processes import start_worker, worker_context

def blas_threads():
    return max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")

with ProcessPoolExecutor(1, mp_context=worker_context(), initializer=start_worker, initargs=(os.getpid(),)) as pool:
    print(blas_threads(), pool.submit(blas_threads).result(), os.cpu_count())
"""


def test_a_worker_runs_numpy_on_one_blas_thread():
    """A worker per core: BLAS's own threads would fight the other workers (a search asking a
    network in 2 eval workers on 2 cores decided 18 times slower)."""
    process = start(["-c", BLAS_THREADS])
    out, err = process.communicate(timeout=60)
    parent, worker, cores = map(int, out.split())
    assert worker == 1, (out, err)
    assert parent == cores or cores == 1  # the limit is the worker's alone: the command's own process keeps BLAS's default


def test_a_sigterm_during_an_evaluation_inside_a_command_is_still_a_sigterm():
    """A training run's evaluation turns the stop into EvaluationStopped (with the boards played);
    the command must still end with SIGTERM's line and code, not Ctrl-C's (seen once as 130)."""
    from agents.shared.processes import Terminated, caught_stop, exit_code, stop_name
    from eval import evaluate
    from eval.api import EvaluationStopped

    def stop(signal_exception: KeyboardInterrupt):
        def on_progress(_: int) -> None:
            raise signal_exception

        with pytest.raises(EvaluationStopped) as stopped:
            evaluate("random", "random", boards=2, on_progress=on_progress)
        return caught_stop(stopped.value)

    assert (exit_code(stop(Terminated())), stop_name(stop(Terminated()))) == (143, "terminated (SIGTERM)")
    assert (exit_code(stop(KeyboardInterrupt())), stop_name(stop(KeyboardInterrupt()))) == (130, "interrupted")


def test_ended_workers_do_not_leave_the_pools_thread_waiting_for_half_a_result():
    """A worker killed in the middle of writing its result left half a message in the result
    pipe; the pool's manager thread then waited for the rest forever and the test process hung at
    its exit (seen once in CI after every test had passed)."""
    import struct
    from concurrent.futures import ProcessPoolExecutor

    from agents.shared.processes import end_workers, start_worker, worker_context

    pool = ProcessPoolExecutor(1, mp_context=worker_context(), initializer=start_worker, initargs=(os.getpid(),))
    assert pool.submit(abs, -1).result(timeout=60) == 1
    manager = pool._executor_manager_thread
    os.write(pool._result_queue._writer.fileno(), struct.pack("!i", 100))  # a header, and no message
    time.sleep(0.5)  # the manager thread is now reading the rest
    end_workers(pool)
    manager.join(timeout=20)
    assert not manager.is_alive()
