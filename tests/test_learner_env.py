"""The env training learns on (train/ppo/learner_env.py over the Gymnasium vector env) and the league (train/ppo/league.py).

- Rewards are exact: at every table and every learner step, the reward times the target score is
  the change of the learner's team's score lead since its previous step (awards during the
  opponents' turns, the first kick and the last award of a match included), and a finished match
  pays its final lead; with ``reward="match"``, +1 / -1 to the winner.
- The league's networks act as PolicyBot with the same weights and draws; the batched expert
  (one call for all its tables) as ExpertBot table by table.
- The critic's extra input is the other seats' hands, in the order the docs give.
- The env's state round-trips: a copy continues exactly as the original; a state that does not
  fit is refused and changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import agents
from agents.expert import ExpertBot
from agents.policy import ADVISED_LAYOUT, COMPACT_LAYOUT, PolicyBot, batch_inputs, input_size
from allfours_env.rewards import points_scale
from allfours_env.vector import OTHER_HANDS_SIZE, VectorGame
from train.config import SNAPSHOT
from train.ppo.league import League
from train.ppo.learner_env import LearnerVecEnv


def random_weights(seed: int, hidden: int = 32) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = [input_size(COMPACT_LAYOUT), hidden, 56]
    weights = {"activation": np.array("relu"), "obs_layout": np.array(COMPACT_LAYOUT)}
    for i, name in enumerate(["0", "_out"]):
        weights[f"w{name}"] = rng.normal(0, 0.3, size=(sizes[i], sizes[i + 1])).astype(np.float32)
        weights[f"b{name}"] = rng.normal(0, 0.1, size=sizes[i + 1]).astype(np.float32)
    return weights


def make_env(
    opponents: dict[str, float], reward: str = "points", n: int = 48, seed: int = 0, horizon: str = "match",
    critic_sees_hands: bool = False, **rules,
) -> LearnerVecEnv:
    league = League(opponents, max_snapshots=2, seed=seed)
    league.update(random_weights(1), snapshot=True)
    league.update(random_weights(2), snapshot=True)
    league.update(random_weights(3), snapshot=True)  # the first snapshot is replaced
    scale = points_scale(reward, rules.get("target_score", 14))
    env = agents.vector_env(
        n, league, layout=ADVISED_LAYOUT, reward=reward, reward_scale=scale, autoreset_mode="SameStep",
        critic_sees_hands=critic_sees_hands, **rules,
    )
    return LearnerVecEnv(env, horizon, seed)


@pytest.mark.parametrize("reward, target, scale", [("points", 7, 1 / 7), ("points", 14, 1 / 14), ("equity", 7, 1.0)])
def test_the_env_scales_its_rewards_to_the_match_from_its_own_rules(reward, target, scale):
    env = agents.vector_env(2, "random", reward=reward, reward_scale="target", target_score=target)
    assert env.reward_scale == scale == points_scale(reward, target)
    with pytest.raises(ValueError, match="reward_scale must be a number above 0 .* or 'target'"):
        agents.vector_env(2, "random", reward=reward, reward_scale="targets")


def random_actions(env: LearnerVecEnv, rng: np.random.Generator) -> np.ndarray:
    masks = env.action_masks()
    assert masks.any(axis=1).all(), "every table waits for a learner seat"
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def lead(env: LearnerVecEnv) -> np.ndarray:
    scores = env.game.scores
    return np.where(env.env.team == 0, scores[:, 0] - scores[:, 1], scores[:, 1] - scores[:, 0])


@pytest.mark.parametrize("target", [14, 7])
def test_points_rewards_are_the_score_lead_gained_between_learner_steps(target):
    env = make_env({"self": 1, "snapshot": 1, "random": 1, "rule_based": 1}, target_score=target)
    env.reset()
    rng = np.random.default_rng(0)
    seen_lead = np.zeros(env.num_envs)  # every match starts at 0-0; its first kick is paid in its first step
    assert (env.env.team % 2 == env.game.current % 2).all()
    finished = 0
    for _ in range(400):
        _, reward, dones, infos = env.step(random_actions(env, rng))
        now = lead(env)
        for t in range(env.num_envs):
            if dones[t]:
                info = infos[t]
                final = info["scores"][info["team"]] - info["scores"][1 - info["team"]]
                assert reward[t] * target == pytest.approx(final - seen_lead[t], abs=1e-4)
                assert max(info["scores"]) >= target and info["deals"] >= 1
                assert info["terminal_observation"].shape == env.observation_space.shape
                finished += 1
            else:
                assert reward[t] * target == pytest.approx(now[t] - seen_lead[t], abs=1e-4)
        seen_lead = np.where(dones, 0, now)
        pending = env.env.pending * target
        assert np.allclose(pending[~dones], 0) and np.allclose(pending[dones], now[dones])
    assert finished > 20


def test_deal_horizon_ends_an_episode_at_every_new_deal_with_the_same_rewards():
    env = make_env({"random": 1, "rule_based": 1}, horizon="deal", target_score=7)
    twin = make_env({"random": 1, "rule_based": 1}, target_score=7)
    env.reset(), twin.reset()
    rng = np.random.default_rng(2)
    ends = {"deal": 0, "match": 0}
    for _ in range(300):
        before = env.game.deal_number
        actions = random_actions(env, rng)
        _, reward, dones, infos = env.step(actions)
        _, twin_reward, twin_dones, _ = twin.step(actions)
        np.testing.assert_array_equal(reward, twin_reward)  # the same play, the same pay
        match_over = np.array(["scores" in info for info in infos])
        np.testing.assert_array_equal(match_over, twin_dones)
        np.testing.assert_array_equal(dones, match_over | (env.game.deal_number != before))
        ends["deal"] += int((dones & ~match_over).sum())
        ends["match"] += int(match_over.sum())
    assert ends["deal"] > 100 and ends["match"] > 10


def test_match_reward_pays_the_winner_whoever_moved_last():
    env = make_env({"random": 1, "self": 1}, reward="match", target_score=7)
    env.reset()
    rng = np.random.default_rng(1)
    outcomes = set()
    for _ in range(300):
        _, reward, dones, infos = env.step(random_actions(env, rng))
        assert (reward[~dones] == 0).all()
        for t in np.flatnonzero(dones):
            info = infos[t]
            winner = int(np.argmax(info["scores"]))
            assert reward[t] == (1.0 if winner == info["team"] else -1.0)
            assert info["scores"][winner] >= 7
            outcomes.add(float(reward[t]))
    assert outcomes == {1.0, -1.0}


def test_league_networks_act_as_policy_bots_with_the_same_draws():
    weights = random_weights(7)
    league = League({"self": 1}, max_snapshots=1, seed=3)
    league.update(weights)
    network = league(np.random.default_rng(0))
    game = VectorGame(256)
    game.reset(seed=3)
    rng = np.random.default_rng(3)
    bot = PolicyBot(weights, deterministic=False)
    compared = 0
    for _ in range(30):
        observations, masks = game.observe(), game.legal_mask()
        live = masks.any(axis=1)
        uniforms = np.random.default_rng().__class__(np.random.PCG64())  # the league's next draws, read ahead:
        uniforms.bit_generator.state = league.rng.bit_generator.state
        draws = uniforms.random(int(live.sum()))
        batched = network.act_batch(observations[live], masks[live])
        for row, t in enumerate(np.flatnonzero(live)):
            bot._rng = FixedDraw(draws[row])
            assert bot.act({"observation": observations[t], "action_mask": masks[t].astype(np.int8)}) == batched[row]
            compared += 1
        game.step(game.sample_legal(rng))
        game.restart(game.is_over)
    assert compared > 5000


class FixedDraw:
    """Stands in for a bot's generator: ``random()`` gives one fixed draw."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def test_snapshots_take_the_place_of_the_oldest_and_are_drawn_uniformly():
    league = League({SNAPSHOT: 1}, max_snapshots=2, seed=0)
    league.update(random_weights(9))
    assert {league(np.random.default_rng(s)).key for s in range(10)} == {"self"}  # before the first snapshot
    for seed in range(4):
        league.update(random_weights(seed), snapshot=True)
    assert league.taken == 4
    assert [bot.weights["w0"][0, 0] for bot in league.snapshots] == [random_weights(s)["w0"][0, 0] for s in (2, 3)]
    assert {league(np.random.default_rng(s)).key for s in range(40)} == {"snapshot:0", "snapshot:1"}
    assert league.bot("snapshot:1") is league.snapshots[1]
    with pytest.raises(ValueError, match="the league plays no opponent 'snapshot:2'"):
        league.bot("snapshot:2")


