"""All Fours (Trinidad and Tobago) for reinforcement learning: a pure engine and a PettingZoo AEC env.

>>> import allfours_env
>>> env = allfours_env.env()            # rule variants as keyword arguments (docs/rules.md table A0)
>>> env.reset(seed=0)
>>> single = agents.single_agent_env(opponents="rule_based")   # Gymnasium, one team vs bots (import agents)
>>> envs = gymnasium.make_vec("AllFours-v1", num_envs=256, opponents="expert")  # a Gymnasium vector env

``allfours_env.vector.VectorGame`` plays many matches at once (imported on demand: it loads numba).
Importing this package registers ``AllFours-v1`` with Gymnasium: ``gymnasium.make`` gives the
single-agent env, ``gymnasium.make_vec`` the vector env (:mod:`allfours_env.gym_vector`); both
take bots by name, through the bots package (``agents``), loaded only when an env is made.
It also registers the four-agent env in PettingZoo's registry (PettingZoo 1.27 and later) as
``classic/allfours_v1``, PettingZoo's family of card and board games, versioned as the env's
``metadata["name"]``: ``pettingzoo.make("aec", "classic/allfours_v1", **rules)`` is ``env(**rules)``.
PettingZoo writes the id as ``classic/allfours-v1`` and takes both spellings. PettingZoo reads no
entry points: the id exists once this package is imported.
"""

import gymnasium as _gymnasium
import pettingzoo as _pettingzoo

from .cards import card_text, parse_card
from .engine import BEG, GIVE_ONE, N_ACTIONS, RUN, STAND, Event, Game, IllegalActionError, action_text
from .env import env, raw_env
from .gym_vector import AllFoursVectorEnv, vector_env
from .observation import LAYOUT, OBS_SIZE, STATE_SIZE, View, decode, encode
from .rules import DEFAULT_RULES, RULE_KEYS, Rules
from .single import SingleAgentEnv, single_agent_env

ENV_ID = "AllFours-v1"
if ENV_ID not in _gymnasium.registry:
    _gymnasium.register(
        ENV_ID, entry_point="agents.base:single_agent_env", vector_entry_point="agents.base:vector_env",
        disable_env_checker=True, order_enforce=False,
    )
PETTINGZOO_ID = "classic/allfours_v1"
if _pettingzoo.EnvSpec(PETTINGZOO_ID).id not in _pettingzoo.aec_registry:  # (its -v1 spelling)
    _pettingzoo.register("aec", PETTINGZOO_ID, entry_point="allfours_env.env:env")

__all__ = [
    "BEG", "DEFAULT_RULES", "ENV_ID", "GIVE_ONE", "LAYOUT", "N_ACTIONS", "OBS_SIZE", "PETTINGZOO_ID", "RULE_KEYS",
    "RUN", "STAND", "STATE_SIZE", "AllFoursVectorEnv", "Event", "Game", "IllegalActionError", "Rules", "SingleAgentEnv",
    "View", "action_text", "card_text", "decode", "encode", "env", "parse_card", "raw_env", "single_agent_env",
    "vector_env",
]
