"""``python -m agents.play``: play All Fours in the terminal, one seat yours, the other three bots.

Each time it is your turn the table is drawn for your seat, after a narration of everything that
happened since your last decision (the bots' decisions and cards, kicks, tricks won, the awards
and the score at the end of each deal), and the legal actions are listed as a numbered menu.
Answer with a card (``JH``, ``10H``, any case), a decision (``stand``, ``beg``, ``give``, ``run``)
or a menu number; anything illegal or unreadable is refused with a message and asked again.
``help`` explains the answers, ``rules`` lists the rule variant in play; ``q``/``quit``, end of
input or Ctrl-C leave at any time with exit code 0.

``--watch`` lets four bots play with the same narration, at a pace a person can follow on a
terminal (``--pace SECONDS`` before each decision); ``--save match.gif`` (Pillow) or
``match.mp4`` (needs imageio with its ffmpeg plugin) also records a picture of the table, from
``--seat``'s side, at every decision. ``--log match.json`` writes the match log (decks, first
dealer, every action: :mod:`agents.apps.match_log`, docs/match_log.md) when the match ends or you
leave, which ``python -m agents.web`` replays move by move.

The bots are built with :func:`agents.make` (a program outside too, ``exec:COMMAND``: one that crashes,
hangs or answers what is not a legal move ends the match with one line and exit code 1) and act from
``env.observe(agent)`` only; the match
runs the shared loop, :class:`allfours_env.match.Match`. :func:`play` and :func:`watch` take the input
and output callables, so tests drive a match with scripted lines.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env import BEG, GIVE_ONE, RUN, STAND, card_text, decode, parse_card
from allfours_env.cards import N_SEATS
from allfours_env.engine import AWARD_KINDS, DEAL, DEAL_END, Event, Game
from allfours_env.match import BotFailure, Decision, Match
from allfours_env.observation import encode
from allfours_env.render import describe_event, render_text
from allfours_env.rules import DEFAULT_RULES, RULE_KEYS, Rules, as_rules, parse_rule_options

from ..base import Bot, make, player_bots, refuse_sighted
from ..builtin import PRETRAINED
from ..shared.atomic_file import atomic_path
from .match_log import MAX_SEED, Recorder, check_log_path, draw_seed, side_seeds, write

InputFn = Callable[[str], str]
OutputFn = Callable[[str], None]

DEFAULT_BOT = "rule_based"
WATCH_PACE = 0.6  # seconds before each decision of a watched match, on a terminal
MAX_PACE = 60.0
QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("help", "?", "h")
RULES_WORDS = ("rules", "rule")
DECISION_WORDS = {"stand": STAND, "beg": BEG, "give": GIVE_ONE, "give_one": GIVE_ONE, "run": RUN}
DECISION_LABELS = {STAND: "stand", BEG: "beg", GIVE_ONE: "give", RUN: "run"}
MENU_PREFIX = "Choices:"
PROMPT = "Your choice (card, decision or number; q quits): "
HINT = (
    "type a card of your hand (e.g. JH or 10H), a decision (stand, beg, give, run) or a number from the list"
    " (help explains more)"
)
NARRATION_INDENT = "  "
GOODBYE = "Goodbye."
HELP_TEXT = (
    "Answer with a card of your hand (JH, 10H, any case), a decision (stand, beg, give, run) or the\n"
    "number of a choice in the list. Other commands: rules (the rules of this match), help, q (quit)."
)
RULES_DOC = "docs/rules.md"
ECHO_LIMIT = 40  # characters of an unreadable answer repeated in the refusal
MAX_CHOICE_DIGITS = 3  # a menu has at most 56 entries; longer numbers are refused without reading them
FRAME_SECONDS = 0.8  # how long each recorded frame shows
GIF_COLORS = 256
SAVE_FORMATS = (".gif", ".mp4")


def seats_around(seat: int) -> tuple[int, int, int]:
    """The partner, the opponent playing after ``seat`` (to its right) and the one before it."""
    return (seat + 2) % N_SEATS, (seat + 1) % N_SEATS, (seat + 3) % N_SEATS


def action_label(action: int) -> str:
    """What the menu shows and the reader accepts: card text, or the decision's short name."""
    return DECISION_LABELS.get(action) or card_text(action)


