"""The action-masking PPO RLModule: RLlib's own example module, with torch (and numpy's BLAS) pinned to one thread.

:class:`ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule`
reads the ``{"observations", "action_mask"}`` dict of :mod:`.env`, runs the default PPO
networks on the observations and adds ``log(mask)`` (clamped to the lowest float) to the action
logits in exploration, inference and training, so illegal actions get zero probability
everywhere, including in PPO's loss.
"""

from __future__ import annotations

import torch
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

from agents.shared.processes import one_blas_thread

ACTIVATION = "relu"  # one that agents.policy can run in numpy


class MaskedPPOModule(ActionMaskingTorchRLModule):
    def setup(self) -> None:
        torch.set_num_threads(1)  # every process that builds a module: learner and env runners
        one_blas_thread()
        super().setup()


def module_spec(net_arch: list[int]) -> RLModuleSpec:
    """A masked PPO module with hidden layers ``net_arch`` (actor and critic alike, not shared)."""
    return RLModuleSpec(
        module_class=MaskedPPOModule,
        model_config=DefaultModelConfig(
            fcnet_hiddens=list(net_arch), fcnet_activation=ACTIVATION, head_fcnet_hiddens=[], vf_share_layers=False
        ),
    )
