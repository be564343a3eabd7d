"""The review of a match (agents/apps/review.py): fair (never reads a hidden card), repeatable, its
figures as documented, its report self-contained, and bad logs refused with nothing written."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents import make
from agents.apps.match_log import MatchLog, Recorder, Replay, loads, write
from agents.apps.review import (
    ACCURATE_WITHIN,
    THRESHOLDS,
    DecisionReview,
    MatchReview,
    Reviewer,
    Settings,
    decisions,
    html_report,
    label_of,
    main,
    review_match,
    summary_lines,
)
from allfours_env import decode
from allfours_env.cards import N_SEATS
from allfours_env.engine import Game
from allfours_env.match import Match
from allfours_env.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
QUICK = Settings(worlds=8)


def logged(players=("rule_based", "expert", "rule_based", "expert"), seed: int = 4, target: int = 7) -> MatchLog:
    game = Game(Rules(target_score=target), np.random.default_rng(seed))
    recorder = Recorder(game)
    bots = [make(p) for p in players]
    for seat, bot in enumerate(bots):
        bot.reset(100 + seat)
    Match(game, bots, on_event=recorder).run()
    return recorder.log(list(players), seed, "test")


@pytest.fixture(scope="module")
def log() -> MatchLog:
    return logged()


def fair(review: DecisionReview) -> tuple:
    """What a fair review says of a decision (not its time, not the table's text)."""
    return review.step, review.seat, review.action, review.actions, review.values, review.points, review.worlds


# ---------------------------------------------------------------- the review never reads hidden cards


def visible_cards(game: Game, seat: int) -> int:
    """Bits of the cards ``seat`` can see: its hand, every card played this deal, the kicks."""
    view = decode(game.observe(seat)[0])
    bits = view.hand_bits | view.kicks_aside_bits | (1 << view.kick if view.kick is not None else 0)
    for played in view.played_bits:
        bits |= played
    return bits


def redealt(log: MatchLog, seat: int, step: int, rng: np.random.Generator, swaps: int = 40) -> MatchLog | None:
    """A log whose deal at ``step`` has other hidden cards (other seats' hands, the stock), dealt so
    that ``seat`` saw exactly the same at every step up to ``step`` (checked), the play up to
    ``step`` the same, and then played on to its end by rule_based bots; None if no such re-deal
    was found. The cards ``seat`` cannot see are swapped in the deck two at a time, each swap kept
    only if the play up to ``step`` stays legal and ``seat``'s observations stay the same."""
    replay = Replay(log)
    game = replay.game_at(step)
    deal = game.deal_number
    deck = list(log.decks[deal - 1])
    hidden = [i for i, card in enumerate(deck) if not visible_cards(game, seat) >> card & 1]
    seen = [replay.game_at(k).observe(seat)[0].copy() for k in range(step + 1)]
    first = next(k for k in range(step + 1) if replay.game_at(k).deal_number == deal)

    def prefix(candidate: list[int]) -> Game | None:
        trial = Game(log.rules, np.random.default_rng(0), decks=[*log.decks[: deal - 1], candidate], dealer=log.dealer,
                     episode=log.episode)  # fmt: skip
        for k in range(step):
            if k >= first and not np.array_equal(trial.observe(seat)[0], seen[k]):
                return None
            try:
                trial.step(log.actions[k])
            except ValueError:
                return None
        return trial if np.array_equal(trial.observe(seat)[0], seen[step]) else None

    changed = False
    for _ in range(swaps):
        i, j = rng.choice(hidden, 2, replace=False)
        candidate = list(deck)
        candidate[i], candidate[j] = candidate[j], candidate[i]
        if prefix(candidate) is not None:
            deck, changed = candidate, True
    if not changed:
        return None
    new = Game(log.rules, np.random.default_rng(1), decks=[*log.decks[: deal - 1], deck], dealer=log.dealer,
               episode=log.episode)  # fmt: skip
    recorder = Recorder(new)
    bots = [make("rule_based") for _ in range(N_SEATS)]
    match = Match(new, bots, on_event=recorder)
    for k in range(step):
        match.step(log.actions[k])
    assert new.hands != game.hands  # other hidden cards where the reviewed seat decides
    match.run()
    out = recorder.log(log.players, None, "re-dealt")
    return loads(out.dumps())  # (a log that replays)


def test_the_review_of_a_seat_is_the_same_whatever_the_cards_it_could_not_see(log):
    """For decisions of every seat: logs whose hidden cards were re-dealt consistently with what
    the seat saw up to that decision give that seat the same review there and before; the
    hands-open analysis, which reads the hidden cards, changes (so the test would catch a leak)."""
    rng = np.random.default_rng(0)
    reviewer = Reviewer(dataclasses.replace(QUICK, open=True), log.rules)
    tested, open_changed = 0, False
    for seat in range(N_SEATS):
        mine = decisions(log, [seat], open_hands=True)
        picks = [mine[0], mine[len(mine) // 3], mine[2 * len(mine) // 3]]  # a deal's first decision, later ones
        for pick in picks:
            other = redealt(log, seat, pick.step, rng)
            if other is None:
                continue
            before = [d for d in mine if d.step <= pick.step]
            again = [d for d in decisions(other, [seat], open_hands=True) if d.step <= pick.step]
            assert [d.step for d in again] == [d.step for d in before]
            original = [reviewer.review(d) for d in before]
            redealt_reviews = [reviewer.review(d) for d in again]
            assert [fair(r) for r in redealt_reviews] == [fair(r) for r in original], (seat, pick.step)
            open_changed |= any(a.open_values != b.open_values for a, b in zip(original, redealt_reviews))
            tested += 1
    assert tested >= 8
    assert open_changed


def test_a_decision_review_reads_only_the_observation_and_the_step(log):
    """A decision given nothing but the seat's observation (no state, no hidden card) reviews the same."""
    reviewer = Reviewer(QUICK, log.rules)
    for decision in decisions(log)[:6]:
        bare = dataclasses.replace(decision, state=None, table_text="")
        assert fair(reviewer.review(bare)) == fair(reviewer.review(decision))


# ---------------------------------------------------------------- the figures


def test_repeatable_and_the_same_on_two_workers(log):
    one = review_match(log, settings=QUICK, workers=1)
    two = review_match(log, settings=QUICK, workers=2)
    assert [fair(d) for d in one.decisions] == [fair(d) for d in two.decisions]
    steps = [d.step for d in one.decisions]
    assert steps == sorted(steps) and len(steps) == len(decisions(log))
    replay = Replay(log)
    for d in one.decisions:  # every decision with a choice, none without
        game = replay.game_at(d.step)
        assert game.current == d.seat and len(game.legal_actions()) > 1 and log.actions[d.step] == d.action
        assert d.actions == tuple(game.legal_actions()) and all(0 <= v <= 1 for v in d.values)
    forced = sum(len(replay.game_at(k).legal_actions()) == 1 for k in range(replay.steps))
    assert sum(one.summary(s).forced for s in range(N_SEATS)) == forced


def test_labels_and_seat_figures_as_documented(log):
    assert [label_of(x) for x in (0, 0.019, 0.0196, 0.049, 0.04996, 0.0994, 0.1, 0.6)] == [
        None, None, "inaccuracy", "inaccuracy", "mistake", "mistake", "blunder", "blunder"]  # fmt: skip
    assert dict(THRESHOLDS) == {"inaccuracy": 0.02, "mistake": 0.05, "blunder": 0.10}

    def decision(step, seat, values, points, action):
        return DecisionReview(step, seat, 1, "play", (0, 0), action, (1, 2, 3), values, points, 8, 0.0)

    made = (
        decision(0, 0, (0.50, 0.40, 0.30), (1.0, 0.0, -1.0), 1),  # best
        decision(1, 0, (0.50, 0.495, 0.30), (1.0, 0.5, -1.0), 2),  # within 1 point: accurate, no label
        decision(2, 0, (0.50, 0.47, 0.30), (1.0, 0.2, -1.0), 2),  # inaccuracy, 0.8 points
        decision(3, 0, (0.60, 0.40, 0.45), (2.0, -1.0, 0.0), 2),  # blunder, 3 points
        decision(4, 1, (0.30, 0.20, 0.10), (0.0, 0.0, 0.0), 1),
    )
    review = MatchReview(log, tuple(range(N_SEATS)), QUICK, made, 1.0)
    summary = review.summary(0)
    assert summary.decisions == 4 and summary.accuracy == 0.5
    assert summary.mean_loss == pytest.approx((0 + 0.005 + 0.03 + 0.2) / 4)
    assert summary.counts == {"inaccuracy": 1, "mistake": 0, "blunder": 1}
    assert summary.points_lost == pytest.approx(0.8 + 3.0)
    assert summary.points_lost_a_deal == pytest.approx(3.8 / len(log.decks))
    assert review.summary(2).accuracy is None and ACCURATE_WITHIN == 0.01
    graph = review.graph()
    assert graph[0] == {"step": 1, "team": 0, "seat": 0, "chance": 0.5, "label": None}
    assert graph[3]["label"] == "blunder" and graph[3]["chance"] == 0.4
    assert graph[4] == {"step": 5, "team": 1, "seat": 1, "chance": 0.3, "label": None}  # team 1's own estimate
    ends = {p["team"]: p["chance"] for p in graph[-2:]}
    assert graph[-1]["step"] == len(log.actions) and ends == {log.winner: 1.0, 1 - log.winner: 0.0}


def test_the_command_lists_every_flagged_decision(log):
    """All of them, worst first, as the report has them (it once printed the worst 15 of 16)."""
    made = tuple(DecisionReview(step, step % N_SEATS, 1, "play", (0, 0), 2, (1, 2), (0.5, 0.5 - step / 100), (1.0, 0.0),
                                8, 0.0) for step in range(3, 23))  # fmt: skip
    lines = summary_lines(MatchReview(log, tuple(range(N_SEATS)), QUICK, made, 1.0))
    listed = [line for line in lines if line.startswith("  move ")]
    assert "Flagged decisions, worst first (20):" in lines and len(listed) == 20
    assert [int(line.split()[1].rstrip(",")) for line in listed] == list(range(23, 3, -1))  # (move = step + 1)


def test_hands_open_is_the_real_deal_played_out():
    """Four experts: at every decision, the hands-open points of the action the expert chose are
    the deal's real points (the expert plays the rest of the real deal as it did in the match)."""
    from allfours_env.engine import AWARD_KINDS, DEAL

    log = logged(("expert",) * 4, seed=9, target=5)
    real, deal = {}, 0  # deal -> points of team 0, team 1 (its kicks and gift included)
    for event in Replay(log).game_at(len(log.actions)).events:
        deal = event.deal if event.kind == DEAL else deal
        if event.kind in AWARD_KINDS:
            real.setdefault(deal, [0, 0])[event.team] += event.points
    reviewer = Reviewer(dataclasses.replace(QUICK, open=True), log.rules)
    checked = 0
    for decision in decisions(log, open_hands=True)[::3]:
        review = reviewer.review(decision)
        team = decision.seat % 2
        got = real.get(decision.deal, [0, 0])
        assert review.open_points[review.actions.index(decision.action)] == got[team] - got[1 - team], decision.step
        checked += 1
    assert checked >= 5


# ---------------------------------------------------------------- the command


def run_main(argv, capsys) -> tuple[int, str, str]:
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_command_writes_a_self_contained_report_and_json(log, tmp_path, capsys):
    path = tmp_path / "match.json"
    write(log, path)
    code, out, err = run_main([path, "--worlds", "8", "--workers", "1", "--open"], capsys)
    assert code == 0, err
    page = (tmp_path / "match.review.html").read_text()
    data = json.loads((tmp_path / "match.review.json").read_text())
    assert "progress" not in out and re.search(r"\d+/\d+ decisions \(100%\)", err) and "reviewing" in err
    assert "player_0" in out and "accuracy" in out and "wrote" in out
    # One file, nothing fetched: no script, no external resource; the graph is inline SVG.
    assert "<svg" in page and "<script" not in page.lower() and not re.search(r"(src|href)=\"(?!#)", page)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    assert "Hands open" in page and "hands open: chance" in page
    assert data["format"] == "allfours-review" and data["settings"]["worlds"] == 8
    assert len(data["decisions"]) == len(decisions(log)) and len(data["seats"]) == N_SEATS
    first = data["decisions"][0]
    assert {"step", "seat", "action", "best", "loss", "label", "actions", "table", "open"} <= set(first)
    assert {"value", "points", "loss", "open_value", "open_points"} <= set(first["actions"][0])
    assert data["graph"] and data["deal_starts"][0]["step"] == 0


def test_a_players_name_cannot_inject_markup(log, tmp_path):
    evil = dataclasses.replace(log, players=("<script>alert(1)</script>", "a&b", '"x"', "expert"))
    review = review_match(evil, seats=[0], settings=Settings(worlds=2))
    page = html_report(review)
    assert "<script>" not in page and "&lt;script&gt;" in page


def bad_logs(log: MatchLog, tmp_path: Path) -> dict[str, Path]:
    text = log.dumps()
    data = json.loads(text)
    illegal = dict(data, actions=list(data["actions"]))
    illegal["actions"][5] = next(a for a in range(52) if a != illegal["actions"][5])
    files = {
        "foreign": json.dumps({"format": "something-else", "moves": [1, 2]}),
        "not JSON": "hello, this is a text file",
        "truncated": text[: len(text) // 2],
        "illegal": json.dumps(illegal),
        "too many actions": json.dumps(dict(data, actions=[0] * 10_001)),
    }
    paths = {}
    for name, content in files.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.json"
        paths[name].write_text(content)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(9 * 1024 * 1024)  # larger than any log: refused before it is read
    paths["huge"] = huge
    paths["missing"] = tmp_path / "missing.json"
    paths["folder"] = tmp_path
    return paths


def test_bad_logs_are_refused_in_one_line_with_nothing_written(log, tmp_path, capsys):
    expected = {
        "foreign": "not a match log", "not JSON": "JSON", "truncated": "JSON", "illegal": "does not replay",
        "too many actions": "10,001 actions", "huge": "more than a match log may be", "missing": "cannot read",
        "folder": "is a folder",
    }  # fmt: skip
    for name, path in bad_logs(log, tmp_path).items():
        before = sorted(tmp_path.iterdir())
        started = time.monotonic()
        code, out, err = run_main([path, "--worlds", "4", "--workers", "1"], capsys)
        assert code == 2 and out == "", name
        assert len(err.strip().splitlines()) == 1 and expected[name] in err, (name, err)
        assert sorted(tmp_path.iterdir()) == before and time.monotonic() - started < 5, name


@pytest.mark.parametrize(
    "argv, message",
    [(["--worlds", "0"], "worlds must be"), (["--worlds", "5000"], "worlds must be"), (["--ms", "-1"], "ms must be"),
     (["--ms", "nan"], "ms must be"), (["--workers", "0"], "--workers must be"), (["--seed", "-3"], "seed must be"),
     (["--html", "/no/such/folder/r.html"], "does not exist"), (["--html", "/tmp"], "is a folder; name a .html file"),
     (["--json", "/tmp"], "is a folder; name a .json file")],
)  # fmt: skip
def test_bad_settings_are_refused_before_any_work(log, tmp_path, capsys, argv, message):
    path = tmp_path / "match.json"
    write(log, path)
    code, _, err = run_main([path, *argv], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_a_report_that_would_overwrite_the_log_is_refused(log, tmp_path, capsys, option):
    path = tmp_path / "match.json"
    write(log, path)
    before = path.read_bytes()
    code, _, err = run_main([path, option, tmp_path / "." / "match.json", "--worlds", "4"], capsys)
    assert code == 2 and "names the match log itself" in err and len(err.strip().splitlines()) == 1
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]


def test_a_time_budget_reviews_too(log):
    """--ms: each decision's search stops at its budget (fewer worlds), figures still chances."""
    review = review_match(log, seats=[1], settings=Settings(worlds=4096, ms=5))
    assert review.decisions and all(d.worlds < 4096 and all(0 <= v <= 1 for v in d.values) for d in review.decisions)


def test_a_refused_write_exits_74_with_nothing_written(log, tmp_path, capsys, monkeypatch):
    path = tmp_path / "match.json"
    write(log, path)

    import contextlib

    @contextlib.contextmanager
    def full_disk(target):
        yield target.parent / "gone" / target.name  # (a folder that vanished: the write fails as a full disk would)

    monkeypatch.setattr("agents.apps.review.atomic_path", full_disk)
    code, out, err = run_main([path, "--worlds", "2", "--workers", "1"], capsys)
    assert code == 74 and "No such file or directory" in err and "nothing was written" in err and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups as on Linux")
def test_ctrl_c_stops_a_review_in_one_line_with_nothing_written(log, tmp_path):
    path = tmp_path / "match.json"
    write(log, path)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.review", str(path), "--worlds", "4096", "--workers", "2"], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and "reviewing" not in process.stderr.readline():
        pass
    time.sleep(2.0)  # into the searches
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]
