"""The Gymnasium vector env (allfours_env/vector_env.py): step for step the same as
``SyncVectorEnv`` over the single-agent env (observations, masks, rewards, ends, autoreset in
both modes), rewards against the scores, seeding, masks, registration and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import agents
import allfours_env
from agents.policy import ADVISED_LAYOUT, batch_inputs, input_size
from allfours_env.gym_vector import AllFoursVectorEnv


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random legal action per row (0 where a row has none)."""
    scores = np.where(masks > 0, rng.random(masks.shape), -1.0)
    return scores.argmax(axis=1)


def sync_env(n: int, autoreset_mode: AutoresetMode, opponents, **kwargs) -> SyncVectorEnv:
    return SyncVectorEnv(
        [lambda: agents.single_agent_env(opponents, **kwargs) for _ in range(n)], autoreset_mode=autoreset_mode
    )


def pool(rng: np.random.Generator):
    """An opponent pool: draws from the table's generator at each episode start."""
    return agents.make("expert" if rng.integers(2) else "random")


CASES = [
    ("expert", {"reward": "points"}),
    (pool, {"reward": "points", "episode": "deal"}),
    ("rule_based", {"reward": "match", "target_score": 7, "first_dealer": "first_jack"}),
    (("random", "expert"), {"reward": "points", "partner": "rule_based", "episode": "deal", "first_dealer": 1}),
    ("random", {"reward": "points", "team": 1, "hang_jack_points": 2, "first_dealer": "random"}),
    ("expert", {"reward": "match", "target_score": 1}),  # episodes over before the learner decides, passed over
]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("opponents, kwargs", CASES)
def test_steps_equal_sync_vector_env_over_the_single_agent_env(opponents, kwargs, mode):
    n, seed = 5, 40
    ours = agents.vector_env(n, opponents, autoreset_mode=mode, **kwargs)
    theirs = sync_env(n, mode, opponents, **kwargs)
    obs, info = ours.reset(seed=seed)
    obs_s, _ = theirs.reset(seed=seed)
    np.testing.assert_array_equal(obs, obs_s)
    np.testing.assert_array_equal(info["action_mask"], np.stack(theirs.call("action_masks")))
    rng = np.random.default_rng(seed)
    ends = 0
    for _ in range(400):
        masks = ours.action_masks()
        np.testing.assert_array_equal(masks, np.stack(theirs.call("action_masks")))
        actions = random_legal(masks, rng)
        obs, reward, terminated, truncated, info = ours.step(actions)
        obs_s, reward_s, terminated_s, truncated_s, info_s = theirs.step(actions)
        np.testing.assert_array_equal(obs, obs_s)
        np.testing.assert_array_equal(reward, reward_s)
        np.testing.assert_array_equal(terminated, terminated_s)
        np.testing.assert_array_equal(truncated, truncated_s)
        np.testing.assert_array_equal(info["action_mask"], ours.action_masks())
        same_step = mode == AutoresetMode.SAME_STEP
        if not terminated.any():
            continue
        final, final_s = (info["final_info"], info_s["final_info"]) if same_step else (info, info_s)
        for t in np.flatnonzero(terminated):
            for key in ("scores", "team", "deals"):
                assert tuple(np.atleast_1d(final[key][t])) == tuple(np.atleast_1d(final_s[key][t]))
            if same_step:
                np.testing.assert_array_equal(info["final_obs"][t], info_s["final_obs"][t])
        ends += int(terminated.sum())
    assert ends >= 5  # the run covered autoresets


def test_reward_sums_are_the_score_differences_and_match_results():
    n = 16
    for reward in ("points", "match"):
        env = agents.vector_env(n, "rule_based", reward=reward, target_score=7, autoreset_mode="SameStep")
        env.reset(seed=3)
        rng = np.random.default_rng(3)
        totals, checked = np.zeros(n), 0
        while checked < 40:
            _, r, terminated, _, info = env.step(random_legal(env.action_masks(), rng))
            totals += r
            for t in np.flatnonzero(terminated):
                scores, team = info["final_info"]["scores"][t], info["final_info"]["team"][t]
                if reward == "points":
                    assert totals[t] == scores[team] - scores[1 - team]
                else:
                    assert totals[t] == (1.0 if scores[team] > scores[1 - team] else -1.0)
                totals[t] = 0.0
                checked += 1


def test_seeding_replays_and_seeds_per_table():
    env = agents.vector_env(4, "random", reward="points")

    def run(seed):
        obs, _ = env.reset(seed=seed)
        rng, out = np.random.default_rng(0), [obs]
        for _ in range(60):
            obs, r, *_ = env.step(random_legal(env.action_masks(), rng))
            out += [obs, r]
        return out

    first, again = run(9), run(9)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(run(10)[0], first[0])
    obs_list, _ = env.reset(seed=[9, 10, 11, 12])  # a seed per table: as an int seed of 9
    np.testing.assert_array_equal(obs_list, first[0])
    one = agents.vector_env(1, "random", reward="points")
    np.testing.assert_array_equal(one.reset(seed=11)[0][0], first[0][2])  # table 2 of seed 9 = seed 11 alone


