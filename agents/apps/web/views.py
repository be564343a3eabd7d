"""What the page is sent: the table as one seat sees it, and the match's public events.

The table is built from the viewing seat's observation only (``encode`` then
:func:`allfours_env.decode`, exactly what a bot or the env gets), so it cannot hold another seat's
hidden cards. The only exception is :func:`open_hands`, which reads every hand from the engine and
is called only where the page asked for all hands open in a watch or replay (never in play mode).

The event log is public: every event (deals, kicks, stand / beg / give one / run, trump, cards
played, tricks, awards, the end of the match) is announced at a real table, and High, Low and Jack
are awarded only once every card of the deal has been played. From it come the narration, the
trick just won, and each deal's awards with the Game count.

A response is bounded whatever the match's length: at most ``MAX_NARRATION`` lines of narration
(from the index the page asks for) and the last ``MAX_DEALS`` deals.
"""

from __future__ import annotations

from typing import Any

from allfours_env import BEG, GIVE_ONE, RUN, STAND, card_text, decode
from allfours_env.cards import CARD_GAME_VALUE, N_SEATS, SUIT_LETTERS, SUIT_NAMES, cards_of
from allfours_env.engine import (
    AWARD_KINDS,
    DEAL,
    DEAL_END,
    DEAL_OVER,
    GAME,
    MATCH_END,
    PLAYED,
    TRICK,
    Event,
    Game,
)  # fmt: skip
from allfours_env.observation import encode_with_mask
from allfours_env.render import describe_event

ACTION_LABELS = {STAND: "stand", BEG: "beg", GIVE_ONE: "give one", RUN: "run the pack"}
MAX_NARRATION = 400  # lines sent at once: a whole deal and more
MAX_DEALS = 10  # deal summaries sent at once, the latest (the page shows three)


def action_label(action: int) -> str:
    """A card's text (``QH``) or a decision's words (``run the pack``)."""
    return ACTION_LABELS.get(action) or card_text(action)


