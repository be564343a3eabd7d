"""A checkpoint's state as data: its structure in JSON, its arrays in an ``.npz``; no pickle.

:func:`write_state` stores a tree of plain values (None, bool, int, float, str), numpy arrays and
numpy scalars, in lists, tuples, deques and dicts (keys str, int or tuples of them) as two files:

- ``state.json``: the tree, each non-JSON node written as a one-key object, e.g.
  ``{"array": "a3"}`` (member ``a3`` of the ``.npz``), ``{"tuple": [...]}``,
  ``{"deque": [...], "maxlen": 100}``, ``{"numpy": "float32", "value": 1.5}``,
  ``{"dict": {...}}`` (string keys) or ``{"items": [[key, value], ...]}`` (other keys);
- ``state.npz``: the arrays, plain numbers and text only.

:func:`read_state` builds back exactly these types and nothing else: an unknown node, an object
array or an array that does not fit its file is a :class:`StateFileError`. Reading a state file
runs no code from it, whatever it holds.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from agents.npz_file import NpzError, read_npz

JSON_FILE = "state.json"
ARRAYS_FILE = "state.npz"
MAX_ARRAY_BYTES = 16 * 2**30  # what a checkpoint's arrays may take together (a rollout of a large run: a few GB)
NUMPY_SCALAR_KINDS = "biuf"  # numpy scalars kept as such: bool, integers, floats


class StateFileError(ValueError):
    """A state file that is not a state this module wrote."""


def write_state(folder: Path, tree: Any) -> None:
    """Write ``tree`` as ``folder/state.json`` and ``folder/state.npz`` (``folder`` exists)."""
    arrays: dict[str, np.ndarray] = {}
    text = json.dumps(_encode(tree, arrays), separators=(",", ":"))
    np.savez(folder / ARRAYS_FILE, **arrays)
    (folder / JSON_FILE).write_text(text)


def read_state(folder: Path) -> Any:
    """The tree :func:`write_state` wrote in ``folder``; StateFileError if it is not one, OSError if unreadable."""
    try:
        arrays = read_npz(folder / ARRAYS_FILE, MAX_ARRAY_BYTES)
    except NpzError as err:
        raise StateFileError(f"{folder / ARRAYS_FILE}: {err}") from None
    try:
        tree = json.loads((folder / JSON_FILE).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise StateFileError(f"{folder / JSON_FILE} is not JSON: {err}") from None
    try:
        return _decode(tree, arrays)
    except RecursionError:
        raise StateFileError(f"{folder / JSON_FILE} nests deeper than any state") from None
    except StateFileError as err:
        raise StateFileError(f"{folder / JSON_FILE}: {err}") from None


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value  # NaN and infinities are written as JSON's NaN / Infinity extensions, read back by json
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("an object array cannot be stored as data")
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"array": key}
    if isinstance(value, np.generic) and value.dtype.kind in NUMPY_SCALAR_KINDS:
        return {"numpy": value.dtype.name, "value": value.item()}
    if isinstance(value, list):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, arrays) for v in value]}
    if isinstance(value, deque):
        return {"deque": [_encode(v, arrays) for v in value], "maxlen": value.maxlen}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"dict": {k: _encode(v, arrays) for k, v in value.items()}}
        return {"items": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    raise TypeError(f"{type(value).__name__} cannot be stored in a checkpoint state (only plain data and arrays)")


def _decode(node: Any, arrays: dict[str, np.ndarray]) -> Any:
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if not isinstance(node, dict) or not node:
        raise StateFileError(f"unexpected node {_brief(node)}")
    kind = next(iter(node))
    expected = {"deque": {"deque", "maxlen"}, "numpy": {"numpy", "value"}}.get(kind, {kind})
    if set(node) != expected:
        raise StateFileError(f"node {_brief(node)} is not a state node")
    body = node[kind]
    if kind == "array" and isinstance(body, str) and body in arrays:
        return arrays[body]
    if kind == "tuple" and isinstance(body, list):
        return tuple(_decode(v, arrays) for v in body)
    if kind == "deque" and isinstance(body, list) and (node["maxlen"] is None or _count(node["maxlen"])):
        return deque((_decode(v, arrays) for v in body), maxlen=node["maxlen"])
    if kind == "dict" and isinstance(body, dict):
        return {k: _decode(v, arrays) for k, v in body.items()}
    if kind == "items" and isinstance(body, list) and all(isinstance(p, list) and len(p) == 2 for p in body):
        out = {}
        for k, v in body:
            key = _decode(k, arrays)
            if not isinstance(key, (str, int, tuple)) or isinstance(key, bool):
                raise StateFileError(f"a dict key must be a string, an integer or a tuple, got {_brief(k)}")
            out[key] = _decode(v, arrays)
        return out
    if kind == "numpy" and isinstance(body, str):
        return _numpy_scalar(body, node["value"])
    raise StateFileError(f"node {_brief(node)} is not a state node")


def _numpy_scalar(dtype_name: str, value: Any) -> np.generic:
    try:
        dtype = np.dtype(dtype_name)
    except TypeError:
        raise StateFileError(f"{dtype_name!r} is not a numpy dtype") from None
    if dtype.kind not in NUMPY_SCALAR_KINDS or not isinstance(value, (bool, int, float)):
        raise StateFileError(f"a numpy scalar must be a number of kind {NUMPY_SCALAR_KINDS!r}, got {dtype_name} {value!r}")
    try:
        return dtype.type(value)
    except (OverflowError, ValueError) as err:
        raise StateFileError(f"{value!r} is not a {dtype_name}: {err}") from None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _brief(node: Any) -> str:
    text = json.dumps(node)
    return text if len(text) <= 80 else text[:77] + "..."


def like(name: str, value: Any, reference: Any) -> Any:
    """``value``, if it has the kind of ``reference`` (an array: the same shape and dtype; a number:
    a number of the same kind; else the same type); a ValueError naming ``name`` if not. What a
    restore checks that a state read from a file fits the objects it goes into."""
    if isinstance(reference, np.ndarray):
        fits = isinstance(value, np.ndarray) and value.shape == reference.shape and value.dtype == reference.dtype
        expected = f"an array of shape {reference.shape} and dtype {reference.dtype}"
    elif isinstance(reference, (bool, np.bool_)):
        fits, expected = isinstance(value, (bool, np.bool_)), "a bool"
    elif isinstance(reference, (int, np.integer)):
        fits = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        expected = "an integer"
    elif isinstance(reference, (float, np.floating)):
        fits = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        expected = "a number"
    else:
        fits, expected = isinstance(value, type(reference)), f"a {type(reference).__name__}"
    if not fits:
        got = f"shape {value.shape} of {value.dtype}" if isinstance(value, np.ndarray) else _brief_value(value)
        raise ValueError(f"{name} must be {expected}, got {got}")
    return value


def _brief_value(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
