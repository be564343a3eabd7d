"""All Fours (Trinidad and Tobago) for reinforcement learning: a pure engine and a PettingZoo AEC env.

>>> import allfours_env
>>> env = allfours_env.env()            # rule variants as keyword arguments (docs/rules.md table A0)
>>> env.reset(seed=0)
>>> single = agents.single_agent_env(opponents="rule_based")   # Gymnasium, one team vs bots (import agents)

``allfours_env.vector.VectorGame`` plays many matches at once (imported on demand: it loads numba).
"""

from .cards import card_text, parse_card
from .engine import BEG, GIVE_ONE, N_ACTIONS, RUN, STAND, Event, Game, IllegalActionError, action_text
from .env import env, raw_env
from .observation import LAYOUT, OBS_SIZE, STATE_SIZE, View, decode, encode
from .rules import DEFAULT_RULES, RULE_KEYS, Rules
from .single import SingleAgentEnv, single_agent_env

__all__ = [
    "BEG", "DEFAULT_RULES", "Event", "GIVE_ONE", "Game", "IllegalActionError", "LAYOUT", "N_ACTIONS",
    "OBS_SIZE", "RULE_KEYS", "RUN", "Rules", "STAND", "STATE_SIZE", "SingleAgentEnv", "View", "action_text",
    "card_text", "decode", "encode", "env", "parse_card", "raw_env", "single_agent_env",
]
