"""Game states from outside (checkpoints, ``set_state``) are checked before the compiled kernels touch them.

The reproductions of issue 40 (a checkpoint's seat to act at 40,000,000 crashed ``--resume`` with
a segmentation fault), every state real play reaches accepted in every variant, and a fuzz test:
a state with random values in any field is refused, or it plays on to the end of its matches as
any real state does (every table in play has a legal action, and each next state passes too).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import allfours_env
from agents import single_agent_env
from allfours_env import vector_kernels as k
from allfours_env.state_check import StateError, check_state
from allfours_env.vector import MAX_TABLES, VectorGame

VARIANTS = [
    ({}, "match"),
    ({"deal_batch": 3}, "deal"),
    ({"exhausted_pack": "redeal", "target_score": 7}, "match"),
    ({"undertrump": "forbidden_when_can_follow", "stand_requires_trump": True}, "deal"),
    ({"kick_points": "tobago", "hang_jack_points": 5, "give_one_requires_trump": True}, "match"),
    ({"single_trump_counts_high_and_low": True, "game_tie": "dealer", "game_points": 3}, "match"),
]


def played(n: int, steps: int, seed: int, rules: dict | None = None, episode: str = "match") -> VectorGame:
    """A VectorGame of ``n`` tables after ``steps`` random legal steps, ended tables restarted."""
    vg = VectorGame(n, episode=episode, **(rules or {}))
    vg.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        vg.restart(vg.is_over)
        vg.step(vg.sample_legal(rng))
    return vg


@pytest.mark.parametrize(("column", "value"), [(k.CURRENT, 40_000_000), (k.TRICK_LEN, 40_000_000),
                                               (k.NEXT_CARD, 50_000_000), (k.NEXT_DECK, -50_000_000)])  # fmt: skip
def test_a_tampered_index_is_refused_before_the_kernels_use_it(column, value):
    """Issue 40's reproductions: these values in a checkpoint crashed the process or read garbage."""
    state = played(4, 30, seed=1).get_state()
    state["st"][2, column] = value
    target = VectorGame(4)
    before = target.get_state()
    with pytest.raises(StateError, match=rf"table 2: st column {column} must be -?\d+\.\.\d+"):
        target.set_state(state)
    for name, array in before.items():  # nothing changed
        np.testing.assert_array_equal(array, target.get_state()[name])


def test_the_env_api_refuses_a_tampered_game():
    env = single_agent_env("random")
    env.reset(seed=3)
    state = copy.deepcopy(env.get_state())
    state["table"]["game"]["st"][0, k.CURRENT] = 40_000_000
    with pytest.raises(ValueError, match="st column 1 must be"):
        single_agent_env("random").set_state(state)


@pytest.mark.parametrize(("rules", "episode"), VARIANTS)
def test_every_state_of_real_play_is_accepted(rules, episode):
    vg = played(64, 0, seed=5, rules=rules, episode=episode)
    rng = np.random.default_rng(5)
    phases = set()
    for _ in range(400):
        check_state(vg.get_state(), vg._params)
        phases |= set(vg.phase.tolist())
        vg.restart(vg.is_over)
        vg.step(vg.sample_legal(rng))
    assert phases >= {k.STAND_OR_BEG, k.GIVE_OR_RUN, k.PLAY}


SPECIAL = [-(2**63), -(2**31), -2, -1, 0, 1, 2, 3, 4, 5, 6, 9, 12, 13, 24, 25, 26, 37, 38, 50, 51, 52, 53, 63, 64, 80,
           81, 127, 2**31, 2**63 - 1]  # fmt: skip


def mutate(state: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """One element of one array set to a value near it, a boundary, a random one or an extreme."""
    name = str(rng.choice([n for n, a in state.items() if a.size]))
    array = state[name]
    where = tuple(int(rng.integers(d)) for d in array.shape)
    old = int(array[where])
    if array.dtype == np.uint64:  # bit sets and random streams
        new = old ^ (1 << int(rng.integers(64))) if rng.random() < 0.7 else int(rng.integers(2**63))
    else:
        new = old + int(rng.choice([-2, -1, 1, 2])) if rng.random() < 0.4 else int(rng.choice(SPECIAL))
        info = np.iinfo(array.dtype)
        new = min(max(new, info.min), info.max)
    array[where] = new


def test_fuzz_a_state_is_refused_or_plays_on_like_a_real_one():
    """Random values in every array and field: each state is a StateError, or every table in play
    has a legal action at every step until its match ends, and each next state is accepted."""
    rng = np.random.default_rng(40)
    refused = accepted = 0
    for trial in range(800):
        rules, episode = VARIANTS[trial % len(VARIANTS)]
        state = played(6, int(rng.integers(0, 120)), seed=trial, rules=rules, episode=episode).get_state()
        for _ in range(int(rng.integers(1, 3))):
            mutate(state, rng)
        vg = VectorGame(6, episode=episode, **rules)
        try:
            vg.set_state(state)
        except StateError:
            refused += 1
            continue
        accepted += 1
        for step in range(2000):
            live = ~vg.is_over
            if not live.any():
                break
            assert vg.legal_mask()[live].any(axis=1).all(), f"trial {trial}: a table in play has no legal action"
            assert np.isfinite(vg.observe()).all()
            vg.step(vg.sample_legal(rng))
            if step < 12:  # the next states pass too (the check holds along the way)
                check_state(vg.get_state(), vg._params)
        assert vg.is_over.all(), f"trial {trial}: the matches did not end"
    assert refused > 400 and accepted > 60  # both sides were exercised


def test_a_table_count_beyond_the_maximum_is_a_value_error():
    with pytest.raises(ValueError, match=rf"n \(the number of tables\) must be an integer 1\.\.{MAX_TABLES:,}"):
        VectorGame(10**12)


def test_a_misspelt_reset_option_is_an_error_and_a_foreign_key_a_warning():
    env = allfours_env.env()
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['deck'\] \(did you mean 'decks'\?\)"):
        env.reset(seed=0, options={"deck": [list(range(52))]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.reset(seed=0, options={"options": 1})  # what PettingZoo's api_test passes
    assert any("reset ignores unknown option(s) ['options']" in str(w.message) for w in caught)
