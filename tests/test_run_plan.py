"""The run's plan (train.run.plan): the first line, the stage and whole-run time left in every
progress line, and what a stopped run kept."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import numpy as np
import pytest

from train.rounds import expert_iteration as ei
from train.rounds import label_set
from train.run_folder import progress as progress_module
from train.config import DEFAULT_CONFIG, TrainConfig, load_config
from train.run_folder.progress import Progress
from train.run.rates import KeptRates
from train.run.plan import RunPlan, Stage, Work, kept, plan_run, start_line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(time, "monotonic", fake)
    monkeypatch.setattr(progress_module, "PROGRESS_SECONDS", 1e9)  # lines only when the test asks
    return fake


def lines(out: io.StringIO) -> list[str]:
    text = out.getvalue().splitlines()
    out.seek(0)
    out.truncate()
    return text


def test_every_line_gives_the_stage_and_the_runs_time_left_from_the_rates_measured(clock: Clock) -> None:
    plan = RunPlan(
        [
            Stage("warm start", []),  # done before this process (a resumed run)
            Stage("round 1 of 1", [Work("labelling", 800), Work("fit", 500), Work("evaluation against expert", 40)]),
            Stage("PPO", [Work("PPO", 10_000)]),
        ],
        elapsed=lambda: clock.now - 1000 + 600,  # the run had taken 10 minutes before
    )  # fmt: skip
    out = io.StringIO()
    progress = Progress(stream=out)
    progress.plan = plan
    with progress.phase("labelling", "labels", 1000, done=200, work="labelling"):  # 200 kept from before
        assert lines(out) == [
            "[train] [stage 2/3: round 1 of 1] labelling: 200/1,000 labels (20%)  0s elapsed, starting; "
            "run: 10m00s elapsed, left: labelling, fit, evaluation, PPO (not timed yet)"
        ]
        clock.now += 10
        progress.advance(300)
        progress.show()
        assert lines(out) == [
            "[train] [stage 2/3: round 1 of 1] labelling: 300/1,000 labels (30%)  10.0 labels/s  10s elapsed, "
            "1m10s left; run: 10m10s elapsed, 1m10s left ±20% + fit, evaluation, PPO (not timed yet)"
        ]
        clock.now += 70
        progress.advance(1000)
    assert lines(out)[-1].endswith("run: 11m20s elapsed, left: fit, evaluation, PPO (not timed yet)")
    with progress.phase("fitting the student", "samples", 500, work="fit"):
        clock.now += 5
        progress.advance(250)
        progress.show()
        assert lines(out)[-1].endswith("run: 11m25s elapsed, 5s left ±20% + evaluation, PPO (not timed yet)")
        clock.now += 5
        progress.advance(500)
    with progress.phase("evaluating the student against expert", "boards", 40, work="evaluation against expert"):
        clock.now += 20
        progress.advance(40)
    with progress.phase("PPO", "steps", 10_000, work="PPO"):
        assert lines(out)[-1] == (
            "[train] [stage 3/3] PPO: 0/10,000 steps (0%)  0s elapsed, starting; run: 11m50s elapsed, left: PPO "
            "(not timed yet)"
        )
        with progress.phase("evaluating at step 0", "boards", 10, quiet=True):  # within PPO's rate, not a stage
            clock.now += 10
            progress.advance(10)
        clock.now += 10
        progress.advance(1000)
        progress.show()
        assert lines(out)[-1] == (
            "[train] [stage 3/3] PPO: 1,000/10,000 steps (10%)  50.0 steps/s  20s elapsed, 3m00s left; "
            "run: 12m10s elapsed, 3m00s left ±20%"
        )
    with progress.phase("the gate: PPO's network against its start", "boards", 10):  # PPO's piece is done
        assert lines(out)[-1].endswith("run: 12m10s elapsed, 0s left")  # (it said PPO's 3m00s)
    progress.close()


def test_a_run_that_max_minutes_ends_shows_how_far_it_is_in_its_time(clock: Clock) -> None:
    """train.exploit's PPO runs to 100M steps or 30 minutes: its share is of the 30 minutes, not 0% of the steps."""
    plan = RunPlan([Stage("PPO", [Work("PPO", 100_000_000)])], elapsed=lambda: clock.now - 1000, deadline=30 * 60)
    out = io.StringIO()
    progress = Progress(stream=out)
    progress.plan = plan
    with progress.phase("PPO", "steps", 100_000_000, work="PPO"):
        clock.now += 6 * 60
        progress.advance(3_600_000)
        progress.show()
        assert lines(out)[-1] == (
            "[train] [stage 1/1] PPO: 3,600,000/100,000,000 steps (20% of the time allowed)  10,000 steps/s  "
            "6m00s elapsed, 24m00s left; run: 6m00s elapsed, 24m00s left ±20%"
        )
    with progress.phase("PPO", "steps", 10_000, work="PPO"):  # a count the time allows: its own share
        clock.now += 1
        progress.advance(5_000)
        progress.show()
        assert "5,000/10,000 steps (50%)" in lines(out)[-1]
    progress.close()


