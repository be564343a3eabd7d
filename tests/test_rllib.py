"""The Ray RLlib backend: the MultiAgentEnv adapter's rewards and observations, the action masks,
the league's seat plan, one short training run that exports a playable policy, and bad input."""

from __future__ import annotations

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
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode  # noqa: E402

import agents  # noqa: E402
from agents.features import policy_input  # noqa: E402
from allfours_env.match import Match  # noqa: E402
from agents.policy import OBS_LAYOUT, PolicyBot, load_weights  # noqa: E402
from allfours_env.engine import AWARD_KINDS, Game  # noqa: E402
from allfours_env.observation import encode_with_mask  # noqa: E402
from train.__main__ import main as train_main  # noqa: E402
from train.config import ConfigError  # noqa: E402
from train.rllib.config import RLLIB_CONFIG, load_rllib_config  # noqa: E402
from train.rllib.env import MASK_KEY, OBS_KEY, AllFoursMultiAgentEnv  # noqa: E402
from train.rllib.export import weights_from_module_state  # noqa: E402
from train.rllib.league import MAIN, SeatPlan, league_ids  # noqa: E402
from train.rllib.module import ACTIVATION, module_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY_CONFIG = """\
run_name: tiny
total_steps: 1000
num_env_runners: 1
num_envs_per_env_runner: 2
train_batch_size: 500
minibatch_size: 250
num_epochs: 1
net_arch: [32]
league_size: 2
snapshot_every: 400
eval_every: 1000
eval_boards: 2
eval_opponents: [random]
checkpoint_every: 1000
rules: {target_score: 7}
"""


def award_balance(game: Game) -> int:
    """Team 0's points minus team 1's, from the engine's award log."""
    return sum(e.points if e.team == 0 else -e.points for e in game.events if e.kind in AWARD_KINDS)


def play(env: AllFoursMultiAgentEnv, seed: int, choose) -> tuple[MultiAgentEpisode, np.ndarray, int, int]:
    """One match recorded in RLlib's own MultiAgentEpisode; ``choose(seat, obs) -> action``.

    Returns the episode, the rewards summed per seat, the team that moved last, and how many
    awards went to a team in a step where the other team moved.
    """
    episode = MultiAgentEpisode(observation_space=env.observation_spaces, action_space=env.action_spaces)
    obs, infos = env.reset(seed=seed)
    episode.add_env_reset(observations=obs, infos=infos)
    totals = np.zeros(4)
    off_turn = 0
    while True:
        assert len(obs) == 1, "only the seat to act gets an observation"
        (seat, seen), = obs.items()
        game = env.match.game
        assert seat == game.current
        observation, mask = encode_with_mask(game, seat)
        np.testing.assert_array_equal(seen[OBS_KEY], policy_input(observation, mask))
        np.testing.assert_array_equal(seen[MASK_KEY], mask.astype(np.float32))
        assert env.observation_spaces[seat].contains(seen)
        action = {seat: choose(seat, seen)}
        logged = len(game.events)
        obs, rewards, terminateds, truncateds, infos = env.step(action)
        episode.add_env_step(obs, action, rewards, infos=infos, terminateds=terminateds, truncateds=truncateds)
        for s, r in rewards.items():
            totals[s] += r
        off_turn += sum(1 for e in game.events[logged:] if e.kind in AWARD_KINDS and e.team != seat % 2)
        if terminateds["__all__"]:
            return episode, totals, seat % 2, off_turn


def random_chooser(seed: int):
    rng = np.random.default_rng(seed)
    return lambda seat, seen: int(rng.choice(np.flatnonzero(seen[MASK_KEY])))


@pytest.mark.parametrize("target", [14, 7])
def test_points_rewards_per_team_equal_the_award_log_in_rllibs_episode(target):
    env = AllFoursMultiAgentEnv({"rules": {"target_score": target}, "reward": "points"})
    last_movers, off_turn_awards = set(), 0
    for seed in range(40):
        episode, totals, last, off_turn = play(env, seed, random_chooser(seed))
        game = env.match.game
        balance = award_balance(game) / target
        assert game.is_over and max(game.scores) >= target
        np.testing.assert_allclose(totals, [balance, -balance, balance, -balance], atol=1e-9)
        returns = [episode.agent_episodes[s].get_return() for s in range(4)]  # what RLlib learns from
        np.testing.assert_allclose(returns, totals, atol=1e-9)
        last_movers.add(last)
        off_turn_awards += off_turn
    assert last_movers == {0, 1}  # the final award reaches both teams whichever moved last
    assert off_turn_awards > 100  # awards made on the other team's turns are covered


def test_match_reward_is_plus_minus_one_for_every_seat():
    env = AllFoursMultiAgentEnv({"reward": "match", "rules": {"target_score": 7}})
    for seed in range(20):
        episode, totals, _, _ = play(env, seed, random_chooser(seed))
        winner = env.match.game.winner
        expected = [1.0 if s % 2 == winner else -1.0 for s in range(4)]
        np.testing.assert_array_equal(totals, expected)
        np.testing.assert_array_equal([episode.agent_episodes[s].get_return() for s in range(4)], expected)


