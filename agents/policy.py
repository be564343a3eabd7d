"""A trained policy as a bot: the actor network of a MaskablePPO policy, run in numpy.

The network reads the observation followed by the derived features of :mod:`agents.features`.

Weights come from an SB3 checkpoint (``.zip``) or from the small ``.npz`` export that ships in the
package. Loading either never runs code from the file: the ``.npz`` is read with pickling off,
and from a ``.zip`` only ``policy.pth`` is read, with torch's weights-only loader, plus the JSON
text of ``data`` for the activation name (nothing pickled in it is unpickled). Every array is
checked (names, shapes, dtypes, finite values, a bound on the activations) before use, an SB3
tensor before it is even copied (a dense float whose values its file holds); a damaged file of
either kind is a :class:`CheckpointError` that names it (tests/test_policy_fuzz.py).
Acting is a forward pass of the actor
MLP and the best legal action (``deterministic=True``) or a sample from the masked softmax, using
the bot's own seeded generator.

Input layouts: an export records under ``obs_layout`` which policy input its network reads.
Layout 3 (what ``python -m train`` writes with its default ``policy_input: advised``) is the
compact input followed by the expert's advice (:func:`agents.features.advised_input`); layout 2
is the compact input alone (:func:`agents.features.compact_input`); layout 1 is the whole observation followed by every feature
(:func:`agents.features.policy_input`). Layout 4 (``policy_input: history``) is layout 3 followed by
the deal's public history (:func:`agents.features.history_input`); :func:`widen` turns a layout-3
network into one of layout 4 that plays the same. An ``.npz`` without a layout (exported before layouts were
recorded; none ships) is refused. A ``.zip`` records no layout: it is recognised by its input size.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env import N_ACTIONS, OBS_SIZE

from .base import Observation, SeededBot
from .features import (
    ADVISED_SIZE,
    COMPACT_SIZE,
    HISTORY_SIZE,
    N_FEATURES,
    batch_advised_input,
    batch_compact_input,
    batch_history_input,
    batch_policy_input,
)
from .shared.atomic_file import atomic_path
from .shared.npz_file import DAMAGED, read_npz, shorten
from .shared.regular_file import open_regular

OBS_LAYOUT = 1  # the whole observation (OBS_SIZE floats), then the features
COMPACT_LAYOUT = 2  # agents.features.compact_input
ADVISED_LAYOUT = 3  # agents.features.advised_input: the compact input, then the expert's advice
HISTORY_LAYOUT = 4  # agents.features.history_input: the advised input, then the deal's public history
INPUT_SIZES = {
    OBS_LAYOUT: OBS_SIZE + N_FEATURES, COMPACT_LAYOUT: COMPACT_SIZE, ADVISED_LAYOUT: ADVISED_SIZE,
    HISTORY_LAYOUT: HISTORY_SIZE,
}  # fmt: skip
BATCH_INPUTS = {
    OBS_LAYOUT: batch_policy_input, COMPACT_LAYOUT: batch_compact_input, ADVISED_LAYOUT: batch_advised_input,
    HISTORY_LAYOUT: batch_history_input,
}  # fmt: skip
# a config's policy_input -> input layout
POLICY_INPUTS = {"compact": COMPACT_LAYOUT, "advised": ADVISED_LAYOUT, "history": HISTORY_LAYOUT}
EXTENDS = {HISTORY_LAYOUT: ADVISED_LAYOUT}  # layout -> the layout whose input its own begins with
LAYOUT_KEY = "obs_layout"
ACTIVATION_KEY = "activation"
MAX_MEMBER_BYTES = 256 * 2**20  # refuse larger members of a policy file (a zip bomb, not a policy)
# Every policy input lies in [-1, 1] (agents.features); a network whose activations could pass
# MAX_ACTIVATION for some such input is refused at load, far below float32's 3.4e38 overflow.
INPUT_BOUND = 1.0
MAX_ACTIVATION = 1e30
SB3_WEIGHTS = "policy.pth"
SB3_DATA = "data"
SB3_ACTOR_PREFIX = "mlp_extractor.policy_net."
SB3_TRUNK_PREFIX = "features_extractor.net."  # a trunk shared by actor and critic (train/ppo/network.py)
SB3_DEFAULT_ACTIVATION = "tanh"  # SB3's MlpPolicy default when policy_kwargs names none
# the class names SB3 writes as text for ``activation_fn`` in ``data``
SB3_ACTIVATIONS = {
    "<class 'torch.nn.modules.activation.ReLU'>": "relu",
    "<class 'torch.nn.modules.activation.Tanh'>": "tanh",
}
NPZ_HINT = (
    "if you trust the file, export its actor to .npz: "
    "save_weights(weights_from_policy(MaskablePPO.load(path).policy), 'policy.npz')"
)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"tanh": np.tanh, "relu": _relu}
Weights = dict[str, np.ndarray]  # "w0", "b0", ..., "w_out", "b_out", "activation", "obs_layout"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read as a policy."""


