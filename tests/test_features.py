"""The derived policy features agree with the hidden truth the engine knows."""

from __future__ import annotations

import copy

import numpy as np

from agents.features import GLOBAL, N_FEATURES, PER_CARD, features, policy_input
from allfours_env import OBS_SIZE, Rules
from allfours_env.cards import N_CARDS, N_RANKS, SUIT_MASK
from allfours_env.engine import PLAY, Game
from allfours_env.observation import encode_with_mask

CARD = {name: i for i, name in enumerate(PER_CARD)}
G = {name: i for i, name in enumerate(GLOBAL)}


def test_features_match_what_the_engine_knows():
    checked_voids = checked_takes = 0
    for seed in range(12):
        game = Game(Rules(), np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        while game.phase < 3:
            seat = game.current
            obs, mask = encode_with_mask(game, seat)
            f = features(obs, mask)
            assert f.shape == (N_FEATURES,) and policy_input(obs, mask).shape == (OBS_SIZE + N_FEATURES,)
            per_card = f[: len(PER_CARD) * N_CARDS].reshape(len(PER_CARD), N_CARDS)
            g = f[len(PER_CARD) * N_CARDS :]
            np.testing.assert_array_equal(per_card[CARD["legal"]], mask[:N_CARDS])
            hand = [c for c in range(N_CARDS) if game.hands[seat] >> c & 1]
            assert not per_card[1:, [c for c in range(N_CARDS) if c not in hand]].any()
            if game.phase == PLAY:
                for i, rel in enumerate((1, 2, 3)):  # every void read from the play is real
                    other = (seat + rel) % 4
                    for suit in range(4):
                        if g[G[f"void_{('next', 'partner', 'previous')[i]}_{'CDHS'[suit]}"]]:
                            assert not game.hands[other] & SUIT_MASK[suit]
                            checked_voids += 1
                for card in hand:  # "takes the trick now" is what the engine decides
                    if game.trick and mask[card]:
                        trial = copy.deepcopy(game)
                        trial.step(card)
                        if trial.trick:
                            takes = trial.win_seat == seat
                        else:  # my card completed the trick
                            takes = next(e for e in reversed(trial.events) if e.kind == "trick").seat == seat
                        assert bool(per_card[CARD["takes_trick_now"], card]) == takes
                        checked_takes += 1
                    if per_card[CARD["unbeatable_in_suit"], card]:  # no other hand holds a higher card of its suit
                        higher = SUIT_MASK[card // N_RANKS] & ~((2 << card) - 1)
                        assert not any(game.hands[o] & higher for o in range(4) if o != seat)
            legal = np.flatnonzero(mask)
            game.step(int(legal[rng.integers(len(legal))]))
    assert checked_voids > 30 and checked_takes > 300
