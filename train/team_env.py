"""The learner's view for training: :func:`allfours_env.single_agent_env` against an opponent pool.

The learner plays both seats of its team with one shared policy, on a team drawn at every reset;
the other team is played by an opponent drawn from the pool at every reset (one bot for both
seats). Rewards are the single-agent env's (every award once, for the learner's team, whoever
moved), divided by the target score with ``reward="points"``.

Observations are the policy input of :mod:`agents.features`: the seat's observation followed by
derived features, so a trained policy plays as :class:`agents.policy.PolicyBot` unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from agents.base import Bot
from agents.features import INPUT_SIZE, policy_input
from allfours_env.single import SingleAgentEnv

OpponentFactory = Callable[[np.random.Generator], Bot]


class TeamEnv(SingleAgentEnv):
    """See the module docstring. ``reward``: "points" (own minus other team's points / target per
    award) or "match" (+1 / -1 when the match ends)."""

    def __init__(self, opponent_factory: OpponentFactory, rules: dict[str, Any] | None = None, reward: str = "points"):
        super().__init__(opponent_factory, reward=reward, **dict(rules or {}))
        self.opponent_factory = opponent_factory
        self.scale = 1.0 / self.rules.target_score if reward == "points" else 1.0
        self.observation_space = gym.spaces.Box(0.0, 1.0, (INPUT_SIZE,), np.float32)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward * self.scale, terminated, truncated, info

    def observation_of(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return policy_input(observation, mask)

    def update_pool(self, current: Any, snapshot: bool = False) -> None:
        """Forward new policy weights to the opponent pool (called through ``VecEnv.env_method``)."""
        self.opponent_factory.update(current, snapshot)
