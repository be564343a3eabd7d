"""Match logs (agents/apps/match_log.py): round trip, replay, tampered logs refused, and their writers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make
from allfours_env.match import Match
from agents.apps.match_log import (
    FORMAT,
    MAX_LOG_BYTES,
    MatchLog,
    MatchLogError,
    Recorder,
    Replay,
    loads,
    read,
    replay,
    write,
)  # fmt: skip
from allfours_env.engine import Game
from allfours_env.rules import Rules


def play_logged(
    seed: int = 3, bots: str = "rule_based", scores=None, episode: str = "match", **rules
) -> tuple[Game, MatchLog]:
    game = Game(Rules(**rules), np.random.default_rng(seed), scores=scores, episode=episode)
    recorder = Recorder(game)
    Match(game, [make(bots) for _ in range(4)], on_event=recorder).run()
    return game, recorder.log([bots] * 4, seed, "test")


def tampered(log: MatchLog, change) -> str:
    data = json.loads(log.dumps())
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("rules", [{}, {"target_score": 7, "exhausted_pack": "redeal"}, {"deal_batch": 3, "first_dealer": 2}])
def test_round_trip_and_replay(rules):
    for seed in range(4):
        game, log = play_logged(seed, **rules)
        again = loads(log.dumps())
        assert again == log
        replayed = replay(again)
        assert replayed.scores == game.scores and replayed.winner == game.winner
        assert replayed.events == game.events
        assert len(log.decks) == game.deal_number


@pytest.mark.parametrize("episode", ["match", "deal"])
def test_a_match_started_from_other_scores_logs_them_and_replays(episode):
    for seed in range(12):  # one in six such logs did not replay when the starting scores went unrecorded
        game, log = play_logged(seed, "random", scores=[3 + seed % 3, seed % 4], target_score=7, episode=episode)
        assert log.start_scores == (3 + seed % 3, seed % 4)
        assert json.loads(log.dumps())["start_scores"] == [3 + seed % 3, seed % 4]
        again = loads(log.dumps())
        assert again == log and replay(again).events == game.events


def test_a_match_from_nothing_to_nothing_writes_no_starting_scores():
    _, log = play_logged(2, target_score=7)
    assert log.start_scores == (0, 0) and "start_scores" not in json.loads(log.dumps())


@pytest.mark.parametrize(
    "start, message",
    [
        ([7, 0], "start_scores.*below target_score 7"),
        ([1], "'start_scores' must be"),
        ("3-0", "'start_scores' must be"),
    ],
)
def test_starting_scores_the_match_could_not_have_are_refused(start, message):
    _, log = play_logged(3, target_score=7)
    with pytest.raises(MatchLogError, match=message):
        loads(tampered(log, lambda d: d.__setitem__("start_scores", start)))


def test_random_bots_and_runs_and_redeals_replay():
    for seed in range(20):  # random bots run the pack often: runs, redeals, many decks
        game, log = play_logged(seed, "random", target_score=5, exhausted_pack="redeal")
        assert replay(loads(log.dumps())).events == game.events


def test_replay_steps_forwards_and_backwards():
    game, log = play_logged(5, target_score=7)
    positions = Replay(log)
    assert positions.steps == len(log.actions)
    end = positions.game_at(positions.steps)
    assert end.scores == game.scores
    middle = positions.game_at(10)
    events_at_10 = list(middle.events)
    positions.game_at(positions.steps)
    assert positions.game_at(10).events == events_at_10  # backwards: from the game kept at step 0
    assert positions.game_at(0).events == game.events[: len(positions.game_at(0).events)]
    with pytest.raises(ValueError, match="step must be"):
        positions.game_at(positions.steps + 1)


def test_file_round_trip(tmp_path):
    _, log = play_logged(2, target_score=7)
    path = tmp_path / "match.json"
    write(log, path)
    assert read(path) == log
    assert [p.name for p in tmp_path.iterdir()] == ["match.json"]  # no temporary file left


def test_unfinished_match_logs_and_replays():
    game = Game(Rules(target_score=7), np.random.default_rng(1))
    recorder = Recorder(game)
    match = Match(game, [make("rule_based"), None, make("rule_based"), make("rule_based")], on_event=recorder)
    match.run()
    log = recorder.log()
    assert log.winner == -1
    assert loads(log.dumps()) == log


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["actions"].__setitem__(5, d["actions"][6]), "action 5 .* does not replay"),
        (lambda d: d["actions"].append(0), "(does not replay|the match is over)"),
        (lambda d: d["actions"].__setitem__(0, 70), r"'actions'\[0\] is 70"),
        (lambda d: d["actions"].__setitem__(0, True), r"'actions'\[0\] is True"),
        (lambda d: d["decks"][0].__setitem__(0, d["decks"][0][1]), "not a permutation"),
        (lambda d: d["decks"].append(list(range(52))), "holds 3 decks but its match dealt 2"),
        (lambda d: d["decks"].pop(), "deals again, but the log holds only 1 decks"),
        (lambda d: d["result"].__setitem__("scores", [7, 0]), "replaying it gives"),
        (lambda d: d["result"].__setitem__("winner", 1 - d["result"]["winner"]), "replaying it gives"),
        (lambda d: d.__setitem__("dealer", 4), "'dealer'"),
        (lambda d: d.__setitem__("format", "chess"), "not a match log"),
        (lambda d: d.__setitem__("version", 2), "version 2 is not read here"),
        (lambda d: d["rules"].__setitem__("target_score", 0), "target_score"),
        (lambda d: d["rules"].__setitem__("house_rule", 1), "unknown rule"),
        (lambda d: d.__setitem__("surprise", 1), "unknown 'surprise'"),
        (lambda d: d.pop("decks"), "missing decks"),
        (lambda d: d.__setitem__("players", ["a"]), "'players'"),
    ],
)
def test_tampered_log_refused(change, message):
    _, log = play_logged(3, target_score=7)
    assert len(log.decks) == 2  # (the cases above assume a two-deal match)
    with pytest.raises(MatchLogError, match=message):
        loads(tampered(log, change))


def test_not_json_refused():
    for text in ("", "[1, 2]", '{"format": NaN}', "{" * 100_000, b"\xff\xfe"):
        with pytest.raises(MatchLogError):
            loads(text)
    with pytest.raises(MatchLogError, match="at most"):
        loads(" " * (MAX_LOG_BYTES + 1))
    with pytest.raises(MatchLogError, match=FORMAT):
        loads('{"format": "x"}')


def test_play_writes_a_log(tmp_path):
    from agents.apps.play import main as play_main

    path = tmp_path / "watched.json"
    assert play_main(["--watch", "--seed", "4", "--rule", "target_score=5", "--log", str(path)]) == 0
    log = read(path)
    assert log.source == "agents.play" and log.seed == 4 and log.winner in (0, 1)
    assert log.players == ("rule_based",) * 4


def test_play_log_path_checked_first(tmp_path, capsys):
    from agents.apps.play import main as play_main

    with pytest.raises(SystemExit):
        play_main(["--watch", "--log", str(tmp_path / "missing" / "x.json")])
    assert "does not exist" in capsys.readouterr().err


def test_eval_writes_logs_of_its_matches(tmp_path):
    from eval import play_board
    from eval.__main__ import main as eval_main

    logs = tmp_path / "logs"
    code = eval_main(["expert", "rule_based", "--boards", "2", "--workers", "1", "--no-progress",
                      "--out", str(tmp_path / "out"), "--logs", str(logs), "--log-boards", "2"])  # fmt: skip
    assert code == 0
    names = sorted(p.name for p in logs.iterdir())
    assert names == [f"expert_vs_rule_based_board{b}_a{t}.json" for b in (0, 1) for t in (0, 1)]
    for board in (0, 1):  # the logged matches are the evaluated ones
        record = play_board(board, [make("expert"), make("expert")], [make("rule_based"), make("rule_based")])
        for a_team, match in enumerate(record.matches):
            log = read(logs / f"expert_vs_rule_based_board{board}_a{a_team}.json")
            assert (log.scores[a_team], log.scores[1 - a_team]) == match.points
