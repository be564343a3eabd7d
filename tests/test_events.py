"""The engine's event log: every field holds what its name says."""

import numpy as np

from allfours_env import Game, Rules
from allfours_env.cards import N_RANKS, N_SEATS, SUIT_NAMES
from allfours_env.engine import AWARD_KINDS, DEAL, DEAL_END, KICK, PLAYED, REDEAL, TRUMP
from allfours_env.render import describe_event


def random_match(seed: int, rules: Rules = Rules()) -> Game:
    rng = np.random.default_rng(seed)
    game = Game(rules, np.random.default_rng(seed + 1000))
    while not game.is_over:
        legal = game.legal_actions()
        game.step(legal[rng.integers(len(legal))])
    return game


def test_deal_events_number_the_deals_and_trump_events_name_a_suit():
    for seed in range(20):
        game = random_match(seed, Rules(exhausted_pack="redeal", target_score=7))
        deals = [e for e in game.events if e.kind == DEAL]
        assert [e.deal for e in deals] == list(range(1, len(deals) + 1))
        for e in game.events:
            if e.kind in (DEAL, DEAL_END):
                assert e.points == 0 and e.card == -1 and e.suit == -1 and 0 <= e.seat < N_SEATS and e.deal >= 1
            elif e.kind == TRUMP:
                assert 0 <= e.suit < 4 and e.card == -1 and e.deal == -1
            else:
                assert e.suit == -1 and e.deal == -1
            if e.kind not in AWARD_KINDS:
                assert e.points == 0
        ends = [e for e in game.events if e.kind == DEAL_END]
        started = {e.deal: e.seat for e in deals}
        assert all(started[e.deal] == e.seat for e in ends)  # each scored deal names its dealer


def test_trump_event_suit_is_the_game_trump_and_follows_the_last_kick():
    game = random_match(4)
    for i, e in enumerate(game.events):
        if e.kind == TRUMP:
            last_kick = next(k for k in reversed(game.events[:i]) if k.kind in (KICK, REDEAL))
            assert last_kick.kind == KICK and e.suit == last_kick.card // N_RANKS
            assert game.events[i + 1].kind == PLAYED


def test_describe_event_reads_the_named_fields():
    game = random_match(2)
    lines = [describe_event(e) for e in game.events]
    first_trump = next(e for e in game.events if e.kind == TRUMP)
    assert lines[0] == f"deal 1: player_{game.events[0].seat} deals"
    assert f"trump {SUIT_NAMES[first_trump.suit]}" in lines
    assert "deal 1 scored" in lines
