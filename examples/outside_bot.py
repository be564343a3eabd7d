#!/usr/bin/env python3
"""An All Fours bot that lives outside the project: Python's standard library only, no import of it.

    python -m eval "exec:python3 examples/outside_bot.py" expert --boards 200
    python -m agents.play --watch --partner "exec:python3 examples/outside_bot.py"

Each decision comes as one JSON line on standard input and is answered with one JSON line on
standard output (docs/outside_bots.md). This one reads only the text view and the legal moves:
it stands (or gives one) with an ace, king, queen or jack of the kick's suit, leads its highest
card and follows with its lowest. Anything to say goes to standard error; standard output
carries answers only.
"""

import json
import sys

RANKS = "23456789TJQKA"


def choose(message: dict) -> str:
    moves = [legal["move"] for legal in message["legal"]]
    lines = dict(line.split(": ", 1) for line in message["text"].splitlines() if ": " in line)
    if moves[0] in ("STAND", "BEG", "GIVE_ONE", "RUN"):
        kick_suit = lines["Kick"].split(".")[0][-1]
        hand = lines["Your hand"].rstrip(".").split()
        strong = any(card[1] == kick_suit and card[0] in "AKQJ" for card in hand)
        if "STAND" in moves:
            return "STAND" if strong else "BEG"
        return "GIVE_ONE" if strong and "GIVE_ONE" in moves else "RUN"
    current = [line for line in message["text"].splitlines() if "(current)" in line][-1]
    by_rank = sorted(moves, key=lambda card: RANKS.index(card[0]))
    return by_rank[-1] if "you to lead" in current else by_rank[0]


for line in sys.stdin:  # one decision a line; the loop ends when the input closes
    message = json.loads(line)
    if message.get("type") == "act":  # other types may come in later versions: skip them
        print(json.dumps({"move": choose(message)}), flush=True)
