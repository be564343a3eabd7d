"""The rules block of the observation: every play or scoring variant is visible and decodes back."""

import dataclasses

import numpy as np
import pytest

import allfours_env
from allfours_env import Rules, decode
from allfours_env.observation import (
    LAYOUT, OBS_SIZE, RULE_SLOTS, UNENCODED_RULES, encode, observation_high, rules_block,
)
from allfours_env.rules import _CHOICES

RULES_PIECE = LAYOUT["rules"]
FIRST_LAYOUT_SIZE = 969  # the layout before the rules block; its indices keep their meaning


def variants() -> list[dict]:
    """One variant per value of every encoded key (the default values included)."""
    out = []
    for key, kind in RULE_SLOTS:
        if isinstance(kind, tuple):
            out += [{key: value} for value in kind]
        elif kind is bool:
            out += [{key: True}, {key: False}]
        else:  # points: small, large, and above a short target
            out += [{key: 1}, {key: 2}, {key: 6}, {key: 9, "target_score": 7}]
    return out


def observe(**rules) -> np.ndarray:
    env = allfours_env.env(**rules)
    env.reset(seed=3)
    return env.observe(env.agent_selection)["observation"]


def test_the_block_is_appended_after_the_first_layout():
    assert RULES_PIECE.offset == FIRST_LAYOUT_SIZE and OBS_SIZE == FIRST_LAYOUT_SIZE + RULES_PIECE.size
    assert list(LAYOUT)[-1] == "rules"


def test_every_rule_key_is_encoded_or_named_as_left_out():
    encoded = [key for key, _ in RULE_SLOTS]
    assert sorted(encoded + list(UNENCODED_RULES)) == sorted(f.name for f in dataclasses.fields(Rules))
    for key, kind in RULE_SLOTS:  # a value added to rules.py must get a slot of its own
        if isinstance(kind, tuple) and key in _CHOICES:
            assert set(kind) == set(_CHOICES[key]), key


@pytest.mark.parametrize("variant", variants(), ids=lambda v: ",".join(f"{k}={v[k]}" for k in v))
def test_each_variant_is_visible_and_decodes_back(variant):
    obs = observe(**variant)
    rules = Rules(**variant)
    assert decode(obs).rules == rules
    block = obs[RULES_PIECE.slice]
    np.testing.assert_array_equal(block, rules_block(rules))
    changed = rules.changed().keys() - {"target_score"}
    assert (block != rules_block(Rules(target_score=rules.target_score))).any() == bool(changed)


def test_combined_variants_decode_back_and_leave_dealing_keys_at_their_defaults():
    variant = dict(
        target_score=11, kick_points="tobago", hang_jack_points=6, game_points=2, game_tie="dealer",
        undertrump="forbidden_when_can_follow", give_one_to_reach_target="allowed", give_one_requires_trump=True,
        stand_requires_trump=True, exhausted_pack="redeal", single_trump_counts_high_and_low=False,
    )
    obs = observe(**variant, first_dealer=2, deal_batch=3)
    assert decode(obs).rules == Rules(**variant)


def test_points_above_the_target_stay_inside_the_observation_space():
    env = allfours_env.env(target_score=2, hang_jack_points=6, game_points=3)
    env.reset(seed=1)
    obs = env.observe(env.agent_selection)
    assert env.observation_space(env.agent_selection).contains(obs)
    assert env.unwrapped.state_space.contains(env.unwrapped.state())
    assert decode(obs).rules.hang_jack_points == 6 and decode(obs).rules.game_points == 3


def test_the_block_is_the_same_for_every_seat_and_read_only():
    env = allfours_env.env(game_points=2)
    env.reset(seed=5)
    game = env.unwrapped.game
    blocks = {encode(game, seat)[RULES_PIECE.slice].tobytes() for seat in range(4)}
    assert blocks == {rules_block(Rules(game_points=2)).tobytes()}
    with pytest.raises(ValueError):
        rules_block(Rules())[0] = 1.0


def test_the_upper_bound_is_one_but_for_points_above_the_target():
    assert (observation_high(Rules()) == 1.0).all()
    high = observation_high(Rules(target_score=2, hang_jack_points=6))
    hang = RULES_PIECE.offset + 2  # after the two kick_points values
    assert high[hang] == 3.0 and (np.delete(high, hang) == 1.0).all()
