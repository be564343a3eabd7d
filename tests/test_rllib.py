"""The Ray RLlib backend: RLlib's env runner sampling the vector env in its own episodes (rewards,
masks), the league, the masked module and its export, one short training run that resumes and
exports a playable policy, and bad input."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import torch  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

import agents  # noqa: E402
from agents.policy import PolicyBot, input_size, load_weights  # noqa: E402
from allfours_env.engine import Game  # noqa: E402
from allfours_env.gym_vector import AllFoursVectorEnv  # noqa: E402
from allfours_env.match import Match  # noqa: E402
from train.__main__ import main as train_main  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.ppo.league import League  # noqa: E402
from train.rllib.config import RLLIB_CONFIG, RLlibConfig, load_rllib_config  # noqa: E402
from train.rllib.env import LAYOUT, MASK_KEY, OBS_KEY, league_of, make_vector_env  # noqa: E402
from train.rllib.export import weights_from_module_state  # noqa: E402
from train.rllib.module import ACTIVATION, module_spec  # noqa: E402
from train.rllib.run import ENV_NAME, algorithm_config, export_main, start_from_policy  # noqa: E402
from train.run_folder.run_time import read_minutes  # noqa: E402
from train.run_folder.state_file import read_state, write_state  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PRETRAINED = ROOT / "agents" / "pretrained" / "allfours_v1.npz"
TINY_CONFIG = """\
run_name: tiny
total_steps: 1000
n_env_runners: 1
n_envs_per_runner: 2
rollout_steps: 500
batch_size: 250
n_epochs: 1
net_arch: [32]
init_policy: ""
max_snapshots: 2
snapshot_every: 400
eval_every: 1000
eval_boards: 2
eval_opponents: [random]
checkpoint_every: 1000
rules: {target_score: 7}
"""


def tiny_config(tmp_path: Path, **changes) -> RLlibConfig:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_CONFIG)
    return load_rllib_config(path, output_dir=str(tmp_path), **changes)


def runner_of(config: RLlibConfig) -> SingleAgentEnvRunner:
    """RLlib's own env runner, as the trainer's config builds it, with the league's weights set."""
    register_env(ENV_NAME, make_vector_env)
    runner = SingleAgentEnvRunner(config=algorithm_config(config))
    weights = module_weights(runner.module)
    league_of(runner.env).update(weights, snapshot=True)
    return runner


def module_weights(module) -> dict:
    return weights_from_module_state({k: v.detach().numpy() for k, v in module.state_dict().items()}, ACTIVATION, LAYOUT)


@pytest.mark.parametrize("reward", ["points", "match"])
def test_rllib_samples_the_vector_env_in_its_own_episodes(tmp_path, reward):
    config = tiny_config(tmp_path, reward=reward, n_env_runners=0, n_envs_per_runner=4)
    runner = runner_of(config)
    assert isinstance(runner.env.unwrapped, AllFoursVectorEnv) and runner.env.num_envs == 4
    episodes = runner.sample(num_episodes=12, random_actions=False)
    done = [e for e in episodes if e.is_terminated]
    assert len(done) >= 12
    for episode in done:
        observations, actions = episode.get_observations(), episode.get_actions()
        for i, action in enumerate(actions):  # every action RLlib took was legal where it was taken
            assert observations[OBS_KEY][i].shape == (input_size(LAYOUT),)
            assert observations[MASK_KEY][i][action] == 1.0
        assert MASK_KEY not in episode.get_infos(0)  # in the observation only: RLlib copies every info
        final = episode.get_infos(-1)
        scores, team = final["scores"], final["team"]
        if reward == "points":  # every award reached the learner once, scaled by the target
            assert episode.get_return() == pytest.approx((scores[team] - scores[1 - team]) / 7)
        else:
            assert episode.get_return() == (1.0 if scores[team] > scores[1 - team] else -1.0)
        assert not observations[MASK_KEY][-1].any()  # the end: nothing legal


def test_the_league_draws_from_the_tables_generators_and_keeps_its_snapshots(tmp_path):
    league = League({"self": 0.5, "snapshot": 0.5}, max_snapshots=3, seed=0)
    with pytest.raises(RuntimeError, match="no weights yet"):
        league.current.act_batch(np.zeros((1, 10), np.float32), np.ones((1, 56), bool))
    weights = load_weights(PRETRAINED)
    for _ in range(4):
        league.update(weights, snapshot=True)
    drawn = [league(np.random.default_rng(i)) for i in range(200)]
    assert {id(o) for o in drawn} == {id(league.current), *(id(s) for s in league.snapshots)}
    assert [id(league(np.random.default_rng(i))) for i in range(200)] == [id(o) for o in drawn]
    write_state(tmp_path, league.get_state())  # as a checkpoint keeps it
    again = League({"self": 0.5, "snapshot": 0.5}, max_snapshots=3, seed=1)
    again.set_state(read_state(tmp_path, 2**20, 2**26), weights)
    assert again.taken == 4
    for a, b in zip(league.snapshots, again.snapshots, strict=True):
        assert a.weights.keys() == b.weights.keys() and all(np.array_equal(a.weights[k], b.weights[k]) for k in a.weights)
    env = agents.vector_env(3, "random", dict_observation=True)
    seen, info = env.reset(seed=0)
    actions = again.snapshots[0].act_batch(seen["observation"], info["action_mask"] > 0)
    assert all(info["action_mask"][t, a] for t, a in enumerate(actions))