def test_a_rounds_second_label_set_is_not_counted_twice(clock: Clock) -> None:
    """Two pieces of one kind (a round's two label sets): the second phase runs the second piece."""
    plan = RunPlan([Stage("round 1 of 1", [Work("labelling", 100), Work("labelling", 100)])], lambda: clock.now - 1000)
    out = io.StringIO()
    progress = Progress(stream=out)
    progress.plan = plan
    with progress.phase("labelling", "labels", 100, work="labelling"):
        clock.now += 10
        progress.advance(100)
    with progress.phase("labelling", "labels", 100, work="labelling"):
        clock.now += 5
        progress.advance(50)
        progress.show()
        assert lines(out)[-1].endswith("run: 15s elapsed, 5s left ±20%")  # (it said 15s: the set's 100 labels again)
    progress.close()


def test_a_later_run_of_the_config_estimates_every_stage_from_its_start(clock: Clock, tmp_path: Path) -> None:
    """The rates a run measured are kept on this machine (train/run/rates.py): the next run of the same config gives the
    whole run's time left from its first line, saying which rates are earlier runs', where the first run could not."""
    options = {"n_envs": 256, "seed": 1, "run_name": "a"}

    def plan(options: dict) -> RunPlan:
        stages = [Stage("round 1 of 1", [Work("labelling", 1000), Work("fit", 500)]),
                  Stage("PPO", [Work("PPO", 10_000)])]  # fmt: skip
        return RunPlan(stages, elapsed=lambda: clock.now - 1000, kept=KeptRates(tmp_path, options))

    out = io.StringIO()
    progress = Progress(stream=out)
    progress.plan = plan(options)
    for kind, unit, total, seconds in (("labelling", "labels", 1000, 100), ("fit", "samples", 500, 5),
                                       ("PPO", "steps", 10_000, 20)):  # fmt: skip
        with progress.phase(kind, unit, total, work=kind):
            clock.now += seconds
            progress.advance(total)
    assert lines(out)[0].endswith("left: labelling, fit, PPO (not timed yet)")  # the first run of the config
    progress.plan = plan({**options, "seed": 2, "run_name": "b"})  # another run of it: another name and seed
    with progress.phase("labelling", "labels", 1000, work="labelling"):
        assert lines(out)[-1].endswith(
            "run: 2m05s elapsed, 2m05s left ±30% (labelling, fit, PPO at earlier runs' rates)"
        )
        clock.now += 10
        progress.advance(200)  # twice as fast as the first run: this run's rate takes over for labelling
        progress.show()
        assert lines(out)[-1].endswith("run: 2m15s elapsed, 1m05s left ±24% (fit, PPO at earlier runs' rates)")
    progress.plan = plan({**options, "n_envs": 64})  # another config: its rates are its own
    with progress.phase("labelling", "labels", 1000, work="labelling"):
        assert lines(out)[-1].endswith("left: labelling, fit, PPO (not timed yet)")
    progress.close()


