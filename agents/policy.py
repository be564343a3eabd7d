"""A trained policy as a bot: the actor network of a MaskablePPO policy, run in numpy.

The network reads the observation followed by the derived features of :mod:`agents.features`.

Weights come from an SB3 checkpoint (``.zip``, read with sb3-contrib and torch) or from the
small ``.npz`` export that ships in the package (numpy only). Acting is a forward pass of the
actor MLP and the best legal action (``deterministic=True``) or a sample from the masked
softmax, using the bot's own seeded generator.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env import N_ACTIONS

from .base import Observation
from .features import INPUT_SIZE, policy_input

def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"tanh": np.tanh, "relu": _relu}
Weights = dict[str, np.ndarray]  # "w0", "b0", ..., "w_out", "b_out", "activation"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read as a policy."""


def weights_from_policy(policy: Any) -> Weights:
    """The actor MLP of an SB3 ``MaskableActorCriticPolicy`` as numpy arrays (float32)."""
    import torch.nn as nn

    linears = [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    activations = {type(m).__name__.lower() for m in policy.mlp_extractor.policy_net if not isinstance(m, nn.Linear)}
    if activations - set(ACTIVATIONS) or len(activations) > 1:
        raise CheckpointError(f"unsupported activation(s) {activations}; supported: {list(ACTIVATIONS)}")
    out: Weights = {"activation": np.array(activations.pop() if activations else "tanh")}
    for i, layer in enumerate(linears):
        out[f"w{i}"] = layer.weight.detach().cpu().numpy().T.astype(np.float32)
        out[f"b{i}"] = layer.bias.detach().cpu().numpy().astype(np.float32)
    out["w_out"] = policy.action_net.weight.detach().cpu().numpy().T.astype(np.float32)
    out["b_out"] = policy.action_net.bias.detach().cpu().numpy().astype(np.float32)
    return out


def load_weights(path: str | Path) -> Weights:
    """Policy weights from an SB3 ``.zip`` checkpoint or an ``.npz`` export, with clear errors."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no policy file at {str(path)!r}")
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                weights = {k: data[k] for k in data.files}
        except (OSError, ValueError, zipfile.BadZipFile) as err:
            raise CheckpointError(f"{path} is not a readable policy export (.npz): {err}") from None
    elif path.suffix == ".zip":
        try:
            from sb3_contrib import MaskablePPO
        except ImportError:
            raise CheckpointError(f"reading {path} needs the training extras: pip install -e '.[train]'") from None
        try:
            model = MaskablePPO.load(path, device="cpu")
        except Exception as err:  # SB3 raises many kinds on a damaged zip
            raise CheckpointError(f"{path} is not a readable MaskablePPO checkpoint: {type(err).__name__}: {err}") from None
        weights = weights_from_policy(model.policy)
    else:
        raise CheckpointError(f"{path}: a policy file is an SB3 checkpoint .zip or a policy export .npz")
    _check_weights(weights, path)
    return weights


def _check_weights(weights: Weights, source: Any) -> None:
    hidden = sorted(k for k in weights if k.startswith("w") and k != "w_out")
    try:
        size = INPUT_SIZE
        for i in range(len(hidden)):
            w, b = weights[f"w{i}"], weights[f"b{i}"]
            assert w.shape[0] == size and b.shape == (w.shape[1],)
            size = w.shape[1]
        assert weights["w_out"].shape == (size, N_ACTIONS) and weights["b_out"].shape == (N_ACTIONS,)
        assert str(weights["activation"]) in ACTIVATIONS
    except (AssertionError, KeyError) as err:
        raise CheckpointError(
            f"{source}: the weights do not form an actor for {INPUT_SIZE} inputs and {N_ACTIONS} actions ({err!r})"
        ) from None


def save_weights(weights: Weights, path: str | Path) -> None:
    """Write an ``.npz`` export atomically (a temp file beside it, then a rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **weights)
    tmp.replace(path)


class PolicyBot:
    """Acts with a trained actor network. See the module docstring."""

    def __init__(self, weights: Weights, name: str = "policy", deterministic: bool = True, seed: int | None = None):
        _check_weights(weights, name)
        n_hidden = sum(1 for k in weights if k.startswith("b") and k != "b_out")
        self._layers = [(weights[f"w{i}"], weights[f"b{i}"]) for i in range(n_hidden)]
        self._out = (weights["w_out"], weights["b_out"])
        self._activation = ACTIVATIONS[str(weights["activation"])]
        self.name = name
        self.deterministic = deterministic
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> PolicyBot:
        return cls(load_weights(path), name=kwargs.pop("name", str(path)), **kwargs)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Action logits for a policy input (see :func:`agents.features.policy_input`)."""
        for w, b in self._layers:
            x = self._activation(x @ w + b)
        return x @ self._out[0] + self._out[1]

    def act(self, observation: Observation) -> int:
        mask = observation["action_mask"]
        logits = np.where(mask > 0, self.logits(policy_input(observation["observation"], mask)), -np.inf)
        if not np.isfinite(logits).any():
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        if self.deterministic:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        return int(self._rng.choice(len(p), p=p / p.sum()))
