"""Suits have no order (docs/rules.md A1.1): a match dealt from a deck whose suits are relabelled
plays the same, and :func:`suit_relabelling` maps every observation and mask of the one to those
of the other (the label fit's augmentation rests on it)."""

import itertools

import numpy as np
import pytest

from allfours_env.cards import N_RANKS
from allfours_env.engine import Game
from allfours_env.observation import suit_relabelling


@pytest.mark.parametrize("suits", [(1, 0, 2, 3), (3, 2, 0, 1), (2, 3, 1, 0)])
def test_a_relabelled_deal_observes_as_the_relabelled_observation(suits):
    obs_index, action_index = suit_relabelling(suits)
    relabel = [suits[c // N_RANKS] * N_RANKS + c % N_RANKS for c in range(52)]
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(20):
        deck = rng.permutation(52).tolist()
        dealer = int(rng.integers(4))
        game = Game(decks=[deck], dealer=dealer, episode="deal")
        twin = Game(decks=[[relabel[c] for c in deck]], dealer=dealer, episode="deal")
        while not game.is_over:
            for seat in range(4):
                obs, mask = game.observe(seat)
                twin_obs, twin_mask = twin.observe(seat)
                np.testing.assert_array_equal(obs[obs_index], twin_obs)
                np.testing.assert_array_equal(mask[action_index], twin_mask)
                checked += 1
            action = int(rng.choice(game.legal_actions()))
            game.step(action)
            twin.step(relabel[action] if action < 52 else action)
    assert checked > 500


def test_the_identity_and_a_round_trip():
    obs_index, action_index = suit_relabelling((0, 1, 2, 3))
    assert (obs_index == np.arange(len(obs_index))).all() and (action_index == np.arange(56)).all()
    for suits in itertools.permutations(range(4)):
        inverse = tuple(int(np.argsort(suits)[s]) for s in range(4))
        there, back = suit_relabelling(suits), suit_relabelling(inverse)
        assert (there[0][back[0]] == np.arange(len(there[0]))).all()


def test_not_a_permutation_is_refused():
    with pytest.raises(ValueError, match="permutation of 0..3"):
        suit_relabelling((0, 0, 1, 2))