def default(tmp_path: Path) -> TrainConfig:
    return load_config(DEFAULT_CONFIG, output_dir=str(tmp_path))


def test_a_new_runs_plan_and_first_line(tmp_path: Path) -> None:
    config = default(tmp_path)
    assert start_line(config, "configs/default.yaml", resumed=False) == (
        f"run {tmp_path}/default (config configs/default.yaml): warm start (expert, 200,000 decisions), "
        "3 rounds of expert iteration (150,000 + 100,000 + 100,000 labels) and a last step (25,000 labels), "
        "PPO to 3,000,000 steps"
    )
    plan = plan_run(config, resumed=False, steps=0, elapsed=lambda: 0.0)
    rounds = [f"round {k} of 4" for k in range(1, 5)]
    assert [stage.name for stage in plan.stages] == ["warm start", *rounds, "PPO"]
    evaluations = [Work("evaluation against expert", 400), Work("evaluation against search", 100)]
    assert plan.stages[2].work == [
        Work("labelling", 50_000), Work("labelling", 50_000), Work("fit", 16 * (250_000 - 12_500) * 6), *evaluations,
    ]  # fmt: skip
    # the last step: the student's own play labelled with its rollouts (timed apart), fitted on its own labels
    assert plan.stages[4].work == [
        Work("labelling with a network's rollouts", 25_000), Work("fit", 16 * (25_000 - 1_250) * 6), *evaluations,
    ]  # fmt: skip
    assert plan.stages[0].work == [Work("recording", 200_000), Work("imitation fit", 600_000)]


def stopped_in_round_2(config: TrainConfig) -> None:
    """A run folder stopped while round 2 labelled: the warm start's checkpoint, round 1 done and
    scored, 2,000 + 400 labels of round 2's first set on disk (a shard and a part)."""
    (config.run_dir / "checkpoints" / "step_0000000000").mkdir(parents=True)
    ei.student_path(config.run_dir, 1).parent.mkdir()
    ei.student_path(config.run_dir, 1).touch()
    rows = [(1, 9.0, 150_000, bot, 0.5, 0.4, 0.6) for bot in config.distil_eval]
    ei.curve.write_csv(config.run_dir / ei.ROUNDS_CSV, ei.COLUMNS, rows)
    folder, settings = ei.label_sets(config, 2)[0]
    label_set.write_meta(folder, settings)
    label_set.shard_path(folder, 0).touch()
    label_set.part_path(folder, 1, 0).touch()


def test_a_resumed_runs_plan_leaves_out_what_its_folder_holds(tmp_path: Path) -> None:
    config = default(tmp_path)
    stopped_in_round_2(config)
    plan = plan_run(config, resumed=True, steps=0, elapsed=lambda: 0.0)
    assert [stage.work for stage in plan.stages[:2]] == [[], []]
    assert [work.amount for work in plan.stages[2].work[:2]] == [50_000 - 2_400, 50_000]
    assert start_line(config, "runs/default/config.yaml", resumed=True).endswith(
        "PPO to 3,000,000 steps; going on from the warm start, round 1's student and round 2's 2,400 of 100,000 "
        "labels; no PPO checkpoint yet"
    )
    ppo = plan_run(config, resumed=True, steps=1_048_576, elapsed=lambda: 0.0)
    assert [stage.work for stage in ppo.stages] == [[], [], [], [], [], [Work("PPO", 3_000_000 - 1_048_576)]]


