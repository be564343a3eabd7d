"""Rewards: one rule for every env, from what a step scored to what each team is paid.

``reward="match"``: the end of a match pays 1 to the winning team. ``reward="points"``: every
award (kick, give one, high, low, jack, hang jack, game) pays its points to the scoring team.
Every env is zero-sum: what a team is paid, the other team loses. :func:`team_gain` applies the
rule to one step of many tables (the vector env, the warm start's recording); :func:`table_gain`
is the same rule at one table in plain ints (the AEC env's every step, where one-table arrays
would cost more than the engine's step; tests/test_rewards.py checks the two agree).
"""

from __future__ import annotations

import numpy as np

REWARD_MODES = ("match", "points")


def team_gain(points: np.ndarray, winner: np.ndarray, moved: np.ndarray, mode: str) -> np.ndarray:
    """What team 0 gains at each table in one step (team 1 gains its negative): with "points" its
    points less the other team's (``points`` (n, 2)); with "match" +1 or -1 at each table in
    ``moved`` where a match has just been won (``winner`` >= 0), else 0."""
    if mode == "points":
        return (points[:, 0] - points[:, 1]).astype(np.float64)
    won = moved & (winner >= 0)
    return np.where(won, np.where(winner == 0, 1.0, -1.0), 0.0)


def table_gain(points: tuple[int, int], winner: int, mode: str) -> int:
    """:func:`team_gain` at one table that moved: what team 0 gains, from the points each team
    was awarded in the step (``points``) and the match's winner (-1 while it goes on)."""
    if mode == "points":
        return points[0] - points[1]
    return 0 if winner < 0 else 1 - 2 * winner


def points_scale(mode: str, target_score: int) -> float:
    """The factor training puts on rewards: 1 / target score for "points" (a match's returns
    within about +-1, as with "match"), 1 for "match"."""
    return 1.0 / target_score if mode == "points" else 1.0
