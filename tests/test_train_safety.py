"""Training runs are safe: one run per folder, --resume keeps the run's config, damaged or hostile
checkpoints are skipped or refused, Ctrl-C and ``kill -9`` leave a resumable run and no workers."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("sb3_contrib")

from tests.test_reliability import STOP_SECONDS, linux_only, start, wait_for  # noqa: E402
from train.__main__ import main as train_main  # noqa: E402
from train.checkpoints import ResumeError, load_state  # noqa: E402
from train.config import ConfigError, config_from_dict, load_config  # noqa: E402
from train.lock import LOCK_FILE, RunInUseError, RunLock  # noqa: E402

TINY = {
    "run_name": "tiny", "n_envs": 2, "n_steps": 128, "batch_size": 128, "n_epochs": 1,
    "net_arch": [16], "snapshot_every": 256, "eval_every": 1_000_000, "eval_boards": 1, "eval_opponents": ["random"],
    "checkpoint_every": 256, "imitate": "", "opponents": {"self": 1.0, "random": 1.0}, "total_steps": 512,
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
    assert f"kept checkpoint step_{kept:010d}. Resume with: python -m train --run-name tiny" in err
    assert not [p.name for p in run.rglob("*") if ".tmp" in p.name]
    assert not (run / LOCK_FILE).exists()
    # The resumed run says where it starts, extends only when asked, and says so.
    assert train_main(resume(tmp_path, kept + 1)) == 0
    err = capsys.readouterr().err
    assert f"resuming {run} from checkpoint step_{kept:010d} at step {kept:,}" in err
    assert f"total_steps of the run changed from {LONG_STEPS:,} to {kept + 1:,}" in err
    assert load_config(run / "config.yaml").total_steps == kept + 1


@linux_only
def test_kill_9_leaves_a_lock_that_is_taken_over(tmp_path, capsys):
    config = tiny_config(tmp_path, total_steps=LONG_STEPS)
    process = start(["-m", "train", *args(config, tmp_path)])
    kept = wait_for_checkpoint(process, tmp_path / "tiny")
    process.kill()
    process.communicate(timeout=30)
    assert (tmp_path / "tiny" / LOCK_FILE).read_text().strip() == str(process.pid)
    assert train_main(resume(tmp_path, kept + 1)) == 0
    assert f"took over the lock of process {process.pid}, which no longer runs" in capsys.readouterr().err


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
        (args(other, tmp_path, "--resume"), "differs in learning_rate (run: 0.0003, given: 0.1)"),
        (args(finished_run[1], tmp_path, "--resume", "--seed", "5"), "differs in seed (run: 0, given: 5)"),
        (args(tiny_config(tmp_path, total_steps=9), tmp_path, "--resume"), "--total-steps 9 to"),
        (resume(tmp_path, 300), "at step 512 already"),
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


class CreatesFile:
    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


@pytest.mark.parametrize("damage", ["garbage", "code", "wrong_object", "bad_model"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_intact_one(finished_run, tmp_path, capsys, damage):
    run = copy_run(finished_run, tmp_path)
    newest = run / "checkpoints" / "step_0000000512"
    marker = tmp_path / "pwned"
    content = {
        "garbage": b"\x80\x05not a pickle",
        "code": pickle.dumps({"trainer": CreatesFile(marker)}),
        "wrong_object": pickle.dumps([1, 2, 3]),
    }
    if damage == "bad_model":
        (newest / "model.zip").write_bytes(b"PK\x03\x04 cut")
    else:
        (newest / "state.pkl").write_bytes(content[damage])
    assert train_main(resume(tmp_path, 768)) == 0
    err = capsys.readouterr().err
    assert f"skipping a damaged checkpoint: cannot read {newest}" in err or f"{newest / 'state.pkl'} is not a" in err
    assert "from checkpoint step_0000000256 at step 256 of 768" in err
    assert not marker.exists()


def test_hostile_state_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "state.pkl").write_bytes(pickle.dumps(CreatesFile(marker)))
    with pytest.raises(ResumeError, match=r"(io|builtins)\.open is not allowed in a checkpoint"):
        load_state(tmp_path)
    assert not marker.exists()


def test_only_damaged_checkpoints_is_a_clear_error(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    for state in run.glob("checkpoints/step_*/state.pkl"):
        state.write_bytes(b"")
    with pytest.raises(SystemExit):
        train_main(resume(tmp_path, 768))
    assert "no intact checkpoint" in capsys.readouterr().err


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
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_a_corrupt_run_config_is_a_clear_error(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path)
    (run / "config.yaml").write_text("total_steps: [512\n")
    with pytest.raises(SystemExit) as exit_info:
        train_main(resume(tmp_path))
    assert exit_info.value.code == 2 and "config.yaml is not valid YAML" in capsys.readouterr().err