def test_what_a_stopped_run_kept_is_read_from_its_folder(tmp_path: Path) -> None:
    config = default(tmp_path)
    assert kept(config) == "nothing"
    (config.run_dir / "checkpoints" / "step_0000000000").mkdir(parents=True)
    assert kept(config) == "the warm start; no round finished yet, no PPO checkpoint yet"
    (config.run_dir / "checkpoints" / "step_0000000000").rmdir()
    stopped_in_round_2(config)
    assert kept(config) == (
        "the warm start, round 1's student and round 2's 2,400 of 100,000 labels; no PPO checkpoint yet"
    )
    for round_ in (2, 3):
        ei.student_path(config.run_dir, round_).touch()
    (config.run_dir / "checkpoints" / "step_0001048576").mkdir()
    assert kept(config) == "rounds 1-3's students and PPO checkpoint step_0001048576 (step 1,048,576)"


def test_a_calibrated_kind_is_estimated_until_measured_and_the_band_follows_the_bases(clock: Clock) -> None:
    """A kind no run has timed goes at its calibration's rate (train/run/calibration.py), the widest band; the line
    names the bases other than this run's own rates and weighs each basis' band by its share of the time."""
    stages = [Stage("round 1 of 1", [Work("labelling", 1000), Work("fit", 500)])]
    calibrated = {"labelling": 20.0, "fit": 100.0}
    plan = RunPlan(stages, lambda: clock.now - 1000, calibrated=calibrated, calibration_seconds=3.0)
    out = io.StringIO()
    progress = Progress(stream=out)
    progress.plan = plan
    with progress.phase("labelling", "labels", 1000, work="labelling"):
        assert lines(out)[-1].endswith("run: 0s elapsed, 55s left ±50% (labelling, fit from a 3s calibration)")
        clock.now += 10
        progress.advance(500)  # 50 labels/s: this run's rate takes over for labelling (10 s at ±20%, 5 s at ±50%)
        progress.show()
        assert lines(out)[-1].endswith("run: 10s elapsed, 15s left ±30% (fit from a 3s calibration)")
    progress.close()


def test_the_first_line_of_a_configs_first_run_estimates_the_whole_run(tmp_path: Path, capsys) -> None:
    """No rates.json yet: a calibration of a few seconds times every kind of work first, so the first progress line
    gives the whole run's time left and its basis; a later run of the config reads the rates its first run kept.
    The calibration leaves the run's draws alone: both runs end with the same weights."""
    from train.__main__ import main as train_main

    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "total_steps: 512\nn_envs: 8\nn_steps: 32\nn_epochs: 1\nnet_arch: [16, 16]\ncritic_arch: [16, 16]\n"
        "snapshot_every: 256\neval_every: 512\neval_boards: 2\nstart_eval_boards: 2\nfinal_gate_boards: 2\neval_opponents: [random]\ncheckpoint_every: 512\n"
        "imitation_steps: 256\nimitation_epochs: 1\ndistil_labels: [8]\nstep_labels: 0\nlabel_worlds: 2\nlabel_confirm: 0\n"
        "distil_epochs: 1\ndistil_suit_copies: 0\ndistil_eval: {random: 2}\nstudent_pull_steps: 512\nlabel_workers: 1\n"
    )

    def first_stage_line(run_name: str) -> str:
        assert train_main(["--config", str(tiny), "--output-dir", str(tmp_path), "--run-name", run_name]) == 0
        return next(line for line in capsys.readouterr().err.splitlines() if line.startswith("[train] [stage"))

    first = first_stage_line("first")
    assert first.startswith("[train] [stage 1/3: warm start] recording expert: 0/256 decisions (0%)")
    assert re.search(r"run: \d+s elapsed, \d+s left ±50% \(recording, imitation fit, labelling, fit, evaluation, PPO "
                     r"from a \d+s calibration\)$", first), first  # fmt: skip
    later = first_stage_line("later")
    assert re.search(r"left ±30% \(recording, imitation fit, labelling, fit, evaluation, PPO at earlier runs' rates\)$",
                     later), later  # fmt: skip
    first_weights, later_weights = (np.load(tmp_path / name / "final.npz") for name in ("first", "later"))
    assert first_weights.files == later_weights.files
    assert all(np.array_equal(first_weights[key], later_weights[key]) for key in first_weights.files)
