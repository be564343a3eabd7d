"""Playing against the bots in the terminal (agents/apps/play.py), driven by scripted input."""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Callable, Sequence

import pytest

import agents
import agents.builtin
from agents.apps.play import GOODBYE, HELP_TEXT, MENU_PREFIX, PROMPT, main, make_bots, play, read_choice, watch
from allfours_env import BEG, GIVE_ONE, RUN, STAND, parse_card
from allfours_env.cards import N_CARDS, card_text

SHORT = {"target_score": 7}
Answer = str | Callable[[list[str]], str]


def menu_entries(lines: list[str]) -> list[str]:
    """The labels of the last menu printed: ``Choices:  1) 9C  2) JH`` -> ``["9C", "JH"]``."""
    menu = next(line for line in reversed(lines) if line.startswith(MENU_PREFIX))
    return re.findall(r"\d+\) (\S+)", menu)


def first_label(lines: list[str]) -> str:
    return menu_entries(lines)[0]


def card_not_in_hand(lines: list[str]) -> str:
    hand_text = re.findall(r"^Hand of player_\d: (.*)$", "\n".join(lines), re.M)[-1]
    hand = {parse_card(c) for c in hand_text.split()}
    return card_text(next(c for c in range(N_CARDS) if c not in hand))


class Script:
    """Input and output for :func:`play`: answers from a list, then (if given) from ``then``; records all."""

    def __init__(self, answers: Sequence[Answer] = (), then: Answer | None = None):
        self.answers = list(answers)
        self.then = then
        self.lines: list[str] = []

    def output(self, text: str) -> None:
        self.lines.append(text)

    def input(self, prompt: str) -> str:
        self.lines.append(prompt)
        answer = self.answers.pop(0) if self.answers else self.then
        if answer is None:
            raise EOFError
        return answer(self.lines) if callable(answer) else answer

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def run(script: Script, seat: int = 0, seed: int = 1, partner: str = "rule_based", opponents=("rule_based",)) -> int:
    return play(script.input, script.output, seat, make_bots(seat, partner, opponents), seed, SHORT)


@pytest.mark.parametrize(
    ("seat", "partner", "opponents", "answer"),
    [
        (0, "rule_based", ("rule_based",), first_label),  # card text and decision names
        (3, "expert", ("random", "rule_based"), "1"),  # menu numbers
    ],
)
def test_a_whole_match_is_played_to_the_result(seat, partner, opponents, answer):
    script = Script(then=answer)
    assert run(script, seat, seed=5, partner=partner, opponents=opponents) == 0
    text = script.text
    assert "Not accepted" not in text
    assert text.count(MENU_PREFIX) == text.count(PROMPT) > 0
    assert f"You are player_{seat}" in text
    # Only the person's hand is ever shown.
    assert set(re.findall(r"Hand of (player_\d)", text)) == {f"player_{seat}"}
    # Narration: bots' cards, kicks, tricks, and the awards with the score at the end of a deal.
    others = {f"player_{s}" for s in range(4)} - {f"player_{seat}"}
    assert others <= set(re.findall(r"^  (player_\d) plays", text, re.M))
    assert re.search(r"^  kick \w\w", text, re.M)
    assert re.search(r"^  player_\d wins the trick with", text, re.M)
    assert re.search(r"^  high \(\w\w held by player_\d\): team \d \+1$", text, re.M)
    assert re.search(r"^  low \(", text, re.M)
    assert re.search(r"^  deal 1 scored, score: team 0 \d+, team 1 \d+$", text, re.M)
    assert re.search(r"^  match over: team \d wins$", text, re.M)
    result = re.search(r"Match over: team (\d) wins, team 0 (\d+) - team 1 (\d+)\. Your team (wins|loses)", text)
    winner, score0, score1 = int(result[1]), int(result[2]), int(result[3])
    assert max(score0, score1) == SHORT["target_score"] == (score0, score1)[winner]
    assert (result[4] == "wins") == (winner == seat % 2)


def test_illegal_input_is_refused_and_asked_again_without_changing_the_game():
    bad = ["ZZ", "hello there", "99", "0", card_not_in_hand, ""]
    refused, plain = Script([*bad, first_label, "q"]), Script([first_label, "q"])
    assert run(refused) == run(plain) == 0
    messages = [line for line in refused.lines if line.startswith("Not accepted")]
    assert len(messages) == len(bad)
    assert "cannot read 'ZZ'" in messages[0] and "10H" in messages[0]
    assert "cannot read 'hello there'" in messages[1]
    assert "there is no choice 99" in messages[2] and "there is no choice 0" in messages[3]
    assert "is not in your hand; legal now: " in messages[4]
    for message in messages:  # each refusal is followed by the same prompt again
        assert refused.lines[refused.lines.index(message) + 1] == PROMPT
    # Apart from the refusals and repeated prompts, the two sessions are identical.
    assert [line for line in refused.lines if not line.startswith("Not accepted") and line != PROMPT] == [
        line for line in plain.lines if line != PROMPT
    ]