def input_size(layout: int) -> int:
    """How many floats a policy of input layout ``layout`` reads."""
    return INPUT_SIZES[layout]


def batch_inputs(layout: int, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The policy inputs (float32[n, input_size(layout)]) of n observations and their masks."""
    return BATCH_INPUTS[layout](observations, masks)


def widen(weights: Weights, layout: int) -> Weights:
    """``weights`` (checked) as a network of input ``layout``: the same network if it reads that
    layout already; one of a layout whose input ``layout``'s begins with (:data:`EXTENDS`) gets zero
    first-layer weights for the inputs that follow, so that it gives the same logits. A ValueError
    for any other pair."""
    have = check_weights(weights, "the network to widen")
    if have == layout:
        return weights
    if EXTENDS.get(layout) != have:
        starts = sorted(new for new, old in EXTENDS.items() if old == have)
        raise ValueError(
            f"a network of input layout {have} cannot be made one of layout {layout}"
            f" (it can be widened to {starts or 'no layout'}: those whose input begins with its own)"
        )
    out = dict(weights)
    key = "w0" if hidden_layers(weights) else "w_out"
    first = np.asarray(weights[key])
    out[key] = np.concatenate([first, np.zeros((input_size(layout) - first.shape[0], first.shape[1]), first.dtype)])
    out[LAYOUT_KEY] = np.array(layout)
    return out


def choose(logits: np.ndarray, masks: np.ndarray, uniforms: np.ndarray | None) -> np.ndarray:
    """One action per row of ``logits`` (n, 56) among the legal ones of ``masks``: the best
    (``uniforms`` None), or a sample of the masked softmax by inverting its CDF at ``uniforms[i]``."""
    legal = masks > 0
    if not legal.any(axis=1).all():
        raise ValueError("no legal action in the mask: this agent is not the one to act")
    if not np.isfinite(logits[legal]).all():
        raise ValueError("the policy's logits of legal actions are NaN or infinite: its weights or input are broken")
    masked = np.where(legal, logits, -np.inf)
    if uniforms is None:
        return masked.argmax(axis=1)
    p = np.exp(masked - masked.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    chosen = (cdf <= uniforms[:, None] * cdf[:, -1:]).sum(axis=1)  # the first action whose CDF passes u
    last_legal = N_ACTIONS - 1 - (masks[:, ::-1] > 0).argmax(axis=1)
    return np.minimum(chosen, last_legal)  # u * total may round up to the total


def legal_softmax(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of the legal actions' ``values`` (n, 56) at ``temperature``, 0 on illegal actions
    (float32): a fit's soft targets, from searched values or from a network's logits."""
    scaled = np.where(masks, np.nan_to_num(values, nan=0.0) / temperature, -np.inf)
    scaled -= scaled.max(axis=1, keepdims=True)
    p = np.exp(scaled)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def weights_from_policy(policy: Any) -> Weights:
    """The actor of an SB3 ``MaskableActorCriticPolicy`` as numpy arrays (float32): its own MLP,
    or the trunk it shares with the critic, then the action layer."""
    state = {k: v.detach().cpu().numpy() for k, v in policy.state_dict().items()}
    trunk = getattr(policy.features_extractor, "net", None)
    modules = trunk if trunk is not None else policy.mlp_extractor.policy_net
    activations = {type(m).__name__.lower() for m in modules if not hasattr(m, "weight")}
    if activations - set(ACTIVATIONS) or len(activations) > 1:
        raise CheckpointError(f"unsupported activation(s) {activations}; supported: {list(ACTIVATIONS)}")
    return _actor_from_state(state, activations.pop() if activations else SB3_DEFAULT_ACTIVATION)


def _actor_from_state(state: dict[str, np.ndarray], activation: str) -> Weights:
    """Our weight names from an SB3 policy state dict (torch Linear weights are (out, in)); the
    layout from the input size."""
    prefix = SB3_TRUNK_PREFIX if any(k.startswith(SB3_TRUNK_PREFIX) for k in state) else SB3_ACTOR_PREFIX
    layers = sorted({int(k[len(prefix) :].split(".")[0]) for k in state if k.startswith(prefix)})
    inputs = np.shape(state.get(f"{prefix}{layers[0]}.weight" if layers else "action_net.weight", ()))
    # The layout of that many inputs; the current one if none fits (the weight checks then say what is wrong).
    layout = next((layout for layout, size in INPUT_SIZES.items() if inputs and size == inputs[-1]), ADVISED_LAYOUT)
    out: Weights = {ACTIVATION_KEY: np.array(activation), LAYOUT_KEY: np.array(layout)}
    try:
        for i, layer in enumerate(layers):
            out[f"w{i}"] = np.asarray(state[f"{prefix}{layer}.weight"]).T.astype(np.float32)
            out[f"b{i}"] = np.asarray(state[f"{prefix}{layer}.bias"]).astype(np.float32)
        out["w_out"] = np.asarray(state["action_net.weight"]).T.astype(np.float32)
        out["b_out"] = np.asarray(state["action_net.bias"]).astype(np.float32)
    except KeyError as err:
        raise CheckpointError(f"the policy has no {err.args[0]!r}: not a MaskablePPO MlpPolicy") from None
    return out


def _read_sb3_zip(path: Path) -> Weights:
    """The actor of an SB3 checkpoint without unpickling: weights-only torch load, JSON metadata."""
    try:
        import torch
    except ImportError:
        raise CheckpointError(f"reading {path} needs torch (pip install -e '.[train]'); or {NPZ_HINT}") from None
    with open_regular(path) as file, zipfile.ZipFile(file) as archive:
        for info in archive.infolist():
            if info.file_size > MAX_MEMBER_BYTES:
                size = f"{info.file_size:,} bytes"
                raise CheckpointError(f"{path}: member {info.filename!r} unpacks to {size}; a policy is far smaller")
        names = archive.namelist()
        if SB3_WEIGHTS not in names or SB3_DATA not in names:
            raise CheckpointError(f"{path} is not an SB3 checkpoint (no {SB3_WEIGHTS!r} or {SB3_DATA!r} inside)")
        weights = archive.read(SB3_WEIGHTS)
        try:
            state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
        except Exception as err:  # the weights-only unpickler refuses anything but tensors with its own errors
            raise CheckpointError(
                f"{path}: {SB3_WEIGHTS} is not plain weights, refused ({type(err).__name__}); {NPZ_HINT}"
            ) from None
        data = json.loads(archive.read(SB3_DATA))
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: {SB3_WEIGHTS} is not a state dict of tensors")
    for name, tensor in state.items():  # before any copy: a view may claim far more elements than its storage
        if tensor.layout != torch.strided or not tensor.is_floating_point() or tensor.is_quantized:
            raise CheckpointError(
                f"{path}: {name} is a {tensor.layout} {tensor.dtype} tensor; weights are dense floats"
            )
        if tensor.numel() * tensor.element_size() > len(weights):
            raise CheckpointError(f"{path}: {name} claims {tensor.numel():,} values, more than {SB3_WEIGHTS} holds")
    kwargs = data.get("policy_kwargs", {}) if isinstance(data, dict) else {}
    activation_text = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
    if activation_text is None:
        activation = SB3_DEFAULT_ACTIVATION
    elif isinstance(activation_text, str) and activation_text in SB3_ACTIVATIONS:
        activation = SB3_ACTIVATIONS[activation_text]
    else:
        raise CheckpointError(f"{path}: activation {shorten(repr(activation_text))} is not one of {list(ACTIVATIONS)}")
    try:
        return _actor_from_state({k: v.detach().numpy() for k, v in state.items()}, activation)
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


_CACHE: dict[tuple[str, int, int], Weights] = {}  # (path, mtime_ns, size) -> read-only weights


def load_weights(path: str | Path) -> Weights:
    """Policy weights from an SB3 ``.zip`` checkpoint or an ``.npz`` export, checked, with clear errors.

    A file is read once per process (until it changes): worker processes forked after a first
    load use the weights already in memory, so no torch code runs in them.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no policy file at {str(path)!r}")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key in _CACHE:
        return _CACHE[key]
    if path.suffix not in (".npz", ".zip"):
        raise CheckpointError(f"{path}: a policy file is an SB3 checkpoint .zip or a policy export .npz")
    kind = "policy export (.npz)" if path.suffix == ".npz" else "MaskablePPO checkpoint (.zip)"
    try:
        # read_npz's NpzError is a ValueError: the except below names the file
        weights = read_npz(path, MAX_MEMBER_BYTES) if path.suffix == ".npz" else _read_sb3_zip(path)
    except CheckpointError:
        raise
    except (OSError, KeyError, TypeError, RuntimeError, *DAMAGED) as err:  # damaged (RuntimeError: deep JSON too)
        raise CheckpointError(f"{path} is not a readable {kind}: {type(err).__name__}: {shorten(str(err))}") from None
    check_weights(weights, path)
    for array in weights.values():
        array.setflags(write=False)  # shared by every bot built from this file
    _CACHE[key] = weights
    return weights


def check_weights(weights: Weights, source: Any) -> int:
    """Raise CheckpointError unless ``weights`` is an actor MLP for a known layout; return the layout."""
    def fail(problem: str) -> CheckpointError:
        return CheckpointError(f"{source}: {problem}")

    layout = weights.get(LAYOUT_KEY)
    if layout is None:
        raise fail(
            f"no {LAYOUT_KEY!r}: exported before input layouts were recorded; this version reads layouts"
            f" {sorted(INPUT_SIZES)} (such a policy must be retrained)"
        )
    if np.ndim(layout) != 0 or np.asarray(layout).dtype.kind not in "iu":
        raise fail(f"{LAYOUT_KEY!r} must be one integer, got {shorten(repr(layout))}")
    layout = int(layout)
    if layout not in INPUT_SIZES:
        raise fail(
            f"the policy was made for input layout {layout}; this version reads layouts {sorted(INPUT_SIZES)}"
            " (a newer file needs a newer allfours; an older one must be retrained)"
        )
    activation = weights.get(ACTIVATION_KEY)
    if activation is None or np.ndim(activation) != 0 or str(activation) not in ACTIVATIONS:
        raise fail(f"{ACTIVATION_KEY!r} must be one of {list(ACTIVATIONS)}, got {shorten(repr(activation))}")
    n_hidden = hidden_layers(weights)
    expected = {LAYOUT_KEY, ACTIVATION_KEY, "w_out", "b_out"} | {f"{p}{i}" for p in "wb" for i in range(n_hidden)}
    if set(weights) != expected:
        missing, extra = sorted(expected - set(weights)), sorted(set(weights) - expected)
        raise fail(f"the arrays must be {sorted(expected)}; missing {missing}, unexpected {extra}")
    # The layers chain an MLP from the layout's inputs to N_ACTIONS in finite float32-range values.
    size, shapes = input_size(layout), f"layout {layout}: {input_size(layout)} inputs, {N_ACTIONS} actions"
    for i in [*range(n_hidden), "_out"]:
        w, b = weights[f"w{i}"], weights[f"b{i}"]
        if w.ndim != 2 or w.shape[1] < 1:
            raise fail(f"w{i} must be a matrix of {size} rows ({shapes}), got shape {w.shape}")
        width = N_ACTIONS if i == "_out" else w.shape[1]
        for name, array, shape in ((f"w{i}", w, (size, width)), (f"b{i}", b, (width,))):
            if array.shape != shape:
                raise fail(f"{name} has shape {array.shape}, expected {shape} ({shapes})")
            if array.dtype.kind != "f":
                raise fail(f"{name} has dtype {array.dtype}; weights are floating point")
            with np.errstate(over="ignore"):  # an overflow to inf is what the check finds
                in_float32 = array.astype(np.float32)  # the network runs in float32
            if not np.isfinite(in_float32).all():
                raise fail(f"{name} holds NaN or infinite values, or values beyond float32's range")
        size = width
    check_activation_bound(weights, n_hidden, fail)
    return layout


def check_activation_bound(weights: Weights, n_hidden: int, fail: Any) -> None:
    """Refuse weights that could overflow float32 in a forward pass: for inputs in
    [-INPUT_BOUND, INPUT_BOUND], |layer output| <= |W|^T |layer input| + |b| (tanh and ReLU never
    grow a value), computed in float64; every bound must stay below MAX_ACTIVATION."""
    bound = np.full(weights["w0" if n_hidden else "w_out"].shape[0], INPUT_BOUND)
    for i in [*range(n_hidden), "_out"]:
        w, b = (np.abs(weights[f"{p}{i}"].astype(np.float64)) for p in "wb")
        bound = bound @ w + b
        if not bound.max(initial=0.0) < MAX_ACTIVATION:
            raise fail(
                f"w{i} and b{i} are so large that a forward pass may overflow float32 (an activation up to "
                f"{bound.max():.3g} for inputs in [-{INPUT_BOUND:g}, {INPUT_BOUND:g}]; at most {MAX_ACTIVATION:g} is accepted)"
            )


def hidden_layers(weights: Weights) -> int:
    """The number of hidden layers of an exported actor (``w0, b0, ..., w{n-1}, b{n-1}``, then ``w_out, b_out``)."""
    return sum(1 for k in weights if k.startswith("b") and k[1:].isdigit())


def save_weights(weights: Weights, path: str | Path) -> None:
    """Write an ``.npz`` export (with its observation layout) atomically: a temp file, then a rename."""
    path = Path(path)
    check_weights(weights, path)
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, **weights)


class PolicyBot(SeededBot):
    """Acts with a trained actor network. See the module docstring."""

    def __init__(self, weights: Weights, name: str = "policy", deterministic: bool = True, seed: int | None = None):
        super().__init__(seed)
        self.layout = check_weights(weights, name)
        n_hidden = hidden_layers(weights)
        self._layers = [
            (weights[f"w{i}"].astype(np.float32), weights[f"b{i}"].astype(np.float32))
            for i in range(n_hidden)
        ]
        self._out = (weights["w_out"].astype(np.float32), weights["b_out"].astype(np.float32))
        self._activation_name = str(weights[ACTIVATION_KEY])
        self._activation = ACTIVATIONS[self._activation_name]
        self.name = name
        self.deterministic = deterministic
        if deterministic:  # memoryless and deterministic: one call may answer for many tables
            self.act_batch = self._act_batch

    def weights(self) -> Weights:
        """The network as a policy file holds it (float32 arrays)."""
        out: Weights = {f"{p}{i}": a for i, layer in enumerate(self._layers) for p, a in zip("wb", layer)}
        out["w_out"], out["b_out"] = self._out
        out[ACTIVATION_KEY] = np.array(self._activation_name)
        out[LAYOUT_KEY] = np.array(self.layout)
        return out

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> PolicyBot:
        return cls(load_weights(path), name=kwargs.pop("name", str(path)), **kwargs)

    def policy_input(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """What the network reads for one observation, by the policy's input layout."""
        return batch_inputs(self.layout, observation[None], np.asarray(mask)[None])[0]

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Action logits for policy inputs (one row, or a batch of rows; see :meth:`policy_input`)."""
        for w, b in self._layers:
            x = self._activation(x @ w + b)
        return x @ self._out[0] + self._out[1]

    def _act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` of every row at once: the best legal action of each (deterministic policies only)."""
        return choose(self.logits(batch_inputs(self.layout, observations, masks)), masks, None)

    def act(self, observation: Observation) -> int:
        mask = np.asarray(observation["action_mask"])
        logits = self.logits(self.policy_input(observation["observation"], mask))
        uniforms = None if self.deterministic else np.array([self._rng.random()])
        return int(choose(logits[None], mask[None], uniforms)[0])
