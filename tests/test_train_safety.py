"""Training runs are safe: one run per folder, --resume keeps the run's config, damaged or hostile
checkpoints are skipped or refused, Ctrl-C and ``kill -9`` leave a resumable run and no workers."""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("sb3_contrib")

from eval.run_lock import LOCK_FILE, RunInUseError, RunLock  # noqa: E402
from tests.test_reliability import STOP_SECONDS, linux_only, start, wait_for  # noqa: E402
from tests.test_reliability import no_command_outlives_its_test  # noqa: E402, F401  (autouse here too)
from train.__main__ import main as train_main  # noqa: E402
from train.run_folder.checkpoints import ResumeError, checkpoint_step, load_state  # noqa: E402
from train.rounds import label_set  # noqa: E402
from train.config import ConfigError, check_memory, config_from_dict, load_config  # noqa: E402
from train.rounds.labels import PART_ROWS  # noqa: E402

TINY = {
    "run_name": "tiny", "n_envs": 2, "n_steps": 128, "batch_size": 128, "n_epochs": 1,
    "net_arch": [16], "snapshot_every": 256, "eval_every": 1_000_000, "eval_boards": 1, "start_eval_boards": 1, "eval_opponents": ["random"],
    "checkpoint_every": 256, "imitate": "", "opponents": {"self": 1.0, "random": 1.0}, "total_steps": 512,
    "critic_arch": [], "critic_sees_hands": False, "overlap_updates": False,  # small and synchronous: steps 256, 512
    "distil_labels": [],
}  # fmt: skip
LONG_STEPS = 10_000_000


def tiny_config(folder: Path, **changes) -> Path:
    path = folder / f"tiny_{len(list(folder.glob('tiny_*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump({**TINY, **changes}))
    return path


def args(config: Path, out: Path, *more: str) -> list[str]:
    return ["--config", str(config), "--output-dir", str(out), "--quiet", *more]


def latest_step(run: Path) -> int:
    return int((run / "checkpoints" / "latest").read_text().strip().split("_")[1])


def wait_for_checkpoint(process: subprocess.Popen, run: Path) -> int:
    wait_for(lambda: (run / "checkpoints" / "latest").is_file() or process.poll() is not None, 180, "a checkpoint")
    assert process.poll() is None, process.communicate()
    return latest_step(run)


@linux_only
def test_one_run_per_folder_and_ctrl_c_keeps_a_resumable_checkpoint(tmp_path, capsys):
    config = tiny_config(tmp_path, total_steps=LONG_STEPS)
    run = tmp_path / "tiny"
    process = start(["-m", "train", *args(config, tmp_path)])
    wait_for_checkpoint(process, run)
    saved_config = (run / "config.yaml").read_bytes()
    # A second training in the same folder fails at once, new or resumed, and changes nothing.
    for extra in ([], ["--resume"]):
        with pytest.raises(SystemExit) as exit_info:
            train_main(args(config, tmp_path, *extra))
        assert exit_info.value.code == 2
        assert f"in use by another training (process {process.pid})" in capsys.readouterr().err
    assert (run / "config.yaml").read_bytes() == saved_config
    # Ctrl-C: out within seconds, one line, a checkpoint to resume from, no partial files.
    os.killpg(process.pid, signal.SIGINT)
    sent = time.monotonic()
    _, err = process.communicate(timeout=60)
    assert time.monotonic() - sent < STOP_SECONDS, err
    assert process.returncode == 130 and "Traceback" not in err, err
    kept = latest_step(run)
    assert f"kept PPO checkpoint step_{kept:010d} (step {kept:,}). Resume with: python -m train --run-name tiny" in err
    assert not [p.name for p in run.rglob("*") if ".tmp" in p.name]
    assert not (run / LOCK_FILE).exists()
    # The resumed run says where it starts, extends only when asked, and says so.
    assert train_main(resume(tmp_path, kept + 1)) == 0
    err = capsys.readouterr().err
    assert f"resuming {run} from checkpoint step_{kept:010d} at step {kept:,}" in err
    assert f"total_steps of the run changed from {LONG_STEPS:,} to {kept + 1:,}" in err
    assert load_config(run / "config.yaml").total_steps == kept + 1


