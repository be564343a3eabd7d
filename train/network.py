"""The learner's network: one trunk shared by the actor and the critic, then a linear head each.

Why shared: the PPO update is most of a training step's cost on a CPU, and it is linear in the
weights a sample passes through. With separate actor and critic MLPs every sample crosses both;
a shared trunk halves the update (measured in ``benchmarks/train_speed.py``), and the critic's
gradient shapes the features the actor reads, as in most Atari-style PPO agents.

The trunk is SB3's features extractor (``share_features_extractor=True``, empty ``net_arch``), so
SB3's MaskablePPO trains it unchanged, and the actor exported for :class:`agents.policy.PolicyBot`
is the trunk followed by ``action_net`` (:func:`agents.policy.weights_from_policy`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class Trunk(BaseFeaturesExtractor):
    """ReLU layers of ``sizes`` units over the flat policy input."""

    def __init__(self, observation_space: gym.spaces.Box, sizes: list[int]):
        super().__init__(observation_space, sizes[-1])
        layers: list[torch.nn.Module] = []
        width = observation_space.shape[0]
        for size in sizes:
            layers += [torch.nn.Linear(width, size), torch.nn.ReLU()]
            width = size
        self.net = torch.nn.Sequential(*layers)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


def policy_kwargs(sizes: list[int]) -> dict[str, Any]:
    """MaskablePPO's ``policy_kwargs`` for a shared trunk of ``sizes`` (ReLU, recorded as such in
    the checkpoint's metadata so that a ``.zip`` is read back with the right activation)."""
    return {
        "features_extractor_class": Trunk,
        "features_extractor_kwargs": {"sizes": list(sizes)},
        "share_features_extractor": True,
        "net_arch": [],
        "activation_fn": torch.nn.ReLU,
    }
