"""The fine-tuning recipe (train/ppo/fine_tune.py): the critic warms up alone, the anchor stays, the
critic has its own rate, and every run keeps its curve against the network it started from."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from agents.policy import load_weights, save_weights, weights_from_policy
from train.config import ConfigError, config_from_dict
from train.ppo.fine_tune import (
    GATE_FILE, WARMUP_MIN_GAIN, WARMUP_PATIENCE, CriticWarmup, keep_the_better,
)  # fmt: skip
from train.ppo.network import critic_parameters
from train.ppo.pull import Pull
from train.ppo.trainer import START_CURVE_FILE, make_vec_env, new_model
from train.run.pipeline import train

STUDENT = Path(__file__).parent.parent / "agents" / "pretrained" / "student_v3.npz"
BASE = {
    "run_name": "ft", "imitate": "", "distil_labels": [], "n_envs": 8, "n_steps": 32, "batch_size": 64,
    "n_epochs": 2, "net_arch": [16], "critic_arch": [16], "opponents": {"random": 1.0}, "eval_boards": 2,
    "eval_opponents": ["random"], "start_eval_boards": 4, "overlap_updates": False, "student_pull": 0.0,
}  # fmt: skip


def config(folder: Path, **changes):
    return config_from_dict({**BASE, "output_dir": str(folder), **changes})


@pytest.fixture(scope="module")
def start_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A network to start from: a new model's actor, written as a policy file."""
    folder = tmp_path_factory.mktemp("start")
    plain = config(folder)
    path = folder / "start.npz"
    save_weights(weights_from_policy(new_model(plain, make_vec_env(plain)).policy), path)
    return path


def actor_and_critic(model) -> tuple[list[np.ndarray], list[np.ndarray]]:
    critic = {id(p) for p in critic_parameters(model.policy)}
    params = list(model.policy.parameters())
    return (
        [p.detach().clone().numpy() for p in params if id(p) not in critic],
        [p.detach().clone().numpy() for p in params if id(p) in critic],
    )


def test_the_warmup_ends_once_the_explained_variance_stops_rising_or_at_its_cap() -> None:
    warmup = CriticWarmup(max_steps=10_000)
    for step, variance in ((100, -0.5), (200, 0.2), (300, 0.4), (400, 0.4 + WARMUP_MIN_GAIN / 2)):
        warmup.record(step, variance)
        assert warmup.active
    warmup.record(500, 0.3)  # the second rollout in a row without a gain
    assert WARMUP_PATIENCE == 2 and not warmup.active and warmup.best == 0.4
    capped = CriticWarmup(max_steps=250)
    capped.record(100, 0.1)
    capped.record(300, 0.5)
    assert not capped.active
    assert not CriticWarmup(max_steps=0).active


def test_the_warmups_state_goes_round_and_bad_state_is_refused() -> None:
    warmup = CriticWarmup(10_000)
    warmup.record(100, 0.25)
    again = CriticWarmup(10_000)
    again.set_state(warmup.state(), step=100)
    assert again.state() == warmup.state()
    for bad in ({"rows": [(500, 0.1)]}, {"stale": 7}, {"best": "x"}, {"active": 1}, {"rows": [(100, 2.0)]}):
        with pytest.raises(ValueError):
            CriticWarmup(10_000).set_state({**warmup.state(), **bad}, step=100)


def test_during_the_warmup_only_the_critic_learns(tmp_path: Path, start_file: Path) -> None:
    run = config(tmp_path, init_policy=str(start_file), critic_warmup_steps=10**6, learning_rate=0.01)
    model = new_model(run, make_vec_env(run))
    actor, critic = actor_and_critic(model)
    model.learn(total_timesteps=3 * run.n_envs * run.n_steps)
    actor_after, critic_after = actor_and_critic(model)
    assert all(np.array_equal(a, b) for a, b in zip(actor, actor_after))
    assert not all(np.array_equal(a, b) for a, b in zip(critic, critic_after))
    assert model.warmup.active and len(model.warmup.rows) == 3


def test_after_the_warmup_the_actor_learns(tmp_path: Path, start_file: Path) -> None:
    run = config(tmp_path, init_policy=str(start_file), critic_warmup_steps=1, learning_rate=0.01)
    model = new_model(run, make_vec_env(run))
    actor, _ = actor_and_critic(model)
    model.learn(total_timesteps=2 * run.n_envs * run.n_steps)  # the warm-up's one rollout, then PPO's
    assert not model.warmup.active
    assert not all(np.array_equal(a, b) for a, b in zip(actor, actor_and_critic(model)[0]))


def test_a_new_network_has_no_warmup(tmp_path: Path) -> None:
    run = config(tmp_path, critic_warmup_steps=10**6)
    assert new_model(run, make_vec_env(run)).warmup is None


