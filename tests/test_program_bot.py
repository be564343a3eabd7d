"""Bots outside the process (``exec:COMMAND``, agents.program): the example programs play through the JSON
protocol; a program that crashes, hangs or answers illegally stops an evaluation with one line naming the
seat, board and decision, and ``--resume`` finishes the evaluation once the program is mended."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import agents
from allfours_env import Game
from allfours_env.match import BotFailure, Match
from eval.__main__ import main as eval_main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "outside_bot.py"
PYTHON = shlex.quote(sys.executable)

# A program that plays the first legal move, or, while the file BROKEN exists, misbehaves at its
# decision AT: "crash" ends, "hang" sleeps, "illegal" answers action 99, "card" a card it does not hold.
FLAKY = """
import json, os, sys, time
broken, at, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for n, line in enumerate(sys.stdin, 1):
    message = json.loads(line)
    if os.path.exists(broken) and n == at:
        if how == "crash":
            sys.exit(3)
        if how == "hang":
            time.sleep(60)
        answer = {"action": 99} if how == "illegal" else {"move": "ZZ" if how == "garbled" else "AS" if
                  all(m["move"] != "AS" for m in message["legal"]) else "2C"}
        print(json.dumps(answer), flush=True)
        continue
    print(json.dumps({"action": message["legal"][0]["id"]}), flush=True)
