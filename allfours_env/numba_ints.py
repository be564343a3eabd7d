"""The card and seat rules of :mod:`allfours_env.cards` inside numba-compiled code.

Rules on cards are written once, as Python on ints, and compiled unchanged wherever a kernel
needs them (the batched policy features, and any vector kernel): importing this module lets
``@njit`` code call :func:`~allfours_env.cards.beats`, :func:`~allfours_env.cards.next_seat`,
:func:`~allfours_env.cards.team_of`, and the int methods numba lacks, ``bit_length`` and
``bit_count`` (for the non-negative bit sets the cards use, as LLVM's count-leading-zeros and
population count; both give an int64, signed or unsigned input alike). Plain Python callers
never import numba through the engine: only compiled code needs this module.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import numpy as np
from numba import types
from numba.core.dispatcher import Dispatcher
from numba.cpython.unsafe.numbers import leading_zeros
from numba.extending import intrinsic, overload_method, register_jitable

from .cards import beats, next_seat, team_of

for _rule in (beats, next_seat, team_of):
    register_jitable(_rule)


@intrinsic
def _popcount(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return value(value), codegen


@overload_method(types.Integer, "bit_count")
def _bit_count(value):
    return lambda value: np.int64(_popcount(value))


@overload_method(types.Integer, "bit_length")
def _bit_length(value):
    width = value.bitwidth
    return lambda value: np.int64(width) - np.int64(leading_zeros(value))


def kernels_of(module_name: str) -> list[Dispatcher]:
    """The compiled functions defined in a module (not those it imports)."""
    namespace = vars(sys.modules[module_name]).values()
    return [f for f in namespace if isinstance(f, Dispatcher) and f.py_func.__module__ == module_name]


def cache_depends_on(kernels: Iterable[Dispatcher], modules: Iterable[ModuleType]) -> None:
    """Make the on-disk caches of ``kernels`` (``@njit(cache=True)``, not compiled yet) stale when
    the source of any of ``modules`` changes. numba stamps a cache with the kernel's own file
    only, so a kernel that compiles in functions of other files (``register_jitable`` ones, or
    other kernels) would otherwise keep running their old code. This module is always included."""
    sources = b"".join(Path(module.__file__).read_bytes() for module in (*modules, sys.modules[__name__]))
    digest = hashlib.sha256(sources).hexdigest()
    for kernel in kernels:
        index = getattr(getattr(kernel, "_cache", None), "_cache_file", None)  # numba internals
        if hasattr(index, "_source_stamp"):
            index._source_stamp = (index._source_stamp, digest)
