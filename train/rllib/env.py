"""All Fours for RLlib: the Gymnasium vector env over the vector engine, as RLlib's env runners sample it.

RLlib's single-agent env runner makes its envs with ``gymnasium.make_vec(...,
vectorization_mode="vector_entry_point")`` (``env_runners(gym_env_vectorize_mode=...)``):
:func:`make_vector_env` is that entry point. Each env runner holds ``num_envs`` tables of
:func:`agents.vector_env`; the learner (``main``) plays one team, drawn per match, and the
league (:mod:`train.ppo.league`, as for the SB3 backend) the other team inside the env, every
distinct network in one forward pass a tick. RLlib sees one agent, episodes of one match, and no turn-taking.

Observations are a dict, as RLlib's action-masking module reads it: ``"observations"``, the
policy input of the SB3 path's layout (:data:`LAYOUT`, the advised input), and
``"action_mask"``, 1.0 for each legal action of ``Discrete(56)``. Rewards are the vector env's
(every award for the learner's team plus, for the other minus, paid at the learner's next
step), in the match's units as in SB3 training (``reward_scale="target"``). RLlib's episodes
follow the vector env's NEXT_STEP autoreset. Infos are the vector env's less the mask, which the
observation holds (RLlib copies each env's info into its episode at every step).

``env_config``: ``rules`` (a ``Rules``, or a mapping of the A0 rule keys), ``reward`` ("points" or
"match"), ``episode`` ("match" or "deal"), ``opponents`` and ``max_snapshots`` (the league's) and
``seed`` (the league's draws); RLlib adds ``num_envs``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

import agents
from agents.policy import ADVISED_LAYOUT, input_size
from allfours_env.engine import N_ACTIONS
from allfours_env.gym_vector import MASK_KEY as VECTOR_MASK_KEY
from allfours_env.gym_vector import OBS_KEY as VECTOR_OBS_KEY
from allfours_env.gym_vector import TARGET_SCALE
from allfours_env.rules import as_rules

from train.ppo.league import League

OBS_KEY = "observations"  # the key names RLlib's action-masking example module reads
MASK_KEY = "action_mask"
LAYOUT = ADVISED_LAYOUT  # the SB3 path's policy input
ENV_CONFIG_KEYS = ("rules", "reward", "episode", "opponents", "max_snapshots", "seed", "num_envs")


class RLlibView(gym.vector.VectorWrapper):
    """The vector env's dict observation under RLlib's keys (mask as float32)."""

    def __init__(self, env: gym.vector.VectorEnv):
        super().__init__(env)
        self.single_observation_space = gym.spaces.Dict({
            OBS_KEY: gym.spaces.Box(-1.0, 1.0, (input_size(LAYOUT),), np.float32),
            MASK_KEY: gym.spaces.Box(0.0, 1.0, (N_ACTIONS,), np.float32),
        })  # fmt: skip
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, env.num_envs)

    @staticmethod
    def _view(observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {OBS_KEY: observation[VECTOR_OBS_KEY], MASK_KEY: observation[VECTOR_MASK_KEY].astype(np.float32)}

    @staticmethod
    def _info(info: dict[str, Any]) -> dict[str, Any]:
        """The info without the mask, which the observation holds: RLlib copies every info into
        its episodes, env by env."""
        return {key: value for key, value in info.items() if key not in (VECTOR_MASK_KEY, f"_{VECTOR_MASK_KEY}")}

    def reset(self, **kwargs: Any) -> tuple[dict, dict]:
        observation, info = self.env.reset(**kwargs)
        return self._view(observation), self._info(info)

    def step(self, actions: np.ndarray) -> tuple:
        observation, reward, terminated, truncated, info = self.env.step(np.asarray(actions, dtype=np.int64))
        return self._view(observation), reward, terminated, truncated, self._info(info)


def make_vector_env(config: dict[str, Any]) -> RLlibView:
    """RLlib's vector entry point (see the module docstring); bad settings raise a ValueError."""
    config = dict(config)
    unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
    if unknown:
        raise ValueError(f"unknown env_config key(s) {unknown}; known: {list(ENV_CONFIG_KEYS)}")
    league = League(config.get("opponents", {"self": 1.0}), config.get("max_snapshots", 1), config.get("seed", 0))
    env = agents.vector_env(  # it checks reward and episode
        int(config.get("num_envs", 1)), league, layout=LAYOUT, reward=config.get("reward", "points"),
        episode=config.get("episode", "match"), reward_scale=TARGET_SCALE, dict_observation=True,
        rules=as_rules(config.get("rules")),  # a Rules, or a mapping of rule keys (checked)
    )  # fmt: skip
    return RLlibView(env)


def league_of(env: gym.vector.VectorEnv) -> League:
    """The league inside an env runner's env (RLlib wraps the vector env)."""
    return env.unwrapped.opponents
