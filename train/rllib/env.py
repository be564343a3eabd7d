"""All Fours as an RLlib ``MultiAgentEnv`` (new API stack): four seats, one turn at a time.

Agents are the seats ``0..3``. Only the seat to act receives an observation, a dict:
``"observations"``, the policy input of :mod:`agents.features` (the seat's observation followed
by the derived features, exactly what :class:`agents.policy.PolicyBot` reads), and
``"action_mask"``, 1.0 for each legal action of ``Discrete(56)``.

Rewards come from the engine's event log through :func:`allfours_env.rewards.event_reward`:
every award (``reward="points"``, divided by the target score as in SB3 training) or the match
result (``reward="match"``, +1 / -1) is paid, plus to both seats of the scoring team and minus
to the other two, in the step where it happens, whoever's turn it was. RLlib's episode adds the
reward of a seat that is not acting to that seat's next step, and the last step (``__all__``
terminated) pays every seat, so every award reaches every seat once. A seat gets no reward
before its first action of the episode (RLlib would drop it): what it earns before then, such as
the first kick (dealt at reset), is held and paid with its first reward.

``env_config``: ``rules`` (the A0 rule keys), ``reward`` ("points" or "match"), ``episode``
("match" or "deal"), ``seed`` (the generator used until ``reset`` is given a seed).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from agents.features import N_FEATURES, policy_input
from allfours_env.cards import N_SEATS
from allfours_env.engine import EPISODES, N_ACTIONS, Event, Game
from allfours_env.match import Match
from allfours_env.observation import observation_high
from allfours_env.rewards import REWARD_MODES, event_reward
from allfours_env.rules import Rules

OBS_KEY = "observations"  # the key names RLlib's action-masking example module reads
MASK_KEY = "action_mask"
ENV_CONFIG_KEYS = ("rules", "reward", "episode", "seed")
SEATS = tuple(range(N_SEATS))


def team_of(seat: int) -> int:
    return seat % 2


class AllFoursMultiAgentEnv(MultiAgentEnv):
    """See the module docstring."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = dict(config or {})
        unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
        if unknown:
            raise ValueError(f"unknown env_config key(s) {unknown}; known: {list(ENV_CONFIG_KEYS)}")
        self.reward_mode = config.get("reward", "points")
        self.episode = config.get("episode", "match")
        for name, value, allowed in (("reward", self.reward_mode, REWARD_MODES), ("episode", self.episode, EPISODES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        self.rules = Rules.from_kwargs(**config.get("rules", {}))
        self.scale = 1.0 / self.rules.target_score if self.reward_mode == "points" else 1.0
        self.rng = np.random.default_rng(config.get("seed"))
        self.agents = self.possible_agents = list(SEATS)
        high = np.concatenate([observation_high(self.rules), np.ones(N_FEATURES, dtype=np.float32)])
        space = gym.spaces.Dict({
            OBS_KEY: gym.spaces.Box(0.0, high, dtype=np.float32),
            MASK_KEY: gym.spaces.Box(0.0, 1.0, (N_ACTIONS,), np.float32),
        })  # fmt: skip
        self.observation_spaces = {seat: space for seat in SEATS}
        self.action_spaces = {seat: gym.spaces.Discrete(N_ACTIONS) for seat in SEATS}
        self.match: Match | None = None
        self._pending = np.zeros(N_SEATS)  # rewards not yet handed to RLlib, per seat
        self._acted = np.zeros(N_SEATS, dtype=bool)  # seats that acted in this episode

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """A new match; ``options``: the AEC env's reset options (``decks``, ``dealer``, ``scores``)."""
        rng = np.random.default_rng(seed) if seed is not None else self.rng
        game = Game(self.rules, rng, episode=self.episode, **dict(options or {}))  # bad options raise here
        self.rng = rng
        self._pending[:] = 0.0
        self._acted[:] = False
        self.match = Match(game, [None] * N_SEATS, on_event=self._on_event)
        return self._observe(), {}

    def step(self, action_dict: dict[int, Any]) -> tuple[dict, dict, dict, dict, dict]:
        game = self.match.game
        seat = game.current
        if set(action_dict) != {seat}:
            raise ValueError(f"seat {seat} is to act; got actions for seats {sorted(action_dict)}")
        self.match.step(int(action_dict[seat]))  # an illegal action raises ValueError, changing nothing
        self._acted[seat] = True
        over = self.match.over
        rewards = {}
        for s in SEATS:
            if self._acted[s] or over:  # RLlib drops rewards of seats that have not acted yet
                rewards[s] = float(self._pending[s])
                self._pending[s] = 0.0
        done = {"__all__": over, **({s: True for s in SEATS} if over else {})}
        return self._observe(), rewards, done, {"__all__": False}, {}

    def _on_event(self, event: Event) -> None:
        points = event_reward(event, self.reward_mode) * self.scale
        if points:
            for s in SEATS:
                self._pending[s] += points if team_of(s) == event.team else -points

    def _observe(self) -> dict[int, dict[str, np.ndarray]]:
        if self.match.over:
            return {}
        seat = self.match.game.current
        seen = self.match.observe(seat)
        mask = seen["action_mask"]
        return {seat: {OBS_KEY: policy_input(seen["observation"], mask), MASK_KEY: mask.astype(np.float32)}}