@linux_only
def test_kill_9_after_a_checkpoint_by_time_resumes_from_it_and_takes_over_the_lock(tmp_path, capsys):
    config = tiny_config(tmp_path, total_steps=LONG_STEPS, checkpoint_every=LONG_STEPS, checkpoint_minutes=0.02)
    process = start(["-m", "train", *args(config, tmp_path)])
    kept = wait_for_checkpoint(process, tmp_path / "tiny")  # by time: checkpoint_every is never reached
    process.kill()
    process.communicate(timeout=30)
    assert 0 < kept < LONG_STEPS
    assert (tmp_path / "tiny" / LOCK_FILE).read_text().split() == [str(process.pid), "training"]
    assert train_main(resume(tmp_path, kept + 1)) == 0
    err = capsys.readouterr().err
    assert f"took over the lock of process {process.pid}, which no longer runs" in err
    assert f"from checkpoint step_{kept:010d} at step {kept:,}" in err


@linux_only
@pytest.mark.parametrize(
    "wait_for_line, changes",
    [
        (None, {}),  # during start-up
        ("] recording", {"imitate": "rule_based", "imitation_steps": 10**6}),  # after the stage: "[stage 1/2: ..."
        ("] PPO", {"checkpoint_every": 256}),
    ],
    ids=["start-up", "warm start", "PPO"],
)
def test_sigterm_is_one_line_exit_143_and_leaves_a_resumable_run(tmp_path, wait_for_line, changes):
    config = tiny_config(tmp_path, total_steps=LONG_STEPS, **changes)
    process = start(["-m", "train", *args(config, tmp_path)[:-1]])
    lines = Lines(process)
    if wait_for_line:
        lines.wait_for(wait_for_line, process)
    if changes.get("checkpoint_every"):
        wait_for_checkpoint(process, tmp_path / "tiny")
    else:
        time.sleep(1.0)
    process.terminate()  # SIGTERM, what schedulers, docker stop and timeout send
    process.wait(timeout=60)
    err = lines.text()
    assert process.returncode == 143 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("[train] terminated (SIGTERM)"), err
    if "kept PPO checkpoint" in last:
        assert last.endswith(f"Resume with: python -m train --run-name tiny --output-dir {tmp_path} --resume")
        assert train_main(resume(tmp_path, latest_step(tmp_path / "tiny") + 1)) == 0
    else:  # starting again is tested above
        assert "start it again with the same command" in last.lower()
        assert not list((tmp_path / "tiny").rglob("*.tmp"))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> tuple[Path, Path]:
    """A finished tiny run (checkpoints at steps 256 and 512) and its config file."""
    out = tmp_path_factory.mktemp("runs")
    config = tiny_config(out)
    assert train_main(args(config, out)) == 0
    return out, config


def resume(out: Path, total_steps: int | None = None) -> list[str]:
    """Arguments resuming run ``tiny`` in ``out`` with its own config."""
    more = [] if total_steps is None else ["--total-steps", str(total_steps)]
    return ["--run-name", "tiny", "--output-dir", str(out), "--resume", "--quiet", *more]


def copy_run(finished: tuple[Path, Path], tmp_path: Path) -> Path:
    import shutil

    out, _ = finished
    shutil.copytree(out / "tiny", tmp_path / "tiny")
    return tmp_path / "tiny"


