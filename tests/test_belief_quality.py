"""benchmarks/belief_quality.py: the true holders of the hidden cards, and how well the search's
sampled worlds name them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from allfours_env.cards import N_CARDS

HERE = Path(__file__).resolve().parent.parent / "benchmarks" / "belief_quality.py"
spec = importlib.util.spec_from_file_location("belief_quality", HERE)
belief_quality = importlib.util.module_from_spec(spec)
spec.loader.exec_module(belief_quality)


@pytest.fixture(scope="module")
def played():
    return belief_quality.record(600, seed=3)


def masks_of(positions):
    return np.stack([belief_quality.holder_mask(p) for p in positions])


def test_the_true_holder_is_always_one_the_observation_allows(played):
    observations, positions, truth = played
    masks = masks_of(positions)
    hidden = truth >= 0
    assert hidden.sum() > 10_000
    assert np.take_along_axis(masks, np.maximum(truth, 0)[..., None], axis=2)[..., 0][hidden].all()
    assert not masks[~hidden].any()  # a card the seat has seen has no holder to guess


def test_sampled_beliefs_are_distributions_over_the_allowed_holders(played):
    observations, positions, truth = played
    probs = belief_quality.sampled_beliefs(positions, worlds=64, seed=0)
    hidden = truth >= 0
    np.testing.assert_allclose(probs.sum(axis=2)[hidden], 1.0, atol=1e-9)
    assert (probs[~hidden] == 0).all()
    assert (probs[~masks_of(positions)] == 0).all()


def test_quality_scores_a_sure_and_a_wrong_guess(played):
    observations, positions, truth = played
    sure = np.zeros((len(truth), N_CARDS, belief_quality.N_HOLDERS))
    np.put_along_axis(sure, np.maximum(truth, 0)[..., None], 1.0, axis=2)
    trumps = belief_quality.trump_cards(positions, observations)
    quality = belief_quality.quality
    assert quality(sure, truth, trumps)["log_likelihood"] == 0.0 and quality(sure, truth, trumps)["top1"] == 1.0
    wrong = np.roll(sure, 1, axis=2)
    assert quality(wrong, truth, trumps)["top1"] == 0.0
    no_trumps = quality(sure, truth, np.zeros_like(trumps))  # none hidden: no figure, and JSON that reads back
    assert no_trumps["top1_trumps"] is None and json.loads(json.dumps(no_trumps, allow_nan=False)) == no_trumps
