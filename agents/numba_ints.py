"""``int.bit_length`` and ``int.bit_count`` inside numba-compiled code.

The card reasoning of :mod:`agents.hand_reading` is written once, for Python ints, and compiled
unchanged into the batched features; numba knows neither method, so they are taught here (for
the non-negative bit sets the cards use, as LLVM's count-leading-zeros and population count).
"""

from __future__ import annotations

from numba import types
from numba.cpython.unsafe.numbers import leading_zeros
from numba.extending import intrinsic, overload_method


@intrinsic
def _popcount(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return value(value), codegen


@overload_method(types.Integer, "bit_count")
def _bit_count(value):
    return lambda value: _popcount(value)


@overload_method(types.Integer, "bit_length")
def _bit_length(value):
    width = value.bitwidth
    return lambda value: width - leading_zeros(value)
