"""The search bot (agents/search.py): consistent worlds, legal play in every variant, determinism."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

import agents
import agents.search as search_module
import eval as ev
from agents.expert import expert_actions
from agents.hand_reading import voids
from agents.search import (
    BATCH_TABLES,
    DEFAULT_MS,
    DEFAULT_WORLDS,
    MAX_WORLDS,
    MIN_BATCH_WORLDS,
    Position,
    SearchBot,
    even_batch,
    next_batch,
    sample_hidden,
    world_deck,
)
from allfours_env import decode
from allfours_env.cards import N_CARDS, SUIT_MASK
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules
from allfours_env.vector import VectorGame
from tests.hidden_hands import hidden_swaps, mid_play_game
from tests.test_vector import random_rules


def positions(n_matches: int, seed: int):
    """(game, seat to act, observation) at every decision of random matches under random rules."""
    rng = np.random.default_rng(seed)
    for _ in range(n_matches):
        rules = Rules(**random_rules(rng))
        game = Game(rules, np.random.default_rng(int(rng.integers(2**32))))
        while not game.is_over:
            observation, mask = encode_with_mask(game, game.current)
            yield game, game.current, {"observation": observation, "action_mask": mask}
            game.step(int(rng.choice(np.flatnonzero(mask))))


def assert_hands_agree(view, position: Position, held: tuple[int, ...], shown: tuple[int, ...]) -> None:
    """The hands ``held`` (bit sets, seat 0 mine) agree with the observation: my hand, the others'
    card counts, nothing seen, no card of a suit a seat has shown it lacks (``shown``), no card twice."""
    assert held[0] == view.hand_bits
    seen = view.hand_bits | view.kicks_aside_bits | (1 << view.kick if view.kick is not None else 0)
    for s in range(4):
        seen |= view.played_bits[s]
    for s in (1, 2, 3):
        assert held[s].bit_count() == position.left[s]
        assert not held[s] & seen
        for suit in range(4):
            if shown[s] >> suit & 1:
                assert not held[s] & SUIT_MASK[suit]
    assert not (held[1] & held[2] or held[1] & held[3] or held[2] & held[3])


def test_sampled_worlds_agree_with_the_observation():
    """Every world: my hand, the others' card counts, no card of a suit a seat has shown it lacks,
    nothing seen; and the world's deck, replayed by the engine, gives back the very observation."""
    rng = np.random.default_rng(0)
    checked = 0
    for game, seat, observation in positions(40, seed=1):
        view = decode(observation)
        position = Position.from_view(view)
        shown = voids(view, view.trump)
        for held in sample_hidden(position, rng, 3):
            held = tuple(map(int, held))
            assert_hands_agree(view, position, held, shown)
            deck = world_deck(position, held, rng)
            assert sorted(deck) == list(range(N_CARDS))
            world = VectorGame(1, episode="deal", **dataclasses.asdict(position.rules))
            world.reset(options=[{"decks": [deck], "dealer": position.dealer, "scores": list(position.start_scores)}])
            for action in position.history:
                world.step(np.array([action]))
            assert world.current[0] == 0
            assert (world.observe(np.array([0]))[0] == observation["observation"]).all()
            checked += 1
    assert checked > 3000


def test_worlds_respect_voids_shown_in_play():
    """A seat that did not follow a plain-suit lead gets no card of that suit in any world."""
    rng = np.random.default_rng(4)
    found = 0
    for game, seat, observation in positions(60, seed=7):
        view = decode(observation)
        position = Position.from_view(view)
        if not any(position.voids[1:]):
            continue
        found += 1
        for held in sample_hidden(position, rng, 20):
            for s in (1, 2, 3):
                for suit in range(4):
                    if position.voids[s] >> suit & 1:
                        assert not int(held[s]) & SUIT_MASK[suit]
    assert found > 100


@pytest.mark.parametrize("options", [{}, {"rollout": "greedy"}])
def test_choice_ignores_what_the_observation_cannot_tell(options):
    game = mid_play_game()
    seat = game.current
    observation, mask = encode_with_mask(game, seat)
    choice = SearchBot(worlds=8, ms=0, seed=5, **options).act({"observation": observation, "action_mask": mask})
    for swapped in hidden_swaps(game, seat):
        obs2, mask2 = encode_with_mask(swapped, seat)
        assert (obs2 == observation).all()
        assert SearchBot(worlds=8, ms=0, seed=5, **options).act({"observation": obs2, "action_mask": mask2}) == choice


