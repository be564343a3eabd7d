"""The trained actor of an RLlib PPO module as the numpy policy file :func:`agents.make` loads.

RLlib's default PPO module computes the action logits as ``pi(actor_encoder(x))``: the actor
encoder is an MLP whose every layer (the last one too) is followed by the activation, and the
``pi`` head (``head_fcnet_hiddens=[]``) is one linear layer. That is exactly the network
:class:`agents.policy.PolicyBot` runs, so the export is a renaming of the arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agents.policy import ACTIVATION_KEY, LAYOUT_KEY, CheckpointError, Weights, check_weights

ACTOR_PREFIX = "encoder.actor_encoder.net.mlp."
HEAD_PREFIX = "pi.net.mlp."


def _layer_names(state: Mapping[str, Any], prefix: str) -> list[str]:
    """The names of the linear layers under ``prefix``, in order (``<prefix><i>``, without ``.weight``)."""
    indices = sorted({int(k[len(prefix) :].split(".")[0]) for k in state if k.startswith(prefix)})
    return [f"{prefix}{i}" for i in indices]


def _linear_layers(state: Mapping[str, Any], prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (weight, bias) of each linear layer under ``prefix``, in order (torch weights are (out, in))."""
    names = _layer_names(state, prefix)
    return [(np.asarray(state[f"{name}.weight"]), np.asarray(state[f"{name}.bias"])) for name in names]


def weights_from_module_state(state: Mapping[str, Any], activation: str, layout: int) -> Weights:
    """Our weight names (see :mod:`agents.policy`) from the state dict of a masked PPO module
    whose observations are the policy inputs of input layout ``layout``."""
    hidden = _linear_layers(state, ACTOR_PREFIX)
    head = _linear_layers(state, HEAD_PREFIX)
    if not hidden or len(head) != 1:
        raise CheckpointError(
            f"expected an actor encoder and a one-layer pi head, got {len(hidden)} encoder and {len(head)} head layers"
        )
    out: Weights = {ACTIVATION_KEY: np.array(activation), LAYOUT_KEY: np.array(layout)}
    for i, (w, b) in enumerate(hidden):
        out[f"w{i}"], out[f"b{i}"] = w.T.astype(np.float32), b.astype(np.float32)
    out["w_out"], out["b_out"] = head[0][0].T.astype(np.float32), head[0][1].astype(np.float32)
    check_weights(out, "the RLlib module")
    return out


def module_state_from_weights(weights: Weights, state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` (a masked PPO module's) with its actor replaced by ``weights`` (ours, see
    :func:`weights_from_module_state`, its inverse); a CheckpointError if the shapes differ."""
    hidden = _layer_names(state, ACTOR_PREFIX)
    ours = [(f"w{i}", f"b{i}") for i in range(len(hidden))] + [("w_out", "b_out")]
    theirs = hidden + _layer_names(state, HEAD_PREFIX)
    out = dict(state)
    for (w, b), name in zip(ours, theirs, strict=True):
        if w not in weights or np.shape(weights[w]) != np.shape(state[f"{name}.weight"])[::-1]:
            raise CheckpointError(f"the policy's {w} does not fit the module's {name}.weight")
        out[f"{name}.weight"] = np.ascontiguousarray(weights[w].T, dtype=np.float32)
        out[f"{name}.bias"] = np.asarray(weights[b], dtype=np.float32)
    return out
