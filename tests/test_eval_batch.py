"""Boards played at once on the vector engine (eval.batch, allfours_env.arena) give exactly the records
that one match at a time on the scalar view gives (eval.play.play_board, allfours_env.match.Match)."""

from __future__ import annotations

from functools import partial

import pytest

import agents
from allfours_env.rules import Rules
from eval.batch import play_boards
from eval.boards import make_board
from eval.play import play_board

PAIRS = [("random", "rule_based"), ("expert", "random"), ("pretrained", "rule_based"), ("rule_based", "expert")]
VARIANTS = [({}, "match"), ({"target_score": 7, "undertrump": "forbidden_when_can_follow", "deal_batch": 1}, "match"),
            ({"exhausted_pack": "redeal", "kick_points": "tobago"}, "deal")]  # fmt: skip


@pytest.mark.parametrize("rules, episode", VARIANTS)
@pytest.mark.parametrize("a, b", PAIRS)
def test_batched_boards_equal_one_match_at_a_time(a, b, rules, episode):
    rules = Rules(**rules)
    boards = [make_board(i, rules) for i in range(24)]
    a_factory, b_factory = partial(agents.make, a), partial(agents.make, b)
    batched = play_boards(boards, a_factory, b_factory, rules, episode)
    one_by_one = [
        play_board(board, [a_factory(), a_factory()], [b_factory(), b_factory()], rules, episode) for board in boards
    ]
    assert batched == one_by_one  # every field but the think times (left out of equality)
    assert all(m.moves[0] > 0 and m.moves[1] > 0 for r in batched for m in r.matches)


def test_a_batch_bot_is_one_instance_and_the_others_one_per_seat():
    calls = []

    def factory():
        calls.append(1)
        return agents.make("rule_based")

    boards = [make_board(i, Rules()) for i in range(3)]
    shared = {}
    play_boards(boards, partial(agents.make, "expert"), factory, Rules(), "match", shared)
    assert len(shared) == 1 and len(calls) == 3 * 2 * 2  # 3 boards x 2 matches x 2 seats