def test_resume_refuses_another_config_and_never_rewrites_it(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    saved = (run / "config.yaml").read_bytes()
    other = tiny_config(tmp_path, learning_rate=0.1)
    cases = [
        (args(other, tmp_path, "--resume"), "differs in learning_rate (run: 3e-05, given: 0.1)"),
        (args(finished_run[1], tmp_path, "--resume", "--seed", "5"), "differs in seed (run: 0, given: 5)"),
        (args(tiny_config(tmp_path, total_steps=9), tmp_path, "--resume"), "--total-steps 9 to"),
        (resume(tmp_path, 300), "at step 512 already"),
        (resume(tmp_path, 10), "at step 512 already"),  # (said its checkpoints were damaged, to remove the run)
        (["--run-name", "none", "--output-dir", str(tmp_path), "--resume"], "nothing to resume"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            train_main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert (run / "config.yaml").read_bytes() == saved
    # Without --config the run's own config is used: the default config's 2,000,000 steps do not leak in.
    assert train_main(resume(tmp_path)) == 0
    assert "at step 512 of 512" in capsys.readouterr().err
    assert (run / "config.yaml").read_bytes() == saved


FINAL_FILES = ("final.zip", "final.npz", "evaluations.csv", "learning_curve.png")


def only_checkpoint(run: Path, folder: Path, into: Path) -> Path:
    """A copy of ``run`` as a run stopped right after writing checkpoint ``folder`` (its only one, no final files)."""
    import shutil

    copy = into / run.name
    shutil.copytree(run, copy, ignore=lambda where, names: [n for n in names if n in FINAL_FILES])
    for other in (copy / "checkpoints").glob("step_*"):
        if other.name != folder.name:
            shutil.rmtree(other)
    (copy / "checkpoints" / "latest").write_text(folder.name + "\n")
    return copy


def evaluation_rows(run: Path) -> list[list[str]]:
    """evaluations.csv without its minutes column (the wall clock's)."""
    return [row[:1] + row[2:] for row in (line.split(",") for line in (run / "evaluations.csv").read_text().splitlines())]


def test_a_run_resumed_from_any_checkpoint_ends_as_the_uninterrupted_one(tmp_path, capsys, monkeypatch):
    """Overlapped updates (train/ppo/overlap.py): every checkpoint holds a rollout collected ahead, the
    last one too (the run collects one rollout past total_steps); each resume ends with the
    uninterrupted run's weights and evaluations."""
    monkeypatch.setattr("train.run_folder.checkpoints.KEEP", 10)  # every checkpoint stays, to resume from each
    rollout = 64  # 2 tables x 32 steps
    config = tiny_config(tmp_path, overlap_updates=True, n_steps=32, batch_size=64, total_steps=2 * rollout, checkpoint_every=rollout)
    assert train_main(args(config, tmp_path / "whole")) == 0
    run = tmp_path / "whole" / "tiny"
    folders = sorted(run.glob("checkpoints/step_*"))
    assert [checkpoint_step(f) for f in folders] == [rollout, 2 * rollout, 3 * rollout]
    whole = np.load(run / "final.npz")
    for folder in sorted(folders, key=lambda f: checkpoint_step(f) != 2 * rollout):  # the case first: total_steps
        stopped = only_checkpoint(run, folder, tmp_path / folder.name)
        capsys.readouterr()
        assert train_main(resume(stopped.parent)) == 0
        resumed = np.load(stopped / "final.npz")
        for key in whole.files:
            np.testing.assert_array_equal(whole[key], resumed[key], err_msg=f"resumed from {folder.name}: {key} differs")
        assert evaluation_rows(stopped) == evaluation_rows(run)
        step = checkpoint_step(folder) - rollout  # trained on
        assert f"from checkpoint {folder.name} at step {step:,} of 128 (the rollout collected ahead, to step " in capsys.readouterr().err
        assert latest_step(stopped) == 3 * rollout  # the same last checkpoint, to extend the run from


def dotted_name_payload(marker: Path) -> bytes:
    """A protocol-4 pickle that names module ``agents.base`` and the dotted name
    ``np.f2py.subprocess.Popen``: an unpickler that follows dotted names runs ``touch marker``."""
    def text(s: str) -> bytes:
        return b"\x8c" + bytes([len(s)]) + s.encode()  # SHORT_BINUNICODE

    items = b"".join(text(word) for word in ["sh", "-c", f"touch {marker}"])
    # PROTO 4, the module and the dotted name, STACK_GLOBAL, MARK items LIST, TUPLE1, REDUCE, STOP
    return b"\x80\x04" + text("agents.base") + text("np.f2py.subprocess.Popen") + b"\x93(" + items + b"l\x85R."


def object_array_npz(path: Path, marker: Path) -> None:
    """An .npz whose member is an object array holding a pickle that would create ``marker``."""
    class CreatesFile:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    np.savez(path, a0=np.array([CreatesFile()], dtype=object))


def drop_game_state(folder: Path) -> None:
    """A state that reads as data but lacks the vector engine's arrays: it does not fit the run."""
    state = json.loads((folder / "state.json").read_text())
    del state["dict"]["env_state"]["dict"]["learner"]["dict"]["tables"]["dict"]["game"]
    (folder / "state.json").write_text(json.dumps(state))


DAMAGE = {
    "garbage_json": lambda folder, marker: (folder / "state.json").write_bytes(b"\x80\x05not json"),
    "wrong_object": lambda folder, marker: (folder / "state.json").write_text("[1, 2, 3]"),
    "unknown_node": lambda folder, marker: (folder / "state.json").write_text('{"pickle": "Y3Bvc2l4CnN5c3RlbQ=="}'),
    "object_array": lambda folder, marker: object_array_npz(folder / "state.npz", marker),
    "cut_arrays": lambda folder, marker: (folder / "state.npz").write_bytes((folder / "state.npz").read_bytes()[:300]),
    "old_pickle_with_dotted_name": lambda folder, marker: (
        (folder / "state.json").unlink(), (folder / "state.pkl").write_bytes(dotted_name_payload(marker))
    ),
    "does_not_fit": lambda folder, marker: drop_game_state(folder),
    "bad_model": lambda folder, marker: (folder / "model.zip").write_bytes(b"PK\x03\x04 cut"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_tampered_latest_checkpoint_falls_back_without_running_code(finished_run, tmp_path, capsys, damage):
    run = copy_run(finished_run, tmp_path)
    newest = run / "checkpoints" / "step_0000000512"
    marker = tmp_path / "pwned"
    DAMAGE[damage](newest, marker)
    saved = (run / "config.yaml").read_bytes()
    assert train_main(resume(tmp_path, 768)) == 0
    err = capsys.readouterr().err
    assert "skipping a checkpoint: " in err and str(newest) in err, err
    assert "from checkpoint step_0000000256 at step 256 of 768" in err
    assert not marker.exists()
    assert load_config(run / "config.yaml").total_steps == 768 and (run / "config.yaml").read_bytes() != saved


def nan_policy(path: Path, good: Path) -> None:
    weights = dict(np.load(good))
    weights["w0"] = np.full_like(weights["w0"], np.nan)
    np.savez(path, **weights)


def narrower_policy(path: Path, good: Path) -> None:
    weights = dict(np.load(good))
    weights["w0"], weights["b0"], weights["w_out"] = weights["w0"][:, :8], weights["b0"][:8], weights["w_out"][:8]
    np.savez(path, **weights)


STUDENT_DAMAGE = {
    "missing": (lambda path, good: None, "is missing"),
    "garbage": (lambda path, good: path.write_bytes(b"PK\x03\x04 not a policy"), "not a readable policy export"),
    "fifo": (lambda path, good: os.mkfifo(path), "is a FIFO, not a regular file: refused unopened"),
    "dev_zero": (lambda path, good: path.symlink_to("/dev/zero"), "is a device or socket, not a regular file"),
    "nan": (nan_policy, "w0 holds NaN or infinite values"),
    "narrower": (narrower_policy, "w0 must be an array of shape (714, 16)"),
}


@pytest.mark.parametrize("damage", sorted(STUDENT_DAMAGE))
def test_a_missing_or_damaged_student_is_a_clear_error_at_resume(finished_run, tmp_path, capsys, damage):
    """The student PPO is pulled toward (students/round-K.npz, expert iteration's last) is read at
    every resume: missing, damaged or another kind of network, it is refused in one line (exit 2);
    once it is there, the run goes on."""
    run = copy_run(finished_run, tmp_path)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "distil_labels": [10], "step_labels": 0, "student_pull": 1.0}))
    student = run / "students" / "round-1.npz"
    student.parent.mkdir()
    make, message = STUDENT_DAMAGE[damage]
    make(student, run / "final.npz")
    with pytest.raises(SystemExit) as exit_info:
        train_main(resume(tmp_path, 768))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err, err
    assert f"the student PPO is pulled toward ({student}) is missing or damaged: " in err and message in err, err
    if damage == "missing":  # (once: the resume after any refusal starts alike)
        (run / "final.npz").rename(student)  # the learner's own kind of network: the run goes on
        assert train_main(resume(tmp_path, 768)) == 0


def test_the_dotted_name_payload_would_run_under_a_plain_unpickler(tmp_path):
    """The payload of the test above is real: plain pickle runs it (so its absence above means something)."""
    marker = tmp_path / "pwned"
    pickle.loads(dotted_name_payload(marker)).wait()
    assert marker.exists()


def test_an_old_pickled_state_is_refused_with_a_reason(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "state.pkl").write_bytes(dotted_name_payload(marker))
    with pytest.raises(ResumeError, match=r"older version as a pickle \(state.pkl\), which this version no longer reads"):
        load_state(tmp_path, 2**20, 2**20)
    assert not marker.exists()


def test_only_damaged_checkpoints_is_a_clear_error_with_a_way_out(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    saved = (run / "config.yaml").read_bytes()
    for state in run.glob("checkpoints/step_*/state.json"):
        state.write_bytes(b"")
    with pytest.raises(SystemExit):
        train_main(resume(tmp_path, 768))
    err = capsys.readouterr().err
    assert "no intact checkpoint" in err and f"remove {run}" in err and "without --resume" in err
    assert (run / "config.yaml").read_bytes() == saved


def test_bad_config_files_and_bot_names_fail_before_any_work(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        load_config(tmp_path / "empty.yaml")
    (tmp_path / "broken.yaml").write_bytes(b"run_name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "broken.yaml")
    with pytest.raises(ConfigError, match="eval_opponents: unknown bot 'rule_basd'"):
        config_from_dict({"eval_opponents": ["random", "rule_basd"]})
    with pytest.raises(ConfigError, match="opponents: unknown bot 'expret'"):
        config_from_dict({"opponents": {"self": 1.0, "expret": 1.0}})
    with pytest.raises(ConfigError, match="opponents: no policy file"):
        config_from_dict({"opponents": {"missing.npz": 1.0}})


def test_the_lock_is_exclusive_and_a_dead_holder_is_taken_over(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunInUseError, match=f"process {os.getpid()}"):
            RunLock(tmp_path).__enter__()
    assert not (tmp_path / LOCK_FILE).exists()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_FILE).write_text(dead.stdout)
    with RunLock(tmp_path) as lock:
        assert lock.stale_pid == int(dead.stdout)
        assert (tmp_path / LOCK_FILE).read_text().split() == [str(os.getpid()), "training"]


def test_a_corrupt_run_config_is_a_clear_error(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    (run / "config.yaml").write_text("total_steps: [512\n")
    with pytest.raises(SystemExit) as exit_info:
        train_main(resume(tmp_path))
    assert exit_info.value.code == 2 and "config.yaml is not valid YAML" in capsys.readouterr().err


# ---------------------------------------------------------------- values checked before any work


@pytest.mark.parametrize(
    "change, message",
    [
        ({"learning_rate": float("nan")}, r"learning_rate must be a finite number in \(0, 1\], got nan"),
        ({"learning_rate": -0.001}, r"learning_rate must be a finite number in \(0, 1\]"),
        ({"imitation_learning_rate": float("inf")}, "imitation_learning_rate must be a finite number"),
        ({"gamma": 7.5}, r"gamma must be a finite number in \[0, 1\], got 7.5"),
        ({"gae_lambda": -0.1}, r"gae_lambda must be a finite number in \[0, 1\]"),
        ({"clip_range": -1.0}, r"clip_range must be a finite number in \(0, 1\], got -1.0"),
        ({"ent_coef": float("inf")}, r"ent_coef must be a finite number in \[0, 1e\+06\], got inf"),
        ({"max_grad_norm": 0.0}, r"max_grad_norm must be a finite number in \(0, 1e\+06\]"),
        ({"opponents": {"self": float("nan")}}, r"opponents\['self'\] must be a finite number in \[0, 1e\+06\]"),
        ({"opponents": {"self": 1.0, "random": float("inf")}}, r"opponents\['random'\] must be a finite number"),
        ({"seed": -1}, r"seed must be an integer in \[0, 4,294,967,295\], got -1"),
        ({"seed": 2**64}, r"seed must be an integer in \[0, 4,294,967,295\]"),
    ],
)
def test_bad_values_are_config_errors_naming_what_is_allowed(change, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({**TINY, **change})


@pytest.mark.parametrize(
    "change, part",
    [
        ({"n_envs": 10**6}, "rollout buffer (n_envs x n_steps)"),
        ({"net_arch": [2**16, 2**16]}, "networks (net_arch, critic_arch)"),
        ({"imitate": "random", "imitation_steps": 10**8}, "warm start (imitation_steps)"),
    ],
)
def test_a_config_that_cannot_fit_in_memory_says_how_much_it_needs(change, part):
    config = config_from_dict({**TINY, **change})
    with pytest.raises(ConfigError, match=r"this config needs about [\d,.]+ GB of memory and the machine has 24.0 GB") as err:
        check_memory(config, available=24 * 2**30)
    assert part in str(err.value)
    check_memory(config_from_dict(TINY), available=24 * 2**30)  # the tiny run fits
    check_memory(load_config(), available=4 * 2**30)  # and the default run fits in 4 GB


def test_memory_and_folder_checks_come_before_anything_is_written(tmp_path, capsys):
    huge = tiny_config(tmp_path, n_envs=10**6)
    for argv, message in [
        (args(huge, tmp_path / "out"), "this config needs about"),
        (args(tiny_config(tmp_path), "/proc/no_such_folder"), "cannot write the run folder /proc/no_such_folder/tiny"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            train_main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    with pytest.raises(SystemExit):
        train_main(args(tiny_config(tmp_path), a_file))
    assert f"cannot write the run folder {a_file / 'tiny'}" in capsys.readouterr().err
    assert a_file.read_text() == "not a folder"


def test_the_run_lock_is_taken_before_torch_is_imported(tmp_path):
    config = tiny_config(tmp_path)
    (tmp_path / "tiny").mkdir()
    code = (
        "import sys\nfrom train.__main__ import main\n"
        f"try:\n    main({args(config, tmp_path)!r})\nexcept SystemExit as end:\n    code = end.code\n"
        "print(code, 'torch' in sys.modules, 'stable_baselines3' in sys.modules)"
    )
    with RunLock(tmp_path / "tiny"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert "in use by another training" in done.stderr


# ---------------------------------------------------------------- every state a killed run leaves has a way out


def test_a_run_killed_before_its_first_checkpoint_says_how_to_start_again_and_starts_clean(tmp_path, capsys):
    config = tiny_config(tmp_path)
    run = tmp_path / "tiny"
    (run / "checkpoints" / ".step_0000000256.tmp").mkdir(parents=True)  # kill -9 during the first write
    (run / "tensorboard_1").mkdir()
    (run / "config.yaml").write_text(config.read_text())
    (run / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exit_info:
        train_main(resume(tmp_path))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"nothing to resume in {run}: no checkpoint was written there" in err
    assert f"Start it again with: python -m train --run-name tiny --output-dir {tmp_path}" in err
    assert train_main(args(config, tmp_path)) == 0  # the same command without --resume
    err = capsys.readouterr().err
    assert f"starting {run} again: removed what its earlier start left (checkpoints, tensorboard_1)" in err
    assert not list(run.rglob("*.tmp")) and (run / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in run.glob("tensorboard_*")) == ["tensorboard_1"]
    # Now it holds a run: a new start is refused with the command that continues it.
    with pytest.raises(SystemExit):
        train_main(args(config, tmp_path))
    assert f"continue it with: python -m train --run-name tiny --output-dir {tmp_path} --resume" in capsys.readouterr().err


def test_a_lost_run_config_is_recovered_from_the_checkpoint(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    saved = (run / "config.yaml").read_bytes()
    (run / "config.yaml").unlink()
    assert train_main(resume(tmp_path, 768)) == 0
    err = capsys.readouterr().err
    assert f"{run / 'config.yaml'} was missing: the run's config is the copy in {run}/checkpoints/step_0000000512" in err
    assert "from checkpoint step_0000000512 at step 512 of 768" in err
    assert load_config(run / "config.yaml").total_steps == 768 and saved != (run / "config.yaml").read_bytes()


# ---------------------------------------------------------------- a full or read-only disk


def disk_error(code: int, calls: int, write):
    """``write``, failing with OSError ``code`` from its ``calls``-th call on (after writing part of its file)."""
    made = []

    def failing(*a, **k):
        made.append(1)
        if len(made) < calls:
            return write(*a, **k)
        if write.__name__ == "write_state":
            np.savez(a[0] / "state.npz", part=np.zeros(1000))  # the model and part of the state are written
        raise OSError(code, os.strerror(code))

    return failing


@pytest.mark.parametrize(
    "code, target, calls",
    [
        (errno.ENOSPC, "write_state", 2),  # the second checkpoint's state (its model is written)
        (errno.EDQUOT, "write_state", 2),
        (errno.EROFS, "write_text", 3),  # its pointer "latest" (the first write_text is config.yaml)
    ],
)
def test_a_disk_that_refuses_a_checkpoint_stops_the_run_in_one_line_and_keeps_the_previous_one(
    tmp_path, capsys, monkeypatch, code, target, calls
):
    import train.run_folder.checkpoints

    monkeypatch.setattr(train.run_folder.checkpoints, target, disk_error(code, calls, getattr(train.run_folder.checkpoints, target)))
    assert train_main(args(tiny_config(tmp_path), tmp_path)) == 74  # the second checkpoint (step 512) fails
    err = capsys.readouterr().err
    run = tmp_path / "tiny"
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(
        f"[train] cannot write checkpoint step_0000000512 in {run / 'checkpoints'}: {os.strerror(code)}; the run "
        f"stopped, its latest checkpoint is step_0000000256. Once the disk has room (and is writable), resume with: "
        f"python -m train --run-name tiny --output-dir {tmp_path} --resume"
    ), err
    assert not [p for p in run.rglob("*") if p.name.startswith(".")], "a temporary file or folder was left"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest", "step_0000000256"]
    assert latest_step(run) == 256 and not (run / "final.zip").exists()
    monkeypatch.undo()
    assert train_main(resume(tmp_path)) == 0  # the disk has room again
    assert "from checkpoint step_0000000256 at step 256 of 512" in capsys.readouterr().err


def test_a_disk_full_at_the_first_checkpoint_says_to_start_again(tmp_path, capsys, monkeypatch):
    import train.run_folder.checkpoints

    monkeypatch.setattr(train.run_folder.checkpoints, "write_state", disk_error(errno.ENOSPC, 1, train.run_folder.checkpoints.write_state))
    assert train_main(args(tiny_config(tmp_path), tmp_path)) == 74
    err = capsys.readouterr().err
    assert err.strip().endswith(
        "No space left on device; no checkpoint kept. Once the disk has room, start the run again with the same command"
    ) and "Traceback" not in err, err
    assert not list((tmp_path / "tiny" / "checkpoints").iterdir())


def test_a_disk_full_at_the_final_files_stops_in_one_line_and_a_resume_writes_them(tmp_path, capsys, monkeypatch):
    import train.run.pipeline

    save_weights = train.run.pipeline.save_weights

    def full(weights, path):
        if Path(path).name != "final.npz":  # (start.npz, at PPO's first step)
            return save_weights(weights, path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(train.run.pipeline, "save_weights", full)
    assert train_main(args(tiny_config(tmp_path), tmp_path)) == 74
    run = tmp_path / "tiny"
    err = capsys.readouterr().err
    assert err.startswith(f"[train] cannot write {run / 'final.npz'}: No space left on device; the run stopped, its "
                          "latest checkpoint is step_0000000512.") and "Traceback" not in err, err  # fmt: skip
    assert not [p for p in run.rglob("*") if p.name.startswith(".")] and not (run / "final.npz").exists()
    monkeypatch.undo()
    assert train_main(resume(tmp_path)) == 0  # the finished run's last checkpoint: the final files are written
    assert (run / "final.npz").is_file() and "at step 512 of 512" in capsys.readouterr().err


def test_a_checkpoint_written_again_for_its_step_replaces_the_old_one_only_when_whole(tmp_path):
    from train.run_folder.checkpoints import WriteFailed, write_checkpoint

    write_checkpoint(tmp_path, 7, lambda folder: (folder / "data").write_text("first"))

    def fails(folder: Path) -> None:
        (folder / "data").write_text("second, cut")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(WriteFailed, match="cannot write checkpoint step_0000000007 in .*: No space left on device"):
        write_checkpoint(tmp_path, 7, fails)
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_0000000007"]
    assert (root / "step_0000000007" / "data").read_text() == "first"
    write_checkpoint(tmp_path, 7, lambda folder: (folder / "data").write_text("third"))
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_0000000007"]
    assert (root / "step_0000000007" / "data").read_text() == "third"


# ---------------------------------------------------------------- Ctrl-C anywhere


class Lines:
    """A process's stderr, read line by line on a thread, to wait for a phase."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(process.stderr), daemon=True)
        self.thread.start()

    def wait_for(self, text: str, process: subprocess.Popen) -> None:
        wait_for(lambda: any(text in line for line in self.lines) or process.poll() is not None, 180, repr(text))
        assert process.poll() is None, "".join(self.lines)

    def text(self) -> str:
        self.thread.join(timeout=30)
        return "".join(self.lines)


def interrupt(process: subprocess.Popen, lines: Lines) -> str:
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=60)
    return lines.text()


@linux_only
@pytest.mark.parametrize("seconds", [0.2, 0.6, 1.2])
def test_ctrl_c_during_start_up_is_one_line(tmp_path, seconds):
    process = start(["-m", "train", *args(tiny_config(tmp_path), tmp_path)])
    lines = Lines(process)
    time.sleep(seconds)
    err = interrupt(process, lines)
    assert process.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err  # -2: before Python's handler
    assert len(err.strip().splitlines()) <= 1, err


@linux_only
@pytest.mark.parametrize(
    "phase, changes",
    [
        ("recording", {"imitate": "rule_based", "imitation_steps": 10**6}),
        ("imitation fit", {"imitate": "random", "imitation_steps": 4096, "imitation_epochs": 10**4}),
    ],
)
def test_ctrl_c_during_the_warm_start_is_one_line_and_the_run_can_start_again(tmp_path, phase, changes):
    config = tiny_config(tmp_path, **changes)
    process = start(["-m", "train", *args(config, tmp_path)[:-1]])  # with progress lines
    lines = Lines(process)
    lines.wait_for(f"warm start] {phase}", process)
    err = interrupt(process, lines)
    assert process.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("[train] interrupted at step 0, before the first checkpoint"), err
    assert "Start it again with the same command (without --resume)" in err


@linux_only
def test_ctrl_c_while_labelling_says_which_labels_it_kept_and_resume_goes_on_from_them(tmp_path, capsys):
    changes = {"distil_labels": [3000], "step_labels": 0, "label_worlds": 4, "label_confirm": 0, "label_workers": 2, "distil_epochs": 1,
               "distil_eval": {"random": 2}}  # fmt: skip
    process = start(["-m", "train", *args(tiny_config(tmp_path, **changes), tmp_path)[:-1]])  # with progress lines
    lines = Lines(process)
    folder = tmp_path / "tiny" / "labels" / "round-1"
    wait_for(lambda: list(folder.glob("shard_*.part*.npz")) or process.poll() is not None, 180, "a part of a shard")
    err = interrupt(process, lines)
    assert process.returncode == 130 and "Traceback" not in err, err
    labels = label_set.rows_on_disk(folder, label_set.read_meta(folder), PART_ROWS)
    assert 400 <= labels < 3000, err
    assert err.strip().splitlines()[-1] == (
        f"[train] interrupted at step 0; kept the starting network and round 1's {labels:,} of 3,000 labels; no round "
        f"finished yet, no PPO checkpoint yet. Resume with: python -m train --run-name tiny --output-dir {tmp_path} "
        "--resume"
    )
    assert train_main(resume(tmp_path)[:-1]) == 0
    err = capsys.readouterr().err
    assert f"going on from the starting network and round 1's {labels:,} of 3,000 labels" in err
    assert f"[train] [stage 1/2: round 1 of 1] labelling: {labels:,}/3,000 labels" in err


def test_ctrl_c_during_the_final_save_finishes_it_and_says_so(tmp_path, capsys, monkeypatch):
    import train.run.pipeline

    write = train.run.pipeline.save_weights  # the final export (and start.npz, at PPO's first step)

    def interrupted_write(weights, path):
        if Path(path).name == "final.npz":
            signal.raise_signal(signal.SIGINT)  # what a Ctrl-C at this moment does
        write(weights, path)

    monkeypatch.setattr(train.run.pipeline, "save_weights", interrupted_write)
    assert train_main(args(tiny_config(tmp_path), tmp_path)) == 0
    err = capsys.readouterr().err
    assert "a stop signal came while the final files were written: the run had finished, and they were written whole" in err
    assert "Resume with" not in err
    for name in ("final.zip", "final.npz", "evaluations.csv", "learning_curve.png"):
        assert (tmp_path / "tiny" / name).is_file()


# ---------------------------------------------------------------- RLlib's pickled checkpoints: this account's only


def test_a_sealed_checkpoint_is_loaded_only_unchanged_and_by_the_account_that_sealed_it(tmp_path, monkeypatch):
    from train.run_folder.seal import KEY_ENV, SealError, seal, verify

    monkeypatch.setenv(KEY_ENV, str(tmp_path / "mine.key"))
    folder = tmp_path / "step_0000001000"
    (folder / "learner").mkdir(parents=True)
    (folder / "learner" / "state.pkl").write_bytes(b"pickled by RLlib")
    (folder / "progress.json").write_text('{"steps": 1000}')
    seal(folder)
    verify(folder)
    assert (tmp_path / "mine.key").stat().st_mode & 0o777 == 0o600
    (folder / "learner" / "state.pkl").write_bytes(b"pickled by someone else")
    with pytest.raises(SealError, match="was changed after it was sealed"):
        verify(folder)
    seal(folder)
    (folder / "extra.pkl").write_bytes(b"")
    with pytest.raises(SealError, match="was changed after it was sealed"):
        verify(folder)
    (folder / "extra.pkl").unlink()
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "theirs.key"))  # another account's key
    with pytest.raises(SealError, match="was not sealed by this account"):
        verify(folder)
    (folder / "seal.json").unlink()
    with pytest.raises(SealError, match="has no readable seal.json"):
        verify(folder)


def test_a_checkpoint_folder_that_is_a_link_is_refused_unread(tmp_path):
    """Issue 57: ``checkpoints/step_N`` as a link to a folder elsewhere was resumed from (its files
    read from there, and the pruning of old checkpoints could not remove it); now it is skipped,
    with the reason, for the newest real checkpoint, and a run of links only is not resumed."""
    from train.run_folder.checkpoints import checkpoint_root, newest_intact

    root = checkpoint_root(tmp_path)
    (root / "step_0000000256").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "step_0000000512").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    folder, read, skipped = newest_intact(tmp_path, lambda f: f.name)
    assert read == "step_0000000256"
    assert skipped == [f"{root / 'step_0000000512'} is a symbolic link, not a folder this run wrote: refused unread"]
    (root / "step_0000000256").rmdir()
    with pytest.raises(ResumeError, match="step_0000000512 is a symbolic link"):
        newest_intact(tmp_path, lambda f: f.name)