def test_the_critic_has_its_own_rate(tmp_path: Path, start_file: Path) -> None:
    run = config(tmp_path, init_policy=str(start_file), learning_rate=0.0001, critic_learning_rate=0.002)
    model = new_model(run, make_vec_env(run))
    model.learn(total_timesteps=run.n_envs * run.n_steps)
    actor_group, critic_group = model.policy.optimizer.param_groups
    assert (actor_group["lr"], critic_group["lr"]) == (0.0001, 0.002)
    assert {id(p) for p in critic_group["params"]} == {id(p) for p in critic_parameters(model.policy)}
    one = new_model(config(tmp_path, critic_learning_rate=0.0), make_vec_env(run))
    assert len(one.policy.optimizer.param_groups) == 1  # as SB3 builds it (and as older checkpoints hold it)


def test_the_anchor_is_constant_unless_told_to_fade(start_file: Path) -> None:
    weights = load_weights(start_file)
    assert [Pull(weights, 0.5, steps=0, seed=0).weight(s) for s in (0, 10**9)] == [0.5, 0.5]
    assert Pull(weights, 0.5, steps=100, seed=0).weight(50) == 0.25


@pytest.mark.parametrize(
    "change, message",
    [
        ({"critic_warmup_steps": -1}, r"critic_warmup_steps must be an integer in \[0, 1,000,000,000,000\] \(0: none\)"),
        ({"critic_learning_rate": 2.0}, r"critic_learning_rate must be a finite number in \[0, 1\]"),
        ({"target_kl": float("nan")}, r"target_kl must be a finite number in \[0, 1e\+06\] \(0: off\), got nan"),
        ({"start_eval_boards": 10**6}, r"start_eval_boards must be an integer in \[0, 100,000\] \(0: none\)"),
        ({"normalize_advantage": "yes"}, "normalize_advantage"),
    ],
)
def test_bad_fine_tuning_options_are_config_errors(tmp_path: Path, change, message) -> None:
    with pytest.raises(ConfigError, match=message):
        config(tmp_path, **change)


def test_a_run_keeps_its_curve_against_its_start_and_resumes_with_its_warmup(tmp_path: Path, start_file: Path) -> None:
    rollout = BASE["n_envs"] * BASE["n_steps"]
    options = {"init_policy": str(start_file), "critic_warmup_steps": 10**6, "eval_every": rollout,
               "checkpoint_every": rollout, "total_steps": 2 * rollout}  # fmt: skip
    train(config(tmp_path, **options), progress=False)
    with open(tmp_path / "ft" / START_CURVE_FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["steps"]) for row in rows] == [0, rollout, 2 * rollout]
    assert float(rows[0]["score"]) == 0.5 and float(rows[0]["points_per_deal"]) == 0.0  # the start against itself
    assert all(float(row["low"]) <= float(row["score"]) <= float(row["high"]) for row in rows)
    warmup_rows = (tmp_path / "ft" / "warmup.csv").read_text().splitlines()
    assert warmup_rows[0] == "steps,explained_variance" and len(warmup_rows) == 3
    train(config(tmp_path, **{**options, "total_steps": 3 * rollout}), resume=True, progress=False, extend=True)
    assert len((tmp_path / "ft" / "warmup.csv").read_text().splitlines()) == 4  # the warm-up went on where it was


def test_the_gate_keeps_the_start_unless_the_trained_network_is_surely_better(tmp_path: Path) -> None:
    start = load_weights(STUDENT)
    weak = {**start, "w_out": -start["w_out"], "b_out": -start["b_out"]}  # its preferences reversed: far worse
    kept, measure = keep_the_better(weak, start, boards=40, rules={}, folder=tmp_path)
    assert measure["kept"] == "start" and kept is start and measure["points_per_deal"][0] < 0
    kept, measure = keep_the_better(start, weak, boards=40, rules={}, folder=tmp_path)
    assert measure["kept"] == "trained" and measure["points_per_deal"][1] > 0
    assert (tmp_path / GATE_FILE).exists()


def test_a_run_from_a_network_writes_the_gates_choice_as_final_npz(tmp_path: Path, start_file: Path) -> None:
    rollout = BASE["n_envs"] * BASE["n_steps"]
    run = config(tmp_path, init_policy=str(start_file), critic_warmup_steps=0, total_steps=rollout,
                 final_gate_boards=6, learning_rate=0.01)  # fmt: skip
    train(run, progress=False)
    gate = json.loads((run.run_dir / GATE_FILE).read_text())
    final, start = load_weights(run.run_dir / "final.npz"), load_weights(run.run_dir / "start.npz")
    assert gate["boards"] == 6 and gate["kept"] in ("start", "trained")
    same = all(np.array_equal(final[k], start[k]) for k in start)
    assert same == (gate["kept"] == "start")  # (PPO at this rate moved the actor: test_after_the_warmup_the_actor_learns)
