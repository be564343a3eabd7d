"""agents.averaged: a network averaged over every suit relabelling chooses alike in
relabelled positions, and with none it is the network itself."""

from __future__ import annotations

import numpy as np

from agents.averaged import ALL_RELABELLINGS, RELABELLINGS, AveragedPolicy
from agents.builtin import STUDENT
from agents.policy import PolicyBot
from allfours_env.engine import Game
from allfours_env.observation import suit_relabelling



def positions(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the seat to act, along random play of seeded deals."""
    rng = np.random.default_rng(seed)
    observations, masks = [], []
    while len(observations) < count:
        game = Game(decks=[rng.permutation(52).tolist()], dealer=int(rng.integers(4)), episode="deal")
        while not game.is_over:
            obs, mask = game.observe(game.current)
            observations.append(obs)
            masks.append(mask)
            game.step(int(rng.choice(game.legal_actions())))
    return np.array(observations[:count]), np.array(masks[:count])


def test_averaged_over_every_relabelling_the_choice_follows_the_relabelling():
    observations, masks = positions(300, seed=5)
    averaged = AveragedPolicy([PolicyBot.from_file(STUDENT)], ALL_RELABELLINGS)
    chosen = averaged.act_batch(observations, masks)
    plain = PolicyBot.from_file(STUDENT).act_batch(observations, masks)
    assert (chosen != plain).any()  # the network alone is not invariant
    for suits in [(1, 0, 2, 3), (3, 2, 0, 1), (2, 3, 1, 0)]:
        obs_index, action_index = suit_relabelling(suits)
        twin = averaged.act_batch(observations[:, obs_index], masks[:, action_index])
        np.testing.assert_array_equal(action_index[twin], chosen)  # the same action, its suit relabelled


def test_with_no_relabelling_it_is_the_network():
    observations, masks = positions(300, seed=6)
    averaged = AveragedPolicy([PolicyBot.from_file(STUDENT)], RELABELLINGS[1])
    np.testing.assert_array_equal(
        averaged.act_batch(observations, masks), PolicyBot.from_file(STUDENT).act_batch(observations, masks)
    )
