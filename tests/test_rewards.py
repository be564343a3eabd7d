"""The reward rule's two forms agree: ``table_gain`` (one table, plain ints: the AEC env) is
``team_gain`` (many tables, arrays: the vector env, the warm start's recording) at a table that moved;
and ``"equity"`` pays the change in the chance to win the match, whose sum over a match is its result."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from allfours_env import Rules
from allfours_env.match_model import match_equity
from allfours_env.rewards import REWARD_MODES, equity_for, table_gain, team_gain

RULES = Rules()
TARGET = RULES.target_score


@pytest.mark.parametrize("mode", REWARD_MODES)
def test_table_gain_is_team_gain_at_one_table(mode):
    cases = [  # team 0's points, team 1's, its score after, team 1's score after, winner
        (p0, p1, s0, s1, w)
        for p0, p1, s0, s1 in itertools.product(range(4), range(4), (3, 9, TARGET - 1, TARGET + 1), (5, TARGET - 1, TARGET))
        for w in ([0] if s0 >= TARGET else [1] if s1 >= TARGET else [-1])
        if 0 <= s0 - p0 < TARGET and 0 <= s1 - p1 < TARGET and not (s0 >= TARGET and s1 >= TARGET)
    ]  # fmt: skip (a step that moved: the match was on before it)
    points = np.array([[p0, p1] for p0, p1, *_ in cases], dtype=np.int64)
    scores = np.array([[s0, s1] for _, _, s0, s1, _ in cases], dtype=np.int64)
    winner = np.array([w for *_, w in cases], dtype=np.int64)
    equity = equity_for(mode, RULES)
    vector = team_gain(points, winner, np.ones(len(cases), dtype=bool), mode, scores, equity)
    scalar = [table_gain((p0, p1), w, mode, (s0, s1), equity) for p0, p1, s0, s1, w in cases]
    if mode != "equity":
        assert all(type(gain) is int for gain in scalar)
    assert scalar == pytest.approx(vector.tolist(), abs=1e-12)


def test_equity_pays_the_change_in_the_chance_to_win_and_a_match_sums_to_its_result():
    equity = equity_for("equity", RULES)
    steps = [((1, 0), (1, 0)), ((0, 2), (1, 2)), ((3, 1), (4, 3)), ((TARGET - 4, 0), (TARGET, 3))]
    paid = []
    for points, scores in steps:
        winner = 0 if scores[0] >= TARGET else -1
        paid.append(table_gain(points, winner, "equity", scores, equity))
    assert paid[0] == pytest.approx(match_equity(1, 0, RULES) - match_equity(0, 0, RULES))
    assert sum(paid) == pytest.approx(1.0 - match_equity(0, 0, RULES))
    moved = np.array([True, False])  # a table that did not move is paid nothing, whatever its score
    still = team_gain(np.zeros((2, 2), np.int64), np.array([-1, 0]), moved, "equity", np.array([[2, 2], [TARGET + 2, 1]]), equity)
    assert still.tolist() == [0.0, 0.0]


def test_equity_needs_a_target_the_match_model_reaches():
    with pytest.raises(ValueError, match="reward 'equity' needs target_score at most 30"):
        equity_for("equity", Rules.from_kwargs(target_score=61))
    assert equity_for("points", Rules.from_kwargs(target_score=61)) is None


def test_the_aec_env_pays_equity_that_sums_to_the_match_result():
    from allfours_env import env

    game = env(reward="equity")
    game.reset(seed=3)
    rng = np.random.default_rng(3)
    paid = dict.fromkeys(game.possible_agents, 0.0)
    for agent in game.agent_iter():
        observation, reward, terminated, truncated, _ = game.last()
        paid[agent] += reward
        legal = np.flatnonzero(observation["action_mask"])
        game.step(None if terminated or truncated else int(rng.choice(legal)))
    start = equity_for("equity", RULES)[0, 0]
    assert sorted(round(v, 9) for v in paid.values()) == sorted(round(v - start, 9) for v in (0, 0, 1, 1))