def test_same_seed_same_choices():
    observations = [obs for _, _, obs in positions(2, seed=3) if obs["action_mask"].sum() > 1][:40]
    a, b = SearchBot(worlds=6, ms=0, seed=1), SearchBot(worlds=6, ms=0, seed=1)
    assert [a.act(o) for o in observations] == [b.act(o) for o in observations]


@pytest.mark.parametrize(
    "rules",
    [
        {"undertrump": "forbidden_unless_all_trumps", "target_score": 7},
        {"undertrump": "forbidden_when_can_follow", "exhausted_pack": "redeal", "target_score": 7},
        {"stand_requires_trump": True, "give_one_requires_trump": True, "target_score": 7},
        {"deal_batch": 3, "kick_points": "tobago", "give_one_to_reach_target": "allowed", "target_score": 7},
        {"game_tie": "dealer", "hang_jack_points": 6, "game_points": 2, "single_trump_counts_high_and_low": False},
    ],
)
def test_plays_legal_moves_in_every_variant(rules):
    result = ev.evaluate("search:worlds=4", "random", boards=2, rules=rules, workers=1)
    assert result.boards == 2
    result = ev.evaluate("search:worlds=4,rollout=greedy", "random", boards=1, rules=rules, workers=1)
    assert result.boards == 1


def test_options_in_the_spec():
    bot = agents.make("search:worlds=8,ms=5.5")
    assert (bot.worlds, bot.ms) == (8, 5.5)
    with pytest.raises(ValueError, match=r"does not take the options \['depth'\] .*; its options are worlds, ms, "):
        agents.make("search:depth=3")
    with pytest.raises(ValueError, match="worlds must be an integer 1..4,096"):
        agents.make("search:worlds=0")
    with pytest.raises(ValueError, match="KEY=VALUE"):
        agents.make("search:worlds")
    assert agents.make("search:rollout=greedy").rollout == "greedy"
    with pytest.raises(ValueError, match="rollout must be one of"):
        agents.make("search:rollout=deep")
    with pytest.raises(ValueError, match="does not take the options .*; its options are seed$"):
        agents.make("random:worlds=3")
    with pytest.raises(ValueError, match="does not take the options .*; it takes no options$"):
        agents.make("student:worlds=3")


@pytest.mark.parametrize("option", ["explore=0.1", "infer=student", "cut=1", "value=x.npz"])
def test_an_option_that_left_the_search_is_refused_with_the_options_it_takes(option):
    """Issue 63: options whose measurements showed nothing left the search (their figures stay in
    docs/results.md and docs/expert_iteration.md)."""
    name = option.partition("=")[0]
    takes = "worlds, ms, rollout, margin, confirm, keep, opponents, seed"
    with pytest.raises(ValueError, match=rf"does not take the options \['{name}'\] .*; its options are {takes}$"):
        agents.make(f"search:{option}")


def test_the_default_has_a_time_budget():
    bot = agents.make("search")
    assert (bot.worlds, bot.ms) == (DEFAULT_WORLDS, DEFAULT_MS) and DEFAULT_MS > 0
    assert agents.make("search:ms=0").ms == 0 and SearchBot(ms=None).ms == 0  # no budget


@pytest.mark.parametrize(
    "spec", ["search:worlds=100000000,ms=0", "search:worlds=1,ms=0,margin=0,confirm=20000", "search:ms=1e9"]
)
def test_every_option_has_a_cap(spec):
    # Each of these held a process for seconds to hours, or asked for gigabytes, before the caps.
    with pytest.raises(ValueError, match=r"at most|up to|1\.\.4,096"):
        agents.make(spec)


@pytest.mark.parametrize("ms", ["none", "inf", "nan", -5, "true", "fast", "1e400"])
def test_bad_budgets_say_what_is_allowed(ms):
    with pytest.raises(ValueError, match=r"ms must be a time budget .* above 0 \(at most 60,000\), or 0 for no budget"):
        agents.make(f"search:ms={ms}")


