"""Bad input to the public API is a ValueError (a RuntimeError for a call out of order) that says
what is allowed, and it leaves the env, the game or every table exactly as it was (README,
Reliability): the errors an attacker found, one test per gap, and their siblings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agents
import allfours_env
from agents import single_agent_env
from agents.builtin import STUDENT
from allfours_env import Rules, SingleAgentEnv, raw_env
from allfours_env.rules import MAX_POINTS
from allfours_env.vector import VectorGame

OPTIONS_KEYS = r"\['decks', 'dealer', 'scores'\]"
SEED_ALLOWED = "seed must be None or a non-negative integer"
NOT_SEEDS = [True, False, np.bool_(True), 1.0, np.float64(2.0), -1, "7", [1, 2]]


def first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def aec_step(e: Any) -> None:
    """One step of an AEC env: the first legal action, or None for an agent that is done."""
    obs, _, terminated, truncated, _ = e.last()
    e.step(None if terminated or truncated else first_legal(obs["action_mask"]))


def aec_record(e: Any, steps: int) -> list[tuple]:
    """What ``steps`` more steps show (agent, observation, rewards); a twin must show the same."""
    seen = []
    for _ in range(steps):
        if not e.agents:
            break
        agent = e.agent_selection
        seen.append((agent, e.observe(agent)["observation"].tobytes(), tuple(e.rewards.values())))
        aec_step(e)
    return seen


def aec_twins(make: Callable[[], Any] = allfours_env.env, steps: int = 5) -> tuple[Any, Any]:
    """Two envs in the same position: ``steps`` steps into the match of seed 3."""
    pair = make(), make()
    for e in pair:
        e.reset(seed=3)
        for _ in range(steps):
            aec_step(e)
    return pair


def assert_aec_twins_agree(e: Any, twin: Any) -> None:
    """The env goes on exactly as its twin, which never saw the bad call, and so does its generator."""
    assert aec_record(e, 30) == aec_record(twin, 30)
    e.reset()
    twin.reset()
    assert aec_record(e, 10) == aec_record(twin, 10)


def single_twins(**kwargs: Any) -> tuple[SingleAgentEnv, SingleAgentEnv]:
    pair = single_agent_env(opponents="random", **kwargs), single_agent_env(opponents="random", **kwargs)
    for e in pair:
        e.reset(seed=3)
        e.step(first_legal(e.action_masks()))
    return pair


def single_record(e: SingleAgentEnv, steps: int) -> list[tuple]:
    seen = []
    for _ in range(steps):
        if not e.action_masks().any():
            break
        obs, reward, terminated, _, _ = e.step(first_legal(e.action_masks()))
        seen.append((obs.tobytes(), reward, terminated))
    return seen


def assert_single_twins_agree(e: SingleAgentEnv, twin: SingleAgentEnv) -> None:
    """Same episode from here on, and the same next reset without a seed (the generator is untouched)."""
    assert single_record(e, 10) == single_record(twin, 10)
    assert e.np_random.bit_generator.state == twin.np_random.bit_generator.state
    obs, _ = e.reset()
    twin_obs, _ = twin.reset()
    np.testing.assert_array_equal(obs, twin_obs)
    assert e.team == twin.team and single_record(e, 10) == single_record(twin, 10)


def played_vector_game(n: int = 2) -> VectorGame:
    vg = VectorGame(n)
    vg.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(7):
        vg.step(vg.sample_legal(rng))
    return vg


def assert_same_state(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    assert before.keys() == after.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(value, after[name], err_msg=name)


# ---------------------------------------------------------------- 1. reset options not a dict


@pytest.mark.parametrize("options", [[1, 2], "decks", 5, ("decks",)])
def test_1_reset_options_that_are_not_a_dict_are_refused_and_change_nothing(options):
    e, twin = aec_twins()
    with pytest.raises(ValueError, match=rf"options must be None or a dict with keys {OPTIONS_KEYS}"):
        e.reset(seed=4, options=options)
    assert_aec_twins_agree(e, twin)


@pytest.mark.parametrize("options", [[1, 2], "decks", {1: 0, "dealr": 2}])
def test_1_single_agent_reset_options_that_are_not_a_dict_of_known_keys_are_refused(options):
    e, twin = single_twins()
    with pytest.raises(ValueError, match=rf"options.*{OPTIONS_KEYS}"):  # a dict with keys of any type too
        e.reset(seed=4, options=options)
    assert_single_twins_agree(e, twin)


def test_1_a_failed_first_reset_is_not_a_reset():
    e = allfours_env.env()
    with pytest.raises(ValueError, match="options must be None or a dict"):
        e.reset(seed=1, options=[1, 2])
    with pytest.raises(AssertionError, match="reset"):  # PettingZoo's wrapper: still never reset
        e.step(0)
    assert e.unwrapped.game is None


# ---------------------------------------------------------------- 2. raw_env out of order


@pytest.mark.parametrize(
    "call",
    [lambda e: e.observe("player_0"), lambda e: e.step(52), lambda e: e.step(None), lambda e: e.last(),
     lambda e: e.state()],
    ids=["observe", "step", "step_none", "last", "state"],
)  # fmt: skip
def test_2_raw_env_before_reset_says_to_reset_first(call):
    e = raw_env()
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        call(e)
    assert e.game is None and e.agents == []
    e.reset(seed=3)
    fresh = raw_env()
    fresh.reset(seed=3)
    assert aec_record(e, 20) == aec_record(fresh, 20)


def test_2_raw_env_render_before_reset_says_to_reset_first():
    with pytest.raises(RuntimeError, match=r"render\(\) needs a match: call reset\(\) first"):
        raw_env(render_mode="ansi").render()


def ended(make: Callable[..., Any]) -> Any:
    """An env whose match is over and whose agents have all been stepped out."""
    e = make(target_score=2)
    e.reset(seed=0)
    while e.agents:
        aec_step(e)
    assert e.unwrapped.game.winner >= 0
    return e


@pytest.mark.parametrize(
    "make, call",
    [(raw_env, lambda e: e.step(None)), (raw_env, lambda e: e.step(52)), (raw_env, lambda e: e.last()),
     (allfours_env.env, lambda e: e.last())],
    ids=["raw_step_none", "raw_step", "raw_last", "env_last"],
)  # fmt: skip
def test_2_after_the_match_every_call_that_needs_an_agent_says_to_reset(make, call):
    e = ended(make)
    game = e.unwrapped.game
    before = e.state(), e.observe("player_1")["observation"], len(game.events), e.scores
    with pytest.raises(RuntimeError, match=r"is over .* call reset\(\) to start a new one"):
        call(e)
    after = e.state(), e.observe("player_1")["observation"], len(game.events), e.scores
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert after[2:] == before[2:] and e.agents == [] and e.unwrapped.game is game
    e.reset(seed=1)
    assert len(e.agents) == 4


@pytest.mark.parametrize("agent", [["player_0"], "player_9", 0])
def test_2_unknown_agents_name_the_agents(agent):
    e = allfours_env.env()
    e.reset(seed=1)
    for call in (e.observe, e.observation_space, e.action_space):
        with pytest.raises(ValueError, match=r"unknown agent .*; the agents are \['player_0'"):
            call(agent)


# ---------------------------------------------------------------- 3. seeds


@pytest.mark.parametrize("seed", NOT_SEEDS)
def test_3_env_refuses_a_seed_that_is_not_a_non_negative_int(seed):
    e, twin = aec_twins()
    with pytest.raises(ValueError, match=SEED_ALLOWED):
        e.reset(seed=seed)
    assert_aec_twins_agree(e, twin)


@pytest.mark.parametrize("seed", NOT_SEEDS)
def test_3_single_agent_env_refuses_a_seed_that_is_not_a_non_negative_int(seed):
    e, twin = single_twins()
    with pytest.raises(ValueError, match=SEED_ALLOWED):
        e.reset(seed=seed)
    assert_single_twins_agree(e, twin)


@pytest.mark.parametrize("seed", NOT_SEEDS)
def test_3_vector_game_refuses_a_seed_that_is_not_a_non_negative_int(seed):
    vg = played_vector_game()
    before = vg.get_state()
    with pytest.raises(ValueError, match=SEED_ALLOWED):
        vg.reset(seed=seed)
    assert_same_state(before, vg.get_state())


def test_3_seeds_are_ints_of_any_size_numpy_ones_included():
    """What numpy's default_rng takes: every int 0 or more; a numpy integer seeds as its value."""
    for seed in (0, 2**31, 2**64 + 1):
        a, b = allfours_env.env(), allfours_env.env()
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert aec_record(a, 10) == aec_record(b, 10)
    a, b = allfours_env.env(), allfours_env.env()
    a.reset(seed=np.int64(7))
    b.reset(seed=7)
    assert aec_record(a, 10) == aec_record(b, 10)
    one, other = single_agent_env(opponents="random"), single_agent_env(opponents="random")
    np.testing.assert_array_equal(one.reset(seed=np.uint32(7))[0], other.reset(seed=7)[0])


