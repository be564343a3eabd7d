"""A value network: a table's chance to win the match at the end of the deal, seeing every hand.

Search cuts its rollouts short with it (``search:cut=N``, :mod:`agents.search`): at the end of
the Nth trick after the searched action, the rest of the deal is not played out but valued. The
network reads what the seat to act observes (``env.observe``, :data:`allfours_env.OBS_SIZE`
floats) and the other three seats' hands (:meth:`allfours_env.vector.VectorGame.other_hands`):
in a sampled world of a search every hand is known, as a critic's are in training. Its output,
through a logistic, is the chance that the seat's team wins the match once the deal is over
(1 or 0 where the deal ends the match), fitted by ``python -m train.values`` to the outcome of
``expert`` playing the deal to its end from that state (so that a cut estimates what the expert
rollout it replaces would find).

A value file is a plain ``.npz`` (read without pickle, every array checked as a policy file's
are, :func:`load_value`): ``w0, b0, ..., w_out, b_out`` of a ReLU MLP with one output, and
``format`` = :data:`FORMAT`. ``agents/pretrained/value_v1.npz`` is the one that ships.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from allfours_env import OBS_SIZE
from allfours_env.vector import OTHER_HANDS_SIZE

from .policy import MAX_MEMBER_BYTES, CheckpointError, check_layers, hidden_layers
from .shared.atomic_file import atomic_path
from .shared.npz_file import DAMAGED, read_npz, shorten

FORMAT = "allfours-value-v1"
INPUTS = OBS_SIZE + OTHER_HANDS_SIZE
VALUE_V1 = Path(__file__).parent / "pretrained" / "value_v1.npz"
Weights = dict[str, np.ndarray]


def check_value(weights: Weights, source: object) -> int:
    """The number of hidden layers of a value network's ``weights``; a CheckpointError naming
    ``source`` and what is wrong (arrays, then the layers as a policy file's, :func:`check_layers`)."""

    def fail(problem: str) -> CheckpointError:
        return CheckpointError(f"{source}: {problem}")

    if "format" not in weights or np.ndim(weights["format"]) != 0 or str(weights["format"]) != FORMAT:
        raise fail(f"not a value network: its 'format' must be {FORMAT!r}")
    n_hidden = hidden_layers(weights)
    expected = {"format", "w_out", "b_out"} | {f"{p}{i}" for p in "wb" for i in range(n_hidden)}
    if set(weights) != expected:
        raise fail(f"the arrays must be {sorted(expected)}, got {sorted(weights)}")
    check_layers(weights, n_hidden, INPUTS, 1, fail, f"{INPUTS} inputs, one output")
    return n_hidden


def load_value(path: str | Path) -> ValueNet:
    """The value network in ``path``, checked (:func:`check_value`): FileNotFoundError if there is
    none, CheckpointError if it is not a readable value file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no value file at {str(path)!r}")
    try:
        weights = read_npz(path, MAX_MEMBER_BYTES)
    except (OSError, *DAMAGED) as err:
        problem = f"{type(err).__name__}: {shorten(str(err))}"
        raise CheckpointError(f"{path} is not a readable value file: {problem}") from None
    return ValueNet(weights, str(path))


def save_value(weights: Weights, path: str | Path) -> None:
    """Write a value file atomically (a temporary file renamed into place), checked first."""
    weights = {**weights, "format": np.array(FORMAT)}
    check_value(weights, path)
    with atomic_path(Path(path)) as tmp:
        np.savez_compressed(tmp, **weights)


class ValueNet:
    """A checked value network, run in float32 numpy."""

    def __init__(self, weights: Weights, source: object = "value network") -> None:
        n_hidden = check_value(weights, source)
        as32 = {name: np.asarray(array, np.float32) for name, array in weights.items() if name != "format"}
        self.hidden = [(as32[f"w{i}"], as32[f"b{i}"]) for i in range(n_hidden)]
        self.out = (as32["w_out"], as32["b_out"])

    def logits(self, x: np.ndarray) -> np.ndarray:
        for w, b in self.hidden:
            x = np.maximum(x @ w + b, 0.0)
        w, b = self.out
        return (x @ w + b)[:, 0]

    def __call__(self, observations: np.ndarray, other_hands: np.ndarray) -> np.ndarray:
        """The chance each row's seat's team wins the match when the deal is over, (n,) float64."""
        x = np.concatenate([observations, other_hands], axis=1, dtype=np.float32)
        return 1.0 / (1.0 + np.exp(-self.logits(x).astype(np.float64)))
