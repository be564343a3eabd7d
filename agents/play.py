"""``python -m agents.play``: play All Fours in the terminal, one seat yours, the other three bots.

Each time it is your turn the table is drawn for your seat, after a narration of everything that
happened since your last decision (the bots' decisions and cards, kicks, tricks won, the awards
and the score at the end of each deal), and the legal actions are listed as a numbered menu.
Answer with a card (``JH``, ``10H``, any case), a decision (``stand``, ``beg``, ``give``, ``run``)
or a menu number; anything illegal or unreadable is refused with a message and asked again.
``q``/``quit``, end of input or Ctrl-C leave at any time with exit code 0.

The bots are built with :func:`agents.make` and act from ``env.observe(agent)`` only.
:func:`play` takes the input and output callables, so tests drive a match with scripted lines.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import allfours_env
from allfours_env import BEG, GIVE_ONE, RUN, STAND, card_text, decode, parse_card
from allfours_env.cards import N_SEATS
from allfours_env.engine import AWARD_KINDS, DEAL, DEAL_END
from allfours_env.env import SEAT_OF
from allfours_env.render import describe_event
from allfours_env.rules import parse_rule_options

from .base import Bot, known_bots, make
from .builtin import PRETRAINED

InputFn = Callable[[str], str]
OutputFn = Callable[[str], None]

DEFAULT_BOT = "rule_based"
SEED_RANGE = 1_000_000  # a seed is drawn from 0..SEED_RANGE-1 when none is given
QUIT_WORDS = ("q", "quit", "exit")
DECISION_WORDS = {"stand": STAND, "beg": BEG, "give": GIVE_ONE, "give_one": GIVE_ONE, "run": RUN}
DECISION_LABELS = {STAND: "stand", BEG: "beg", GIVE_ONE: "give", RUN: "run"}
MENU_PREFIX = "Choices:"
PROMPT = "Your choice (card, decision or number; q quits): "
HINT = "type a card of your hand (e.g. JH or 10H), a decision (stand, beg, give, run) or a number from the list"
NARRATION_INDENT = "  "
GOODBYE = "Goodbye."


def seats_around(seat: int) -> tuple[int, int, int]:
    """The partner, the opponent playing after ``seat`` (to its right) and the one before it."""
    return (seat + 2) % N_SEATS, (seat + 1) % N_SEATS, (seat + 3) % N_SEATS


def action_label(action: int) -> str:
    """What the menu shows and the reader accepts: card text, or the decision's short name."""
    return DECISION_LABELS.get(action) or card_text(action)


def read_choice(text: str, legal: Sequence[int], hand: Sequence[int]) -> int:
    """The legal action that ``text`` names, or a ValueError saying why there is none."""
    word = "_".join(text.lower().split())
    if word.isdigit():
        number = int(word)
        if not 1 <= number <= len(legal):
            raise ValueError(f"there is no choice {number}: pick 1 to {len(legal)}")
        return legal[number - 1]
    if word in DECISION_WORDS:
        action = DECISION_WORDS[word]
        reason = f"you cannot {DECISION_LABELS[action]} now"
    else:
        try:
            action = parse_card(word)
        except ValueError:
            raise ValueError(f"cannot read {text.strip()!r}: {HINT}") from None
        card = card_text(action)
        reason = f"you cannot play {card} now" if action in hand else f"{card} is not in your hand"
    if action not in legal:
        raise ValueError(f"{reason}; legal now: {' '.join(action_label(a) for a in legal)}")
    return action


class Narrator:
    """Prints the match log from where it last stopped, with the score after each deal."""

    def __init__(self, game: allfours_env.Game, output_fn: OutputFn):
        self.game = game
        self.output_fn = output_fn
        self.shown = 0
        self.scores = [0, 0]  # replayed from the award events, so each deal's score is its own

    def catch_up(self) -> None:
        events = self.game.events
        for event in events[self.shown :]:
            if event.kind == DEAL:
                self.output_fn("")
            if event.kind in AWARD_KINDS:
                self.scores[event.team] += event.points
            line = describe_event(event)
            if event.kind == DEAL_END:
                line += f", score: team 0 {self.scores[0]}, team 1 {self.scores[1]}"
            self.output_fn(NARRATION_INDENT + line)
        self.shown = len(events)