"""


def test_the_example_plays_whole_matches_through_the_protocol():
    bots = [agents.make(f"exec:{PYTHON} {shlex.quote(str(EXAMPLE))}"), agents.make("rule_based")] * 2
    for seed in range(2):
        for bot in bots:
            bot.reset(seed)
        match = Match(Game(rng=np.random.default_rng(seed)), bots)
        match.run()  # a failure or an illegal move would raise
        assert match.over and bots[0].decision > 20


@pytest.mark.skipif(shutil.which("node") is None, reason="the JavaScript example needs Node.js")
def test_the_javascript_example_plays_a_match():
    example = shlex.quote(str(ROOT / "examples" / "outside_bot.js"))
    bots = [agents.make(f"exec:node {example}"), agents.make("random")] * 2
    match = Match(Game(rng=np.random.default_rng(1)), bots)
    match.run()
    assert match.over


def test_each_decision_carries_the_text_the_legal_moves_and_the_observation(tmp_path):
    seen = tmp_path / "seen.jsonl"
    script = tmp_path / "echo.py"
    script.write_text(
        "import json, sys\n"
        f"out = open({str(seen)!r}, 'a')\n"
        "for line in sys.stdin:\n"
        "    out.write(line); out.flush()\n"
        "    print(json.dumps({'move': json.loads(line)['legal'][-1]['move'].lower()}), flush=True)\n"
    )
    bot = agents.make(f"exec:{PYTHON} {shlex.quote(str(script))}")
    bot.reset(5)
    game = Game(rng=np.random.default_rng(0))
    observation = Match(game, [None] * 4).observe(game.current)
    action = bot.act(observation)
    message = json.loads(seen.read_text().splitlines()[0])
    legal = np.flatnonzero(observation["action_mask"]).tolist()
    assert action == legal[-1]
    assert message["type"] == "act" and message["protocol"] == 1 and (message["match"], message["decision"]) == (1, 1)
    assert message["seed"] == 5 and [m["id"] for m in message["legal"]] == legal
    assert message["observation"] == observation["observation"].tolist()
    assert message["action_mask"] == observation["action_mask"].tolist()
    assert message["text"].startswith("All Fours.") and message["text"].endswith(".)")  # the moves explained


@pytest.mark.parametrize("spec", [
    "exec:", "exec: ", "exec[timeout=0]:python3 x.py", "exec[wait=3]:python3 x.py", "exec:'python3",
    "exec:no_such_program_x",
])  # fmt: skip
def test_a_bad_program_spec_is_refused_saying_why(spec):
    with pytest.raises(ValueError, match="program bot"):
        agents.make(spec)


def flaky_spec(tmp_path: Path, how: str, at: int, timeout: float = 10) -> tuple[str, Path]:
    script, broken = tmp_path / "flaky.py", tmp_path / "BROKEN"
    script.write_text(FLAKY)
    broken.touch()
    command = f"{PYTHON} {shlex.quote(str(script))} {shlex.quote(str(broken))} {at} {how}"
    return f"exec[timeout={timeout}]:{command}", broken


@pytest.mark.parametrize(("how", "says"), [
    ("crash", r"the program ended \(exit code 3\) without answering"),
    ("hang", r"no answer within 0\.5 s \(the program was stopped\)"),
    ("illegal", r"answered action 99, not an action id 0\.\.55"),
    ("card", r"answered \{\"move\": \"(AS|2C)\"\}: (AS|2C) is not a legal move here; the legal moves are [2-9TJQKA]"),
    ("garbled", r"answered \{\"move\": \"ZZ\"\}: cannot read the move 'ZZ'; the legal moves are [2-9TJQKA]"),
])  # fmt: skip
def test_a_failing_program_stops_the_evaluation_in_one_line_and_resume_finishes_it(tmp_path, capsys, how, says):
    spec, broken = flaky_spec(tmp_path, how, at=60, timeout=0.5 if how == "hang" else 10)
    out = tmp_path / "eval"
    command = [spec, "random", "--boards", "8", "--episode", "deal", "--workers", "1", "--out", str(out)]
    command.append("--no-progress")
    assert eval_main(command) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    pattern = (rf"python -m eval: bot '{re.escape(spec)}' at seat [0-3] on board [0-7], match 1, "
               rf"decision \d+ \(play\): {says}.*; the evaluation stopped\. Its finished boards are kept in "
               rf"{re.escape(str(out))}: once the bot is mended, the same command with --resume plays only the rest")
    assert re.fullmatch(pattern, lines[0]), lines[0]
    kept = (out / ".eval-journal.jsonl").read_text().splitlines()
    assert len(kept) >= 2, "some boards finished before the failure and were kept"
    broken.unlink()  # mended
    assert eval_main([*command, "--resume"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["pairs"][0]["boards"] == 8 and not (out / ".eval-journal.jsonl").exists()


def test_a_failure_in_a_watched_match_names_the_seat(tmp_path):
    spec, _ = flaky_spec(tmp_path, "crash", at=3)
    bots = [agents.make("random"), agents.make(spec)] * 2
    with pytest.raises(BotFailure) as failure:
        Match(Game(rng=np.random.default_rng(0)), bots).run()
    says = r"bot '.*' at seat [13], decision 3 \(\w+\): the program ended \(exit code 3\) without answering"
    assert re.fullmatch(says, str(failure.value)), str(failure.value)


def test_the_web_page_never_seats_a_program():
    pytest.importorskip("starlette", reason="the web page needs the 'web' extra")
    from agents.apps.web.players import BotChoices

    with pytest.raises(ValueError, match="unknown bot 'exec:python3 examples/outsi.*the server loads no file the page"):
        BotChoices().make("exec:python3 examples/outside_bot.py")
    assert not any(name.startswith("exec") for name in BotChoices().listing()["names"])


def test_agents_play_seats_a_program_and_ends_in_one_line_when_it_fails(tmp_path, capsys):
    from agents.apps.play import main as play_main

    example = f"exec:{PYTHON} {shlex.quote(str(EXAMPLE))}"
    assert play_main(["--watch", "--bot", example, "--partner", example, "--seed", "3", "--pace", "0"]) == 0
    assert "player_0: " + example in capsys.readouterr().out
    spec, _ = flaky_spec(tmp_path, "illegal", at=5)
    assert play_main(["--watch", "--bot", spec, "--seed", "3", "--pace", "0"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"python -m agents.play: bot '{re.escape(spec)}' at seat 0, match 1, decision 5 \(\w+\): answered action 99, "
        "not an action id 0..55; the match stopped", lines[0]), lines


def test_the_web_page_refuses_a_program_inside_a_search_option(tmp_path):
    pytest.importorskip("starlette", reason="the web page needs the 'web' extra")
    pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (the 'dev' extra)")
    from starlette.testclient import TestClient

    from agents.apps.web.app import create_app

    ran = tmp_path / "ran"
    script = tmp_path / "evil.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n")
    client = TestClient(create_app())
    refusals = {
        f"exec:{PYTHON} {script}": "unknown bot 'exec:",
        f"search:opponents=exec:{PYTHON} {script},ms=0,worlds=8": "search option opponents takes one of",
    }
    for spec, says in refusals.items():
        response = client.post("/api/matches", json={"mode": "watch", "players": [spec, *["random"] * 3]})
        assert response.status_code == 400 and says in response.json()["error"], response.text
    assert not ran.exists()