# ---------------------------------------------------------------- 4. rule values out of range


@pytest.mark.parametrize("key", ["target_score", "hang_jack_points", "game_points"])
@pytest.mark.parametrize("value", [2**63, MAX_POINTS + 1])
def test_4_rule_values_beyond_the_maximum_are_refused_the_same_way_everywhere(key, value):
    makers = [Rules, Rules.from_kwargs, allfours_env.env, raw_env, lambda **r: single_agent_env("random", **r),
              lambda **r: VectorGame(1, **r)]  # fmt: skip
    messages = set()
    for make in makers:
        with pytest.raises(ValueError, match=rf"rule '{key}' must be a positive integer, 1\.\.{MAX_POINTS}") as err:
            make(**{key: value})
        messages.add(str(err.value))
    assert len(messages) == 1


def test_4_the_maximum_itself_plays_and_decodes_exactly():
    rules = {"target_score": MAX_POINTS, "hang_jack_points": MAX_POINTS, "game_points": MAX_POINTS}
    vg = VectorGame(1, **rules)
    vg.reset(seed=0, options=[{"scores": [MAX_POINTS - 1, 0]}])
    e = allfours_env.env(**rules)
    e.reset(seed=0, options={"scores": [MAX_POINTS - 1, 0]})
    view = allfours_env.decode(e.observe(e.agent_selection)["observation"])
    assert view.target == MAX_POINTS and view.rules == Rules(**rules)


