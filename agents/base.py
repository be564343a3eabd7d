"""The bot protocol and ``make(spec)``.

A bot is built once, may be told that a match starts (``reset(seed)``), and answers
``act(observation) -> action id`` where ``observation`` is exactly what ``env.observe(agent)``
returns: ``{"observation": float32[OBS_SIZE], "action_mask": int8[56]}``. Bots see nothing else; they
read the observation through :func:`allfours_env.decode`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

Observation = dict[str, np.ndarray]


@runtime_checkable
class Bot(Protocol):
    name: str

    def reset(self, seed: int | None = None) -> None:
        """A match starts; ``seed`` makes any randomness of the bot reproducible."""

    def act(self, observation: Observation) -> int:
        """The action id (0..55) to take; it must be legal under ``observation["action_mask"]``."""


_REGISTRY: dict[str, Callable[[], Bot]] = {}


def register(name: str, factory: Callable[[], Bot]) -> None:
    _REGISTRY[name] = factory


def known_bots() -> list[str]:
    from . import builtin  # noqa: F401  (registers the built-in bots)

    return sorted(_REGISTRY)


def make(spec: str) -> Bot:
    """A bot from a short name (``known_bots()``) or a path to a trained policy (``.zip`` or ``.npz``).

    Unknown names raise ValueError listing the known ones; a missing policy file raises
    FileNotFoundError and a damaged, hostile or foreign one ``agents.policy.CheckpointError``
    (a ValueError). Loading a policy file runs no code from it (see :mod:`agents.policy`).
    """
    names = known_bots()
    if spec in _REGISTRY:
        return _REGISTRY[spec]()
    if Path(spec).suffix in (".zip", ".npz"):
        from .policy import PolicyBot

        return PolicyBot.from_file(spec)
    raise ValueError(f"unknown bot {spec!r}; known bots: {', '.join(names)}, or a path to a policy .zip or .npz")