def seat_table(game: Game, seat: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The table as absolute ``seat`` sees it, and its legal actions (none unless it is to act).

    Built from ``decode(observation)`` of that seat alone; seats in the result are absolute."""
    observation, mask = encode_with_mask(game, seat)
    view = decode(observation)

    def absolute(rel: int | None) -> int | None:
        return None if rel is None else (seat + rel) % N_SEATS

    own = seat % 2
    scores = [0, 0]
    scores[own], scores[1 - own] = view.scores
    game_points = [0, 0]
    game_points[own], game_points[1 - own] = view.game_points
    dealt = view.hand_bits.bit_count() + view.played_bits[0].bit_count()
    to_act = {"stand_or_beg": view.beggar, "give_or_run": view.dealer}.get(view.phase)
    if view.phase == "play":
        to_act = (view.leader + len(view.table)) % N_SEATS
    table = {
        "seat": seat,
        "phase": view.phase,
        "to_act": absolute(to_act),
        "dealer": absolute(view.dealer),
        "beggar": absolute(view.beggar),
        "leader": absolute(view.leader),
        "kick": card_text(view.kick) if view.kick is not None else None,
        "kicks_aside": [card_text(c) for c in view.kicks_aside],
        "trump": SUIT_LETTERS[view.trump] if view.trump is not None else None,
        "trump_name": SUIT_NAMES[view.trump] if view.trump is not None else None,
        "trick": [{"seat": absolute(r), "card": card_text(c)} for r, c in view.trick_order],
        "hand": [card_text(c) for c in view.hand],
        "cards_held": [dealt - view.played_bits[(s - seat) % N_SEATS].bit_count() for s in range(N_SEATS)],
        "scores": scores,
        "target": view.target,
        "game_points": game_points,
        "decisions": {"stood": view.stood, "begged": view.begged, "gave_one": view.gave_one, "ran": view.ran},
    }
    legal = [{"action": int(a), "label": action_label(int(a))} for a in mask.nonzero()[0]]
    return table, legal


def open_hands(game: Game) -> list[list[str]]:
    """Every seat's hand, from the engine: only for an all-hands-open watch or replay."""
    return [[card_text(c) for c in cards_of(game.hands[s])] for s in range(N_SEATS)]


def narration(events: list[Event], since: int) -> list[str]:
    """One line per event from index ``since`` (at most the last ``MAX_NARRATION``)."""
    start = max(since, len(events) - MAX_NARRATION, 0)
    return [describe_event(e) for e in events[start:]]


def deals(events: list[Event], last: int | None = None) -> list[dict[str, Any]]:
    """Each deal of the match from its public events (the ``last`` ones only, if given): dealer,
    awards, points, the Game count, the scores after it."""
    out: list[dict[str, Any]] = []
    start = _start_of_last_deals(events, last) if last is not None else 0
    scores = [0, 0]
    for event in events[:start]:  # (deals left out: only their points, for the scores after the others)
        if event.kind in AWARD_KINDS:
            scores[event.team] += event.points
    trick_cards: list[int] = []
    deal: dict[str, Any] | None = None
    for event in events[start:]:
        kind = event.kind
        if kind == DEAL:
            deal = {"deal": event.deal, "dealer": event.seat, "awards": [], "points": [0, 0],
                    "game_count": [0, 0], "scored": False}  # fmt: skip
            out.append(deal)
            trick_cards = []
        elif deal is None:
            continue
        elif kind == PLAYED:
            trick_cards.append(event.card)
        elif kind == TRICK:
            deal["game_count"][event.team] += sum(CARD_GAME_VALUE[c] for c in trick_cards)
            trick_cards = []
        elif kind in AWARD_KINDS and event.points:  # (a kick that scores nothing is no award)
            scores[event.team] += event.points
            deal["points"][event.team] += event.points
            award = {"kind": event.kind, "team": event.team, "points": event.points, "text": describe_event(event)}
            if event.card >= 0:
                award["card"] = card_text(event.card)
                award["seat"] = event.seat
            if kind == GAME:
                award["count"] = list(deal["game_count"])
            deal["awards"].append(award)
        elif kind in (DEAL_END, MATCH_END):
            deal["scored"] = deal["scored"] or kind == DEAL_END
            deal["scores"] = list(scores)
    return out


def _start_of_last_deals(events: list[Event], last: int) -> int:
    """The index of the event that begins the ``last``-th deal from the end (0 if there are fewer)."""
    found = 0
    for i in range(len(events) - 1, -1, -1):
        if events[i].kind == DEAL:
            found += 1
            if found == last:
                return i
    return 0


def last_trick(events: list[Event]) -> dict[str, Any] | None:
    """The latest trick won in the current deal: its cards in play order and the winner."""
    for i in range(len(events) - 1, -1, -1):
        kind = events[i].kind
        if kind == DEAL:
            return None
        if kind == TRICK:
            plays = [e for e in events[i - N_SEATS : i] if e.kind == PLAYED]
            return {
                "cards": [{"seat": e.seat, "card": card_text(e.card)} for e in plays],
                "winner": events[i].seat,
            }
    return None


def state(
    game: Game, seat: int, open_all: bool, since: int, step: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole response for a page: table, legal actions, narration, the latest deals, result."""
    table, legal = seat_table(game, seat)
    if open_all:
        table["hands"] = open_hands(game)
    events = game.events  # every event is public (see the module docstring)
    latest = deals(events, MAX_DEALS)  # (not every deal of a long match: only the last ones are sent)
    table["deal"] = latest[-1]["deal"] if latest else 0
    table["last_trick"] = last_trick(events)
    over = game.phase >= DEAL_OVER  # the match (or the deal of a deal episode) is over
    out = {
        "step": step,
        "over": over,
        "open": open_all,
        "table": table,
        "legal": legal,
        "narration": narration(events, since),
        "event_count": len(events),
        "deals": latest,
        "result": {"winner": game.winner, "scores": list(game.scores)} if over else None,
    }
    if extra:
        out.update(extra)
    return out
