"""benchmarks/belief_quality.py: the true holders of the hidden cards, and how well the search's
sampled worlds and the worlds inferred from a network's likelihood of the other seats' play name them."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.search import OTHERS, sample_hidden
from allfours_env.cards import N_CARDS, N_RANKS, cards_of

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


@pytest.fixture(scope="module")
def student():
    """``student_v4``: the pinned figures below were measured with it (``student`` is ``student_v5`` now)."""
    return agents.make(str(Path(agents.__file__).parent / "pretrained" / "student_v4.npz"))


def test_inferred_worlds_agree_with_the_observation(played, student):
    observations, positions, truth = played
    rng = np.random.default_rng(1)
    for position in positions[::20]:
        hands = belief_quality.inferred_hands(position, rng, 8, student)
        assert (hands[:, 0] == position.hand).all()
        for seat in OTHERS:
            assert [int(h).bit_count() for h in hands[:, seat]] == [position.left[seat]] * len(hands)
            assert (hands[:, seat] & ~np.uint64(position.unseen) == 0).all()
            suits = {card // N_RANKS for h in hands[:, seat] for card in cards_of(int(h))}
            assert not any(position.voids[seat] >> suit & 1 for suit in suits)


def test_equal_likelihoods_give_exactly_the_sampled_worlds(played, student, monkeypatch):
    """Where no decision of the other seats tells anything, the inferred worlds are the uniform
    sampling's, drawn from the same seed."""
    observations, positions, truth = played
    monkeypatch.setattr(belief_quality.SearchBot, "_replayed", staticmethod(lambda position, decks, seats: iter(())))
    for k, position in enumerate(positions[::20]):
        inferred = belief_quality.inferred_hands(position, np.random.default_rng(k), 8, student)
        np.testing.assert_array_equal(inferred, sample_hidden(position, np.random.default_rng(k), 8))


def test_inferred_beliefs_are_those_measured_before_issue_63(played, student):
    """The figures ``agents.beliefs.InferredBeliefs("student", 16, 0)`` (search:infer's worlds)
    gave on these positions before issue 63 removed it, and the uniform sampling's beside them."""
    observations, positions, truth = (part[::10] for part in played)
    trumps = belief_quality.trump_cards(positions, observations)
    inferred = belief_quality.sampled_beliefs(positions, 16, 0, partial(belief_quality.inferred_hands, network=student))
    assert belief_quality.quality(inferred, truth, trumps) == pytest.approx(
        {"log_likelihood": -1.3110660438152004, "top1": 0.5123577873675952, "top1_trumps": 0.4781704781704782,
         "cards": 2549}, rel=1e-9)  # fmt: skip
    hidden = truth >= 0
    np.testing.assert_allclose(inferred.sum(axis=2)[hidden], 1.0, atol=1e-9)
    assert (inferred[~masks_of(positions)] == 0).all()
    sampled = belief_quality.quality(belief_quality.sampled_beliefs(positions, 16, 0), truth, trumps)
    assert sampled["log_likelihood"] == pytest.approx(-1.1957712977455683, rel=1e-9)


def test_infer_must_be_a_network(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["belief_quality.py", "--infer", "expert", "--positions", "1"])
    with pytest.raises(SystemExit) as stop:
        belief_quality.main()
    assert stop.value.code == 2 and "--infer must be a network" in capsys.readouterr().err
