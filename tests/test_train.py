"""Training: the team view's rewards and masks, the config, and a quick run that trains, saves,
resumes exactly and reloads as a bot."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import agents  # noqa: E402
from agents.policy import load_weights, weights_from_policy  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402
from allfours_env.match import Decision, Match  # noqa: E402
from allfours_env.engine import Game  # noqa: E402
from allfours_env.rules import Rules  # noqa: E402
from train.__main__ import main as train_main  # noqa: E402
from train.config import CONFIG_DIR, ConfigError, TrainConfig, config_from_dict, load_config  # noqa: E402


def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['learning_rat'\]"):
        config_from_dict({"learning_rat": 0.1})
    with pytest.raises(ConfigError, match="n_steps must be of type int"):
        config_from_dict({"n_steps": "many"})
    with pytest.raises(ConfigError, match="net_arch item must be of type int"):
        config_from_dict({"net_arch": [64, "x"]})
    with pytest.raises(ConfigError, match="rules: unknown rule 'target'"):
        config_from_dict({"rules": {"target": 7}})
    with pytest.raises(ConfigError, match="opponents"):
        config_from_dict({"opponents": {"random": -1.0}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("n_envs: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no config file"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--config", str(bad)])
    assert exit_info.value.code == 2


def test_bad_yaml_is_one_line_naming_where_and_bad_flags_are_the_flags_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\n\tn_envs: 2\n")
    with pytest.raises(SystemExit):
        train_main(["--config", str(bad)])
    assert capsys.readouterr().err.strip().splitlines() == [
        f"python -m train: error: {bad} is not valid YAML: found character '\\t' that cannot start any token "
        "(line 2, column 1)"
    ]
    twice = tmp_path / "twice.yaml"
    twice.write_text("base: &b {seed: 1}\nseed: 1\nn_envs: 4\nseed: 2\n")  # PyYAML alone keeps the last seed
    with pytest.raises(SystemExit):
        train_main(["--config", str(twice)])
    assert "the key 'seed' is given twice (line 4, column 1)" in capsys.readouterr().err
    cases = [
        (["--config", "quick", "--total-steps", "0"], "argument --total-steps: must be in 1.."),  # (was quick.yaml's)
        (["--config", "quick", "--seed", "-1"], "argument --seed: must be in 0.."),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            train_main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err.strip().splitlines()[-1], err  # (argparse: usage first)


def test_shipped_configs_load():
    assert load_config(CONFIG_DIR / "default.yaml").run_name == "default"
    assert load_config(CONFIG_DIR / "scratch.yaml").imitate == ""
    assert load_config(CONFIG_DIR / "quick.yaml").total_steps <= 20_000


def test_a_shipped_config_is_found_by_name_and_a_missing_one_lists_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anywhere, as from an installed wheel
    assert load_config("quick") == load_config(CONFIG_DIR / "quick.yaml")
    with pytest.raises(ConfigError, match=r"no config file at .*quik\.yaml; the shipped configs, by name or path: "
                                          r"default, exploit, quick, rllib, scratch"):  # fmt: skip
        load_config("quik")
    (tmp_path / "quick").write_text("total_steps: 4096\n")  # a file of that name is that file
    assert load_config("quick").total_steps == 4096


def test_default_yaml_is_the_one_source_of_defaults_and_the_others_state_only_changes():
    import yaml

    defaults = yaml.safe_load((CONFIG_DIR / "default.yaml").read_text())
    assert set(defaults) == {f.name for f in dataclasses.fields(TrainConfig)}
    for name in ("scratch.yaml", "quick.yaml"):
        changes = yaml.safe_load((CONFIG_DIR / name).read_text())
        assert {k: v for k, v in changes.items() if defaults[k] == v} == {}, f"{name} restates a default"
    quick, default = load_config(CONFIG_DIR / "quick.yaml"), load_config(CONFIG_DIR / "default.yaml")
    for option in ("policy_input", "critic_sees_hands", "horizon", "overlap_updates", "reward"):  # the smoke run is the real one, smaller
        assert getattr(quick, option) == getattr(default, option), option
    assert bool(quick.critic_arch) == bool(default.critic_arch) and bool(quick.imitate) == bool(default.imitate)


STARTS: list[dict[str, np.ndarray]] = []


def stop_at_once(model, *args, **kwargs):
    STARTS.append(weights_from_policy(model.policy))  # the actor PPO begins with
    raise KeyboardInterrupt  # a Ctrl-C as learning begins


def assert_same_final(whole: Path, resumed: Path) -> None:
    a, b = np.load(whole / "final.npz"), np.load(resumed / "final.npz")
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key], err_msg=f"the run resumed in {resumed.name} differs in {key}")


@pytest.mark.parametrize("overlap", [False, True])
def test_quick_run_trains_saves_resumes_exactly_and_reloads(tmp_path, capsys, monkeypatch, overlap):
    """Also with updates overlapped with collection (train/ppo/overlap.py): a checkpoint holds the
    rollout collected ahead, so the resumed run still ends with the same weights."""
    quick = tmp_path / "quick.yaml"
    quick.write_text((CONFIG_DIR / "quick.yaml").read_text() + f"overlap_updates: {str(overlap).lower()}\n")
    common = ["--config", str(quick), "--output-dir", str(tmp_path), "--quiet"]
    assert train_main([*common, "--run-name", "whole"]) == 0
    whole = tmp_path / "whole"
    assert (whole / "final.zip").is_file() and (whole / "final.npz").is_file() and (whole / "config.yaml").is_file()
    assert list(whole.glob("tensorboard*/events.out.tfevents.*"))
    curve = (whole / "evaluations.csv").read_text().splitlines()
    assert curve[0] == "steps,minutes,bot,win_rate,low,high" and len(curve) >= 1 + 2 * 3  # start, middle, end
    assert (whole / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rounds = (whole / "rounds.csv").read_text().splitlines()  # two rounds of expert iteration and the last step, one bot
    assert rounds[0] == "round,minutes,labels,bot,win_rate,low,high,player" and [r[:2] for r in rounds[1:]] == ["1,", "2,", "3,"]
    assert (whole / "expert_iteration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Interrupted half-way (the run stops at half the steps), then resumed to the full length.
    assert train_main([*common, "--run-name", "split", "--total-steps", "8192"]) == 0
    assert train_main([*common, "--run-name", "split", "--resume", "--total-steps", "16384"]) == 0
    assert_same_final(whole, tmp_path / "split")
    if not overlap:  # the rest does not depend on how the updates are scheduled: with the default only
        return
    # Stopped right after the warm start (its checkpoint is step 0), then resumed from there.
    with monkeypatch.context() as patch:
        patch.setattr(MaskablePPO, "learn", stop_at_once)
        assert train_main([*common, "--run-name", "warm"]) == 130
    assert "kept the warm start and rounds 1-3's students; no PPO checkpoint yet. Resume with" in capsys.readouterr().err
    student = load_weights(tmp_path / "warm" / "students" / "round-3.npz")  # PPO starts from the last student
    assert all(np.array_equal(STARTS[-1][key], student[key]) for key in student)
    assert train_main([*common, "--run-name", "warm", "--resume"]) == 0
    # The resumed run's time counts the first leg's rounds too, not only the time to the warm start's checkpoint.
    def minutes(name: str) -> list[float]:
        return [float(row.split(",")[1]) for row in (tmp_path / "warm" / name).read_text().splitlines()[1:]]

    warm_rounds, warm_curve = minutes("rounds.csv"), minutes("evaluations.csv")
    assert min(warm_curve) >= max(warm_rounds) > 0, (warm_rounds, warm_curve)
    assert_same_final(whole, tmp_path / "warm")
    assert sorted(p.name for p in (tmp_path / "warm").glob("tensorboard_*")) == ["tensorboard_1"]
    # A run folder is not overwritten by accident.
    with pytest.raises(SystemExit):
        train_main([*common, "--run-name", "whole"])
    assert "already holds a run" in capsys.readouterr().err
    # Reloaded as bots, from the SB3 checkpoint and from the export, they agree and play legally.
    sb3_bot, numpy_bot = agents.make(str(whole / "final.zip")), agents.make(str(whole / "ppo.npz"))
    kept = json.loads((whole / "final_gate.json").read_text())["kept"]  # the gate: PPO's network or its start
    final = np.load(whole / "final.npz")
    assert all(np.array_equal(final[k], np.load(whole / ("ppo.npz" if kept == "trained" else "start.npz"))[k]) for k in final.files)

    def agree(decision: Decision) -> None:
        assert numpy_bot.act(decision.observation) == decision.action

    game = Game(Rules(), np.random.default_rng(0))
    Match(game, [sb3_bot] * 4, on_decision=agree).run()  # an illegal action would raise
    assert game.winner in (0, 1)


def test_resume_without_checkpoint_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--config", str(CONFIG_DIR / "quick.yaml"), "--output-dir", str(tmp_path), "--resume"])
    assert exit_info.value.code == 2
    assert "nothing to resume" in capsys.readouterr().err


def test_missing_or_corrupt_policy_files_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no policy file"):
        agents.make(str(tmp_path / "none.zip"))
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable MaskablePPO checkpoint"):
        agents.make(str(tmp_path / "bad.zip"))
    (tmp_path / "bad.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match="not a readable policy export"):
        agents.make(str(tmp_path / "bad.npz"))


def test_rule_options_are_merged_into_the_config(monkeypatch, tmp_path, capsys):
    seen = {}

    def fake_train(config, resume, progress, extend, source, address):
        seen["rules"] = config.rules
        return tmp_path / "final.zip"

    monkeypatch.setattr("train.run.pipeline.train_in_held_run", fake_train)
    quick = str(CONFIG_DIR / "quick.yaml")
    argv = ["--config", quick, "--output-dir", str(tmp_path), "--rule", "target_score=7",
            "--rule", "undertrump=forbidden_when_can_follow"]  # fmt: skip
    assert train_main(argv) == 0
    expected = {**load_config(quick).rules.changed(), "target_score": 7, "undertrump": "forbidden_when_can_follow"}
    assert seen["rules"] == Rules(**expected)
    for argv, message in (
        (["--rule", "colour=red"], "unknown rule 'colour'"),
        (["--rule", "target_score=0"], "'target_score' must be a positive integer"),
        (["--rule", "target_score=7", "--resume"], "--rule cannot change a resumed run"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            train_main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_the_rules_are_made_once_and_the_config_checked_once_from_the_command_line_to_the_kernel(
    monkeypatch, tmp_path
):
    """Parsed at the edge, trusted inside: from ``python -m train --rule target_score=7`` to the
    compiled kernel's parameters, one Rules is made (and travels as that value) and the config is
    checked once, however many layers hand them on."""
    from train.ppo.learner_env import make_learner_env

    made, checks, seen = [], [], {}
    rules_init, config_check = Rules.__post_init__, TrainConfig.check
    monkeypatch.setattr(Rules, "__post_init__", lambda self: (made.append(self), rules_init(self))[1])
    monkeypatch.setattr(TrainConfig, "check", lambda self: (checks.append(self), config_check(self))[1])

    def fake_train(config, resume, progress, extend, source, address):
        env = make_learner_env(config)
        seen["kernel"], seen["config"] = env.env.game.rules, config
        return tmp_path / "final.zip"

    monkeypatch.setattr("train.run.pipeline.train_in_held_run", fake_train)
    argv = ["--config", "quick", "--output-dir", str(tmp_path), "--rule", "target_score=7"]
    assert train_main(argv) == 0
    assert len(made) == 1 and made[0].target_score == 7
    assert seen["kernel"] is made[0] is seen["config"].rules
    assert checks == [seen["config"]]


def test_demonstrations_fill_preallocated_arrays_and_report_progress(capsys):
    """The warm start's recording: whole matches until imitation_steps, every row written (legal
    teacher actions, returns discounted within each match), progress reported as it goes."""
    import dataclasses

    from train import imitation
    from train.run_folder.progress import Progress

    config = dataclasses.replace(load_config(CONFIG_DIR / "quick.yaml"), imitation_steps=300, reward="points")
    calls = []
    data = imitation.record(config, seed=3, report=lambda done, total: calls.append((done, total)))
    n = len(data.actions)
    assert n >= 300 and data.observations.shape[0] == data.masks.shape[0] == data.returns.shape[0] == n
    assert np.isfinite(data.observations).all() and np.isfinite(data.returns).all()
    assert data.masks[np.arange(n), data.actions].all()  # every recorded action was legal
    assert calls[0] == (0, 300) and calls[-1] == (300, 300)  # a line as soon as the phase begins
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    again = imitation.record(config, seed=3)
    assert (again.observations == data.observations).all() and (again.returns == data.returns).all()
    progress = Progress(enabled=True)
    with progress.phase("recording", "decisions", 100):
        progress.advance(10)  # within 10 s of the last line: not printed
        progress.advance(100)
    progress.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0] == "[train] recording: 0/100 decisions (0%)  0s elapsed, starting"
    assert lines[1].startswith("[train] recording: 100/100 decisions (100%)  ") and lines[1].endswith("0s left")