def test_read_choice_accepts_cards_decisions_and_numbers():
    jh, th, nine_c = parse_card("JH"), parse_card("TH"), parse_card("9C")
    cards = [nine_c, th, jh]
    assert read_choice("jh", cards, cards) == jh
    assert read_choice(" 10H ", cards, cards) == th
    assert read_choice("3", cards, cards) == jh
    assert read_choice(" Stand", [STAND, BEG], cards) == STAND
    assert read_choice("beg", [STAND, BEG], cards) == BEG
    assert read_choice("give one", [GIVE_ONE, RUN], cards) == GIVE_ONE
    assert read_choice("RUN", [GIVE_ONE, RUN], cards) == RUN
    with pytest.raises(ValueError, match=r"you cannot play JH now; legal now: stand beg"):
        read_choice("JH", [STAND, BEG], cards)
    with pytest.raises(ValueError, match=r"you cannot beg now; legal now: 9C TH"):
        read_choice("beg", [nine_c, th], cards)
    with pytest.raises(ValueError, match=r"you cannot give now; legal now: run"):
        read_choice("give", [RUN], cards)


@pytest.mark.parametrize("word", ["q", "quit", " QUIT "])
def test_quit_mid_match_says_goodbye(word):
    script = Script([first_label, first_label, word])
    assert run(script) == 0
    assert script.lines[-1] == GOODBYE
    assert script.text.count(PROMPT) == 3 and "Match over" not in script.text


@pytest.mark.parametrize("error", [EOFError, KeyboardInterrupt])
def test_end_of_input_and_ctrl_c_say_goodbye(error):
    def stop(lines: list[str]) -> str:
        raise error

    script = Script([first_label, stop])
    assert run(script) == 0
    assert script.lines[-1].strip() == GOODBYE


def test_seed_makes_the_match_reproducible():
    first, again, other = Script(then=first_label), Script(then=first_label), Script(then=first_label)
    run(first, seed=11)
    run(again, seed=11)
    run(other, seed=12)
    assert first.lines == again.lines
    assert first.lines != other.lines