def test_batches_fill_the_budget_and_hold_few_tables():
    assert [even_batch(64, k) for k in (2, 3, 4, 6, 9, 12)] == [32, 16, 16, 10, 8, 8]
    assert even_batch(7, 3) == 7  # fewer worlds than a batch holds: one batch
    for k in range(2, 15):
        for worlds in (1, 8, 64, 100):
            n = even_batch(worlds, k)
            assert n * k <= max(BATCH_TABLES, MIN_BATCH_WORLDS * k) and n <= worlds
    assert next_batch(48, 4, done=16, elapsed=0.010, seconds_left=0.5) == 16  # time to spare: the even split
    assert next_batch(48, 4, done=16, elapsed=0.010, seconds_left=0.007) == 11  # what fits
    assert next_batch(48, 4, done=16, elapsed=0.010, seconds_left=0.001) == MIN_BATCH_WORLDS  # never fewer
    assert next_batch(3, 4, done=61, elapsed=0.010, seconds_left=0.001) == 3  # but no more than are left


def reference_choice(seed: int, observation, worlds: int) -> int:
    """The bot's choice before it had a time budget: every world in one batch, then the best mean
    unless the expert's choice is within the margin."""
    legal = np.flatnonzero(observation["action_mask"])
    if len(legal) == 1:
        return int(legal[0])
    bot = SearchBot(worlds=worlds, ms=0, seed=seed)
    values = bot.evaluate(Position.from_view(decode(observation)), legal, worlds).mean(axis=0)
    best = int(np.argmax(values))
    expert = expert_actions(observation["observation"][None], observation["action_mask"][None])[0]
    kept = int(np.flatnonzero(legal == expert)[0])
    return int(legal[kept if values[best] - values[kept] <= bot.margin else best])


def test_no_budget_is_the_old_deterministic_search():
    observations = [obs for _, _, obs in positions(2, seed=11) if obs["action_mask"].sum() > 2][:12]
    for spec in ("search:worlds=16,ms=0", "search:worlds=16,ms=0.0"):
        bot = agents.make(spec)
        for i, observation in enumerate(observations):
            bot.reset(i)
            assert bot.act(observation) == reference_choice(i, observation, 16)
            assert (bot.last_search.worlds, bot.last_search.batches) == (16, 1)