# ---------------------------------------------------------------- 5. VectorGame reset options


@pytest.mark.parametrize("options", [5, "ab", np.array(5), (o for o in [None, None]), [None], {"dealer": 0}])
def test_5_vector_reset_options_must_be_one_dict_or_none_per_table(options):
    vg = played_vector_game(2)
    before = vg.get_state()
    with pytest.raises(ValueError, match=r"options must be None or a list of 2 dicts or Nones, one per table"):
        vg.reset(seed=1, options=options)
    assert_same_state(before, vg.get_state())


def test_5_vector_reset_option_keys_of_any_type_are_named():
    vg = played_vector_game(2)
    before = vg.get_state()
    with pytest.raises(ValueError, match=r"options\[1\] has unknown reset option\(s\) .*; allowed: " + OPTIONS_KEYS):
        vg.reset(seed=1, options=[None, {1: 0, "dealr": 2}])
    assert_same_state(before, vg.get_state())


# ---------------------------------------------------------------- 6. sample_legal's generator


@pytest.mark.parametrize("rng", [None, 0])
def test_6_sample_legal_takes_a_numpy_generator(rng):
    vg = played_vector_game(2)
    before = vg.get_state()
    with pytest.raises(ValueError, match=r"takes a numpy Generator \(np\.random\.default_rng\(seed\)\)"):
        vg.sample_legal(rng)
    assert_same_state(before, vg.get_state())


