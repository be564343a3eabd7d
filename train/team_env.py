"""One team's view of All Fours as a single-agent Gymnasium env, for sb3-contrib MaskablePPO.

The learner plays both seats of its team with one shared policy; the other team is played by an
opponent drawn from a pool at every reset. Each ``step`` applies the learner's action, then lets
the opponents play until it is the learner's turn again or the match is over.

Observations are the policy input of :mod:`agents.features`: the seat's observation followed by
derived features, so a trained policy plays as :class:`agents.policy.PolicyBot` unchanged.

Rewards are read from the PettingZoo env's per-step ``rewards`` of one learner agent after every
step, the learner's and the opponents', and summed until the learner's next decision. Each award
is therefore counted once for the team (not once per seat), awards falling on opponents' turns
are included, and the final reward reaches the learner even when an opponent made the last move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import allfours_env
from agents.base import Bot
from agents.features import INPUT_SIZE, policy_input

OpponentFactory = Callable[[np.random.Generator], Bot]
_STATE_FIELDS = ("aec", "team", "opponent", "_pending", "_mask")


class TeamEnv(gym.Env):
    """See the module docstring. ``reward``: "points" (own minus other team's points / target per
    award) or "match" (+1 / -1 when the match ends)."""

    metadata = {"render_modes": []}

    def __init__(self, opponent_factory: OpponentFactory, rules: dict[str, Any] | None = None, reward: str = "points"):
        self.rules = dict(rules or {})
        self.aec = allfours_env.raw_env(reward=reward, **self.rules)
        self.scale = 1.0 / self.aec.rules.target_score if reward == "points" else 1.0
        self.opponent_factory = opponent_factory
        self.observation_space = gym.spaces.Box(0.0, 1.0, (INPUT_SIZE,), np.float32)
        self.action_space = self.aec.action_space("player_0")
        self.team = 0
        self.opponent: Bot | None = None
        self._mask = np.zeros(self.action_space.n, dtype=np.int8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        rng = self.np_random
        self.team = int(rng.integers(2))  # seats and (through the cut) the dealer vary
        self.opponent = self.opponent_factory(rng)
        self.opponent.reset(int(rng.integers(2**31)))
        self.aec.reset(seed=int(rng.integers(2**31)))
        self._pending = 0.0
        self._collect()
        obs = self._advance()
        return obs, {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        aec = self.aec
        aec.step(int(action))
        self._collect()
        obs = self._advance()
        reward, self._pending = self._pending, 0.0
        terminated = not aec.agents or aec.terminations[aec.agent_selection]
        info = {"scores": aec.scores, "team": self.team, "deals": aec.game.deal_number} if terminated else {}
        return obs, reward, terminated, False, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of the learner seat to act (sb3-contrib reads this)."""
        return self._mask

    def get_state(self) -> dict[str, Any]:
        """Everything that decides what happens next, for checkpoints (picklable)."""
        state = {name: getattr(self, name) for name in _STATE_FIELDS}
        state["np_random"] = self.np_random.bit_generator.state
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        for name in _STATE_FIELDS:
            setattr(self, name, state[name])
        self.np_random.bit_generator.state = state["np_random"]

    def update_pool(self, current: Any, snapshot: bool = False) -> None:
        """Forward new policy weights to the opponent pool (called through ``VecEnv.env_method``)."""
        self.opponent_factory.update(current, snapshot)

    def _collect(self) -> None:
        self._pending += self.aec.rewards[f"player_{self.team}"] * self.scale

    def _advance(self) -> np.ndarray:
        """Let the opponents act until a learner seat must decide or the match is over."""
        aec = self.aec
        while True:
            agent = aec.agent_selection
            if aec.terminations[agent]:
                self._mask = np.zeros_like(self._mask)
                return policy_input(aec.observe(f"player_{self.team}")["observation"], self._mask)
            obs = aec.observe(agent)
            if int(agent[-1]) % 2 == self.team:
                self._mask = obs["action_mask"]
                return policy_input(obs["observation"], self._mask)
            aec.step(self.opponent.act(obs))
            self._collect()
