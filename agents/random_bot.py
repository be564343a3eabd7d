"""Uniform over the legal actions, from its own seeded generator."""

from __future__ import annotations

from .base import Observation, SeededBot, legal_actions


class RandomBot(SeededBot):
    name = "random"

    def act(self, observation: Observation) -> int:
        legal = legal_actions(observation)
        return int(legal[self._rng.integers(len(legal))])