def build_module(env, net_arch=(32,)):
    """The masked PPO module, whole (learner side: actor and critic), for the env's spaces."""
    spec = module_spec(list(net_arch))
    spec.observation_space, spec.action_space = env.single_observation_space, env.single_action_space
    return spec.build()


def test_masked_module_never_gives_an_illegal_action_probability():
    env = make_vector_env({"num_envs": 8, "rules": {"target_score": 7}})
    module = build_module(env)
    league_of(env).update(module_weights(module), snapshot=True)
    seen, _ = env.reset(seed=0)
    generator = torch.Generator().manual_seed(0)
    ended = 0
    for _ in range(150):
        legal = seen[MASK_KEY] > 0
        ended += int((~legal.any(axis=1)).sum())  # a match's last observation: its action is ignored
        legal[~legal.any(axis=1)] = True
        with torch.no_grad():
            for forward in (module.forward_exploration, module.forward_inference):  # each takes the mask out
                batch = {Columns.OBS: {k: torch.as_tensor(v) for k, v in seen.items()}}
                probs = torch.softmax(forward(batch)[Columns.ACTION_DIST_INPUTS], -1).numpy()
                assert (probs[~legal] == 0).all()
            train_batch = {Columns.OBS: {k: torch.as_tensor(v) for k, v in seen.items()}}
            module.compute_values(train_batch)  # what PPO's learner runs first; it sets the batch's mask
            logits = module.forward_train(train_batch)[Columns.ACTION_DIST_INPUTS]
            assert (torch.softmax(logits, -1).numpy()[~legal] == 0).all()
        actions = torch.multinomial(torch.as_tensor(probs), 1, generator=generator)
        seen, *_ = env.step(actions[:, 0].numpy())  # the env raises on an illegal action
    assert ended > 0


def test_export_computes_the_modules_logits():
    env = make_vector_env({"num_envs": 2})
    module = build_module(env, (32, 16))
    weights = module_weights(module)
    assert int(weights["obs_layout"]) == LAYOUT
    bot = PolicyBot(weights)
    league_of(env).update(weights, snapshot=True)
    seen, _ = env.reset(seed=0)
    unmasked = {OBS_KEY: torch.as_tensor(seen[OBS_KEY]), MASK_KEY: torch.ones(2, 56)}
    with torch.no_grad():
        expected = module.forward_inference({Columns.OBS: unmasked})[Columns.ACTION_DIST_INPUTS].numpy()
    np.testing.assert_allclose(bot.logits(seen[OBS_KEY]), expected, rtol=1e-4, atol=1e-5)


def test_a_run_can_start_from_a_policy_file(tmp_path):
    student = ROOT / "agents" / "pretrained" / "student_v1.npz"
    config = tiny_config(tmp_path, net_arch=[256, 256], init_policy=str(student), n_env_runners=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        algo = algorithm_config(config).build_algo()
        start_from_policy(algo, load_weights(config.init_policy))
        exported, expected = export_main(algo), load_weights(student)
        assert exported.keys() == expected.keys()
        for key in expected:
            np.testing.assert_array_equal(exported[key], expected[key])
        name = "encoder.actor_encoder.net.mlp.0.weight"  # what the env runner samples with
        (sampled,) = algo.env_runner_group.foreach_env_runner(
            lambda r: r.module.state_dict()[name].numpy(), local_env_runner=False
        )
        np.testing.assert_array_equal(sampled, expected["w0"].T)
        algo.stop()
    finally:
        ray.shutdown()
    fits = r"has input layout 3, layers \[256, 256\] and relu; the actor takes .*net_arch \[32\]"
    with pytest.raises(ConfigError, match=fits):
        tiny_config(tmp_path, init_policy=str(student))  # net_arch [32]
    with pytest.raises(ConfigError, match="init_policy"):
        tiny_config(tmp_path, init_policy=str(tmp_path / "missing.npz"))


def test_env_config_errors():
    with pytest.raises(ValueError, match="reward must be one of"):
        make_vector_env({"reward": "win"})
    with pytest.raises(ValueError, match="unknown env_config"):
        make_vector_env({"rule": {}})
    with pytest.raises(ValueError, match="target_score"):
        make_vector_env({"rules": {"target_score": 0}})


def test_config_errors_name_the_key(tmp_path):
    assert load_rllib_config(RLLIB_CONFIG).run_name == "rllib"
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_env_runner: 2\n")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['num_env_runner'\]"):
        load_rllib_config(bad)
    with pytest.raises(ConfigError, match=r"opponents needs weights with a positive sum"):
        load_rllib_config(RLLIB_CONFIG, opponents={"self": 0.0})


