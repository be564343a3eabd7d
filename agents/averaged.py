"""A policy network averaged over suit relabellings (and over several networks).

Suits have no order (docs/rules.md A1.1), so a position with its suits relabelled plays the same
(:func:`allfours_env.observation.suit_relabelling`); a network fitted with relabelled copies of its
labels is still not exactly invariant, and its errors differ from one relabelling to the next.
:class:`AveragedPolicy` acts by the mean masked log-softmax of its networks over the given
relabellings: over all 24 it is exactly invariant. It plays in ``benchmarks/averaged_policy.py``,
and it is the prior that ``python -m train.distil --prior-suits`` distils into one network.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from allfours_env.observation import suit_relabelling

from .base import Observation
from .policy import PolicyBot, batch_inputs, choose

ALL_RELABELLINGS = list(itertools.permutations(range(4)))
RELABELLINGS = {  # how many relabellings: which
    24: ALL_RELABELLINGS,
    6: [p for p in ALL_RELABELLINGS if p[0] == 0],  # those that keep the first suit in place
    1: [(0, 1, 2, 3)],  # none: the network itself
}


class AveragedPolicy:
    """Acts by the mean masked log-softmax of ``networks``, each over the relabellings ``suits``."""

    def __init__(self, networks: Sequence[PolicyBot], suits: Sequence[tuple[int, ...]]):
        self.networks = list(networks)
        self.relabellings = [suit_relabelling(s) for s in suits]
        self.name = f"averaged({len(self.networks)} networks x {len(suits)} relabellings)"

    def log_probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The mean log-probability (n, 56) of each legal action; 0 where illegal."""
        legal = masks > 0
        total = np.zeros(masks.shape)
        for obs_index, action_index in self.relabellings:
            relabelled, relabelled_mask = observations[:, obs_index], masks[:, action_index]
            for net in self.networks:
                logits = net.logits(batch_inputs(net.layout, relabelled, relabelled_mask)).astype(np.float64)
                logits = np.where(relabelled_mask > 0, logits, -np.inf)
                logits -= logits.max(axis=1, keepdims=True)
                log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
                back = np.empty_like(log_p)
                back[:, action_index] = log_p  # action a of the relabelled position is action_index[a] here
                total += np.where(legal, back, 0.0)
        return total / (len(self.relabellings) * len(self.networks))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks)
        return choose(self.log_probabilities(np.asarray(observations), masks).astype(np.float32), masks, None)

    def act(self, observation: Observation) -> int:
        mask = np.asarray(observation["action_mask"])[None]
        return int(self.act_batch(np.asarray(observation["observation"])[None], mask)[0])

    def reset(self, seed: int | None = None) -> None:
        pass
