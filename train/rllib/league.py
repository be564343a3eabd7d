"""The league: who plays the other team against ``main``, inside the vector env.

In every match ``main`` (the trained module) plays one team, drawn by the env, and the league
the other: ``main``'s latest weights with probability ``self_play``, else one of
``league_size`` frozen snapshots drawn uniformly (both draws from the table's generator, so a
seeded reset replays them). A :class:`NetworkOpponent` answers every table that drew it in one
forward pass (:class:`agents.policy.PolicyBot`'s, in numpy), sampling from its masked softmax.

The trainer owns the weights (:class:`LeagueWeights`): it sends ``main``'s to every env runner
after each training iteration, and every ``snapshot_every`` environment steps copies ``main``
over the oldest snapshot; the snapshots start as copies of the initial ``main``, and are saved
in every checkpoint (plain arrays), so a resumed run continues with the same league.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.policy import MAX_MEMBER_BYTES, PolicyBot, Weights, batch_inputs, choose
from agents.shared.npz_file import read_npz

LEAGUE_FILE = "league.npz"  # in each checkpoint: the snapshots' weights


class NetworkOpponent:
    """A network that answers many tables at once, sampling each action (``act_batch``)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.policy: PolicyBot | None = None

    def set_weights(self, weights: Weights) -> None:
        self.policy = PolicyBot(weights, name="a league network")

    def reset(self, seed: int | None = None) -> None:
        """Shared by every table that drew it: its draws come from the league's generator."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.policy is None:
            raise RuntimeError("the league has no weights yet: the trainer sends them before sampling")
        logits = self.policy.logits(batch_inputs(self.policy.layout, observations, masks))
        return choose(logits, masks, self.rng.random(len(observations)))


class League:
    """The env's opponent source: a function ``rng -> bot`` (see :func:`agents.vector_env`)."""

    def __init__(self, seed: int, self_play: float, size: int):
        rng = np.random.default_rng(seed)
        self.self_play = self_play
        self.main = NetworkOpponent(rng)
        self.snapshots = [NetworkOpponent(rng) for _ in range(size)]

    def __call__(self, rng: np.random.Generator) -> NetworkOpponent:
        if rng.random() < self.self_play:
            return self.main
        return self.snapshots[int(rng.integers(len(self.snapshots)))]

    def set_weights(self, main: Weights, snapshots: dict[int, Weights]) -> None:
        self.main.set_weights(main)
        for slot, weights in snapshots.items():
            self.snapshots[slot].set_weights(weights)


class LeagueWeights:
    """The trainer's copy of the league (see the module docstring)."""

    def __init__(self, size: int, snapshot_every: int):
        self.size, self.snapshot_every = size, snapshot_every
        self.snapshots: list[Weights] = []

    def update(self, main: Weights, steps_before: int, steps: int) -> dict[int, Weights]:
        """The snapshots that change after training from ``steps_before`` to ``steps``: all of
        them at the start, then one slot every ``snapshot_every`` steps."""
        if not self.snapshots:
            self.snapshots = [main] * self.size
            return dict(enumerate(self.snapshots))
        taken = steps // self.snapshot_every  # snapshots due so far
        if taken > steps_before // self.snapshot_every:
            slot = (taken - 1) % self.size
            self.snapshots[slot] = main
            return {slot: main}
        return {}

    def save(self, folder: Path) -> None:
        arrays = {
            f"{slot}/{name}": value for slot, weights in enumerate(self.snapshots) for name, value in weights.items()
        }
        path = folder / LEAGUE_FILE
        with path.open("wb") as handle:  # within a checkpoint folder that is written whole, then renamed
            np.savez(handle, **arrays)

    def load(self, folder: Path) -> None:
        """The snapshots of a checkpoint (plain arrays; nothing is unpickled)."""
        snapshots: list[dict[str, Any]] = [{} for _ in range(self.size)]
        for key, value in read_npz(folder / LEAGUE_FILE, self.size * MAX_MEMBER_BYTES).items():
            slot, name = key.split("/", 1)
            snapshots[int(slot)][name] = value
        if any(not weights for weights in snapshots):
            raise ValueError(f"{LEAGUE_FILE} holds fewer than the league's {self.size} snapshots")
        self.snapshots = snapshots
