"""Invariants over thousands of random matches with varied rule variants."""

from __future__ import annotations

import numpy as np
import pytest

import allfours_env
from allfours_env.cards import FULL_DECK, N_CARDS, SUIT_MASK
from allfours_env.engine import (
    AWARD_KINDS, DEAL, DEAL_END, GAME, GAVE_ONE, HANG_JACK, HIGH, JACK, KICK, LOW, MATCH_END, MATCH_OVER, PLAY, Game,
)
from allfours_env.rules import Rules

VARIANTS = (
    {},
    {"target_score": 7, "kick_points": "tobago", "hang_jack_points": 6, "game_points": 2},
    {"undertrump": "forbidden_unless_all_trumps", "exhausted_pack": "redeal", "game_tie": "dealer"},
    {"undertrump": "forbidden_when_can_follow", "give_one_to_reach_target": "allowed", "deal_batch": 3},
    {"give_one_requires_trump": True, "stand_requires_trump": True, "single_trump_counts_high_and_low": False,
     "game_tie": "non_dealer", "first_dealer": "first_jack"},
    {"target_score": 21, "first_dealer": "random"},
)
MATCHES_PER_VARIANT = 350  # 2,100 matches in all


def check_cards_accounted_for(game: Game) -> None:
    seen = 0
    parts = [*game.hands, *game.played, game.kicks_aside, 1 << game.kick if game.kick >= 0 else 0]
    stock = 0
    for card in game.deck[game.next_card:]:
        stock |= 1 << card
    parts.append(stock)
    for part in parts:
        assert not seen & part, "a card is in two places"
        seen |= part
    assert seen == FULL_DECK, "a card is missing"


def run_checked_match(rules: Rules, seed: int) -> None:
    rng = np.random.default_rng(seed)
    game = Game(rules, rng)
    target = rules.target_score
    max_end_of_deal = 2 + max(1, rules.hang_jack_points) + rules.game_points
    deal_points = [0, 0]
    end_points = [0, 0]
    steps = 0
    seen_events = 0
    while game.phase != MATCH_OVER:
        check_cards_accounted_for(game)
        legal = game.legal_actions()
        assert legal, "a decision with no legal action"
        if game.phase == PLAY:
            in_trick = {(game.leader + i) % 4 for i in range(len(game.trick))}
            for seat in range(4):  # equal hands, less the card of those who played to this trick
                expected = game.n_tricks - game.tricks_played - (seat in in_trick)
                assert game.hands[seat].bit_count() == expected
            assert all(a < N_CARDS for a in legal)
        game.step(legal[rng.integers(len(legal))])
        steps += 1
        for ev in game.events[seen_events:]:
            if ev.kind == DEAL:
                deal_points = [0, 0]
                end_points = [0, 0]
            if ev.kind in AWARD_KINDS:
                assert ev.points >= 0
                deal_points[ev.team] += ev.points
                if ev.kind in (HIGH, LOW, JACK, HANG_JACK, GAME):
                    end_points[ev.team] += ev.points
                if ev.kind == KICK:
                    assert ev.points <= 3
                if ev.kind == GAVE_ONE:
                    assert ev.points == 1
            if ev.kind == DEAL_END:
                assert sum(end_points) <= max_end_of_deal
        seen_events = len(game.events)
        # The match ends exactly when a team reaches the target, and not before.
        reached = [s >= target for s in game.scores]
        assert (game.phase == MATCH_OVER) == any(reached)
        assert steps < 100_000
    assert game.events[-1].kind == MATCH_END and game.scores[game.winner] >= target
    assert game.scores[1 - game.winner] < target
    last_award = next(ev for ev in reversed(game.events) if ev.kind in AWARD_KINDS and ev.points)
    assert last_award.team == game.winner and game.scores[game.winner] - last_award.points < target


@pytest.mark.parametrize("variant", VARIANTS, ids=[",".join(v) or "default" for v in VARIANTS])
def test_random_matches_keep_the_invariants(variant):
    rules = Rules(**variant)
    for seed in range(MATCHES_PER_VARIANT):
        run_checked_match(rules, seed)


def test_hands_after_runs_hold_9_or_12_cards_and_are_equal():
    sizes = set()
    for seed in range(300):
        game = Game(Rules(), np.random.default_rng(seed), episode="deal")
        while game.phase not in (PLAY, MATCH_OVER):
            game.step(game.legal_actions()[-1])  # BEG, then RUN whenever possible
        if game.phase == PLAY:
            counts = {h.bit_count() for h in game.hands}
            assert len(counts) == 1
            sizes |= counts
            assert game.trumps_in_hands == (game.hands[0] | game.hands[1] | game.hands[2] | game.hands[3]) & SUIT_MASK[game.trump]
    assert sizes == {9, 12}  # always begging and running: one or two runs before a new suit


@pytest.mark.parametrize("reward", ["points", "match"])
def test_env_rewards_sum_to_zero_every_step(reward):
    env = allfours_env.env(reward=reward, target_score=7)
    for seed in range(60):
        env.reset(seed=seed)
        picker = np.random.default_rng(seed)
        for _ in env.agent_iter():
            assert sum(env.rewards.values()) == 0
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[picker.integers(len(legal))]))
