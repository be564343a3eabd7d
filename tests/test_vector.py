"""The vector engine against its one-table views, and its own contract (allfours_env.vector).

The rules live once, in the kernels; ``Game`` is a one-table view of them. The differential test
plays 3,000 random matches in lockstep on a batch of tables and on ``Game`` views started from the
same decks, dealers and starting scores, over random rule sets covering all 13 keys of table A0,
and compares at every decision: the seat to act, the legal mask, the observation, the points
gained, the events, the scores and the end of the match; and the batched policy input of the
whole batch (``agents.features.batch_policy_input``) against ``policy_input`` of each row: what
the batch computes for many tables is what a view computes for one.
(tests/test_scenarios_vector.py runs the docs/rules.md Part C scenarios through both.)
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.features import batch_policy_input, policy_input
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.engine import N_ACTIONS, Game
from allfours_env.observation import OBS_SIZE, encode
from allfours_env.rules import Rules
from allfours_env.vector import VectorGame
from tests.vector_mirror import award_points

MATCHES = 3_000
TABLES_PER_RULE_SET = 50  # 60 rule sets
DECKS_PER_MATCH = 60  # more deals than a match to target 14 ever needs in practice
MASK_BYTES = (N_ACTIONS + 7) // 8

RULE_VALUES = {
    "target_score": (7, 10, 14),
    "kick_points": ("trinidad", "tobago"),
    "hang_jack_points": (3, 6),
    "game_points": (1, 2),
    "game_tie": ("none", "non_dealer", "dealer"),
    "undertrump": ("allowed", "forbidden_unless_all_trumps", "forbidden_when_can_follow"),
    "give_one_to_reach_target": ("forbidden", "allowed"),
    "give_one_requires_trump": (False, True),
    "stand_requires_trump": (False, True),
    "exhausted_pack": ("kick_remaining", "redeal"),
    "single_trump_counts_high_and_low": (True, False),
    "first_dealer": ("cut", "first_jack", "random", 0, 1, 2, 3),
    "deal_batch": (1, 3),
}


def random_rules(rng: np.random.Generator) -> dict:
    return {key: values[rng.integers(len(values))] for key, values in RULE_VALUES.items()}


def random_starts(rng: np.random.Generator, rules: Rules, n: int) -> list[dict]:
    """Per table: decks, and a dealer unless the rule names a seat; a random score now and then."""
    starts = []
    for _ in range(n):
        start = {"decks": [rng.permutation(N_CARDS).tolist() for _ in range(DECKS_PER_MATCH)]}
        if not isinstance(rules.first_dealer, int):
            start["dealer"] = int(rng.integers(N_SEATS))
        if rng.random() < 0.3:
            start["scores"] = rng.integers(rules.target_score, size=2).tolist()
        starts.append(start)
    return starts


def play_lockstep(rules_kwargs: dict, n: int, rng: np.random.Generator, episode: str = "match") -> int:
    """Play n random matches on both engines, comparing at every decision; returns the decisions."""
    rules = Rules(**rules_kwargs)
    starts = random_starts(rng, rules, n)
    games = [
        Game(rules, decks=s["decks"], dealer=s.get("dealer"), scores=s.get("scores"), episode=episode)
        for s in starts
    ]
    vg = VectorGame(n, episode=episode, events=True, **rules_kwargs)
    vg.reset(seed=int(rng.integers(2**32)), options=starts)
    seen = [0] * n
    points = vg._points.copy()  # the first kicks' points
    decisions = 0
    while True:
        current, over, scores, obs = vg.current, vg.is_over, vg.scores.tolist(), vg.observe()
        mask = vg.legal_mask()
        mask_bits = np.packbits(mask, axis=1, bitorder="little").tobytes()
        inputs = batch_policy_input(obs, mask)
        actions = vg.sample_legal(rng)
        for t, game in enumerate(games):
            assert current[t] == game.current, f"table {t}: seat to act"
            assert over[t] == game.is_over
            assert scores[t] == game.scores, f"table {t}: scores"
            assert (points[t] == award_points(game, seen[t])).all(), f"table {t}: points gained"
            assert vg.events(t) == game.events[seen[t] :], f"table {t}: events"
            seen[t] = len(game.events)
            if over[t]:
                continue
            row = mask_bits[t * MASK_BYTES : (t + 1) * MASK_BYTES]
            assert int.from_bytes(row, "little") == game.legal_bits(), f"table {t}: legal actions"
            assert (obs[t] == encode(game, game.current)).all(), f"table {t}: observation"
            assert (inputs[t] == policy_input(obs[t], mask[t])).all(), f"table {t}: batched policy input"
            game.step(int(actions[t]))
            decisions += 1
        if over.all():
            return decisions
        points = vg.step(actions)


def test_random_matches_agree_with_the_scalar_engine():
    rng = np.random.default_rng(2026)
    decisions = 0
    for _ in range(MATCHES // TABLES_PER_RULE_SET):
        decisions += play_lockstep(random_rules(rng), TABLES_PER_RULE_SET, rng)
    assert decisions > 50 * MATCHES  # whole matches were played


@pytest.mark.parametrize("seed", [0, 1])
def test_deal_episodes_agree_with_the_scalar_engine(seed):
    rng = np.random.default_rng(seed)
    play_lockstep(random_rules(rng), 200, rng, episode="deal")


def test_other_seats_observations_agree():
    """observe(seats) gives any seat's view, not only the seat to act's."""
    rng = np.random.default_rng(5)
    rules = Rules()
    starts = random_starts(rng, rules, 50)
    games = [Game(rules, decks=s["decks"], dealer=s["dealer"], scores=s.get("scores")) for s in starts]
    vg = VectorGame(50)
    vg.reset(options=starts)
    for _ in range(60):
        seats = rng.integers(N_SEATS, size=50)
        obs = vg.observe(seats)
        for t, game in enumerate(games):
            assert (obs[t] == encode(game, int(seats[t]))).all()
        actions = vg.sample_legal(rng)
        for t, game in enumerate(games):
            if not game.is_over:
                game.step(int(actions[t]))
        vg.step(actions)


@pytest.mark.parametrize("n", [1, 4096])
def test_tiny_and_large_batches_play_whole_matches(n):
    vg = VectorGame(n)
    vg.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(5000):
        if vg.is_over.all():
            break
        mask = vg.legal_mask()
        obs = vg.observe()
        assert obs.shape == (n, OBS_SIZE) and obs.dtype == np.float32
        assert (mask.any(axis=1) == ~vg.is_over).all()
        vg.step(vg.sample_legal(rng))
    assert vg.is_over.all()
    winner = vg.winner
    assert (vg.scores[np.arange(n), winner] >= 14).all()
    assert (vg.current == -1).all() and not vg.legal_mask().any()


def test_phases_mix_across_tables():
    """Tables drift apart: begging, running, playing and over at the same tick is the normal case."""
    vg = VectorGame(256)
    vg.reset(seed=11)
    rng = np.random.default_rng(11)
    seen = set()
    while not vg.is_over.all():
        seen.add(frozenset(vg.phase.tolist()))
        vg.step(vg.sample_legal(rng))
    assert any(len(phases) >= 3 for phases in seen)


def test_same_seed_same_matches_whatever_the_batch_size():
    def play(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        vg = VectorGame(n)
        vg.reset(seed=seed)
        total = vg._points.copy()  # the first kicks
        while not vg.is_over.all():
            total += vg.step(np.argmax(vg.legal_mask(), axis=1))  # lowest legal action: no outside randomness
        return vg.scores, total

    scores_a, total_a = play(8, 42)
    scores_b, total_b = play(8, 42)
    scores_c, _ = play(3, 42)
    assert (scores_a == scores_b).all() and (total_a == total_b).all()
    assert (scores_a[:3] == scores_c).all()  # table i depends on the seed and i only
    assert (total_a == scores_a).all()
    assert not (scores_a == play(8, 43)[0]).all()


def test_points_add_up_to_the_scores():
    vg = VectorGame(64, game_points=2, hang_jack_points=6)
    vg.reset(seed=8, options=[{"scores": [3, 5]}] * 64)
    total = vg._points.copy() + [3, 5]
    rng = np.random.default_rng(8)
    while not vg.is_over.all():
        total += vg.step(vg.sample_legal(rng))
    assert (total == vg.scores).all()


@pytest.mark.parametrize("rule", ["cut", "first_jack", "random"])
def test_first_dealers_are_drawn_as_the_scalar_engine_draws_them(rule):
    """Same distribution (not the same draws: each engine has its own generator); "first_jack"
    favours seat 0, who sees the first card."""
    n = 4000
    vg = VectorGame(n, first_dealer=rule)
    vg.reset(seed=1)
    rng = np.random.default_rng(1)
    scalar = np.bincount([Game(Rules(first_dealer=rule), rng).dealer for _ in range(n)], minlength=N_SEATS)
    vector = np.bincount(vg.dealer, minlength=N_SEATS)
    assert (abs(vector - scalar) < 150).all(), (vector, scalar)


def test_restart_starts_new_matches_only_where_asked():
    vg = VectorGame(10)
    vg.reset(seed=4)
    rng = np.random.default_rng(4)
    while not vg.is_over[:5].all():
        vg.step(vg.sample_legal(rng))
    over = vg.is_over
    before = vg._st[~over].copy()
    vg.restart(over)
    assert not vg.is_over[over].any()
    assert (vg.deal_number[over] == 1).all()
    assert (vg._st[~over] == before).all()
    with pytest.raises(ValueError, match="bool array of shape"):
        vg.restart(np.ones(3, dtype=bool))


def test_only_the_given_tables_move():
    vg = VectorGame(6)
    vg.reset(seed=2)
    rng = np.random.default_rng(2)
    moving = np.array([True, False, True, False, False, True])
    before = vg._st.copy(), vg._bs.copy()
    actions = vg.sample_legal(rng)
    actions[~moving] = 99  # ignored: those tables wait
    vg.step(actions, tables=moving)
    assert (vg._st[~moving] == before[0][~moving]).all() and (vg._bs[~moving] == before[1][~moving]).all()
    assert (vg._st[moving] != before[0][moving]).any(axis=1).all()  # each moving table took its action
    with pytest.raises(ValueError, match="tables must be a bool array"):
        vg.step(actions, tables=np.ones(6, dtype=int))


def test_illegal_action_names_the_table_and_changes_nothing():
    vg = VectorGame(4)
    vg.reset(seed=0)
    mask = vg.legal_mask()
    actions = np.argmax(mask, axis=1)
    illegal = int(np.flatnonzero(~mask[2])[0])
    actions[2] = illegal
    state = vg._st.copy(), vg._bs.copy(), vg._rng.copy()
    with pytest.raises(ValueError, match=r"table 2: player_\d cannot take action .* legal: "):
        vg.step(actions)
    actions[2] = 99
    with pytest.raises(ValueError, match=r"table 2: .*99 \(actions are ints 0\.\.55\)"):
        vg.step(actions)
    assert (vg._st == state[0]).all() and (vg._bs == state[1]).all() and (vg._rng == state[2]).all()


@pytest.mark.parametrize(
    "actions",
    [np.zeros(3, dtype=np.int64), np.zeros((4, 1), dtype=np.int64), np.zeros(4, dtype=np.float64),
     np.zeros(4, dtype=bool), ["a", "b", "c", "d"]],
)
def test_actions_of_the_wrong_shape_or_type_are_refused(actions):
    vg = VectorGame(4)
    vg.reset(seed=0)
    state = vg._st.copy()
    with pytest.raises(ValueError, match=r"actions must be an int array of shape \(4,\)"):
        vg.step(actions)
    assert (vg._st == state).all()


@pytest.mark.parametrize(
    "options, message",
    [
        ([{}] * 3, "list of 4 dicts"),
        ({"dealer": 0}, "list of 4 dicts"),
        ([{}, {}, {"dealr": 1}, {}], r"options\[2\] has unknown reset option"),
        ([{}, {"decks": [list(range(51))]}, {}, {}], r"options\[1\]: decks\[0\] has 51 cards"),
        ([{}, {}, {}, {"dealer": 4}], r"options\[3\]: dealer must be a seat 0\.\.3"),
        ([{"scores": [14, 0]}, {}, {}, {}], r"options\[0\]: scores must be in 0\.\.13"),
        ([5, {}, {}, {}], r"options\[0\] must be None or a dict"),
    ],
)
def test_bad_options_are_refused_and_change_nothing(options, message):
    vg = VectorGame(4)
    vg.reset(seed=0)
    state = vg._st.copy(), vg._rng.copy(), vg._given.copy()
    with pytest.raises(ValueError, match=message):
        vg.reset(seed=1, options=options)
    assert (vg._st == state[0]).all() and (vg._rng == state[1]).all() and (vg._given == state[2]).all()


@pytest.mark.parametrize("seed", [-1, "seven", 2.5])
def test_bad_seeds_are_refused_and_change_nothing(seed):
    vg = VectorGame(3)
    vg.reset(seed=0, options=[{"decks": [list(range(52))]}] * 3)
    state = vg._st.copy(), vg._rng.copy(), vg._given.copy()
    with pytest.raises(ValueError, match="seed must be None or a non-negative integer"):
        vg.reset(seed=seed)
    assert (vg._st == state[0]).all() and (vg._rng == state[1]).all() and (vg._given == state[2]).all()


@pytest.mark.parametrize(
    "args, message",
    [
        ({"n": 0}, r"an integer 1\.\.4,194,304"),
        ({"n": 2.0}, r"an integer 1\.\.4,194,304"),
        ({"n": 2, "episode": "hand"}, "episode must be one of"),
        ({"n": 2, "undertrump": "never"}, "must be one of"),
        ({"n": 2, "target": 7}, "unknown rule 'target'"),
        ({"n": 2, "rules": {"target_score": 7}}, "rules must be a Rules"),
        ({"n": 2, "rules": Rules(), "target_score": 7}, "give rules= or rule keywords, not both"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        VectorGame(**args)


def test_a_rules_value_is_taken_as_it_is():
    rules = Rules(target_score=7, kick_points="tobago")
    assert VectorGame(2, rules=rules).rules is rules
    assert VectorGame(2, target_score=7, kick_points="tobago").rules == rules


def test_observe_refuses_bad_seats():
    vg = VectorGame(2)
    vg.reset(seed=0)
    with pytest.raises(ValueError, match="seats must be"):
        vg.observe(np.array([0, 4]))


def test_memory_of_4096_tables_is_small():
    vg = VectorGame(4096)
    vg.reset(seed=0)
    state = sum(a.nbytes for a in (vg._st, vg._bs, vg._deck, vg._trick_no, vg._given, vg._rng, vg._mask, vg._points))
    assert state < 4 * 2**20  # the state itself; one observation batch adds n * OBS_SIZE * 4 bytes
    assert vg.observe().nbytes < 20 * 2**20
    assert N_ACTIONS == vg.legal_mask().shape[1]


# ---------------------------------------------------------------- compiled players (ExpertBot.play_vector)


def _expert_matches(fused: bool, given_decks: bool, seats: np.ndarray, n: int = 48, seed: int = 5):
    """Play ``n`` expert matches to the end, the seats in ``seats`` by ``play_vector`` (the others
    and every seat when not ``fused`` by ``act_batch``); each table's decks from its own stream when
    ``given_decks``, as the Gymnasium vector env gives them. Returns the scores and the points."""
    from agents.expert import ExpertBot  # the bot's module imports the engine, not the reverse

    bot, game = ExpertBot(), VectorGame(n)
    streams = [np.random.default_rng([seed, t]) for t in range(n)]
    options = [{"decks": [stream.permutation(N_CARDS).tolist()]} for stream in streams] if given_decks else None
    total = game.reset(seed=seed, options=options)

    def give() -> None:
        for t in np.flatnonzero(~game.is_over & (game.decks_waiting() == 0)) if given_decks else []:
            game.give_deck(int(t), streams[t].permutation(N_CARDS))

    give()
    for _ in range(2_000):  # far more rounds than a match takes; a player that stops making progress fails below
        if game.is_over.all():
            break
        if fused:
            points, moved = bot.play_vector(game, seats)
            total += points
            current = game.current
            for t in np.flatnonzero(~game.is_over):  # it stopped only where it had to
                assert not seats[t, current[t]] or game.decks_waiting()[t] == 0
            give()
        live = ~game.is_over
        if not fused:
            mine = live
        else:
            mine = live & ~seats[np.arange(n), np.maximum(game.current, 0)] & (game.decks_waiting() != 0)
        if mine.any():
            actions = np.zeros(n, dtype=np.int64)
            actions[mine] = bot.act_batch(game.observe()[mine], game.legal_mask()[mine])
            total += game.step(actions, tables=mine)
            give()
    assert game.is_over.all()
    return game.scores, total


@pytest.mark.parametrize("given_decks", [True, False])
@pytest.mark.parametrize("seat_set", [(0, 1, 2, 3), (1, 3)])
def test_expert_play_vector_makes_the_moves_of_act_batch(given_decks, seat_set):
    seats = np.zeros((48, N_SEATS), dtype=bool)
    seats[:, list(seat_set)] = True
    scores, points = _expert_matches(False, given_decks, seats)
    fused_scores, fused_points = _expert_matches(True, given_decks, seats)
    np.testing.assert_array_equal(fused_scores, scores)
    np.testing.assert_array_equal(fused_points, points)


def test_expert_play_vector_refuses_bad_seats():
    from agents.expert import ExpertBot

    game = VectorGame(3)
    game.reset(seed=0)
    with pytest.raises(ValueError, match=r"seats must be a bool array of shape \(3, 4\)"):
        ExpertBot().play_vector(game, np.ones((3, 2), dtype=bool))
