"""Policy-based inference in the search (``search:infer=NETWORK``): its worlds agree with the
observation, are drawn by the network's likelihood of the other seats' decisions, and are exactly
today's worlds where that likelihood is the same in every candidate."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.builtin import STUDENT
from agents.search import INFER_GROUPS, Position, SearchBot, log_likelihoods, systematic_resample
from allfours_env import decode
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from tests.test_search_opponents import check_world, deals_against


def positions(n_matches: int, seed: int):
    """(true deck, observation, position) at the decisions of seats 0 and 2 against the student."""
    for deck, observation in deals_against("student", n_matches, seed):
        yield deck, observation, Position.from_view(decode(observation))


def test_every_inferred_world_agrees_with_the_observation():
    bot = SearchBot(infer=str(STUDENT), ms=0, seed=3)
    checked = 0
    for _, observation, position in positions(2, seed=5):
        hands, decks = bot.inferred_worlds(position, 4)
        for held, deck in zip(hands, decks):
            check_world(observation, position, deck)  # the deck replays to the very observation
            world = Game(position.rules, decks=[deck], dealer=position.dealer, scores=position.start_scores,
                         episode="deal")  # fmt: skip
            for action in position.history:
                world.step(action)
            assert tuple(world.hands) == tuple(map(int, held))  # the hands returned are the deck's
            checked += 1
    assert checked > 100


def test_equal_likelihoods_give_exactly_todays_worlds(monkeypatch):
    """Where every candidate is equally likely the worlds are the plain search's, drawn from the
    same seed (positions before any run was dealt: after one, which cards came with it is drawn)."""
    inferred, plain = SearchBot(infer="student", ms=0, seed=9), SearchBot(ms=0, seed=9)
    monkeypatch.setattr(SearchBot, "decision_log_likelihoods", lambda self, position, decks: np.zeros(len(decks)))
    compared = 0
    for _, _, position in positions(3, seed=6):
        if position.runs_dealt:
            continue
        for bot in (inferred, plain):
            bot.reset(compared)
        assert inferred.inferred_decks(position, 8) == plain.sample_decks(position, 8)
        compared += 1
    assert compared > 50


def test_the_search_reads_the_likelihood_of_every_other_seats_decisions():
    """The log-likelihood of a world is the network's log-probability of each decision of the three
    other seats (with a choice) in that world, summed: here recomputed on the scalar engine."""
    bot = SearchBot(infer="student", ms=0, seed=1)
    network = agents.make("student")
    for deck, _, position in list(positions(1, seed=7))[5:40:5]:
        decks = [deck, *bot.inferred_decks(position, 3)]  # the true deck deals seats relative to the dealer too
        expected = []
        for world_deck in decks:
            world = Game(position.rules, decks=[world_deck], dealer=position.dealer, scores=position.start_scores,
                         episode="deal")  # fmt: skip
            total = 0.0
            for action in position.history:
                if world.current != 0:
                    observation, mask = encode_with_mask(world, world.current)
                    if mask.sum() > 1:
                        total += log_likelihoods(network, observation[None], mask[None], np.array([action]))[0]
                world.step(action)
            expected.append(total)
        np.testing.assert_allclose(bot.decision_log_likelihoods(position, decks), expected, rtol=1e-5, atol=1e-5)


def test_log_likelihoods_are_a_distribution_over_the_legal_actions():
    network = agents.make("student")
    observations, masks = [], []
    for _, observation, _ in list(positions(1, seed=8))[:30]:
        observations.append(observation["observation"])
        masks.append(observation["action_mask"])
    observations, masks = np.array(observations), np.array(masks)
    total = np.zeros(len(masks))
    for action in range(masks.shape[1]):
        legal = masks[:, action] > 0
        if legal.any():
            rows = np.flatnonzero(legal)
            total[rows] += np.exp(log_likelihoods(network, observations[rows], masks[rows], np.full(len(rows), action)))
    np.testing.assert_allclose(total, 1.0, rtol=1e-6)


def test_systematic_resampling_keeps_the_proportions():
    rng = np.random.default_rng(0)
    chosen = systematic_resample(np.array([1.0, 0.0, 3.0, 4.0]), 8, rng)
    assert np.bincount(chosen, minlength=4).tolist() == [1, 0, 3, 4]
    assert set(systematic_resample(np.array([0.0, 0.0, 1e-300, 0.0]), 5, rng)) == {2}


def test_a_seeded_inferring_search_repeats():
    first, second = (SearchBot(infer="student", ms=0, worlds=8, seed=4) for _ in range(2))
    for _, observation, _ in list(positions(1, seed=9))[:10]:
        assert first.act(observation) == second.act(observation)
        np.testing.assert_array_equal(first.last_search.values, second.last_search.values)


def test_likely_worlds_are_searched_more_often(monkeypatch):
    """Candidates that explain the decisions seen better are drawn in proportion: here the
    likelihood is made to favour the first of the INFER_GROUPS groups by a factor of 1e6."""
    bot = SearchBot(infer="student", ms=0, seed=2)

    def favoured(self, position, decks):
        return np.where(np.arange(len(decks)) < len(decks) // INFER_GROUPS, 0.0, -13.8)

    monkeypatch.setattr(SearchBot, "decision_log_likelihoods", favoured)
    _, _, position = next(positions(1, seed=10))
    plain = SearchBot(ms=0, seed=2).sample_decks(position, 16)
    assert all(deck in plain for deck in bot.inferred_decks(position, 16))


@pytest.mark.parametrize("bad", ["random", "expert", "search", "nonsense", "search:worlds=4"])
def test_infer_must_be_a_network(bad):
    with pytest.raises(ValueError, match="search option infer must be a network"):
        agents.make(f"search:infer={bad}")


def test_infer_and_opponents_are_not_taken_together():
    with pytest.raises(ValueError, match="not taken together"):
        agents.make("search:infer=student,opponents=expert")
