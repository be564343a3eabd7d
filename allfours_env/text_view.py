"""A seat's observation in words, for a person or a language model, and moves read back from text.

:func:`observation_text` writes what ``env.observe(agent)`` gives one seat, and nothing else: it
is built from :func:`allfours_env.decode` of the observation and the action mask alone. It
names the seats as that seat sees them (you, right opponent, partner, left opponent: play goes
to the right), and gives the rules that differ from the defaults, the score, dealer and beggar,
the kick and the kicks set aside, trump, the decisions of this deal, the hand, every trick of
this deal with who played what (the current one last, with who leads it), the cards each team
has won, the Game points, and the legal moves. Example::

    All Fours. You and your partner (team "us") play against the right opponent and the left opponent (team "them").
    ...
    Trick 2 (current): left opponent 9H, you to play.
    Your legal moves: 2H TH KH.

The text is complete: :func:`read_observation_text` turns it back into the very ``View`` that
``decode`` gives and the legal action ids (tested on every decision of random matches), so a
bot that reads only the text can play as well as one that reads the array (``agents.make("textbot")``
is ``rule_based`` reading the text). :func:`parse_move` reads a move (``"JH"``, ``"10s"``,
``"stand"``, ``"run the pack"``) and refuses anything that is not a legal move, naming them.
The format is documented in docs/outside_bots.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from .actions import BEG, DECISION_NAMES, GIVE_ONE, RUN, STAND, action_text
from .cards import N_SEATS, SUIT_NAMES, beats, bits_of, card_text, cards_of, parse_card
from .observation import View, decode
from .rules import Rules, parse_rule_value

SEAT_NAMES = ("you", "right opponent", "partner", "left opponent")  # by relative seat
TEAM_NAMES = ("us", "them")  # own team, other team
_PHASE_HELP = {
    "stand_or_beg": "the beggar stands (the kick's suit is trump) or begs",
    "give_or_run": "the dealer gives the beggar's team one point (the kick's suit is trump) or runs the pack",
    "play": "the tricks of the deal",
    "over": "the deal is over",
}
_MOVE_HELP = {
    STAND: "STAND keeps the kick's suit as trump",
    BEG: "BEG asks the dealer to give one or run the pack",
    GIVE_ONE: "GIVE_ONE gives the beggar's team one point and keeps the kick's suit as trump",
    RUN: "RUN deals three more cards each and turns a new kick",
}
_MOVE_ALIASES = {"RUN_THE_PACK": RUN, "GIVE": GIVE_ONE, **{name: action for action, name in DECISION_NAMES.items()}}
HEADER = (
    'All Fours. You and your partner (team "us") play against the right opponent and the left opponent (team "them"). '
    "Play goes to the right: you, right opponent, partner, left opponent.\n"
    "Cards are a rank then a suit: ranks 2-9, T (ten), J, Q, K, A; "
    "suits C (clubs), D (diamonds), H (hearts), S (spades)."
)


def _cards(cards: Iterable[int]) -> str:
    return " ".join(map(card_text, cards)) or "none"


def _trick_winner(trick: list[tuple[int, int]], trump: int | None) -> int:
    """The relative seat that won a whole trick."""
    best_seat, best = trick[0]
    for seat, card in trick[1:]:
        if beats(card, best, -1 if trump is None else trump):
            best_seat, best = seat, card
    return best_seat


def view_text(view: View) -> str:
    """The table as the seat of ``view`` sees it, in words (see the module docstring)."""
    changed = view.rules.changed()
    rules = ", ".join(f"{key}={value}" for key, value in changed.items())
    lines = [
        HEADER,
        f"Rules: the defaults except {rules}." if changed else "Rules: the defaults.",
        f"Score: us {view.scores[0]}, them {view.scores[1]}; the first team to {view.target} points wins.",
        f"Dealer: {SEAT_NAMES[view.dealer]}. Beggar: {SEAT_NAMES[view.beggar]}.",
        f"Phase: {view.phase} ({_PHASE_HELP[view.phase]}).",
        f"Kick: {_cards([] if view.kick is None else [view.kick])}. Kicks set aside by running the pack: "
        f"{_cards(view.kicks_aside)}.",
        f"Trump: {'not fixed yet' if view.trump is None else SUIT_NAMES[view.trump]}.",
        f"Decisions this deal: {', '.join(view.decided) or 'none'}.",
        f"Your hand: {_cards(view.hand)}.",
    ]
    tricks = view.tricks  # with a card on the table, the last trick is the current one
    done, current = (tricks[:-1], tricks[-1]) if view.table else (tricks, [])
    for number, trick in enumerate(done, 1):
        plays = ", ".join(f"{SEAT_NAMES[seat]} {card_text(card)}" for seat, card in trick)
        lines.append(f"Trick {number}: {plays}; won by {SEAT_NAMES[_trick_winner(trick, view.trump)]}.")
    if view.leader is not None:
        plays = [f"{SEAT_NAMES[seat]} {card_text(card)}" for seat, card in current]
        to_act = (view.leader + len(current)) % N_SEATS
        plays.append(f"{SEAT_NAMES[to_act]} to {'play' if current else 'lead'}")
        lines.append(f"Trick {len(done) + 1} (current): {', '.join(plays)}.")
    lines += [
        f"Cards won this deal: us {_cards(cards_of(view.won_bits[0]))}; them {_cards(cards_of(view.won_bits[1]))}.",
        f"Game points this deal: us {view.game_points[0]}, them {view.game_points[1]}.",
    ]
    return "\n".join(lines)


def legal_text(legal: Iterable[int]) -> str:
    """The legal moves line (with what the decisions mean)."""
    legal = [int(a) for a in legal]
    if not legal:
        return "Your legal moves: none (it is not your turn)."
    help_text = "; ".join(_MOVE_HELP[a] for a in legal if a in _MOVE_HELP)
    return f"Your legal moves: {' '.join(map(action_text, legal))}." + (f" ({help_text}.)" if help_text else "")


def observation_text(observation: dict[str, np.ndarray]) -> str:
    """What ``env.observe(agent)`` gives, in words: the table (:func:`view_text`) and the legal moves."""
    return view_text(decode(observation)) + "\n" + legal_text(np.flatnonzero(observation["action_mask"]))


def parse_move(text: str, legal: Iterable[int]) -> int:
    """The action id of a move written as text (a card ``"JH"``/``"10s"``, or ``STAND``, ``BEG``,
    ``GIVE_ONE``, ``RUN``, any case, spaces for underscores, ``"give"``, ``"run the pack"``); a
    ValueError naming the legal moves if it is not one of ``legal``."""
    legal = [int(a) for a in legal]
    allowed = f"the legal moves are {' '.join(map(action_text, legal)) or 'none (it is not your turn)'}"
    if not isinstance(text, str):
        raise ValueError(f"a move is text, got {type(text).__name__} {text!r:.40}; {allowed}")
    word = "_".join(text.strip().strip(".\"'`").upper().split())
    action = _MOVE_ALIASES.get(word)
    if action is None:
        try:
            action = parse_card(word)
        except ValueError:
            raise ValueError(f"cannot read the move {text[:40]!r}; {allowed}") from None
    if action not in legal:
        raise ValueError(f"{action_text(action)} is not a legal move here; {allowed}")
    return action


# ---------------------------------------------------------------- reading the text back

_SEAT_OF = {name: seat for seat, name in enumerate(SEAT_NAMES)}
_CARD = r"[2-9TJQKA][CDHS]"


class TextFormatError(ValueError):
    """The text is not one :func:`observation_text` writes."""


def _line(lines: dict[str, str], key: str) -> str:
    if key not in lines:
        raise TextFormatError(f"the text has no line starting {key + ':'!r}")
    return lines[key].rstrip(".")


def _read_cards(text: str) -> list[int]:
    return [] if text == "none" else [parse_card(c) for c in text.split()]


def _match(pattern: str, text: str) -> re.Match:
    found = re.fullmatch(pattern, text)
    if found is None:
        raise TextFormatError(f"cannot read {text[:80]!r}")
    return found


def read_observation_text(text: str) -> tuple[View, list[int]]:
    """The ``View`` and the legal action ids of a text :func:`observation_text` wrote (a
    TextFormatError if it is not one)."""
    try:
        return _read(text)
    except TextFormatError:
        raise
    except (KeyError, ValueError, IndexError, AttributeError) as error:  # a card, seat or rule that is not one
        raise TextFormatError(f"not a text view of observation_text ({type(error).__name__}: {error})") from None


def _read(text: str) -> tuple[View, list[int]]:
    lines: dict[str, str] = {}
    tricks: list[str] = []
    for line in text.splitlines():
        key, sep, rest = line.partition(": ")
        if key.startswith("Trick "):
            tricks.append(line)
        elif sep:
            lines[key] = rest
    rules_text = _line(lines, "Rules")
    score = _match(r"us (\d+), them (\d+); the first team to (\d+) points wins", _line(lines, "Score"))
    rules: dict[str, object] = {"target_score": int(score[3])}
    if rules_text != "the defaults":
        for item in _match(r"the defaults except (.+)", rules_text)[1].split(", "):
            key, _, value = item.partition("=")
            rules[key] = parse_rule_value(value)
    seats = _match(r"Dealer: (.+)\. Beggar: (.+)", "Dealer: " + _line(lines, "Dealer"))
    phase = _match(r"(\w+) \(.*\)", _line(lines, "Phase"))[1]
    kick = _match(r"(.+)\. Kicks set aside by running the pack: (.+)", _line(lines, "Kick"))
    trump_text = _line(lines, "Trump")
    decisions = _line(lines, "Decisions this deal").split(", ")
    won = _match(r"us (.+); them (.+)", _line(lines, "Cards won this deal"))
    game_points = _match(r"us (\d+), them (\d+)", _line(lines, "Game points this deal"))
    played, led, numbers, table, leader = [0] * N_SEATS, 0, 0, {}, None
    for line in tricks:
        head, _, body = line.rstrip(".").partition(": ")
        number = int(_match(r"Trick (\d+)(?: \(current\))?", head)[1])
        current = head.endswith("(current)")
        body = body.split("; won by ")[0]
        for i, play in enumerate(body.split(", ")):
            found = _match(rf"(.+?) ({_CARD}|to play|to lead)", play)
            seat = _SEAT_OF[found[1]]
            if found[2].startswith("to "):
                leader = seat if found[2] == "to lead" else leader
                continue
            card = parse_card(found[2])
            played[seat] |= 1 << card
            numbers |= number << 4 * card
            if i == 0:
                led |= 1 << card
                if current:
                    leader = seat
            if current:
                table[seat] = card
    kick_cards = _read_cards(kick[1])
    legal_line = text.splitlines()[-1]
    legal = [] if legal_line.startswith("Your legal moves: none") else [
        parse_move(m, range(56)) for m in _match(r"Your legal moves: ([^.]+)\..*", legal_line)[1].split()
    ]
    view = View(
        hand_bits=bits_of(_read_cards(_line(lines, "Your hand"))),
        kick=kick_cards[0] if kick_cards else None,
        kicks_aside_bits=bits_of(_read_cards(kick[2])),
        table=table,
        played_bits=tuple(played),
        led_bits=led,
        trick_numbers=numbers,
        won_bits=(bits_of(_read_cards(won[1])), bits_of(_read_cards(won[2]))),
        trump=None if trump_text == "not fixed yet" else SUIT_NAMES.index(trump_text),
        phase=phase,
        dealer=_SEAT_OF[seats[1]],
        beggar=_SEAT_OF[seats[2]],
        leader=leader,
        partner=SEAT_NAMES.index("partner"),
        stood="stood" in decisions,
        begged="begged" in decisions,
        gave_one="gave one" in decisions,
        ran="ran the pack" in decisions,
        scores=(int(score[1]), int(score[2])),
        game_points=(int(game_points[1]), int(game_points[2])),
        rules=Rules.from_kwargs(**rules),
    )
    return view, legal


__all__ = [
    "SEAT_NAMES", "TEAM_NAMES", "TextFormatError", "legal_text", "observation_text", "parse_move",
    "read_observation_text", "view_text",
]
