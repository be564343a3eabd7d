"""The bot protocol and ``make(spec)``.

A bot is built once, may be told that a match starts (``reset(seed)``), and answers
``act(observation) -> action id`` where ``observation`` is exactly what ``env.observe(agent)``
returns: ``{"observation": float32[OBS_SIZE], "action_mask": int8[56]}``. Bots see nothing else; they
read the observation through :func:`allfours_env.decode`. A bot without memory may also offer
``act_batch(observations, masks) -> actions`` (n rows at once, each what ``act`` would answer):
training and search then ask it for every table in one call. A bot that draws random numbers
offers ``get_state()`` / ``set_state(state)`` with plain data, so that a training checkpoint
continues it exactly (:class:`SeededBot` does).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env.match import Bot, Observation, bot_name, sees_hands  # the protocol, where the match loop lives

__all__ = [
    "Bot", "Observation", "SeededBot", "known_bots", "legal_actions", "make", "player_bots", "refuse_sighted",
    "register", "single_agent_env", "vector_env",
]  # fmt: skip


class SeededBot:
    """Base of the bots that draw from their own generator: seeded when built, re-seeded by
    ``reset(seed)`` (a None seed keeps the generator going)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def get_state(self) -> dict:
        """The generator's state as plain data (for training checkpoints)."""
        return {"rng": self._rng.bit_generator.state}

    def set_state(self, state: dict) -> None:
        """Continue from a :meth:`get_state`; a ValueError if it is not one, and nothing changes."""
        rng = np.random.default_rng()
        try:
            rng.bit_generator.state = state["rng"]
        except (TypeError, KeyError, ValueError) as err:
            raise ValueError(f"not a bot state ({type(err).__name__}: {err})") from None
        self._rng = rng


def legal_actions(observation: Observation) -> np.ndarray:
    """The legal action ids of an observation's mask; a ValueError if there is none."""
    legal = np.flatnonzero(observation["action_mask"])
    if len(legal) == 0:
        raise ValueError("no legal action in the mask: this agent is not the one to act")
    return legal


