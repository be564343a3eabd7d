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
runs no code from it, whatever it holds, and takes no more than the caller allows: each file
must be a regular file (a FIFO or a link to a device such as ``/dev/zero`` is refused without
being opened, so nothing waits on it or reads it without end) within a size the caller gives
(:func:`regular_file`), the arrays too, and the JSON nests no deeper than Python's recursion limit.
What the values mean is checked by the restore (:mod:`train.run_folder.state_checks`).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from agents.shared.npz_file import NpzError, read_npz

JSON_FILE = "state.json"
ARRAYS_FILE = "state.npz"
NUMPY_SCALAR_KINDS = "biuf"  # numpy scalars kept as such: bool, integers, floats


class StateFileError(ValueError):
    """A state file that is not a state this module wrote."""


def write_state(folder: Path, tree: Any) -> None:
    """Write ``tree`` as ``folder/state.json`` and ``folder/state.npz`` (``folder`` exists)."""
    arrays: dict[str, np.ndarray] = {}
    text = json.dumps(_encode(tree, arrays), separators=(",", ":"))
    np.savez(folder / ARRAYS_FILE, **arrays)
    (folder / JSON_FILE).write_text(text)


def read_state(folder: Path, max_json_bytes: int, max_array_bytes: int) -> Any:
    """The tree :func:`write_state` wrote in ``folder``, its JSON within ``max_json_bytes`` and its
    arrays within ``max_array_bytes``; StateFileError if it is not one, OSError if unreadable."""
    arrays_file, json_file = folder / ARRAYS_FILE, folder / JSON_FILE
    regular_file(arrays_file, max_array_bytes + 2**20)  # (an .npz adds a few hundred bytes an array)
    regular_file(json_file, max_json_bytes)
    try:
        arrays = read_npz(arrays_file, max_array_bytes)
    except NpzError as err:
        raise StateFileError(f"{arrays_file}: {err}") from None
    with open(json_file, "rb") as file:
        text = file.read(max_json_bytes + 1)
    if len(text) > max_json_bytes:  # (it grew since it was looked at)
        raise StateFileError(f"{json_file} is larger than {max_json_bytes:,} bytes")
    try:
        tree = json.loads(text.decode())
    except RecursionError:
        raise StateFileError(f"{json_file} nests deeper than any state") from None
    except ValueError as err:  # not UTF-8, not JSON, or an integer of more digits than Python reads
        raise StateFileError(f"{json_file} is not JSON: {err}") from None
    try:
        return _decode(tree, arrays)
    except RecursionError:
        raise StateFileError(f"{json_file} nests deeper than any state") from None
    except StateFileError as err:
        raise StateFileError(f"{json_file}: {err}") from None


def read_json(file: BinaryIO, max_bytes: int) -> Any:
    """The JSON value in the open ``file``, read no further than one byte past ``max_bytes``: a
    ValueError if it holds more or is not JSON, a RecursionError if it nests too deep."""
    text = file.read(max_bytes + 1)
    if len(text) > max_bytes:
        raise ValueError(f"more than {max_bytes:,} bytes")
    return json.loads(text)


def regular_file(path: Path, max_bytes: int) -> int:
    """The size of ``path``: a StateFileError if it is missing, is not a regular file (looked at
    without opening it) or is larger than ``max_bytes``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise StateFileError(f"{path} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        mode = info.st_mode
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise StateFileError(f"{path} is {kind}, not a regular file: refused unopened")
    if info.st_size > max_bytes:
        raise StateFileError(f"{path} takes {info.st_size:,} bytes; this run's checkpoints take at most {max_bytes:,}")
    return info.st_size


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
            if not _plain_key(key):
                raise StateFileError(f"a dict key must be a string, an integer or a tuple of them, got {_brief(k)}")
            out[key] = _decode(v, arrays)
        return out
    if kind == "numpy" and isinstance(body, str):
        return _numpy_scalar(body, node["value"])
    raise StateFileError(f"node {_brief(node)} is not a state node")


def _numpy_scalar(dtype_name: str, value: Any) -> np.generic:
    try:
        dtype = np.dtype(dtype_name)
    except (TypeError, ValueError, SyntaxError):  # (numpy parses some dtype strings as Python)
        raise StateFileError(f"{_brief(dtype_name)} is not a numpy dtype") from None
    if dtype.kind not in NUMPY_SCALAR_KINDS or dtype.shape or not isinstance(value, (bool, int, float)):
        raise StateFileError(
            f"a numpy scalar must be a number of kind {NUMPY_SCALAR_KINDS!r}, got {_brief(dtype_name)} {_brief(value)}"
        )
    try:
        with np.errstate(over="raise"):
            return dtype.type(value)
    except (OverflowError, ValueError, FloatingPointError):
        raise StateFileError(f"{_brief(value)} is not a {dtype.name}") from None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= sys.maxsize


def _plain_key(key: Any) -> bool:
    if isinstance(key, tuple):
        return all(_plain_key(k) for k in key)
    return isinstance(key, (str, int)) and not isinstance(key, bool)


def _brief(node: Any) -> str:
    try:
        text = json.dumps(node)
    except ValueError:  # an integer of more digits than Python prints
        text = "(a number too long to show)"
    return text if len(text) <= 80 else text[:77] + "..."
