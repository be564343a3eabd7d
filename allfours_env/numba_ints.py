"""The card and seat rules of :mod:`allfours_env.cards` inside numba-compiled code.

Rules on cards are written once, as Python on ints, and compiled unchanged wherever a kernel
needs them (the batched policy features, and any vector kernel): importing this module lets
``@njit`` code call :func:`~allfours_env.cards.beats`, :func:`~allfours_env.cards.next_seat` and
:func:`~allfours_env.cards.team_of`, and the int methods numba lacks, ``bit_length`` and
``bit_count`` (for the non-negative bit sets the cards use, as LLVM's count-leading-zeros and
population count; both give an int64, signed or unsigned input alike). Plain Python callers
never import numba through the engine: only compiled code needs this module.
"""

from __future__ import annotations

import numpy as np
from numba import types
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