def shorten(text: str) -> str:
    """``text`` as quoted in a message, cut to ``ECHO_LIMIT`` characters."""
    text = text.strip()
    if len(text) <= ECHO_LIMIT:
        return repr(text)
    return f"{text[:ECHO_LIMIT]!r}... ({len(text):,} characters)"


def is_unreadable(text: str) -> bool:
    """True when ``text`` came from bytes that are not UTF-8 (decoded with surrogates or U+FFFD)."""
    return any("\ud800" <= ch <= "\udfff" or ch == "\ufffd" for ch in text)


def read_choice(text: str, legal: Sequence[int], hand: Sequence[int]) -> int:
    """The legal action that ``text`` names, or a ValueError saying why there is none."""
    if is_unreadable(text):
        raise ValueError(f"cannot read the input: it is not UTF-8 text; {HINT}")
    word = "_".join(text.lower().split())
    if word.isascii() and word.isdigit():  # ASCII only: "³" is a digit to Python, not a number
        number = int(word) if len(word) <= MAX_CHOICE_DIGITS else None
        if number is None or not 1 <= number <= len(legal):
            shown = word if number is not None else shorten(word)
            raise ValueError(f"there is no choice {shown}: pick 1 to {len(legal)}")
        return legal[number - 1]
    if word in DECISION_WORDS:
        action = DECISION_WORDS[word]
        reason = f"you cannot {DECISION_LABELS[action]} now"
    else:
        try:
            action = parse_card(word)
        except ValueError:
            raise ValueError(f"cannot read {shorten(text)}: {HINT}") from None
        card = card_text(action)
        reason = f"you cannot play {card} now" if action in hand else f"{card} is not in your hand"
    if action not in legal:
        raise ValueError(f"{reason}; legal now: {' '.join(action_label(a) for a in legal)}")
    return action


def rules_lines(rules: Rules) -> list[str]:
    """The rule variant in play, one key a line, with the defaults it changes."""
    lines = [f"Rules of this match (full rules: {RULES_DOC}):"]
    for key in RULE_KEYS:
        value, default = getattr(rules, key), getattr(DEFAULT_RULES, key)
        lines.append(f"  {key} = {value}" + ("" if value == default else f"   (default {default})"))
    return lines


class Narrator:
    """Prints each event of the match log (an ``on_event`` hook), with the score after each deal."""

    def __init__(self, output_fn: OutputFn):
        self.output_fn = output_fn
        self.scores = [0, 0]  # replayed from the award events, so each deal's score is its own

    def __call__(self, event: Event) -> None:
        if event.kind == DEAL:
            self.output_fn("")
        if event.kind in AWARD_KINDS:
            self.scores[event.team] += event.points
        line = describe_event(event)
        if event.kind == DEAL_END:
            line += f", score: team 0 {self.scores[0]}, team 1 {self.scores[1]}"
        self.output_fn(NARRATION_INDENT + line)


def new_game(seed: int, rules: Rules | Mapping[str, Any]) -> Game:
    """The match of ``seed``: the same deals as ``allfours_env.env(**rules).reset(seed=seed)``."""
    return Game(as_rules(rules), np.random.default_rng(seed))


def result_line(game: Game) -> str:
    """The closing line of a finished match."""
    return f"Match over: team {game.winner} wins, team 0 {game.scores[0]} - team 1 {game.scores[1]}."


def ask(input_fn: InputFn, output_fn: OutputFn, observation: dict[str, np.ndarray], rules: Rules) -> int | None:
    """The person's legal action, asking until one is given; None if they quit."""
    legal = [int(a) for a in np.flatnonzero(observation["action_mask"])]
    hand = decode(observation["observation"]).hand
    output_fn(MENU_PREFIX + "  " + "  ".join(f"{k}) {action_label(a)}" for k, a in enumerate(legal, 1)))
    while True:
        try:
            text = input_fn(PROMPT)
        except UnicodeDecodeError:
            output_fn(f"Not accepted: cannot read the input: it is not UTF-8 text; {HINT}")
            continue
        command = text.strip().lower()
        if command in QUIT_WORDS:
            return None
        if command in HELP_WORDS:
            output_fn(HELP_TEXT)
            continue
        if command in RULES_WORDS:
            output_fn("\n".join(rules_lines(rules)))
            continue
        try:
            return read_choice(text, legal, hand)
        except ValueError as error:
            output_fn(f"Not accepted: {error}")


