"""The single-agent Gymnasium env (allfours_env/single.py, the vector env's one-table view):
checker, rewards against the scores, illegal actions, bot sources, replays, checkpoints, and a
short MaskablePPO run."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agents
from agents import single_agent_env
from allfours_env import SingleAgentEnv, parse_card
from allfours_env.observation import decode
from allfours_env.single import ILLEGAL_REWARD


def play_episode(env: SingleAgentEnv, seed: int) -> tuple[float, int, bool]:
    """One episode with random legal learner moves, checking what the learner is shown at each step.

    Returns (total reward, learner steps, whether a bot moved after the learner's last action).
    """
    obs, _ = env.reset(seed=seed)
    picker = np.random.default_rng(seed)
    total, steps = 0.0, 0
    while True:
        mask = env.action_masks()
        game = env.game
        seat = int(game.current[0])
        assert env.bots[seat] is None, "the learner is asked to act for a bot's seat"
        assert seat % 2 == env.team
        assert mask.nonzero()[0].tolist() == np.flatnonzero(game.legal_mask()[0]).tolist()
        np.testing.assert_array_equal(obs, game.observe()[0])
        bot_moves = env.table.arena.moves.sum()
        legal = np.flatnonzero(mask)
        obs, reward, terminated, truncated, _ = env.step(int(legal[picker.integers(len(legal))]))
        total += reward
        steps += 1
        assert not truncated
        if terminated:
            assert not env.action_masks().any()
            return total, steps, env.table.arena.moves.sum() > bot_moves


def lead(env: SingleAgentEnv) -> int:
    """The learner team's points minus the other team's (each award counted once in the scores)."""
    scores = env.game.scores[0]
    return int(scores[env.team] - scores[1 - env.team])


@pytest.mark.parametrize("partner", [None, "rule_based"])
def test_points_reward_is_the_award_log_for_the_learners_team(partner):
    env = single_agent_env("random", partner=partner, reward="points", target_score=7)
    bots_moved_last = 0
    for seed in range(60):
        total, _, bot_last = play_episode(env, seed)
        bots_moved_last += bot_last
        assert total == lead(env)
    assert bots_moved_last > 5  # the final award after a bot's move reaches the learner


def test_match_reward_and_fixed_team():
    env = single_agent_env(["random", "rule_based"], team=1, reward="match", target_score=7)
    for seed in range(20):
        total, _, _ = play_episode(env, seed)
        assert env.team == 1
        assert total == (1.0 if env.game.winner[0] == 1 else -1.0)


def test_deal_episodes_end_after_one_deal():
    env = single_agent_env("rule_based", reward="points", episode="deal")
    for seed in range(10):
        total, _, _ = play_episode(env, seed)
        assert env.game.deal_number[0] == 1 and total == lead(env)


def test_gymnasium_check_env():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker's advice on render modes and specs
        check_env(single_agent_env("rule_based", illegal="lose"), skip_render_check=True)
        check_env(single_agent_env("random", partner="random", reward="points", illegal="lose"), skip_render_check=True)


def test_an_illegal_action_raises_a_clear_error_and_changes_nothing():
    env = single_agent_env("rule_based")
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        mask = env.action_masks().copy()
        illegal = int(rng.choice(np.flatnonzero(mask == 0)))
        before = env.get_state()
        with pytest.raises(ValueError, match="cannot take action") as raised:
            env.step(illegal)
        assert "legal" in str(raised.value)
        after = env.get_state()
        assert all(np.array_equal(before["table"]["game"][k], after["table"]["game"][k]) for k in before["table"]["game"])
        assert (env.action_masks() == mask).all()
        _, _, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated:
            break
    with pytest.raises(ValueError, match="an action is an int 0..55"):
        env.step(2.0)


def test_illegal_lose_mode_ends_the_episode_without_playing():
    env = single_agent_env("rule_based", illegal="lose", reward="points")
    env.reset(seed=5)
    before = env.game.get_state()
    illegal = int(np.flatnonzero(env.action_masks() == 0)[0])
    _, reward, terminated, _, info = env.step(illegal)
    assert terminated and info["illegal_action"] == illegal
    assert reward == lead(env) + ILLEGAL_REWARD  # kick points of the deal, then the penalty
    assert all(np.array_equal(before[k], env.game.get_state()[k]) for k in before) and not env.action_masks().any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_reset_with_a_seed_replays_the_episode():
    env = single_agent_env("random", reward="points")
    first = [play_episode(env, 11), env.game.get_state()]
    env.reset(seed=99)
    again = [play_episode(env, 11), env.game.get_state()]
    assert again[0] == first[0] and all(np.array_equal(first[1][k], again[1][k]) for k in first[1])


def test_state_round_trip_continues_identically():
    env = single_agent_env("random", reward="points")
    env.reset(seed=2)
    for _ in range(5):
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    other = single_agent_env("random", reward="points")
    other.reset(seed=0)
    other.set_state(copy.deepcopy(env.get_state()))
    for _ in range(200):
        action = int(np.flatnonzero(env.action_masks())[-1])
        a, b = env.step(action), other.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:] == b[1:]
        if a[2]:
            break


def test_bot_sources_and_bad_arguments():
    expert = agents.make("expert")
    env = single_agent_env(expert, partner=lambda rng: agents.make("random"), team=0)
    env.reset(seed=1)
    assert env.bots[1] is env.bots[3] is expert and env.bots[0] is None
    assert env.bots[2].name == "random"
    with pytest.raises(ValueError, match="unknown bot 'nobody'"):
        single_agent_env("nobody")
    with pytest.raises(TypeError, match="not the class"):
        single_agent_env(type(expert))
    with pytest.raises(ValueError, match="team must be 0"):
        single_agent_env("random", team=2)
    with pytest.raises(ValueError, match="reward must be one of"):
        single_agent_env("random", reward="tricks")
    with pytest.raises(ValueError, match="unknown rule 'target'"):
        single_agent_env("random", target=7)
    with pytest.raises(ValueError, match="a pair"):
        single_agent_env(["random"] * 3)


def test_a_short_maskable_ppo_run_learns_and_plays_legally():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = single_agent_env("rule_based", reward="points", target_score=7)
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=7)
    for _ in range(30):
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert env.action_masks()[int(action)] == 1
        obs, _, terminated, _, _ = env.step(action)
        if terminated:
            break


def test_reset_options_fix_the_deal_and_bad_ones_change_nothing():
    env = single_agent_env("random", team=0, reward="points")
    deck = list(range(52))
    env.reset(seed=0, options={"decks": [deck], "dealer": 3, "scores": [5, 9]})
    view = decode(env.game.observe()[0])
    assert view.dealer == 3 and view.scores == (5, 9)
    assert view.kick == deck[24] == parse_card("KD")  # a king kicks no points
    before = env.get_state()
    for options, message in (({"decks": [[0] * 52]}, "not a permutation"), ({"dealer": 4}, "dealer must be"),
                             ({"deck": deck}, "unknown reset option")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            env.reset(seed=1, options=options)
        after = env.get_state()
        assert all(np.array_equal(before["table"]["game"][k], after["table"]["game"][k]) for k in before["table"]["game"])
