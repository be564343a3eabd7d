"""Rewards: one rule for every env, from what a step scored to what each team is paid.

``reward="match"``: the end of a match pays 1 to the winning team. ``reward="points"``: every
award (kick, give one, high, low, jack, hang jack, game) pays its points to the scoring team.
``reward="equity"``: every award pays the change it makes in the team's chance to win the match
(:func:`allfours_env.match_model.match_equity` of the score before and after; 1 or 0 once the
match is won), so a match's rewards sum to its result less the chance at 0-0, and a deal's to
what it did to the match: the same count as ``"match"``, paid when the points come. Every env is
zero-sum: what a team is paid, the other team loses. :func:`team_gain` applies the rule to one
step of many tables (the vector env, the warm start's recording); :func:`table_gain` is the same
rule at one table in plain numbers (the AEC env's every step, where one-table arrays would cost
more than the engine's step; tests/test_rewards.py checks the two agree).
"""

from __future__ import annotations

import numpy as np

from .match_model import MAX_MODELLED_TARGET, equity_table
from .rules import Rules

REWARD_MODES = ("match", "points", "equity")


def equity_for(mode: str, rules: Rules) -> np.ndarray | None:
    """The chance table ``"equity"`` pays from (None for the other modes); a ValueError if the
    target is beyond what the match model covers."""
    if mode != "equity":
        return None
    if rules.target_score > MAX_MODELLED_TARGET:
        raise ValueError(
            f"reward 'equity' needs target_score at most {MAX_MODELLED_TARGET} (the match model's reach), "
            f"got {rules.target_score}"
        )
    return equity_table(rules)


def team_gain(
    points: np.ndarray, winner: np.ndarray, moved: np.ndarray, mode: str,
    scores: np.ndarray | None = None, equity: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """What team 0 gains at each table in one step (team 1 gains its negative): with "points" its
    points less the other team's (``points`` (n, 2)); with "match" +1 or -1 at each table in
    ``moved`` where a match has just been won (``winner`` >= 0), else 0; with "equity" the change
    in its chance to win the match from the ``scores`` (n, 2) before the step's ``points`` to those
    after (``equity``: :func:`equity_for`'s table), at the tables in ``moved``."""
    if mode == "points":
        return (points[:, 0] - points[:, 1]).astype(np.float64)
    if mode == "match":
        won = moved & (winner >= 0)
        return np.where(won, np.where(winner == 0, 1.0, -1.0), 0.0)
    top = len(equity) - 1  # a score at the target or past it (a won match) is never looked up: clipped
    after = np.minimum(scores, top)
    before = np.minimum(scores - points, top)
    chance_after = np.where(winner >= 0, (winner == 0).astype(np.float64), equity[after[:, 0], after[:, 1]])
    return np.where(moved, chance_after - equity[before[:, 0], before[:, 1]], 0.0)


def table_gain(
    points: tuple[int, int], winner: int, mode: str, scores: tuple[int, int] = (0, 0), equity: np.ndarray | None = None
) -> float:
    """:func:`team_gain` at one table that moved: what team 0 gains, from the points each team
    was awarded in the step (``points``), the match's winner (-1 while it goes on) and, for
    "equity", the scores after the step."""
    if mode == "points":
        return points[0] - points[1]
    if mode == "match":
        return 0 if winner < 0 else 1 - 2 * winner
    after = float(winner == 0) if winner >= 0 else float(equity[scores[0], scores[1]])
    return after - float(equity[scores[0] - points[0], scores[1] - points[1]])


def points_scale(mode: str, target_score: int) -> float:
    """The factor training puts on rewards: 1 / target score for "points" (a match's returns
    within about +-1, as with "match" and "equity"), 1 for the others."""
    return 1.0 / target_score if mode == "points" else 1.0
