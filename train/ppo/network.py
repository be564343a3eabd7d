"""The learner's network: a ReLU trunk for the actor, shared with the critic or not, then a linear head each.

Shared (``critic_arch`` empty): one trunk over the policy input serves both heads. The PPO
update is most of a training step's cost on a CPU, and it is linear in the weights a sample
passes through; a shared trunk halves it (measured in ``benchmarks/train_speed.py``), and the
critic's gradient shapes the features the actor reads, as in most Atari-style PPO agents.

Apart (``critic_arch`` set, with ``critic_sees_hands``): the critic has its own trunk and reads
more than the actor: the policy input followed by the hands of the other three seats
(:meth:`allfours_env.vector.VectorGame.other_hands`), as "perfect-training, imperfect-execution" agents for
hidden-card games do (PerfectDou, Suphx). The value of a position then no longer has to average
over the cards the seat cannot see, so advantages are far less noisy; only the actor ships.

Both are SB3 features extractors whose ``net`` is the actor's trunk, so the actor exported for
:class:`agents.policy.PolicyBot` is ``net`` followed by ``action_net``
(:func:`agents.policy.weights_from_policy`), and SB3's MaskablePPO trains them unchanged.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from train.sparse_input import SparseInputLinear


def _mlp(width: int, sizes: list[int]) -> torch.nn.Sequential:
    """ReLU layers; the first reads the mostly-zero policy input and skips its zeros (:mod:`train.sparse_input`)."""
    layers: list[torch.nn.Module] = []
    for i, size in enumerate(sizes):
        layers += [(SparseInputLinear if i == 0 else torch.nn.Linear)(width, size), torch.nn.ReLU()]
        width = size
    return torch.nn.Sequential(*layers)


class Trunk(BaseFeaturesExtractor):
    """ReLU layers of ``sizes`` units over the flat policy input, shared by actor and critic."""

    def __init__(self, observation_space: gym.spaces.Box, sizes: list[int]):
        super().__init__(observation_space, sizes[-1])
        self.net = _mlp(observation_space.shape[0], sizes)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


class Trunks(BaseFeaturesExtractor):
    """The actor's trunk over the first ``actor_inputs`` floats, the critic's over all of them;
    their features side by side (actor first)."""

    def __init__(self, observation_space: gym.spaces.Box, actor_inputs: int, sizes: list[int], critic_sizes: list[int]):
        super().__init__(observation_space, sizes[-1] + critic_sizes[-1])
        self.actor_inputs, self.actor_dim = actor_inputs, sizes[-1]
        self.net = _mlp(actor_inputs, sizes)
        self.critic_net = _mlp(observation_space.shape[0], critic_sizes)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net(observations[:, : self.actor_inputs]), self.critic_net(observations)], dim=1)


class _Split(torch.nn.Module):
    """SB3's mlp_extractor for :class:`Trunks`: each head takes its own trunk's features."""

    def __init__(self, actor_dim: int, critic_dim: int):
        super().__init__()
        self.latent_dim_pi, self.latent_dim_vf = actor_dim, critic_dim

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return features[:, : self.latent_dim_pi]

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return features[:, self.latent_dim_pi :]


def critic_parameters(policy: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters only the value head depends on: the critic's own trunk if it has one, and
    the value layer (a shared trunk is the actor's)."""
    own = getattr(policy.features_extractor, "critic_net", None)
    return [*(own.parameters() if own is not None else ()), *policy.value_net.parameters()]


class SharedPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy, whose critic may have its own Adam rate (``critic_learning_rate``:
    two parameter groups, actor then critic; 0: one group at PPO's rate, as SB3 builds it). The
    groups are built with the policy, so SB3's own ``MaskablePPO.load`` builds the same optimizer."""

    def __init__(self, *args: Any, critic_learning_rate: float = 0.0, **kwargs: Any):
        self.critic_learning_rate = critic_learning_rate
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        if self.critic_learning_rate:
            critic = critic_parameters(self)
            owned = {id(p) for p in critic}
            groups = [
                {"params": [p for p in self.parameters() if id(p) not in owned]},
                {"params": critic, "lr": self.critic_learning_rate},
            ]
            self.optimizer = self.optimizer_class(groups, lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "critic_learning_rate": self.critic_learning_rate}


class SplitPolicy(SharedPolicy):
    """The policy with :class:`Trunks`: the action head reads the actor's trunk, the value head the critic's."""

    def _build_mlp_extractor(self) -> None:
        extractor = self.features_extractor
        self.mlp_extractor = _Split(extractor.actor_dim, extractor.features_dim - extractor.actor_dim)


def policy_class(critic_sizes: list[int]) -> type[MaskableActorCriticPolicy]:
    return SplitPolicy if critic_sizes else SharedPolicy


def policy_kwargs(
    sizes: list[int], critic_sizes: list[int] | None = None, actor_inputs: int = 0, critic_learning_rate: float = 0.0
) -> dict[str, Any]:
    """MaskablePPO's ``policy_kwargs``: a shared trunk of ``sizes``, or with ``critic_sizes`` an
    actor trunk over the first ``actor_inputs`` floats and a critic trunk over all (ReLU,
    recorded as such in the checkpoint's metadata so that a ``.zip`` is read back with the right activation)."""
    if critic_sizes:
        extractor = {
            "features_extractor_class": Trunks,
            "features_extractor_kwargs": {
                "actor_inputs": actor_inputs, "sizes": list(sizes), "critic_sizes": list(critic_sizes),
            },
        }
    else:
        extractor = {"features_extractor_class": Trunk, "features_extractor_kwargs": {"sizes": list(sizes)}}
    rate = {"critic_learning_rate": critic_learning_rate} if critic_learning_rate else {}
    return {**extractor, **rate, "share_features_extractor": True, "net_arch": [], "activation_fn": torch.nn.ReLU}


def set_actor(policy: MaskableActorCriticPolicy, weights: dict[str, Any]) -> None:
    """Give the actor of a policy built with :func:`policy_kwargs` (its trunk and action layer)
    the weights of a policy file: the inverse of :func:`agents.policy.weights_from_policy`. A
    ValueError, with nothing changed, if the sizes differ."""
    linears = [m for m in policy.features_extractor.net if isinstance(m, torch.nn.Linear)] + [policy.action_net]
    names = [f"w{i}" for i in range(len(linears) - 1)] + ["w_out"]
    for name, layer in zip(names, linears):
        given = tuple(weights[name].shape[::-1]) if name in weights else None
        if given != tuple(layer.weight.shape):
            raise ValueError(f"the policy's {name} is {tuple(layer.weight.shape[::-1])}, the weights' {given}")
    with torch.no_grad():
        for name, layer in zip(names, linears):
            layer.weight.copy_(torch.from_numpy(weights[name].T.astype("float32")))
            layer.bias.copy_(torch.from_numpy(weights[name.replace("w", "b", 1)].astype("float32")))
