"""numpy's generator in compiled code: every draw equals numpy's, bit for bit."""

import numpy as np
import pytest

from allfours_env import numpy_random

SEEDS = [0, 1, 5, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1, *range(1000, 1040)]


def seeded(seed: int) -> np.ndarray:
    rows = np.zeros((2, numpy_random.STATE_WORDS), dtype=np.uint64)
    numpy_random.seed(rows, 1, seed)
    return rows


@pytest.mark.parametrize("seed", SEEDS)
def test_draws_equal_numpys(seed):
    rows, theirs = seeded(seed), np.random.default_rng(seed)
    assert (rows[1] == numpy_random.packed(theirs.bit_generator.state)).all()
    assert not rows[0].any()  # other rows untouched
    for _ in range(3):
        assert numpy_random.next64(rows, 1) == theirs.bit_generator.random_raw()
    for k in (2, 3, 7, 52, 2**31, 2**32 - 1):  # Lemire's rejection: bounds of every size
        assert numpy_random.integers(rows, 1, k) == theirs.integers(k)
    for n in (52, 1, 2, 100):
        deck = np.empty(n, dtype=np.int8 if n < 128 else np.int64)
        numpy_random.permutation(rows, 1, deck)
        assert (deck == theirs.permutation(n)).all()
    # the 32-bit half numpy keeps between draws is part of the state, and round-trips
    assert numpy_random.unpacked(rows[1]) == theirs.bit_generator.state


def test_continues_any_numpy_generator():
    theirs = np.random.default_rng(7)
    theirs.integers(5)  # leaves half a 64-bit draw kept
    rows = numpy_random.packed(theirs.bit_generator.state)[None]
    assert rows[0, numpy_random.HAS_HALF] == 1
    deck = np.empty(52, dtype=np.int64)
    numpy_random.permutation(rows, 0, deck)
    assert (deck == theirs.permutation(52)).all()
