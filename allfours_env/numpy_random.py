"""numpy's default generator in compiled code, bit for bit, for many tables at once.

``np.random.default_rng(seed)`` is PCG64 (a 128-bit LCG with the XSL-RR output) seeded through
``SeedSequence``. The kernels here hold such generators as rows of a uint64 array (``STATE_WORDS``
words: the 128-bit state and increment, and the 32-bit half-draw numpy keeps) and draw from
them exactly what numpy's ``Generator`` draws: ``integers(k)`` below 2**32 (Lemire's method on
32-bit draws), ``permutation(52)`` (Fisher-Yates on masked 32-bit draws) and the seeding of
``default_rng(seed)``. The vector env uses them to draw, for all its tables in one call, what
the single-agent env draws through numpy table by table. Sources: numpy's ``pcg64.h``,
``distributions.c`` (``random_interval``, ``buffered_bounded_lemire_uint32``) and
``bit_generator.pyx`` (``SeedSequence``); the tests compare every function with numpy's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

STATE_WORDS = 6
STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_HALF, HALF = range(STATE_WORDS)

_U32 = np.uint64(0xFFFFFFFF)
_MULT_HI, _MULT_LO = np.uint64(2549297995355413924), np.uint64(4865540595714422341)
# SeedSequence's hash constants (bit_generator.pyx)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL_SIZE = 4


def packed(state: dict) -> np.ndarray:
    """A PCG64 ``bit_generator.state`` dict as one row of ``STATE_WORDS`` uint64."""
    pcg, mask = state["state"], (1 << 64) - 1
    words = (pcg["state"] >> 64, pcg["state"] & mask, pcg["inc"] >> 64, pcg["inc"] & mask)
    return np.array([*words, state["has_uint32"], state["uinteger"]], dtype=np.uint64)


def unpacked(row: np.ndarray) -> dict:
    """The ``bit_generator.state`` dict of a packed row (the inverse of :func:`packed`)."""
    hi, lo, inc_hi, inc_lo, has_half, half = (int(word) for word in row)
    return {
        "bit_generator": "PCG64",
        "state": {"state": hi << 64 | lo, "inc": inc_hi << 64 | inc_lo},
        "has_uint32": has_half,
        "uinteger": half,
    }


@njit(cache=True, nogil=True)
def _mul_hi(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    a0, a1, b0, b1 = a & _U32, a >> np.uint64(32), b & _U32, b >> np.uint64(32)
    low, cross1, cross2 = a0 * b0, a0 * b1, a1 * b0
    middle = (low >> np.uint64(32)) + (cross1 & _U32) + (cross2 & _U32)
    return a1 * b1 + (cross1 >> np.uint64(32)) + (cross2 >> np.uint64(32)) + (middle >> np.uint64(32))


@njit(cache=True, nogil=True)
def _step(s, t):
    """state = state * multiplier + increment (mod 2**128)."""
    hi, lo = s[t, STATE_HI], s[t, STATE_LO]
    new_hi = _mul_hi(lo, _MULT_LO) + hi * _MULT_LO + lo * _MULT_HI
    new_lo = lo * _MULT_LO + s[t, INC_LO]
    carry = np.uint64(1) if new_lo < s[t, INC_LO] else np.uint64(0)
    s[t, STATE_HI], s[t, STATE_LO] = new_hi + s[t, INC_HI] + carry, new_lo


@njit(cache=True, nogil=True)
def next64(s, t):
    """The next 64 bits of row t's generator (numpy's ``random_raw``)."""
    _step(s, t)
    hi, lo = s[t, STATE_HI], s[t, STATE_LO]
    rot, x = hi >> np.uint64(58), hi ^ lo
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@njit(cache=True, nogil=True)
def next32(s, t):
    """The next 32 bits: the low half of a 64-bit draw, its high half kept for the next call."""
    if s[t, HAS_HALF]:
        s[t, HAS_HALF] = 0
        return s[t, HALF]
    x = next64(s, t)
    s[t, HAS_HALF], s[t, HALF] = 1, x >> np.uint64(32)
    return x & _U32


@njit(cache=True, nogil=True)
def integers(s, t, k):
    """``Generator.integers(k)`` for 2 <= k <= 2**32 - 1 (Lemire's method on 32-bit draws)."""
    excl = np.uint64(k)
    m = next32(s, t) * excl
    leftover = m & _U32
    if leftover < excl:
        threshold = (_U32 - (excl - np.uint64(1))) % excl
        while leftover < threshold:
            m = next32(s, t) * excl
            leftover = m & _U32
    return np.int64(m >> np.uint64(32))


@njit(cache=True, nogil=True)
def permutation(s, t, out):
    """out[:] = ``Generator.permutation(len(out))`` (a shuffled arange; len(out) < 2**32)."""
    n = len(out)
    for i in range(n):
        out[i] = i
    for i in range(n - 1, 0, -1):
        mask = np.uint64(i)
        for shift in (1, 2, 4, 8, 16):
            mask |= mask >> np.uint64(shift)
        j = next32(s, t) & mask
        while j > np.uint64(i):
            j = next32(s, t) & mask
        out[i], out[j] = out[j], out[i]


@njit(cache=True, nogil=True)
def _hashmix(value, hash_const):
    value = (value ^ hash_const[0]) & 0xFFFFFFFF
    hash_const[0] = (hash_const[0] * _MULT_A) & 0xFFFFFFFF
    value = (value * hash_const[0]) & 0xFFFFFFFF
    return value ^ (value >> 16)


@njit(cache=True, nogil=True)
def _mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & 0xFFFFFFFF
    return result ^ (result >> 16)


@njit(cache=True, nogil=True)
def seed(s, t, value):
    """Row t = the generator of ``np.random.default_rng(value)``, for 0 <= value < 2**63."""
    entropy = np.zeros(2, dtype=np.int64)  # value's 32-bit words, low first (one word below 2**32)
    entropy[0], entropy[1] = value & 0xFFFFFFFF, value >> 32
    n_entropy = 2 if entropy[1] else 1
    hash_const = np.array([_INIT_A], dtype=np.int64)
    pool = np.zeros(_POOL_SIZE, dtype=np.int64)
    for i in range(_POOL_SIZE):
        pool[i] = _hashmix(entropy[i] if i < n_entropy else 0, hash_const)
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                pool[i_dst] = _mix(pool[i_dst], _hashmix(pool[i_src], hash_const))
    # generate_state(4, uint64): eight 32-bit words from the pool, paired low word first
    words = np.zeros(8, dtype=np.uint64)
    mult = _INIT_B
    for i in range(8):
        value = (pool[i % _POOL_SIZE] ^ mult) & 0xFFFFFFFF
        mult = (mult * _MULT_B) & 0xFFFFFFFF
        value = (value * mult) & 0xFFFFFFFF
        words[i] = np.uint64(value ^ (value >> 16))
    seed_hi, seed_lo = words[0] | words[1] << np.uint64(32), words[2] | words[3] << np.uint64(32)
    inc_hi, inc_lo = words[4] | words[5] << np.uint64(32), words[6] | words[7] << np.uint64(32)
    # pcg_setseq_128_srandom_r: state 0, inc = seq << 1 | 1, step, state += seed, step
    s[t, INC_HI] = inc_hi << np.uint64(1) | inc_lo >> np.uint64(63)
    s[t, INC_LO] = inc_lo << np.uint64(1) | np.uint64(1)
    s[t, STATE_HI], s[t, STATE_LO] = 0, 0
    _step(s, t)
    lo = s[t, STATE_LO] + seed_lo
    s[t, STATE_HI] += seed_hi + (np.uint64(1) if lo < seed_lo else np.uint64(0))
    s[t, STATE_LO] = lo
    _step(s, t)
    s[t, HAS_HALF], s[t, HALF] = 0, 0