def test_a_short_run_resumes_and_exports_a_policy_that_plays_legal_moves(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ALLFOURS_KEY_FILE", str(tmp_path / "checkpoint.key"))  # this test's own account key
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    start = time.monotonic()
    code = train_main(["--backend", "rllib", "--config", str(config), "--output-dir", str(tmp_path)])
    leg_minutes = (time.monotonic() - start) / 60
    assert code == 0
    err = capsys.readouterr().err
    # RLlib may sample a few steps more than asked
    line = r"\[train\] 1,0\d\d/1,000 steps \(100%\)  [\d,]+ steps/s  \S+ elapsed, 0s left  vs random"
    assert re.search(line, err), err
    run = tmp_path / "tiny"
    final = run / "final.npz"
    assert int(load_weights(final)["obs_layout"]) == LAYOUT
    assert (run / "checkpoints" / "latest").is_file()
    assert any((run / "tensorboard").iterdir())
    first_leg = read_minutes(run)  # the run's time, for a resumed run's elapsed (train/run_folder/run_time.py)
    assert first_leg is not None and 0 < first_leg <= leg_minutes
    resume = ["--backend", "rllib", "--run-name", "tiny", "--output-dir", str(tmp_path), "--resume"]
    with pytest.raises(SystemExit):
        train_main([*resume, "--seed", "5"])  # a resumed run keeps its own config
    assert "differs in seed" in capsys.readouterr().err
    # A checkpoint changed after it was written (RLlib's files pickle) is never loaded.
    copy = tmp_path / "copy"
    shutil.copytree(run, copy / "tiny")
    for folder in (copy / "tiny" / "checkpoints").glob("step_*"):
        victim = next(p for p in sorted(folder.rglob("*.pkl")))
        victim.write_bytes(victim.read_bytes() + b"tampered")
    with pytest.raises(SystemExit):
        train_main(["--backend", "rllib", "--run-name", "tiny", "--output-dir", str(copy), "--resume",
                    "--total-steps", "1500"])  # fmt: skip
    err = capsys.readouterr().err
    assert "was changed after it was sealed: RLlib checkpoints pickle" in err and "no intact checkpoint" in err, err
    assert train_main([*resume, "--total-steps", "1500"]) == 0  # extends the finished run
    err = capsys.readouterr().err
    assert re.search(r"from checkpoint step_00000010\d\d at step 1,0\d\d of 1,500", err), err
    assert re.search(r"\[train\] 1,5\d\d/1,500 steps", err), err
    assert (run / "checkpoints" / "latest").read_text().startswith("step_00000015")
    assert read_minutes(run) > first_leg  # both legs
    bots = [agents.make(str(final)), agents.make("random"), agents.make(str(final)), agents.make("random")]
    for seed in range(5):
        for bot in bots:
            bot.reset(seed)
        match = Match(Game(rng=np.random.default_rng(seed)), bots)
        match.run()  # an illegal move would raise ValueError
        assert match.over


def test_missing_ray_is_one_line_naming_the_extra():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from train.__main__ import main\n"
        "sys.exit(main(['--backend', 'rllib']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install -e '.[rllib]'" in lines[0], done.stderr


def test_unreachable_address_fails_fast_and_writes_nothing(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    start = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--backend", "rllib", "--config", str(config), "--output-dir", str(tmp_path / "runs"),
                    "--address", "127.0.0.1:9"])  # fmt: skip
    assert exit_info.value.code == 2
    assert time.monotonic() - start < 20
    assert "no Ray cluster reachable at 127.0.0.1:9" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    with pytest.raises(SystemExit):
        train_main(["--backend", "rllib", "--config", str(config), "--address", "not-an-address"])
    assert "--address must be HOST:PORT" in capsys.readouterr().err


@pytest.mark.parametrize("stop, code, name", [("SIGTERM", 143, "terminated (SIGTERM)"), ("SIGINT", 130, "interrupted")])
def test_a_stopped_run_is_one_line_with_the_signals_code_and_resumes(tmp_path, stop, code, name):
    """SIGTERM (what a cluster's scheduler sends) and Ctrl-C (to the whole process group, as a
    terminal sends it) end a run with one line naming the stop and the checkpoint to resume from;
    Ray's own handler would report SIGTERM as a crash and exit with 1."""
    import signal

    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG.replace("total_steps: 1000", "total_steps: 10000000"))
    command = [sys.executable, "-m", "train", "--backend", "rllib", "--config", str(config), "--output-dir",
               str(tmp_path)]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # fmt: skip
    latest = tmp_path / "tiny" / "checkpoints" / "latest"
    deadline = time.monotonic() + 120
    while not latest.is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert latest.is_file(), process.stderr.read() if process.poll() is not None else "no checkpoint in 120 s"
    os.killpg(process.pid, getattr(signal, stop))
    err = process.communicate(timeout=120)[1]
    assert process.returncode == code and "Traceback" not in err and "received" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"[train] {name} at step "), err
    resume = f"python -m train --backend rllib --run-name tiny --output-dir {tmp_path} --resume"
    assert last.endswith(f"Resume with: {resume}"), err
    if stop == "SIGTERM":
        step = int(latest.read_text().split("_")[1])
        resumed = subprocess.run([sys.executable, *resume.split()[1:], "--total-steps", str(step + 500), "--quiet"],
                                 cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
