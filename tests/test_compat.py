"""The compatibility matrix (README, "Outside RL libraries"): TorchRL and Tianshou take the AEC env
unchanged and play whole matches through their own machinery, every action within the mask.

Each test skips, with the reason, where its library is missing; CI installs them (the ``compat``
extra: ``pip install -e ".[compat]"``, the versions the README's table names). SB3's MaskablePPO is
exercised by tests/test_examples.py and tests/test_single.py, RLlib by tests/test_rllib.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import allfours_env

MATCHES = 2
MAX_STEPS = 2_000  # a match of random play is a few hundred steps; this bounds a broken one


def test_torchrl_rollout_plays_whole_matches_within_the_mask():
    pytest.importorskip("torchrl", reason="TorchRL is not installed (pip install -e '.[compat]')")
    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    torch.manual_seed(0)
    env = PettingZooWrapper(allfours_env.env(), use_mask=True)  # random actions drawn within each seat's mask
    env.set_seed(0)
    for _ in range(MATCHES):
        rollout = env.rollout(max_steps=MAX_STEPS, break_when_any_done=True)
        assert rollout["next", "done"][-1].all() and len(rollout) < MAX_STEPS
        acted = 0
        for seat in range(4):
            group = rollout[f"player_{seat}"]
            turns = group["mask"].squeeze(-1)  # the steps at which this seat acted
            actions, masks = group["action"][turns].squeeze(-1), group["action_mask"][turns].squeeze(-2)
            assert masks[torch.arange(len(actions)), actions].all(), f"player_{seat} played outside its mask"
            acted += int(turns.sum())
        assert acted == len(rollout)  # one seat a step
        assert env._env.unwrapped.game.winner in (0, 1)  # the match played to its end


def test_tianshou_collector_plays_whole_matches_within_the_mask():
    pytest.importorskip("tianshou", reason="Tianshou is not installed (pip install -e '.[compat]')")
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm as MaskedRandom
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    np.random.seed(0)  # (Tianshou's random policy draws from numpy's global generator)
    seats = PettingZooEnv(allfours_env.env())
    policy = MultiAgentPolicy({agent: MaskedRandom.Policy(seats.action_space) for agent in seats.agents})
    buffer = VectorReplayBuffer(MATCHES * MAX_STEPS, 1)
    collector = Collector(policy, DummyVectorEnv([lambda: PettingZooEnv(allfours_env.env())]), buffer)
    stats = collector.collect(n_episode=MATCHES, reset_before_collect=True)
    assert stats.n_collected_episodes == MATCHES and stats.n_collected_steps == len(buffer) < MATCHES * MAX_STEPS
    # Each match's returns: +1 to the winning team's two seats, -1 to the other's (the env's match reward).
    for returns in stats.returns:
        assert list(returns) in ([1, -1, 1, -1], [-1, 1, -1, 1])
    data, _ = buffer.sample(0)  # every step collected
    mask = np.asarray(data.obs.mask)
    assert mask[np.arange(len(data.act)), data.act].all(), "an action outside the mask"
