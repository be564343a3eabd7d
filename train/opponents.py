"""The opponent pool: the current policy, frozen snapshots of earlier policies, and named bots.

Each env process holds a pool. The trainer sends it the current actor weights after every
update and, every ``snapshot_every`` steps, a copy to keep as a snapshot (the oldest dropped
past ``max_snapshots``). At every reset the env draws one opponent with the configured weights.
"""

from __future__ import annotations

import numpy as np

import agents
from agents.base import Bot
from agents.policy import PolicyBot, Weights

SELF, SNAPSHOT = "self", "snapshot"


class OpponentPool:
    def __init__(self, weights: dict[str, float], max_snapshots: int):
        self.names = list(weights)
        total = sum(weights.values())
        self.probs = np.array([weights[n] / total for n in self.names])
        self.max_snapshots = max_snapshots
        self.current: Weights | None = None
        self.snapshots: list[Weights] = []
        for name in self.names:
            if name not in (SELF, SNAPSHOT):
                agents.make(name)  # fail now, with the list of bots, not in the middle of training

    def update(self, current: Weights, snapshot: bool = False) -> None:
        self.current = current
        if snapshot:
            self.snapshots = (self.snapshots + [current])[-self.max_snapshots :]

    def __call__(self, rng: np.random.Generator) -> Bot:
        name = self.names[int(rng.choice(len(self.names), p=self.probs))]
        if name == SNAPSHOT and self.snapshots:
            return PolicyBot(self.snapshots[int(rng.integers(len(self.snapshots)))], name=SNAPSHOT, deterministic=False)
        if name in (SELF, SNAPSHOT):  # before the first snapshot, a snapshot draw plays the current policy
            if self.current is None:
                return agents.make("random")
            return PolicyBot(self.current, name=SELF, deterministic=False)
        return agents.make(name)
