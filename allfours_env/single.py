"""All Fours as a single-agent Gymnasium env: one seat, or one team, against bots.

>>> import agents
>>> env = agents.single_agent_env(opponents="rule_based", reward="points", target_score=7)
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step(int(env.action_masks().nonzero()[0][0]))

The env is the one-table view of the vector env (``num_envs=1``), as ``Game`` is of
``VectorGame``: its arguments (``opponents``, ``partner``, ``team``, ``reward``, ``episode``, the
rule variants), draws, bots, rewards, reset options and state are
:class:`allfours_env.gym_vector.AllFoursVectorEnv`'s, documented there; with one table any bot
instance may play. Each ``step`` applies the learner's action, then the bots play until a learner
seat must decide or the episode is over. Spaces: the observation the seat to act sees (the AEC
env's ``observe(agent)["observation"]``; the learner's first seat once the episode is over),
action ``Discrete(56)``; :meth:`SingleAgentEnv.action_masks` gives the legal actions (what
sb3-contrib's MaskablePPO reads; all zero once the episode is over). ``info`` at the end of an
episode: ``scores``, ``team``, ``deals``.

Illegal actions (``illegal``): "raise" (default) raises a ``ValueError`` naming the seat, the
action and the legal actions, and changes nothing. "lose" (for tools that step unmasked actions,
such as Gymnasium's ``check_env``): the action is not played, the episode ends at once
(``terminated``) with reward ``ILLEGAL_REWARD`` and ``info["illegal_action"]``, as PettingZoo's
``TerminateIllegalWrapper`` does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .engine import N_ACTIONS, check_seed
from .gym_vector import vector_env
from .match import Bot
from .vector import VectorGame

ILLEGAL_MODES = ("raise", "lose")
ILLEGAL_REWARD = -1.0


def single_agent_env(opponents: Any, **kwargs: Any) -> SingleAgentEnv:
    """A :class:`SingleAgentEnv` against ``opponents``; the keyword arguments are the class's.

    Full documentation: ``help(allfours_env.single)``.
    """
    return SingleAgentEnv(opponents, **kwargs)


class SingleAgentEnv(gym.Env):
    """One seat or one team of All Fours against bots; see the module docstring."""

    metadata = {"render_modes": []}

    def __init__(self, opponents: Any, *, illegal: str = "raise", **kwargs: Any) -> None:
        if illegal not in ILLEGAL_MODES:
            raise ValueError(f"illegal must be one of {ILLEGAL_MODES}, got {illegal!r}")
        self.table = vector_env(1, opponents, **kwargs)  # every other argument is the vector env's, checked there
        self.rules, self.reward_mode, self.episode = self.table.rules, self.table.reward_mode, self.table.episode
        self.illegal = illegal
        self.observation_space = self.table.single_observation_space
        self.action_space = self.table.single_action_space
        self._over = True

    @property
    def team(self) -> int:
        """The learner's team in the episode under way."""
        return int(self.table.team[0])

    @property
    def game(self) -> VectorGame:
        """The table (a one-table :class:`VectorGame`)."""
        return self.table.game

    @property
    def bots(self) -> list[Bot | None]:
        """Each seat's bot in the episode under way (None: the learner's)."""
        return list(self.table.arena.bots[0])

    # ---------------------------------------------------------------- Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """A new episode; ``options``: the AEC env's reset options (``decks``, ``dealer``, ``scores``).
        A bad seed or option raises a ValueError before anything changes."""
        seed = check_seed(seed)
        observations, _ = self.table.reset(seed=seed, options=options)
        super().reset(seed=seed)  # Gymnasium's np_random, unused: the table's seed decides everything
        self._over = bool(self.table.game.is_over[0])  # a given score may end the match at the first kick
        return observations[0], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._over:
            raise RuntimeError("the episode is over (or was never started): call reset() first")
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        is_int = isinstance(action, int | np.integer) and not isinstance(action, bool)
        if not (is_int and 0 <= action < N_ACTIONS and self.action_masks()[action]):
            if self.illegal == "lose":
                self._over = True
                reward, self.table.pending[0] = float(self.table.pending[0]), 0.0
                return self.table._observe()[0], reward + ILLEGAL_REWARD, True, False, {"illegal_action": action}
            if not is_int:
                raise ValueError(f"an action is an int 0..{N_ACTIONS - 1}, got {action!r}")
        observations, reward, terminated, _, info = self.table.step(np.array([action]))  # illegal: raises, no change
        self._over = bool(terminated[0])
        if self._over:
            scores = info["scores"][0]
            info = {"scores": (int(scores[0]), int(scores[1])), "team": self.team, "deals": int(info["deals"][0])}
        else:
            info = {}
        return observations[0], float(reward[0]), self._over, False, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of the learner's seat to act, int8[56] (all zero once the episode is over)."""
        return np.zeros(N_ACTIONS, np.int8) if self._over else self.table.action_masks()[0]

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """Everything that decides what happens next, as plain data (the vector env's), for checkpoints."""
        if not self.table.started:
            raise RuntimeError("get_state() needs an episode: call reset() first")
        return {"table": self.table.get_state(), "over": self._over}

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`get_state` of an env built alike: a ValueError if it is not one,
        and nothing changes."""
        if not isinstance(state, dict) or set(state) != {"table", "over"} or not isinstance(state["over"], bool):
            raise ValueError("state must be a dict with the keys ['over', 'table'], as get_state() returns it")
        self.table.set_state(state["table"])
        self._over = state["over"]