def test_rule_variants_episodes_and_reset_options_pass_through():
    env = AllFoursMultiAgentEnv({"rules": {"target_score": 5, "kick_points": "tobago"}, "episode": "deal"})
    assert env.match is None and env.rules.target_score == 5 and env.rules.kick_points == "tobago"
    deck = list(range(52))
    env.reset(seed=3, options={"decks": [deck], "dealer": 0, "scores": [2, 1]})
    assert env.match.game.dealer == 0 and env.match.game.episode == "deal"
    play(env, 3, random_chooser(3))
    assert env.match.game.deal_number == 1  # a deal episode ends after one deal
    before, rng_state = env.match, env.rng.bit_generator.state
    with pytest.raises(ValueError, match="dealer"):
        env.reset(seed=4, options={"dealer": 9})  # refused before anything changes
    assert env.match is before and env.rng.bit_generator.state == rng_state
    with pytest.raises(ValueError, match="reward must be one of"):
        AllFoursMultiAgentEnv({"reward": "win"})
    with pytest.raises(ValueError, match="unknown env_config"):
        AllFoursMultiAgentEnv({"rule": {}})
    with pytest.raises(ValueError, match="target_score"):
        AllFoursMultiAgentEnv({"rules": {"target_score": 0}})


def build_module(env: AllFoursMultiAgentEnv, net_arch=(32,)):
    spec = module_spec(list(net_arch))
    spec.observation_space, spec.action_space = env.observation_spaces[0], env.action_spaces[0]
    return spec.build()


def batch_of(seen: dict) -> dict:
    return {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in seen.items()}}


def test_masked_module_never_gives_an_illegal_action_probability():
    env = AllFoursMultiAgentEnv({"rules": {"target_score": 7}})
    module = build_module(env)
    generator = torch.Generator().manual_seed(0)
    decisions = 0

    def sample(seat, seen):
        nonlocal decisions
        decisions += 1
        legal = seen[MASK_KEY] > 0
        with torch.no_grad():
            for forward in (module.forward_exploration, module.forward_inference):
                probs = torch.softmax(forward(batch_of(seen))[Columns.ACTION_DIST_INPUTS][0], -1).numpy()
                assert (probs[~legal] == 0).all() and probs[legal].sum() == pytest.approx(1.0, abs=1e-5)
            train_batch = batch_of(seen)
            module.compute_values(train_batch)  # what PPO's learner runs first; it sets the batch's mask
            logits = module.forward_train(train_batch)[Columns.ACTION_DIST_INPUTS][0]
            assert (torch.softmax(logits, -1).numpy()[~legal] == 0).all()
            probs = torch.softmax(module.forward_exploration(batch_of(seen))[Columns.ACTION_DIST_INPUTS], -1)
        return int(torch.multinomial(probs[0], 1, generator=generator))  # the env raises on an illegal one

    for seed in range(30):
        play(env, seed, sample)
    assert decisions > 2000


def test_export_computes_the_modules_logits():
    env = AllFoursMultiAgentEnv()
    module = build_module(env, (32, 16))
    state = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    weights = weights_from_module_state(state, ACTIVATION)
    assert int(weights["obs_layout"]) == OBS_LAYOUT
    bot = PolicyBot(weights)
    obs, _ = env.reset(seed=0)
    (_, seen), = obs.items()
    unmasked = {OBS_KEY: seen[OBS_KEY], MASK_KEY: np.ones_like(seen[MASK_KEY])}
    with torch.no_grad():
        expected = module.forward_inference(batch_of(unmasked))[Columns.ACTION_DIST_INPUTS][0].numpy()
    np.testing.assert_allclose(bot.logits(seen[OBS_KEY]), expected, rtol=1e-4, atol=1e-5)


def test_seat_plan_shares_modules_per_team_and_swaps_seats():
    plan = SeatPlan(seed=0, self_play=0.5, league_size=3)

    class Episode:
        def __init__(self, i):
            self.id_ = f"episode-{i}"

    main_teams, opponents = set(), set()
    for i in range(200):
        episode = Episode(i)
        modules = [plan(seat, episode) for seat in range(4)]
        assert modules[0] == modules[2] and modules[1] == modules[3]
        assert MAIN in modules
        main_teams.add(modules.index(MAIN) % 2)
        opponents.add(modules[1] if modules[0] == MAIN else modules[0])
        assert [plan(seat, episode) for seat in range(4)] == modules  # one plan per match
    assert main_teams == {0, 1}
    assert opponents == {MAIN, *league_ids(3)}
    again = SeatPlan(seed=0, self_play=0.5, league_size=3)
    assert [again(0, Episode(i)) for i in range(50)] == [plan(0, Episode(i)) for i in range(50)]


def test_config_errors_name_the_key(tmp_path):
    assert load_rllib_config(RLLIB_CONFIG).run_name == "rllib"
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_env_runner: 2\n")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['num_env_runner'\]"):
        load_rllib_config(bad)
    with pytest.raises(ConfigError, match="self_play is a probability"):
        load_rllib_config(RLLIB_CONFIG, self_play=2.0)


def test_a_short_run_resumes_and_exports_a_policy_that_plays_legal_moves(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ALLFOURS_KEY_FILE", str(tmp_path / "checkpoint.key"))  # this test's own account key
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    code = train_main(["--backend", "rllib", "--config", str(config), "--output-dir", str(tmp_path)])
    assert code == 0
    err = capsys.readouterr().err
    # RLlib may sample a few steps more than asked
    assert re.search(r"\[train\] 1,0\d\d/1,000 steps \(100%\)  [\d,]+ steps/s  vs random", err), err
    run = tmp_path / "tiny"
    final = run / "final.npz"
    assert int(load_weights(final)["obs_layout"]) == OBS_LAYOUT
    assert (run / "checkpoints" / "latest").is_file()
    assert any((run / "tensorboard").iterdir())
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