# ---------------------------------------------------------------- 7. a failed reset draws nothing


@pytest.mark.parametrize(
    "options",
    [{"dealer": 7}, {"dealer": 1.0}, {"scores": [0, 14]}, {"scores": "00"}, {"decks": [list(range(51))]}],
)
def test_7_a_failed_single_agent_reset_leaves_the_generator_and_episode_as_they_were(options):
    e, twin = single_twins(team=None)  # team None: a reset draws the team first
    with pytest.raises(ValueError, match="dealer must be a seat 0..3|scores must be|decks"):
        e.reset(options=options)
    assert_single_twins_agree(e, twin)


def test_7_a_failed_seeded_single_agent_reset_does_not_reseed():
    e, twin = single_twins()
    with pytest.raises(ValueError, match=r"dealer must be a seat 0\.\.3"):
        e.reset(seed=99, options={"dealer": 7})
    assert_single_twins_agree(e, twin)


# ---------------------------------------------------------------- 8. the learner's team


@pytest.mark.parametrize("team", [0.0, 1.0, True, False, np.float64(1), np.bool_(False), "0", 2])
def test_8_team_must_be_0_1_or_none_exactly(team):
    with pytest.raises(ValueError, match=r"team must be 0 \(seats 0, 2\), 1 \(seats 1, 3\) or None"):
        single_agent_env(opponents="random", team=team)


def test_8_a_numpy_integer_team_is_that_team():
    e = single_agent_env(opponents="random", team=np.int64(1))
    e.reset(seed=0)
    assert e.team == 1 and type(e.team) is int


# ---------------------------------------------------------------- siblings


def test_single_agent_get_state_before_reset_says_to_reset_first():
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        single_agent_env(opponents="random").get_state()


def test_a_0d_integer_array_is_an_action_as_the_action_space_says():
    """SB3's ``predict`` of one observation returns a 0-d array, which ``Discrete`` contains."""
    e, twin = allfours_env.env(), allfours_env.env()
    e.reset(seed=4)
    twin.reset(seed=4)
    for _ in range(30):
        obs, *_ = e.last()
        action = first_legal(obs["action_mask"])
        assert e.action_space(e.agent_selection).contains(np.array(action))
        e.step(np.array(action))
        twin.step(action)
    assert e.unwrapped.game.events == twin.unwrapped.game.events
    before = e.unwrapped.game.events[:]
    for not_an_action in (np.array(float(first_legal(e.last()[0]["action_mask"]))), np.array([0]), np.array(True)):
        with pytest.raises(ValueError, match=r"actions are ints 0\.\.55"):
            e.step(not_an_action)
    assert e.unwrapped.game.events == before


@pytest.mark.parametrize("spec", [3, None, b"expert", ["expert"]])
def test_a_bot_spec_that_is_not_text_says_what_a_spec_is(spec):
    with pytest.raises(ValueError, match="a bot spec is text .* got "):
        agents.make(spec)


def test_a_policy_files_path_object_is_a_spec():
    assert agents.make(Path(STUDENT)).act_batch is not None


@pytest.mark.parametrize(
    "key, value",
    [("deal_batch", np.array([1, 3])), ("first_dealer", np.array([1, 2])), ("kick_points", np.array(["tobago"]))],
)
def test_a_rule_given_an_array_names_what_is_allowed(key, value):
    with pytest.raises(ValueError, match=f"rule '{key}' must be one of"):
        Rules(**{key: value})


def test_numpy_strings_are_read_as_python_strings():
    rules = Rules(kick_points=np.str_("tobago"), first_dealer=np.str_("random"))
    assert type(rules.kick_points) is str and type(rules.first_dealer) is str
    assert rules == Rules(kick_points="tobago", first_dealer="random")
