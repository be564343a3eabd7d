"""Duplicate evaluation (eval/): boards, seat swapping, statistics, workers, CLI errors and outputs."""

from __future__ import annotations

import csv
import json
import math
import os
import time
import warnings

import numpy as np
import pytest
from PIL import Image

import eval as ev
from allfours_env import decode
from allfours_env.rules import DEFAULT_RULES, Rules
from allfours_env.rules import parse_rule_value
from eval.__main__ import main
from eval.boards import EVAL_NAMESPACE, make_board
from eval.report import write_outputs
from eval.stats import bootstrap_bradley_terry, bradley_terry, mean_interval, pair_score_interval, wilson_interval


class LowestLegal:
    """Deterministic: always the lowest legal action id (stands, gives one, plays its lowest card)."""

    name = "lowest"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: dict) -> int:
        return int(np.flatnonzero(observation["action_mask"])[0])


class HighestLegal(LowestLegal):
    """Deterministic: always the highest legal action id (begs, runs, plays its highest card)."""

    name = "highest"

    def act(self, observation: dict) -> int:
        return int(np.flatnonzero(observation["action_mask"])[-1])


class Spy(LowestLegal):
    """Plays like LowestLegal and logs (label, hand, action) for every decision."""

    def __init__(self, label: str, log: list) -> None:
        self.label, self.log = label, log

    def act(self, observation: dict) -> int:
        action = super().act(observation)
        self.log.append((self.label, decode(observation).hand_bits, action))
        return action


# ---------------------------------------------------------------- boards and the duplicate pairing


def test_boards_are_deterministic_and_distinct():
    a, b = make_board(7, DEFAULT_RULES), make_board(7, DEFAULT_RULES)
    assert (a.dealer, a.bot_seeds) == (b.dealer, b.bot_seeds)
    assert np.array_equal(a.deck_rng().permutation(52), b.deck_rng().permutation(52))
    assert not np.array_equal(a.deck_rng().permutation(52), make_board(8, DEFAULT_RULES).deck_rng().permutation(52))
    assert make_board(7, Rules(first_dealer=2)).dealer == 2
    assert ev.EVAL_NAMESPACE == EVAL_NAMESPACE
    with pytest.raises(ValueError):
        make_board(-1, DEFAULT_RULES)


@pytest.mark.parametrize("episode", ["match", "deal"])
def test_duplicate_pair_swaps_seats_and_reuses_decks(episode):
    games = []

    def record_game(decision):  # the per-decision hook sees the game of each match
        if not games or games[-1] is not decision.game:
            games.append(decision.game)

    log: list = []
    a_bots, b_bots = [Spy("A", log), Spy("A", log)], [Spy("B", log), Spy("B", log)]
    events: list = []
    record = ev.play_board(3, a_bots, b_bots, DEFAULT_RULES, episode, on_decision=record_game, on_event=events.append)

    # Same decks and dealer, same (deterministic) play: the two event logs are identical ...
    assert len(games) == 2
    assert games[0].events == games[1].events
    assert events == games[0].events + games[1].events  # the event hook saw both logs, in order
    # ... and every decision A took in match 0 (seats 0, 2) was B's in match 1 and vice versa.
    half = len(log) // 2
    first, second = log[:half], log[half:]
    assert [(h, a) for who, h, a in first if who == "A"] == [(h, a) for who, h, a in second if who == "B"]
    assert [(h, a) for who, h, a in first if who == "B"] == [(h, a) for who, h, a in second if who == "A"]
    assert [m.a_team for m in record.matches] == [0, 1]
    assert record.matches[0].points == record.matches[1].points[::-1]
    assert record.score == 0.5 and record.point_diff_per_deal == 0.0


def test_identical_random_bots_mirror_each_other():
    result = ev.evaluate("random", "random", boards=4)
    assert (result.splits, result.win_rate, result.point_diff_per_deal) == (4, 0.5, 0.0)
    assert result.bot_b == "random#2"


# ---------------------------------------------------------------- statistics


