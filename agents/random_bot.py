"""Uniform over the legal actions, from its own seeded generator."""

from __future__ import annotations

import numpy as np

from .base import Observation


class RandomBot:
    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, observation: Observation) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if len(legal) == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        return int(legal[self._rng.integers(len(legal))])
