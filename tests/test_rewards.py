"""The reward rule's two forms agree: ``table_gain`` (one table, plain ints: the AEC env) is
``team_gain`` (many tables, arrays: the vector env, the warm start's recording) at a table that moved."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from allfours_env.rewards import REWARD_MODES, table_gain, team_gain


@pytest.mark.parametrize("mode", REWARD_MODES)
def test_table_gain_is_team_gain_at_one_table(mode):
    cases = list(itertools.product(range(5), range(5), (-1, 0, 1)))  # team 0's points, team 1's, winner
    points = np.array([[p0, p1] for p0, p1, _ in cases], dtype=np.int64)
    winner = np.array([w for *_, w in cases], dtype=np.int64)
    vector = team_gain(points, winner, np.ones(len(cases), dtype=bool), mode)
    scalar = [table_gain((p0, p1), w, mode) for p0, p1, w in cases]
    assert all(type(gain) is int for gain in scalar)
    assert scalar == vector.tolist()
