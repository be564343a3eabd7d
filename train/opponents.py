"""The opponent pool: the current policy, frozen snapshots of earlier policies, and named bots.

The trainer sends the pool the current actor weights after every update and, every
``snapshot_every`` steps, a copy to keep as a snapshot (the oldest dropped past
``max_snapshots``). When a table starts a match it draws an opponent with the configured weights
(:meth:`OpponentPool.draw`): an :class:`Opponent` names a kind ("self", "snapshot" or a bot name)
and, for a snapshot, which one. Snapshots have ids that never change, so a table keeps playing
the snapshot it drew even after newer ones push it out of the pool.

Networks act in batches (:meth:`OpponentPool.act`): every table whose opponent is the same
network goes through one forward pass (:class:`agents.policy.PolicyBot`'s, in numpy) and samples
its action from the masked softmax with :func:`agents.policy.choose`, as a non-deterministic
PolicyBot with the same weights and draws would.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import agents
from agents.policy import ADVISED_LAYOUT, COMPACT_LAYOUT, PolicyBot, Weights, batch_inputs, choose

from .config import SELF, SNAPSHOT
from .state_checks import count, keys, weights_like

MAX_SNAPSHOT_ID = 2**62  # (ids count snapshots: a run takes one per update at most)


class Opponent(NamedTuple):
    kind: str  # SELF, SNAPSHOT, or a bot name for agents.make
    snapshot: int = -1  # the snapshot's id, for SNAPSHOT


class Network:
    """An exported actor in the pool: the weights (kept for checkpoints) and the policy that runs
    them (:class:`agents.policy.PolicyBot`'s forward pass, the one the project has)."""

    def __init__(self, weights: Weights):
        self.weights = weights
        self.policy = PolicyBot(weights, name="the opponent pool")
        if self.policy.layout not in (COMPACT_LAYOUT, ADVISED_LAYOUT):
            raise ValueError("the opponent pool plays policies of the compact or advised input layouts")
        self.layout = self.policy.layout

    def logits(self, inputs: np.ndarray) -> np.ndarray:
        return self.policy.logits(inputs)


class OpponentPool:
    def __init__(self, weights: dict[str, float], max_snapshots: int):
        self.names = list(weights)
        total = sum(weights.values())
        self.probs = np.array([weights[n] / total for n in self.names])
        self.max_snapshots = max_snapshots
        self.current: Network | None = None
        self.snapshots: dict[int, Network] = {}  # id -> network, the newest max_snapshots
        self.retired: dict[int, Network] = {}  # pushed out, but some table may still play it
        self.next_id = 0
        for name in self.names:
            if name not in (SELF, SNAPSHOT):
                agents.make(name)  # fail now, with the list of bots, not in the middle of training

    def update(self, current: Weights, snapshot: bool = False) -> None:
        self.current = Network(current)
        if snapshot:
            self.snapshots[self.next_id] = self.current
            self.next_id += 1
            while len(self.snapshots) > self.max_snapshots:
                oldest = min(self.snapshots)
                self.retired[oldest] = self.snapshots.pop(oldest)

    def draw(self, rng: np.random.Generator) -> Opponent:
        """An opponent for a new match; before the first snapshot a snapshot draw plays the current policy."""
        name = self.names[int(rng.choice(len(self.names), p=self.probs))]
        if name == SNAPSHOT and self.snapshots:
            ids = sorted(self.snapshots)
            return Opponent(SNAPSHOT, ids[int(rng.integers(len(ids)))])
        if name in (SELF, SNAPSHOT):
            return Opponent(SELF)
        return Opponent(name)

    def network(self, opponent: Opponent) -> Network:
        if opponent.kind == SELF:
            if self.current is None:
                raise RuntimeError("the pool has no policy yet: call update() with the learner's weights first")
            return self.current
        return self.snapshots.get(opponent.snapshot) or self.retired[opponent.snapshot]

    def forget_retired(self, in_use: set[int]) -> None:
        """Drop the retired snapshots no table plays any more."""
        self.retired = {i: net for i, net in self.retired.items() if i in in_use}

    def get_state(self) -> dict:
        """The pool's networks (as numpy weights) and snapshot ids, for checkpoints."""
        return {
            "current": None if self.current is None else self.current.weights,
            "snapshots": {i: net.weights for i, net in self.snapshots.items()},
            "retired": {i: net.weights for i, net in self.retired.items()},
            "next_id": self.next_id,
        }

    def set_state(self, state: dict, actor: Weights) -> None:
        """Continue from a :meth:`get_state`; a ValueError (or KeyError, TypeError) names what
        does not fit, and nothing changes then. Each network must have the shapes of ``actor``
        (the learner's weights) and pass a policy file's checks; the snapshots must be the newest
        ``max_snapshots`` ids below ``next_id``, the retired ones older."""
        keys("the opponent pool's state", state, ("current", "snapshots", "retired", "next_id"))
        next_id = count("the pool's next_id", state["next_id"], 0, MAX_SNAPSHOT_ID)
        current = _network("the pool's current policy", state["current"], actor)
        snapshots, retired = (
            {count(f"{key} id", i, 0, next_id - 1): _network(f"snapshot {i}", w, actor) for i, w in _items(key, state)}
            for key in ("snapshots", "retired")
        )
        kept = list(range(max(next_id - self.max_snapshots, 0), next_id))
        if sorted(snapshots) != kept:
            raise ValueError(
                f"the pool keeps the newest {self.max_snapshots} snapshots below next_id {next_id}, "
                f"got ids {sorted(snapshots)[:20]}"
            )
        if any(i >= kept[0] for i in retired):
            raise ValueError("retired snapshots must be older than the ones kept")
        self.current, self.snapshots, self.retired, self.next_id = current, snapshots, retired, next_id

    def act(
        self, opponent: Opponent, observations: np.ndarray, masks: np.ndarray, uniforms: np.ndarray
    ) -> np.ndarray:
        """The actions of the network ``opponent`` at n tables: a sample per row, at ``uniforms``."""
        network = self.network(opponent)
        return choose(network.logits(batch_inputs(network.layout, observations, masks)), masks, uniforms)


def _items(name: str, state: dict) -> list[tuple[Any, Any]]:
    """The (id, weights) of the pool state's ``name`` (snapshots or retired)."""
    if not isinstance(state[name], dict):
        raise ValueError(f"the pool's {name} must be a dict of id: weights, got {type(state[name]).__name__}")
    return list(state[name].items())


def _network(name: str, weights: Any, actor: Weights) -> Network:
    """A network of ``weights``, if they are shaped as ``actor`` and pass a policy file's checks."""
    return Network(weights_like(name, weights, actor))