def act_rows(bot: Bot, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``bot``'s action for each row of ``observations`` and boolean ``masks``: in one call if it
    is a batch bot, else row by row with what ``env.observe`` would give it."""
    if hasattr(bot, "act_batch"):
        return np.asarray(bot.act_batch(observations, masks), dtype=np.int64)
    asked = zip(observations, masks.view(np.int8))
    return np.array([bot.act({"observation": o, "action_mask": m}) for o, m in asked], dtype=np.int64)


_REGISTRY: dict[str, Callable[[], Bot]] = {}
_SIGHTED: set[str] = set()  # names of the bots that see every hand (the oracle): evaluation only


def register(name: str, factory: Callable[[], Bot], *, sees_hands: bool = False) -> None:
    """Make ``name`` a bot of :func:`make`; ``sees_hands`` for a bot that reads every hand, which
    evaluation may seat and a person's table may not (:func:`player_bots`)."""
    _REGISTRY[name] = factory
    if sees_hands:
        _SIGHTED.add(name)


def known_bots() -> list[str]:
    from . import builtin  # noqa: F401  (registers the built-in bots)

    return sorted(_REGISTRY)


def player_bots() -> list[str]:
    """The known bots that play from their own observation: every one but those that see every
    hand (the ``oracle``), which no place where a person plays may seat."""
    return [name for name in known_bots() if name not in _SIGHTED]


def refuse_sighted(bot: Bot, where: str) -> Bot:
    """``bot``, or a ValueError if it sees every hand (the oracle): ``where`` a person plays."""
    if sees_hands(bot):
        raise ValueError(
            f"bot {bot_name(bot)!r} sees every hand: a ceiling for evaluation (python -m eval), "
            f"never a player {where}; choose one of {', '.join(player_bots())}"
        )
    return bot


def make(spec: str | os.PathLike) -> Bot:
    """A bot from a short name (``known_bots()``), a name with options (``"search:worlds=16,ms=20"``),
    a path to a trained policy (``.zip`` or ``.npz``), or a program outside the process
    (``"exec:python3 my_bot.py"``, :mod:`agents.program`; never registered, so the web page never seats one).

    Unknown names or options raise ValueError listing the known ones; a missing policy file raises
    FileNotFoundError and a damaged, hostile or foreign one ``agents.policy.CheckpointError``
    (a ValueError). Loading a policy file runs no code from it (see :mod:`agents.policy`).
    """
    names = known_bots()
    if isinstance(spec, os.PathLike):  # a policy file's Path
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise ValueError(
            f"a bot spec is text (a name from {', '.join(names)}, with options as NAME:KEY=VALUE,..., or a path to a "
            f"policy .zip or .npz), got {type(spec).__name__} {spec!r:.40}"
        )
    from .program import PREFIX, ProgramBot, is_program_spec

    if is_program_spec(spec):
        return ProgramBot(spec)
    name, sep, option_text = spec.partition(":")
    if name in _REGISTRY and (sep or spec == name):
        return build(name, _REGISTRY[name], parse_options(spec, option_text) if sep else {})
    if Path(spec).suffix in (".zip", ".npz"):
        from .policy import PolicyBot

        return PolicyBot.from_file(spec)
    raise ValueError(
        f"unknown bot {spec!r}; known bots: {', '.join(names)} (options as NAME:KEY=VALUE,...), "
        f"a path to a policy .zip or .npz, or {PREFIX}:COMMAND (a program outside, docs/outside_bots.md)"
    )


def single_agent_env(opponents: Any, **kwargs: Any) -> Any:
    """:func:`allfours_env.single_agent_env` with bots named as :func:`make` takes them
    (``"rule_based"``, ``"search:worlds=16"``, a policy file; each seat its own instance),
    besides bot instances and functions ``rng -> bot``; every keyword argument is the env's."""
    from allfours_env.single import SingleAgentEnv

    return SingleAgentEnv(opponents, make_bot=make, **kwargs)


def vector_env(num_envs: int, opponents: Any, *, layout: int | None = None, **kwargs: Any) -> Any:
    """:func:`allfours_env.vector_env` with bots named as :func:`make` takes them, and with
    ``layout`` (an input layout of :mod:`agents.policy`, e.g. 3, the advised input the shipped
    policies read) the observations given as that layout's policy inputs instead of the raw
    observation; every other keyword argument is the env's (``help(allfours_env.gym_vector)``)."""
    from allfours_env.gym_vector import AllFoursVectorEnv

    policy_input = None
    if layout is not None:
        from functools import partial

        from .policy import INPUT_SIZES, batch_inputs

        if layout not in INPUT_SIZES:
            raise ValueError(f"layout must be one of the input layouts {sorted(INPUT_SIZES)} or None, got {layout!r}")
        policy_input = (INPUT_SIZES[layout], partial(batch_inputs, layout))
    return AllFoursVectorEnv(num_envs, opponents, make_bot=make, policy_input=policy_input, **kwargs)


def build(name: str, factory: Callable[..., Bot], options: dict[str, Any]) -> Bot:
    """``factory(**options)``, the bot ``name``; a ValueError naming the options the factory takes (its
    keyword parameters) if it does not take one of ``options``."""
    try:
        return factory(**options)
    except TypeError as err:  # an option the bot does not take
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        names = [p.name for p in inspect.signature(factory).parameters.values() if p.kind in kinds]
        takes = f"its options are {', '.join(names)}" if names else "it takes no options"
        raise ValueError(f"bot {name!r} does not take the options {sorted(options)} ({err}); {takes}") from None


def parse_options(spec: str, text: str) -> dict[str, int | float | bool | str]:
    """``"worlds=16,ms=20.5"`` -> ``{"worlds": 16, "ms": 20.5}`` (ints, floats, true/false, else text)."""
    options: dict[str, int | float | bool | str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bot options are KEY=VALUE separated by commas, got {spec!r}")
        options[key.strip()] = _option_value(value.strip())
    return options


def _option_value(text: str) -> int | float | bool | str:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