def play(
    input_fn: InputFn,
    output_fn: OutputFn,
    seat: int,
    bots: Mapping[int, Bot],
    seed: int,
    rules: Rules | Mapping[str, Any],
    log: Path | None = None,
    options: Sequence[str] = (),
) -> int:
    """Play one match with the person at ``seat`` and ``bots[s]`` at each other seat; the exit code.

    ``log``: write the match log there when the match ends or the person leaves; ``options``: the command-line
    options besides ``--seed`` that seat these bots with these rules (:func:`match_options`), said with the seed."""
    game = new_game(seed, rules)
    streams = side_seeds(seed, N_SEATS)  # the bots' own: the game's stream would tell the deck
    for bot_seat, bot in bots.items():
        bot.reset(streams[bot_seat])
    partner, right, left = seats_around(seat)
    output_fn(f"All Fours to {game.rules.target_score}. You are player_{seat} (team {seat % 2}).")
    output_fn(
        f"Partner player_{partner}: {bots[partner].name}.  "
        f"Opponents player_{right}: {bots[right].name}, player_{left}: {bots[left].name}."
    )
    recorder = Recorder(game, then=Narrator(output_fn))
    players = [bots[s].name if s in bots else "person" for s in range(N_SEATS)]
    match = Match(game, [bots.get(s) for s in range(N_SEATS)], on_event=recorder)  # None: the person
    try:
        match.run()
        while not match.over:
            output_fn("")
            output_fn(render_text(decode(encode(game, seat)), seat, f"player_{seat} to act"))
            action = ask(input_fn, output_fn, match.observe(seat), game.rules)
            if action is None:
                output_fn(seed_line(seed, options))
                output_fn(GOODBYE)
                return save_log(output_fn, recorder, players, seed, log)
            match.step(action)
            match.run()
    except (EOFError, KeyboardInterrupt):
        output_fn("\n" + seed_line(seed, options))
        output_fn(GOODBYE)
        return save_log(output_fn, recorder, players, seed, log)
    verdict = "Your team wins!" if game.winner == seat % 2 else "Your team loses."
    output_fn(f"\n{result_line(game)} {verdict}")
    output_fn(seed_line(seed, options))
    return save_log(output_fn, recorder, players, seed, log)


def seed_line(seed: int, options: Sequence[str] = ()) -> str:
    """The seed deals every hand of the match: said when the person leaves, never before, with the ``options``
    that seat the same bots under the same rules."""
    command = shlex.join(["python", "-m", "agents.play", "--seed", str(seed), *options])
    return f"Seed {seed}: {command} deals these cards again."


def match_options(seat: int, partner: str, opponents: Sequence[str], rule_options: Sequence[str]) -> list[str]:
    """The options besides ``--seed`` that give this match again: the seat, bots and rules, defaults left out."""
    options = [] if seat == 0 else ["--seat", str(seat)]
    if partner != DEFAULT_BOT:
        options += ["--partner", partner]
    if list(opponents) != [DEFAULT_BOT]:
        options += ["--opponents", *opponents]
    for rule in rule_options:
        options += ["--rule", rule]
    return options


def save_log(output_fn: OutputFn, recorder: Recorder, players: Sequence[str], seed: int, path: Path | None) -> int:
    """Write the match log to ``path`` (if given); the exit code (1 if it could not be written)."""
    if path is None:
        return 0
    try:
        write(recorder.log(players, seed, "agents.play"), path)
    except OSError as err:
        output_fn(f"could not write the match log {path}: {err.strerror or err}; nothing was written")
        return 1
    output_fn(f"match log written to {path} ({len(recorder.actions)} actions)")
    return 0


