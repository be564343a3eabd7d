"""The learner's env for SB3: the Gymnasium vector env as a stable-baselines3 ``VecEnv``.

Every learner trains on one env, :class:`allfours_env.gym_vector.AllFoursVectorEnv` (RLlib,
the examples and ``python -m train`` alike). :func:`make_learner_env` builds it as training
wants it: ``n_envs`` tables against a :class:`train.ppo.league.League`, the policy input of the
config's layout (and, with ``critic_sees_hands``, the other seats' hands for the critic),
rewards in the match's units (``reward_scale="target"``), and SAME_STEP autoreset, as SB3's
vec envs reset. :class:`LearnerVecEnv` only translates: SB3's ``step_async``/``step_wait``,
``dones`` (a match's end, and with ``horizon="deal"`` the start of a new deal: the critic then
predicts the points of the deal in play and PPO's advantages stop at its end), a list of infos
(a table whose match ended: ``scores``, ``team``, ``deals`` and ``terminal_observation``), and
``env_method("action_masks")`` as sb3-contrib asks for the masks.

:meth:`LearnerVecEnv.get_state` / :meth:`set_state` carry the tables and the league as plain
data, so a resumed run continues exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn

import agents
from agents.policy import Weights
from allfours_env.checks import keys
from allfours_env.gym_vector import NEW_DEAL_KEY, TARGET_SCALE, AllFoursVectorEnv
from allfours_env.vector import VectorGame

from train.config import HORIZONS, TrainConfig
from train.ppo.league import League

MASK_METHOD = "action_masks"
STATE_PARTS = ("tables", "league")  # of get_state()


def make_learner_env(config: TrainConfig) -> LearnerVecEnv:
    """The env ``python -m train`` trains on (see the module docstring)."""
    league = League(config.opponents, config.max_snapshots, config.seed)
    env = agents.vector_env(
        config.n_envs, league, layout=config.layout, reward=config.reward, reward_scale=TARGET_SCALE,
        autoreset_mode=AutoresetMode.SAME_STEP, critic_sees_hands=config.critic_sees_hands, rules=config.rules,
    )  # fmt: skip
    return LearnerVecEnv(env, config.horizon, config.seed)


class LearnerVecEnv(VecEnv):
    """``env`` (SAME_STEP autoreset) as SB3 steps it; ``seed``: table i starts from ``seed + i``."""

    def __init__(self, env: AllFoursVectorEnv, horizon: str = "match", seed: int = 0):
        if horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {HORIZONS}, got {horizon!r}")
        if env.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError("SB3 resets an env in the step that ends it: build the env with autoreset_mode SAME_STEP")
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self.env, self.horizon, self._seed = env, horizon, seed
        self._actions = np.zeros(env.num_envs, dtype=np.int64)

    @property
    def game(self) -> VectorGame:
        return self.env.game

    @property
    def league(self) -> League:
        return self.env.opponents

    def reset(self) -> VecEnvObs:
        return self.env.reset(seed=self._seed)[0]

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        observations, reward, terminated, truncated, info = self.env.step(self._actions)
        dones = terminated | truncated
        if self.horizon == "deal":
            dones |= info[NEW_DEAL_KEY]  # a new deal (a new match's first deal: done already)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        if "final_info" in info:
            final, last = info["final_info"], info["final_obs"]
            for t in np.flatnonzero(info["_final_info"]):
                scores = (int(final["scores"][t, 0]), int(final["scores"][t, 1]))
                infos[t] = {"scores": scores, "team": int(final["team"][t]), "deals": int(final["deals"][t]),
                            "terminal_observation": last[t]}  # fmt: skip
        return observations, reward.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """bool (n, 56): the legal actions of the learner's seat to act at every table."""
        return self.env.action_masks().astype(bool)

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == MASK_METHOD:
            return [self.action_masks] * len(self._indices(indices))
        if attr_name == "render_mode":  # SB3 asks at construction; tables are not rendered
            return [None] * len(self._indices(indices))
        raise AttributeError(f"LearnerVecEnv has no per-env attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"LearnerVecEnv has no per-env attribute {attr_name!r} to set")

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        if method_name == MASK_METHOD:
            return list(self.action_masks()[self._indices(indices)])
        raise AttributeError(f"LearnerVecEnv has no per-env method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """The tables' state and the league's, as plain data."""
        return {"tables": self.env.get_state(), "league": self.league.get_state()}

    def set_state(self, state: dict[str, Any], actor: Weights) -> np.ndarray:
        """Continue from a :meth:`get_state`; the learner's inputs at every table (what the last
        step returned). The league's networks must be shaped as ``actor`` (the learner's
        weights); a ValueError (or KeyError, TypeError) names what does not fit."""
        keys("the learner env's state", state, STATE_PARTS)
        self.league.set_state(state["league"], actor)  # before the tables: they name its networks
        return self.env.set_state(state["tables"])