class FakeClock:
    """Stands for the ``time`` module in agents.search: a clock that moves only when a batch is searched."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


@pytest.mark.parametrize("ms_per_world", [0.05, 0.5, 2.0, 3.0, 20.0])
def test_a_decision_ends_within_one_batch_of_its_budget(monkeypatch, ms_per_world):
    """Batches start only before the deadline, hold at most BATCH_TABLES tables (or
    MIN_BATCH_WORLDS worlds), are sized to what fits, and the decision ends by the budget plus
    its last batch; with time to spare all the worlds are searched in as few batches as fit the
    table cap. The clock is the test's: every world costs ``ms_per_world``, a batch 1 ms more."""
    clock, batches = FakeClock(), []

    def evaluate(self, position, actions, n_worlds):
        batches.append((clock.now, n_worlds))
        clock.now += (1.0 + ms_per_world * n_worlds) / 1000
        return np.zeros((n_worlds, len(actions)))

    monkeypatch.setattr(search_module, "time", clock)
    monkeypatch.setattr(SearchBot, "evaluate", evaluate)
    observations = [obs for _, _, obs in positions(1, seed=9) if obs["action_mask"].sum() > 1][:20]
    bot = SearchBot(seed=0)  # the defaults: 64 worlds, DEFAULT_MS
    for observation in observations:
        batches.clear()
        start = clock.now
        bot.act(observation)
        n_actions = int(observation["action_mask"].sum())
        deadline = start + bot.ms / 1000
        assert all(began < deadline for began, _ in batches)
        assert all(n * n_actions <= max(BATCH_TABLES, MIN_BATCH_WORLDS * n_actions) for _, n in batches)
        assert clock.now <= deadline + (1.0 + ms_per_world * batches[-1][1]) / 1000
        searched = bot.last_search
        assert (searched.worlds, searched.batches) == (sum(n for _, n in batches), len(batches))
        assert searched.seconds == pytest.approx(clock.now - start)
        whole = 64 * n_actions * ms_per_world < 0.5 * bot.ms  # well within the budget
        if whole:
            assert searched.worlds == 64 and len(batches) == -(-64 // even_batch(64, n_actions))
        if searched.worlds < 64:
            assert clock.now >= deadline  # stopped by the budget only
            assert all(n >= MIN_BATCH_WORLDS for _, n in batches)


def test_time_budget_stops_early():
    """On the real clock: a huge world cap is cut by the budget, and the last batch started before
    the deadline (a generous allowance for what follows the search on a loaded machine)."""
    observation = next(obs for _, _, obs in positions(1, seed=9) if obs["action_mask"].sum() > 2)
    bot = SearchBot(worlds=MAX_WORLDS, ms=30, seed=0)
    bot.act(observation)  # compile outside the timing
    start = time.perf_counter()
    bot.act(observation)
    seconds = time.perf_counter() - start
    searched = bot.last_search
    assert 1 <= searched.batches and searched.worlds < MAX_WORLDS
    assert searched.seconds <= seconds
    assert searched.seconds - searched.slowest_batch < 0.030 + 0.5
    assert seconds < 2.0


def test_terminal_play_against_search():
    """``python -m agents.play --opponents search`` plays a whole match (scripted answers)."""
    from tests.test_play import Script, first_label, run

    script = Script(then=first_label)
    assert run(script, partner="search:worlds=4", opponents=("search:worlds=4",)) == 0
    assert "Match over" in script.text


def test_a_margin_keeps_the_experts_choice_unless_search_finds_better():
    observations = [obs for _, _, obs in positions(3, seed=6) if obs["action_mask"].sum() > 1][:60]
    expert = agents.make("expert")
    never = SearchBot(worlds=4, margin=1.0, seed=2)  # no searched value beats another by a whole match
    assert [never.act(o) for o in observations] == [expert.act(o) for o in observations]
    plain = SearchBot(worlds=4, margin=0.0, seed=2)
    assert any(plain.act(o) != expert.act(o) for o in observations)
    with pytest.raises(ValueError, match="margin must be a chance"):
        agents.make("search:margin=2")


def test_keep_makes_a_network_the_choice_search_must_beat() -> None:
    from agents.builtin import STUDENT

    observations = [obs for _, _, obs in positions(3, seed=6) if obs["action_mask"].sum() > 1][:40]
    student = agents.make("student")
    never = agents.make(f"search:worlds=4,margin=1,ms=0,keep={STUDENT}")  # nothing beats the kept choice by a match
    assert [never.act(o) for o in observations] == [student.act(o) for o in observations]
    expert = agents.make("expert")
    assert any(student.act(o) != expert.act(o) for o in observations)  # (so the test tells the two apart)
    with pytest.raises(ValueError, match="keep must be 'expert' or a policy file"):
        agents.make("search:keep=student")


def test_a_policy_file_plays_every_seat_of_the_rollouts_as_policybot_would() -> None:
    from pathlib import Path

    from agents.policy import PolicyBot

    path = Path(agents.__file__).parent / "pretrained" / "allfours_v1.npz"
    bot = agents.make(f"search:rollout={path},ms=0,worlds=8")
    policy = PolicyBot.from_file(path)
    games = VectorGame(32)
    games.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):  # tables through bids and the first tricks
        expected = np.zeros(games.n, dtype=np.int64)
        live = ~games.is_over
        expected[live] = policy.act_batch(games.observe()[live], games.legal_mask()[live])
        np.testing.assert_array_equal(bot._rollout_actions(games), expected)
        games.step(games.sample_legal(rng))
    with pytest.raises(ValueError, match="or a policy file"):
        agents.make("search:rollout=nobody")


def test_confirm_needs_more_worlds_than_worlds_and_no_budget() -> None:
    for spec in ("search:worlds=8,confirm=8,ms=0", "search:worlds=8,confirm=32", "search:worlds=8,confirm=1.5,ms=0"):
        with pytest.raises(ValueError, match="confirm must be a number of worlds above worlds"):
            agents.make(spec)