def watch(
    output_fn: OutputFn,
    bots: Sequence[Bot],
    seed: int,
    rules: Rules | Mapping[str, Any],
    on_frame: Callable[[np.ndarray], None] | None = None,
    viewer: int = 0,
    log: Path | None = None,
    pace: float = 0.0,
) -> int:
    """Let ``bots[s]`` play seat ``s`` with the narration; the exit code.

    ``on_frame``, if given, receives a picture (uint8[720, 960, 3]) of the table as ``viewer``
    sees it before every decision and once at the end; ``log``: write the match log there at the
    end; ``pace``: seconds to wait before each decision, so that a person can follow the match.
    """
    game = new_game(seed, rules)
    for bot, stream in zip(bots, side_seeds(seed, N_SEATS)):
        bot.reset(stream)
    output_fn(f"All Fours to {game.rules.target_score}, seed {seed}. Watching four bots:")
    output_fn("  ".join(f"player_{s}: {bot.name}" for s, bot in enumerate(bots)) + ".")

    def before(decision: Decision) -> None:
        if on_frame:
            on_frame(picture(decision.game, viewer, f"player_{decision.seat} to act"))
        time.sleep(pace)

    recorder = Recorder(game, then=Narrator(output_fn))
    players = [bot.name for bot in bots]
    match = Match(game, bots, on_decision=before if on_frame or pace else None, on_event=recorder)
    try:
        match.run()
    except KeyboardInterrupt:
        output_fn("\n" + GOODBYE)
        return save_log(output_fn, recorder, players, seed, log)
    if on_frame:
        on_frame(picture(game, viewer, result_line(game)))
    output_fn(f"\n{result_line(game)}")
    return save_log(output_fn, recorder, players, seed, log)


def picture(game: Game, viewer: int, status: str) -> np.ndarray:
    """The table as ``viewer`` sees it, drawn by :mod:`allfours_env.picture` (needs Pillow)."""
    from allfours_env.picture import render_picture

    return render_picture(decode(encode(game, viewer)), viewer, status)


class Recording:
    """Frames of a watched match, kept small as they come, then written as a GIF (Pillow) or MP4 (imageio)."""

    def __init__(self, path: Path):
        self.path = path
        self.gif = path.suffix.lower() == ".gif"
        self.frames: list[Any] = []
        self._palette = None  # the GIF palette, taken from the first frame: later ones map onto it quickly

    def add(self, frame: np.ndarray) -> None:
        if not self.gif:
            self.frames.append(frame)
            return
        from PIL import Image

        image = Image.fromarray(frame)
        if self._palette is None:
            self._palette = image.quantize(colors=GIF_COLORS, dither=Image.Dither.NONE)
        self.frames.append(image.quantize(palette=self._palette, dither=Image.Dither.NONE))

    def save(self) -> None:
        """Write the file through a temporary one, so a failure leaves no half-written file."""
        with atomic_path(self.path) as tmp:
            if self.gif:
                first, *rest = self.frames
                first.save(tmp, save_all=True, append_images=rest, duration=int(FRAME_SECONDS * 1000), loop=0)
            else:
                import imageio.v3 as iio

                iio.imwrite(tmp, np.stack(self.frames), fps=1 / FRAME_SECONDS)


def check_save_path(text: str) -> Path:
    """The ``--save`` path, or a ValueError saying which formats work here."""
    path = Path(text)
    if path.suffix.lower() not in SAVE_FORMATS:
        raise ValueError(f"--save takes a .gif or .mp4 file name, got {text!r}")
    if path.suffix.lower() == ".mp4" and importlib.util.find_spec("imageio") is None:
        raise ValueError(
            "--save .mp4 needs imageio with its ffmpeg plugin (pip install imageio[ffmpeg]); .gif needs only Pillow"
        )
    return check_log_path(text, "--save", path.suffix.lower())  # now, not after the whole match


def make_bot(spec: str) -> Bot:
    """``agents.make(spec)``, with a clear message when the pretrained policy is not installed."""
    try:
        return refuse_sighted(make(spec), "at the terminal")
    except FileNotFoundError:
        if spec != "pretrained":
            raise
        others = ", ".join(name for name in player_bots() if name != spec)
        raise FileNotFoundError(
            f"bot 'pretrained' needs the trained policy {PRETRAINED}, which is not there yet; choose {others}, "
            "or a path to a policy .zip or .npz (python -m train writes runs/<name>/final.npz)"
        ) from None