def ask(input_fn: InputFn, output_fn: OutputFn, observation: dict[str, np.ndarray]) -> int | None:
    """The person's legal action, asking until one is given; None if they quit."""
    legal = [int(a) for a in np.flatnonzero(observation["action_mask"])]
    hand = decode(observation["observation"]).hand
    output_fn(MENU_PREFIX + "  " + "  ".join(f"{k}) {action_label(a)}" for k, a in enumerate(legal, 1)))
    while True:
        text = input_fn(PROMPT)
        if text.strip().lower() in QUIT_WORDS:
            return None
        try:
            return read_choice(text, legal, hand)
        except ValueError as error:
            output_fn(f"Not accepted: {error}")


def play(
    input_fn: InputFn, output_fn: OutputFn, seat: int, bots: Mapping[int, Bot], seed: int, rules: Mapping[str, Any]
) -> int:
    """Play one match with the person at ``seat`` and ``bots[s]`` at each other seat; the exit code."""
    env = allfours_env.env(render_mode="ansi", **rules)
    env.reset(seed=seed)
    for bot_seat, bot in bots.items():
        bot.reset(seed + bot_seat)  # distinct streams, so two random bots do not mirror each other
    game = env.unwrapped.game
    partner, right, left = seats_around(seat)
    output_fn(f"All Fours to {game.rules.target_score}, seed {seed}. You are player_{seat} (team {seat % 2}).")
    output_fn(
        f"Partner player_{partner}: {bots[partner].name}.  "
        f"Opponents player_{right}: {bots[right].name}, player_{left}: {bots[left].name}."
    )
    narrator = Narrator(game, output_fn)
    try:
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            agent_seat = SEAT_OF[agent]
            if agent_seat != seat:
                env.step(bots[agent_seat].act(observation))
                continue
            narrator.catch_up()
            output_fn("")
            output_fn(env.render())
            action = ask(input_fn, output_fn, observation)
            if action is None:
                output_fn(GOODBYE)
                return 0
            env.step(action)
    except (EOFError, KeyboardInterrupt):
        output_fn("\n" + GOODBYE)
        return 0
    narrator.catch_up()
    winner, scores = game.winner, game.scores
    verdict = "Your team wins!" if winner == seat % 2 else "Your team loses."
    output_fn(f"\nMatch over: team {winner} wins, team 0 {scores[0]} - team 1 {scores[1]}. {verdict}")
    return 0


def make_bot(spec: str) -> Bot:
    """``agents.make(spec)``, with a clear message when the pretrained policy is not installed."""
    try:
        return make(spec)
    except FileNotFoundError:
        if spec != "pretrained":
            raise
        others = ", ".join(name for name in known_bots() if name != spec)
        raise FileNotFoundError(
            f"bot 'pretrained' needs the trained policy {PRETRAINED}, which is not there yet; choose {others}, "
            "or a path to a policy .zip or .npz (python -m train writes runs/<name>/final.npz)"
        ) from None


def make_bots(seat: int, partner: str, opponents: Sequence[str]) -> dict[int, Bot]:
    """A bot for each other seat: ``opponents`` is one spec for both, or the right then the left opponent."""
    partner_seat, right_seat, left_seat = seats_around(seat)
    specs = {partner_seat: partner, right_seat: opponents[0], left_seat: opponents[-1]}
    return {s: make_bot(spec) for s, spec in specs.items()}


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.opponents) > 2:
        parser.error(f"--opponents takes one or two bots, got {len(args.opponents)}")
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be 0 or more, got {args.seed}")
    try:
        rules = parse_rule_options(args.rule)
        bots = make_bots(args.seat, args.partner, args.opponents)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    # No --seed: a fresh seed from the operating system, printed so the match can be replayed.
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % SEED_RANGE)
    try:
        return play(input, print, args.seat, bots, seed, rules)
    except BrokenPipeError:  # the output was piped into a reader that stopped (e.g. | head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