def test_masks_and_an_illegal_action_changes_nothing():
    env = agents.vector_env(3, "expert")
    twin = agents.vector_env(3, "expert")
    env.reset(seed=1)
    twin.reset(seed=1)
    masks = env.action_masks()
    assert masks.dtype == np.int8 and (masks.sum(axis=1) > 0).all()
    bad = random_legal(masks, np.random.default_rng(0))
    bad[1] = int(np.flatnonzero(masks[1] == 0)[0])
    with pytest.raises(ValueError, match="table 1: .* cannot take action .*legal: "):
        env.step(bad)
    good = random_legal(masks, np.random.default_rng(5))
    *results, info = env.step(good)
    *results_twin, info_twin = twin.step(good)
    for a, b in zip(results, results_twin, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(info["action_mask"], info_twin["action_mask"])


def test_registered_with_gymnasium_and_the_observation_forms():
    envs = gym.make_vec("AllFours-v1", num_envs=4, vectorization_mode="vector_entry_point", opponents="expert")
    assert isinstance(envs, AllFoursVectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    assert envs.observation_space.contains(obs)
    assert envs.action_space.contains(random_legal(info["action_mask"], np.random.default_rng(0)))
    sync = gym.make_vec("AllFours-v1", num_envs=2, vectorization_mode="sync", opponents="expert")
    assert isinstance(sync, SyncVectorEnv)
    single = gym.make("AllFours-v1", opponents="expert")
    assert single.reset(seed=0)[0].shape == (allfours_env.OBS_SIZE,)

    advised = agents.vector_env(4, "expert", layout=ADVISED_LAYOUT)
    raw = agents.vector_env(4, "expert")
    inputs, _ = advised.reset(seed=2)
    observations, info = raw.reset(seed=2)
    assert inputs.shape == (4, input_size(ADVISED_LAYOUT)) and advised.observation_space.contains(inputs)
    np.testing.assert_array_equal(inputs, batch_inputs(ADVISED_LAYOUT, observations, info["action_mask"] > 0))
    as_dict = agents.vector_env(4, "expert", dict_observation=True)
    seen, _ = as_dict.reset(seed=2)
    np.testing.assert_array_equal(seen["observation"], observations)
    np.testing.assert_array_equal(seen["action_mask"], info["action_mask"])
    assert as_dict.observation_space.contains(seen)


def test_batch_bots_answer_every_table_in_one_call():
    calls = []
    expert = agents.make("expert")

    class Counting:
        def reset(self, seed=None):
            pass

        def act_batch(self, observations, masks):
            calls.append(len(observations))
            return expert.act_batch(observations, masks)

        act = None

    counting = Counting()
    counting.act = lambda observation: expert.act(observation)
    env = allfours_env.vector_env(64, counting, reward="points")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        env.step(random_legal(env.action_masks(), rng))
    assert max(calls) > 16 and len(calls) < 20 * 8  # tables batched, a few calls a step


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        agents.vector_env(0, "expert")
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        agents.vector_env(2, "expert", autoreset_mode="disabled")
    with pytest.raises(ValueError, match="reward must be one of"):
        agents.vector_env(2, "expert", reward="win")
    with pytest.raises(ValueError, match="layout must be one of"):
        agents.vector_env(2, "expert", layout=9)
    with pytest.raises(ValueError, match="must answer many at once"):
        allfours_env.vector_env(2, agents.make("rule_based"))
    with pytest.raises(TypeError, match="needs the bots package"):
        allfours_env.vector_env(2, "expert")
    env = agents.vector_env(2, "expert")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="seed must be"):
        env.reset(seed=[1])
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(seed=0, options={"deck": []})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions must be an int array of shape"):
        env.step(np.zeros(3, dtype=np.int64))


def test_a_match_over_at_reset_is_paid_once():
    env = agents.vector_env(32, "expert", reward="match", autoreset_mode="SameStep")
    env.reset(seed=0, options={"scores": [13, 13]})  # a kick's points end some matches before any move
    over = ~env.action_masks().any(axis=1)
    assert over.any()
    _, reward, terminated, _, _ = env.step(random_legal(env.action_masks(), np.random.default_rng(0)))
    assert terminated[over].all() and (np.abs(reward[over]) == 1.0).all()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_an_episode_over_before_the_learners_first_decision_is_passed_over(mode):
    """At target 1 the first kick ends one match in five before anyone moves: such an episode was
    handed to the learner with no legal action (a NaN in training's pull loss)."""
    env = agents.vector_env(64, "expert", target_score=1, autoreset_mode=mode)
    _, info = env.reset(seed=0)
    assert info["action_mask"].any(axis=1).all() and (env.episodes > 1).any()  # some were passed over
    rng, terminated, ends = np.random.default_rng(0), np.zeros(64, dtype=bool), 0
    for _ in range(100):
        waiting = ~terminated if mode == AutoresetMode.NEXT_STEP else np.ones(64, dtype=bool)
        assert info["action_mask"][waiting].any(axis=1).all()  # every table in play asks the learner
        _, _, terminated, _, info = env.step(random_legal(env.action_masks(), rng))
        ends += int(terminated.sum())
    assert ends > 64
    single = agents.single_agent_env("expert", target_score=1)
    assert all(single.reset(seed=s)[0] is not None and single.action_masks().any() for s in range(100))
