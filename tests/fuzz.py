"""Mutations for the loaders' fuzz tests (tests/test_policy_fuzz.py, tests/test_label_fuzz.py): an
array's values, dtype or shape changed, an archive truncated, padded or bit-flipped, each drawn
from a seeded generator; and a guard that turns a hang into a failure."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

SPECIAL = (np.nan, np.inf, -np.inf, 1e30, -3e38, 3.4e38, 1e300, 0.0)  # values a float array should not hold
DTYPES = ("<f2", "<f8", ">f4", "<i1", "<i8", "<u2", "|b1", "<c8", "<U4", "|S3", "<M8[s]")


@contextmanager
def hang_fails(seconds: int, what: str) -> Iterator[None]:
    """A block still running after ``seconds`` raises TimeoutError(``what``) (SIGALRM: POSIX only)."""

    def hung(signum, frame):
        raise TimeoutError(what)

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def new_values(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Some, many or all values of a float array made special (NaN, infinite, huge); another
    array: one such value instead."""
    if array.dtype.kind != "f" or array.size == 0:
        return np.array(rng.choice(SPECIAL))
    out = array.astype(rng.choice(["<f4", "<f8"]))
    where = rng.random(out.shape) < rng.choice([1e-4, 0.1, 1.0])
    with np.errstate(over="ignore"):  # 1e300 in float32: inf
        out[where] = rng.choice(SPECIAL)
    return out


def new_dtype(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The array in another dtype (zeros if it cannot be converted)."""
    dtype = np.dtype(rng.choice(DTYPES))
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            return array.astype(dtype)
    except (ValueError, TypeError, RuntimeError):  # e.g. text to datetimes
        return np.zeros(array.shape, dtype)


def new_shape(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The array transposed, cut, grown, emptied or given another number of dimensions."""
    flat = array.reshape(-1)
    options: list[Callable[[], np.ndarray]] = [
        lambda: array.T, lambda: array[None], lambda: flat[:-1] if flat.size else flat, lambda: flat[:0],
        lambda: np.concatenate([flat, flat[:1]]), lambda: flat[:1].reshape(()) if flat.size else flat,
        lambda: array[..., : max(array.shape[-1] // 2, 1)] if array.ndim else array,
        lambda: np.repeat(array[..., None], 2, axis=-1),
    ]  # fmt: skip
    return options[rng.integers(len(options))]()


def flip_bits(data: bytes, rng: np.random.Generator) -> bytes:
    """A few bits flipped, most often in the zip's own structures (the central directory at the
    end, a local header), where a flip changes what the reader is told rather than a CRC."""
    out = bytearray(data)
    headers = [match.start() for match in re.finditer(b"PK\x03\x04", data)] or [0]
    region = rng.integers(3)
    if region == 0:
        at = len(out) - 1 - int(rng.integers(min(len(out), 1500)))
    elif region == 1:
        at = int(rng.choice(headers)) + int(rng.integers(120))
    else:
        at = int(rng.integers(len(out)))
    for _ in range(rng.integers(1, 5)):
        at = min(at + int(rng.integers(0, 4)), len(out) - 1)
        out[at] ^= 1 << int(rng.integers(8))
    return bytes(out)


def damage_archive(data: bytes, rng: np.random.Generator) -> bytes:
    """The file truncated, padded, replaced by noise or emptied, or bit-flipped."""
    kind = rng.integers(5)
    if kind == 0:
        return data[: rng.integers(len(data))]
    if kind == 1:
        return data + bytes(rng.integers(256, size=rng.integers(1, 200), dtype=np.uint8))
    if kind == 2:
        return b"" if rng.random() < 0.5 else bytes(rng.integers(256, size=rng.integers(1, 5000), dtype=np.uint8))
    return flip_bits(data, rng)