def test_wilson_interval_known_values():
    low, high = wilson_interval(0.5, 100)
    assert (round(low, 4), round(high, 4)) == (0.4038, 0.5962)
    low, high = wilson_interval(0.0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(0.5, 0)


def _coverage(interval, n_pairs: int, repetitions: int = 2000) -> float:
    """How often ``interval(scores)`` covers the true mean 0.52 of synthetic board pairs: 80% split,
    12% won, 8% lost (the share of splits of the ladder's matches)."""
    rng = np.random.default_rng(58)
    scores = rng.choice([0.0, 0.5, 1.0], p=[0.08, 0.80, 0.12], size=(repetitions, n_pairs))
    bounds = np.array([interval(row) for row in scores])
    return float(np.mean((bounds[:, 0] <= 0.52) & (0.52 <= bounds[:, 1])))


def test_pair_score_interval_covers_the_mean_as_stated():
    assert 0.94 <= _coverage(pair_score_interval, 400) <= 0.96
    assert _coverage(lambda s: wilson_interval(float(np.mean(s)), len(s)), 400) > 0.99  # far too wide


def test_pair_score_interval_is_about_half_as_wide_as_wilson_at_80_percent_splits():
    scores = [0.5] * 800 + [1.0] * 120 + [0.0] * 80
    low, high = pair_score_interval(scores)
    wilson_low, wilson_high = wilson_interval(float(np.mean(scores)), len(scores))
    assert low < np.mean(scores) < high
    assert 0.4 < (high - low) / (wilson_high - wilson_low) < 0.5


def test_pair_score_interval_stays_open_with_few_or_all_split_pairs():
    assert pair_score_interval([0.5]) == (0.0, 1.0)
    low, high = pair_score_interval([0.5] * 10)
    assert low < 0.5 < high and high - low > 0.1
    with pytest.raises(ValueError):
        pair_score_interval([])


def test_mean_interval():
    mean, low, high = mean_interval([1, 2, 3, 4])
    half = 1.959963984540054 * math.sqrt(5 / 3) / 2
    assert (mean, low, high) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    assert math.isnan(mean_interval([1.0])[1])


def test_bradley_terry_recovers_known_ratings():
    truth = np.array([0.0, 100.0, 300.0])
    games = np.full((3, 3), 1e6) - np.diag([1e6] * 3)
    p = 1 / (1 + 10 ** ((truth[None, :] - truth[:, None]) / 400))  # p[i, j]: i beats j
    elo = bradley_terry(p * games, games, prior_games=0.0)
    assert elo == pytest.approx(truth - truth.mean(), abs=0.01)


def test_bradley_terry_stays_finite_and_bootstrap_brackets_estimate():
    rng = np.random.default_rng(0)
    scores = {(0, 1): [1.0] * 20, (0, 2): [1.0, 0.5] * 10, (1, 2): [0.5, 0.0, 1.0] * 10}
    elo, low, high = bootstrap_bradley_terry(3, scores, rng, resamples=200)
    assert np.all(np.isfinite(elo)) and elo[0] > elo[1]
    assert np.all(low <= elo + 1e-9) and np.all(elo <= high + 1e-9)
    assert elo.sum() == pytest.approx(0.0, abs=1e-6)


# ---------------------------------------------------------------- library


def test_evaluate_statistics_are_consistent():
    r = ev.evaluate(HighestLegal, "random", boards=6, first_board=100)
    assert r.boards == 6 and r.first_board == 100 and r.matches == 12
    assert r.wins + r.splits + r.losses == 6
    assert r.win_rate == pytest.approx(sum(r.board_scores) / 6)
    assert r.win_rate_ci == pair_score_interval(r.board_scores)
    assert r.point_diff_ci[0] <= r.point_diff_per_deal <= r.point_diff_ci[1]
    a, b = r.stats_a, r.stats_b
    assert a.award_totals == b.award_totals
    for kind in a.award_shares:
        if a.award_totals[kind]:
            assert a.award_shares[kind] + b.award_shares[kind] == pytest.approx(1.0)
    assert a.beg_rate == 1.0 and b.give_one_rate + b.run_rate == pytest.approx(1.0)  # HighestLegal always begs


def test_deal_episodes_and_rules():
    r = ev.evaluate(LowestLegal(), HighestLegal, boards=5, episode="deal", rules={"target_score": 7})
    assert r.episode == "deal" and r.matches == 10 and r.deals >= 10
    assert all(s in (0.0, 0.25, 0.5, 0.75, 1.0) for s in r.board_scores)
    with pytest.raises(ValueError, match="target_score"):
        ev.evaluate("random", "random", boards=1, rules={"target_score": 0})


def test_results_do_not_depend_on_the_number_of_workers():
    bots = ["random", HighestLegal, LowestLegal]
    one = ev.round_robin(bots, boards=6, workers=1, bootstrap=50)
    two = ev.round_robin(bots, boards=6, workers=2, bootstrap=50)
    assert one == two
    assert len(one.pairs) == 3 and one.ratings is not None


def test_library_errors():
    with pytest.raises(ValueError, match="unknown bot"):
        ev.evaluate("random", "no_such_bot", boards=1)
    with pytest.raises(FileNotFoundError):
        ev.evaluate("random", "missing/policy.zip", boards=1)
    with pytest.raises(ValueError, match="boards"):
        ev.evaluate("random", "random", boards=0)
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"boards must be in 1 .. 1,000,000, got int 1000000000000"):
        ev.evaluate("random", "random", boards=10**12)
    with pytest.raises(ValueError, match=f"workers must be in 1 .. {4 * (os.cpu_count() or 1):,}, got int 1000000"):
        ev.evaluate("random", "random", boards=1, workers=10**6)
    with pytest.raises(ValueError, match="first_board must be in 0 .. 4,611,686,018,427,387,904"):
        ev.evaluate("random", "random", boards=1, first_board=2**70)
    with pytest.raises(ValueError, match="worlds must be an integer 1..4,096"):
        ev.evaluate("random", "search:worlds=100000000,ms=0", boards=1)
    assert time.monotonic() - started < 5  # refused before any work
    with pytest.raises(ValueError, match="at least 2 bots"):
        ev.round_robin(["random"], boards=1)
    with pytest.raises(TypeError):
        ev.evaluate("random", 42, boards=1)


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    "argv, message",
    [
        (["random"], "at least 2 bots"),
        (["random", "no_such_bot"], "unknown bot"),
        (["random", "missing/policy.zip"], "missing/policy.zip"),
        (["random", "random", "--rule", "target_score=abc"], "target_score"),
        (["random", "random", "--rule", "no_such_rule=1"], "unknown rule"),
        (["random", "random", "--rule", "undertrump"], "KEY=VALUE"),
        (["random", "random", "--boards", "0"], "must be in 1..1,000,000, got 0"),
        (["random", "random", "--boards", "99999999999999999999999"], "must be in 1..1,000,000"),
        (["random", "random", "--boards", str(10**12)], "must be in 1..1,000,000"),
        (["random", "random", "--boards", "9" * 5000], "expected an integer"),
        (["random", "random", "expert", "--boards", "400000"], "1,200,000 board pairs, more than the 1,000,000"),
        (["random", "search:worlds=100000000,ms=0", "--boards", "1"], "worlds must be an integer 1..4,096"),
        (["random", "search:ms=100000000", "--boards", "1"], "ms must be"),
        ([*["random"] * 11, "--boards", "1", "--bootstrap", "100000"], "(here at most 82,644 resamples)"),
        (["random", "random", "--seed", str(2**70)], "must be in 0..4,611,686,018,427,387,904"),
        (["random", "random", "--workers", "0"], f"must be in 1..{4 * (os.cpu_count() or 1):,}, got 0"),
        (["random", "random", "--workers", str(4 * (os.cpu_count() or 1) + 1)], "must be in 1.."),
        ([*["random"] * 4, "--boards", "2000", "--logs", "/proc/eval-logs", "--log-boards", "2000"],
         "--logs would log 12,000 boards"),
        (["random", "random", "--bootstrap", "0"], "must be in 1..1,000,000"),
        (["random", "random", "--log-boards", "2"], "--log-boards goes with --logs"),  # (was ignored)
    ],
)
def test_cli_rejects_bad_options(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(out)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_parse_rule_value():
    assert parse_rule_value("7") == 7
    assert parse_rule_value("True") is True and parse_rule_value("false") is False
    assert parse_rule_value("forbidden_unless_all_trumps") == "forbidden_unless_all_trumps"


def test_cli_writes_table_and_files(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "random",
            "random",
            "random",
            "--boards",
            "2",
            "--workers",
            "1",
            "--rule",
            "target_score=7",
            "--out",
            str(out),
            "--bootstrap",
            "20",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "win rate" in captured.out and "Bradley-Terry" in captured.out and "target_score=7" in captured.out
    assert "6/6 boards" in captured.err  # the progress bar goes to stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["bots.csv", "crosstable.png", "pairs.csv", "ratings.csv", "results.json"]  # no temp files left
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["rules"] == {"target_score": 7} and len(data["pairs"]) == 3
    with open(out / "pairs.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 3
    assert (out / "crosstable.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_cross_table_picture_holds_long_bot_specs(tmp_path):
    class LongName(HighestLegal):
        name = "search:keep=agents/pretrained/student_v1.npz,ms=0,confirm=256"  # as long as real specs get

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns when labels do not fit its layout
        for bots, out in (
            ([LongName, "random", "rule_based"], tmp_path),
            ([HighestLegal, "random", "rule_based"], tmp_path / "short"),
        ):
            write_outputs(ev.round_robin(bots, boards=1, workers=1, bootstrap=10), out)
    wide, short = (Image.open(d / "crosstable.png").size for d in (tmp_path, tmp_path / "short"))
    assert wide[0] > short[0] and wide[1] > short[1]  # grown to hold the long labels


def test_each_bot_s_time_per_decision_is_measured():
    result = ev.round_robin(["random", "rule_based", LowestLegal], boards=3, workers=1, bootstrap=10)
    for name, stats in result.bot_stats().items():
        assert stats.moves > 100 and stats.think_seconds > 0, name
        assert 0 < stats.ms_per_decision < 1000
    # a record's moves are the decisions each side took, as the decision hook sees them
    a_bots, b_bots = [HighestLegal(), HighestLegal()], [LowestLegal(), LowestLegal()]
    seen = [0, 0]

    def count(decision) -> None:
        seen[int(any(decision.bot is bot for bot in b_bots))] += 1

    record = ev.play_board(0, a_bots, b_bots, on_decision=count)
    assert [sum(m.moves[side] for m in record.matches) for side in (0, 1)] == seen