def make_bots(seat: int, partner: str, opponents: Sequence[str], own: str | None = None) -> dict[int, Bot]:
    """A bot for each other seat: ``opponents`` is one spec for both, or the right then the left opponent;
    ``own``, if given, plays ``seat`` too (watching)."""
    partner_seat, right_seat, left_seat = seats_around(seat)
    specs = {partner_seat: partner, right_seat: opponents[0], left_seat: opponents[-1]}
    if own is not None:
        specs[seat] = own
    return {s: make_bot(spec) for s, spec in sorted(specs.items())}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agents.play",
        description="Play All Fours in the terminal: you take a seat, bots take the other three.",
        epilog="Example: python -m agents.play --partner rule_based --opponents expert --rule target_score=7",
    )
    parser.add_argument("--seat", type=int, choices=range(N_SEATS), default=0, help="your seat, 0..3 (default 0)")
    parser.add_argument("--partner", default=DEFAULT_BOT, metavar="BOT", help=f"your partner (default {DEFAULT_BOT})")
    parser.add_argument(
        "--opponents", nargs="+", default=[DEFAULT_BOT], metavar="BOT",
        help=f"one bot for both opponents, or two: the one after you, then the one before you (default {DEFAULT_BOT})",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=None, help="seed of the deals (default: a random one, printed)")
    parser.add_argument(
        "--rule", action="append", default=[], metavar="KEY=VALUE",
        help="rule variant (README, Rule variants), repeatable, e.g. --rule target_score=7",
    )  # fmt: skip
    parser.add_argument("--watch", action="store_true", help="watch four bots play (your seat too: --bot)")
    parser.add_argument(
        "--pace", type=float, default=None, metavar="SECONDS",
        help=f"with --watch, seconds before each decision (default {WATCH_PACE} on a terminal, 0 when the output "
        "goes to a file or a pipe, or with --save)",
    )  # fmt: skip
    parser.add_argument(
        "--bot", default=DEFAULT_BOT, metavar="BOT", help=f"with --watch, the bot in your seat (default {DEFAULT_BOT})"
    )
    parser.add_argument(
        "--save", metavar="FILE", help="with --watch, record the table at every decision, from --seat's side, "
        "as FILE.gif (Pillow) or FILE.mp4 (needs imageio[ffmpeg])",
    )  # fmt: skip
    parser.add_argument(
        "--log", metavar="FILE", help="write the match log (JSON, docs/match_log.md) to FILE when the match ends "
        "or you leave; python -m agents.web replays it",
    )  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.opponents) > 2:
        parser.error(f"--opponents takes one or two bots, got {len(args.opponents)}")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        parser.error(f"--seed must be 0..2**128-1, got {args.seed}")
    if args.save and not args.watch:
        parser.error("--save records a watched match: add --watch")
    if args.pace is not None and not (args.watch and math.isfinite(args.pace) and 0 <= args.pace <= MAX_PACE):
        parser.error(f"--pace goes with --watch and is 0..{MAX_PACE:g} seconds, got {args.pace}")
    if not args.watch and (sys.stdin is None or sys.stdin.closed):
        parser.error("standard input is closed: play reads your moves from it (or use --watch to watch bots)")
    try:
        rules = parse_rule_options(args.rule)
        bots = make_bots(args.seat, args.partner, args.opponents, args.bot if args.watch else None)
        recording = Recording(check_save_path(args.save)) if args.save else None
        log = check_log_path(args.log) if args.log else None
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    # No --seed: a fresh one of 128 bits, printed when the match ends so that it can be dealt again.
    seed = args.seed if args.seed is not None else draw_seed()
    try:
        if not args.watch:
            options = match_options(args.seat, args.partner, args.opponents, args.rule)
            return play(input, print, args.seat, bots, seed, rules, log, options)
        on_frame = recording.add if recording else None
        pace = args.pace if args.pace is not None else WATCH_PACE if sys.stdout.isatty() and not recording else 0.0
        code = watch(print, [bots[s] for s in range(N_SEATS)], seed, rules, on_frame, args.seat, log, pace)
        if recording:
            try:
                recording.save()
            except OSError as err:
                print(f"could not save {recording.path}: {err.strerror or err}; nothing was written", file=sys.stderr)
                return 1
            print(f"saved {len(recording.frames)} frames to {recording.path}")
        return code
    except BrokenPipeError:  # the output was piped into a reader that stopped (e.g. | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except BotFailure as failure:  # a program bot (exec:COMMAND) that crashed, hung or answered wrong
        print(f"python -m agents.play: {failure}; the match stopped", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
