"""Checks of values read from outside (files, JSON, checkpoints, arguments), shared by every reader.

Each returns the value when it fits and raises a ValueError naming it and saying what is allowed:

- :func:`like`: the kind of a reference value (an array: its shape and dtype);
- :func:`count`, :func:`number`, :func:`in_range`: integers, finite numbers and arrays within bounds;
- :func:`keys`: a dict with exactly the keys expected;
- :func:`brief`, :func:`cut`: a value or a text for a message, cut short (a hostile file may hold megabytes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np


def like(name: str, value: Any, reference: Any) -> Any:
    """``value``, if it has the kind of ``reference`` (an array: the same shape and dtype; a number:
    a number of the same kind; else the same type); a ValueError naming ``name`` if not."""
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
        got = f"shape {value.shape} of {value.dtype}" if isinstance(value, np.ndarray) else brief(value)
        raise ValueError(f"{name} must be {expected}, got {got}")
    return value


def count(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int, if it is an integer in ``low .. high``."""
    like(name, value, 0)
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low:,} .. {high:,}, got {brief(value)}")
    return int(value)


def number(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a float, if it is a finite number in ``[low, high]``."""
    like(name, value, 0.0)
    try:
        as_float = float(value)
    except OverflowError:  # an integer beyond any float
        as_float = math.inf
    if not (math.isfinite(as_float) and low <= as_float <= high):
        raise ValueError(f"{name} must be a finite number in [{low:g}, {high:g}], got {brief(value)}")
    return as_float


def in_range(name: str, array: np.ndarray, low: float = -math.inf, high: float = math.inf) -> np.ndarray:
    """``array``, if every value is finite and in ``[low, high]``."""
    values = array.astype(np.float64) if array.dtype.kind in "biu" else array
    if array.size and not (np.isfinite(values).all() and values.min() >= low and values.max() <= high):
        raise ValueError(f"{name} must hold finite values in [{low:g}, {high:g}]")
    return array


def keys(name: str, value: Any, expected: Iterable[str]) -> dict:
    """``value``, if it is a dict with exactly the keys ``expected``."""
    expected = sorted(expected)
    if not isinstance(value, dict) or sorted(map(str, value)) != expected or not all(isinstance(k, str) for k in value):
        got = sorted(map(str, value)) if isinstance(value, dict) else brief(value)
        raise ValueError(f"{name} must be a dict of {expected}, got {got}")
    return value


def brief(value: Any) -> str:
    """``value`` for a message: its type and a repr of at most 60 characters."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} of {value.dtype}"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an integer too long to print, or nesting too deep
        text = "(too long to show)"
    return f"{type(value).__name__} {cut(text)}"


def cut(text: str, limit: int = 60) -> str:
    """``text`` for a message: at most ``limit`` characters, the last three "..." if it was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