def test_a_restored_state_continues_exactly():
    env = make_env({"self": 1, "snapshot": 1, "expert": 1, "random": 1})
    env.reset()
    rng = np.random.default_rng(5)
    for _ in range(30):
        observations = env.step(random_actions(env, rng))[0]
    state = env.get_state()
    twin = make_env({"self": 1, "snapshot": 1, "expert": 1, "random": 1}, seed=99)
    twin.reset()
    np.testing.assert_array_equal(twin.set_state(state, random_weights(0)), observations)  # what the last step returned
    assert twin.league.taken == env.league.taken
    for _ in range(60):
        actions = random_actions(env, rng)
        a, b = env.step(actions), twin.step(actions)
        for x, y in zip(a[:3], b[:3]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(env.game.get_state()["st"], twin.game.get_state()["st"])


def test_a_state_that_does_not_fit_is_refused_and_changes_nothing():
    env = make_env({"self": 1, "snapshot": 1, "random": 1}, n=6)
    env.reset()
    before = env.get_state()
    for change, message in (
        (lambda s: s["tables"]["team"].__setitem__(0, 1 - s["tables"]["team"][0]), "must wait for a learner seat"),
        (lambda s: s["tables"].update(team=s["tables"]["team"] + 2), r"state\['team'\] must hold finite values in \[0, 1\]"),
        (lambda s: s["tables"]["bots"][0].append(None), "must list the 2 bots the table drew"),
        (lambda s: s["tables"].update(pending=np.full_like(s["tables"]["pending"], np.inf)), "must hold finite values"),
    ):
        state = env.get_state()
        change(state)
        with pytest.raises(ValueError, match=message):
            env.set_state(state, random_weights(0))
    state = env.get_state()
    state["league"]["snapshots"][1] = random_weights(0, hidden=33)
    with pytest.raises(ValueError, match="snapshot 1 w0 must be an array of shape"):
        env.set_state(state, random_weights(0))
    after = env.get_state()
    assert all(np.array_equal(before["tables"]["game"][k], after["tables"]["game"][k]) for k in before["tables"]["game"])
    assert after["league"]["snapshots"][1]["w0"].shape[1] == 32
    assert before["tables"]["bots"] == after["tables"]["bots"]
    assert np.array_equal(before["tables"]["pending"], after["tables"]["pending"])


def test_the_batched_expert_acts_as_expert_bots_table_by_table():
    game = VectorGame(128)
    game.reset(seed=4)
    rng = np.random.default_rng(4)
    bot, batched = ExpertBot(), ExpertBot()
    compared = 0
    for _ in range(60):
        observations, masks = game.observe(), game.legal_mask()
        live = masks.any(axis=1)
        actions = batched.act_batch(observations[live], masks[live])
        for row, t in enumerate(np.flatnonzero(live)):
            assert bot.act({"observation": observations[t], "action_mask": masks[t].astype(np.int8)}) == actions[row]
            compared += 1
        game.step(game.sample_legal(rng))
        game.restart(game.is_over)
    assert compared > 5000


def test_the_critic_sees_the_other_seats_hands_after_the_policy_input():
    env = make_env({"random": 1}, n=16, seed=2, critic_sees_hands=True)
    observations = env.reset()
    size = input_size(ADVISED_LAYOUT)
    assert observations.shape == (16, size + OTHER_HANDS_SIZE)
    hands, seats = env.game.hands, env.game.current
    for t in range(16):
        for r in (1, 2, 3):
            flags = observations[t, size + (r - 1) * 52 : size + r * 52]
            assert int(sum(1 << c for c in np.flatnonzero(flags))) == int(hands[t, (seats[t] + r) % 4])
    np.testing.assert_array_equal(observations[:, :size], batch_inputs(ADVISED_LAYOUT, env.game.observe(), env.action_masks()))