def test_main_plays_a_match_from_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt: "1")
    argv = ["--seat", "2", "--partner", "random", "--opponents", "expert", "--seed", "3", "--rule", "target_score=7"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("All Fours to 7. You are player_2 (team 0).")  # the seed deals every hand: not yet
    again = "python -m agents.play --seed 3 --seat 2 --partner random --opponents expert --rule target_score=7"
    assert out.endswith(f"\nSeed 3: {again} deals these cards again.\n")
    assert "Partner player_0: random.  Opponents player_3: expert, player_1: expert." in out
    assert "Match over: team" in out


def test_the_closing_command_seats_the_same_bots_under_the_same_rules(monkeypatch, capsys):
    """The command said at the end gives the same match again: the seat, the bots and the rules, not only the seed."""
    monkeypatch.setattr("builtins.input", lambda prompt: "1")
    argv = ["--seat", "1", "--opponents", "random", "expert", "--seed", "5", "--rule", "target_score=5"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    command = re.fullmatch(r"Seed 5: (.*) deals these cards again\.", first.splitlines()[-1])[1]
    assert shlex.split(command)[:3] == ["python", "-m", "agents.play"]
    assert main(shlex.split(command)[3:]) == 0
    assert capsys.readouterr().out == first


def test_main_eof_at_the_first_prompt_exits_cleanly(monkeypatch, capsys):
    def eof(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", eof)
    assert main(["--rule", "target_score=7"]) == 0
    out = capsys.readouterr().out.rstrip()
    assert out.endswith(GOODBYE)
    # A drawn seed has 128 bits and is said only as the person leaves: it deals every hand.
    *before, seed_said, _ = out.splitlines()
    pattern = r"Seed (\d+): python -m agents.play --seed \1 --rule target_score=7 deals these cards again\."
    said = re.fullmatch(pattern, seed_said)
    seed = int(said[1])
    assert seed.bit_length() > 64 and str(seed) not in "\n".join(before) and "seed" not in "\n".join(before).lower()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--partner", "nobody"], "unknown bot 'nobody'"),
        (["--opponents", "random", "nobody"], "unknown bot 'nobody'"),
        (["--opponents", "random", "random", "random"], "one or two bots"),
        (["--partner", "missing.npz"], "no policy file"),
        (["--seat", "4"], "invalid choice: 4"),
        (["--seat", "x"], "invalid int value"),
        (["--seed", "-1"], "--seed must be 0..2**128-1"),
        (["--seed", str(2**128)], "--seed must be 0..2**128-1"),
        (["--rule", "target_score=0"], "'target_score' must be a positive integer"),
        (["--rule", "colour=red"], "unknown rule 'colour'"),
        (["--rule", "undertrump=sometimes"], "'undertrump' must be one of"),
        (["--rule", "target_score"], "--rule expects KEY=VALUE"),
    ],
)
def test_bad_options_exit_2_with_a_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_pretrained_policy_is_explained(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(agents.builtin, "PRETRAINED", tmp_path / "allfours_v1.npz")
    with pytest.raises(SystemExit) as exit_info:
        main(["--opponents", "pretrained"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "bot 'pretrained' needs the trained policy" in err and "python -m train" in err


def test_help_and_rules_are_answered_and_asked_again():
    script = Script(["help", "rules", first_label, "q"])
    assert run(script) == 0
    assert HELP_TEXT in script.lines
    rules_text = next(line for line in script.lines if line.startswith("Rules of this match"))
    assert "target_score = 7   (default 14)" in rules_text and "undertrump = allowed\n" in rules_text
    assert "Not accepted" not in script.text
    assert script.text.count(PROMPT) == 4  # help and rules, then the card, then q


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("³", "cannot read '³'"),  # a digit to Python, not a number
        ("7" * 5000, "there is no choice '77777"),
        ("\udcff\udcfe", "it is not UTF-8 text"),  # what undecodable bytes become on a piped stdin
        ("\ufffd", "it is not UTF-8 text"),
        ("x" * 1_000_000, "... (1,000,000 characters)"),
    ],
)
def test_odd_input_is_refused_clearly_and_briefly(answer, message):
    script = Script([answer, "q"])
    assert run(script) == 0
    refusal = next(line for line in script.lines if line.startswith("Not accepted"))
    assert message in refusal and len(refusal) < 300


def test_undecodable_input_from_the_terminal_is_refused():
    def undecodable(lines: list[str]) -> str:
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    script = Script([undecodable, "q"])
    assert run(script) == 0
    assert any("it is not UTF-8 text" in line for line in script.lines)


def test_closed_stdin_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(SystemExit) as exit_info:
        main(["--seed", "1"])
    assert exit_info.value.code == 2
    assert "standard input is closed" in capsys.readouterr().err


def test_watch_narrates_four_bots_to_the_result():
    lines: list[str] = []
    bots = [agents.make(name) for name in ("expert", "random", "rule_based", "random")]
    assert watch(lines.append, bots, seed=3, rules=SHORT) == 0
    text = "\n".join(lines)
    assert "player_0: expert  player_1: random  player_2: rule_based  player_3: random." in text
    assert {f"player_{s}" for s in range(4)} <= set(re.findall(r"^  (player_\d) plays", text, re.M))
    assert re.search(r"^  deal 1 scored, score: team 0 \d+, team 1 \d+$", text, re.M)
    assert re.search(r"^Match over: team \d wins, team 0 \d+ - team 1 \d+\.$", text, re.M)
    again: list[str] = []
    watch(again.append, [agents.make(name) for name in ("expert", "random", "rule_based", "random")], 3, SHORT)
    assert again == lines


def test_watch_waits_its_pace_before_each_decision(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr("agents.apps.play.time.sleep", waits.append)
    lines: list[str] = []
    watch(lines.append, [agents.make("random") for _ in range(4)], 3, SHORT, pace=0.25)
    decisions = sum(1 for line in lines if re.match(r"  player_\d (plays|stands|begs|gives|runs)", line))
    assert waits == [0.25] * len(waits) and len(waits) >= decisions > 10


def test_watch_saves_a_gif_with_a_frame_per_decision(tmp_path, capsys):
    PIL = pytest.importorskip("PIL.Image")
    path = tmp_path / "match.gif"
    assert main(["--watch", "--seed", "2", "--rule", "target_score=3", "--save", str(path)]) == 0
    frames = int(re.search(r"saved (\d+) frames", capsys.readouterr().out)[1])
    with PIL.open(path) as image:
        assert image.n_frames == frames > 10 and image.size == (960, 720)
    assert [p.name for p in tmp_path.iterdir()] == ["match.gif"]  # no temporary file left


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--save", "m.gif"], "--save records a watched match: add --watch"),
        (["--watch", "--save", "m.png"], "--save takes a .gif or .mp4"),
        (["--watch", "--save", "/no/such/folder/m.gif"], "does not exist"),
        (["--watch", "--bot", "nobody"], "unknown bot 'nobody'"),
        (["--pace", "1"], "--pace goes with --watch"),
        (["--watch", "--pace", "nan"], "--pace goes with --watch and is 0..60 seconds"),
    ],
)
def test_bad_watch_options_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_mp4_without_imageio_is_refused_with_the_way_out(capsys):
    if importlib.util.find_spec("imageio") is not None:
        pytest.skip("imageio is installed: .mp4 works")
    with pytest.raises(SystemExit) as exit_info:
        main(["--watch", "--save", "match.mp4"])
    assert exit_info.value.code == 2
    assert "needs imageio" in capsys.readouterr().err
