"""Drawing the table as text, from a decoded observation (:class:`~allfours_env.observation.View`).

The drawer sees what the seat it draws for may see, and nothing else: it is fed a View and the
absolute seat of that View's observer.
"""

from __future__ import annotations

from .cards import N_SEATS, SUIT_NAMES, SUIT_SYMBOLS, card_text
from .engine import (
    BEGGED, DEAL, DEAL_END, GAME, GAVE_ONE, HANG_JACK, HIGH, JACK, KICK, LOW, MATCH_END, PLAYED, RAN, REDEAL,
    STOOD, TRICK, TRUMP, Event,
)
from .observation import View


def _cards(cards: list[int]) -> str:
    return " ".join(card_text(c) for c in cards) or "-"


def render_text(view: View, seat: int, status: str = "") -> str:
    """The table as seen by absolute ``seat``: scores, dealer, kicks, trump, trick, own hand."""

    def abs_seat(rel: int) -> int:
        return (seat + rel) % N_SEATS

    own, other = seat % 2, 1 - seat % 2
    lines = [
        f"Score  team {own} (player_{own}, player_{own + 2}): {view.scores[0]}   "
        f"team {other} (player_{other}, player_{other + 2}): {view.scores[1]}   target {view.target}",
        f"Dealer player_{abs_seat(view.dealer)}   beggar player_{abs_seat(view.beggar)}   phase {view.phase}",
    ]
    kick = card_text(view.kick) if view.kick is not None else "-"
    trump = f"{SUIT_SYMBOLS[view.trump]} {SUIT_NAMES[view.trump]}" if view.trump is not None else "not fixed"
    lines.append(f"Kick {kick}   set aside {_cards(view.kicks_aside)}   trump {trump}")
    if view.decided:
        lines.append("This deal: " + ", ".join(view.decided))
    if view.phase == "play":
        trick = ", ".join(f"player_{abs_seat(r)} {card_text(c)}" for r, c in view.trick_order) or "-"
        lines.append(f"Trick  {trick}   (led by player_{abs_seat(view.leader)})")
        lines.append(f"Game points  team {own}: {view.game_points[0]}   team {other}: {view.game_points[1]}")
    lines.append(f"Hand of player_{seat}: {_cards(view.hand)}")
    if status:
        lines.append(status)
    return "\n".join(lines)


_AWARD_TEXT = {
    KICK: "kick", GAVE_ONE: "give one", HIGH: "high", LOW: "low", JACK: "jack", HANG_JACK: "hang jack", GAME: "game",
}


def describe_event(event: Event) -> str:
    """One line of the match log for an engine event."""
    kind, seat, team, points, card, suit, deal = event
    who = f"player_{seat}"
    if kind == DEAL:
        return f"deal {deal}: {who} deals"
    if kind == KICK:
        return f"kick {card_text(card)}" + (f": team {team} +{points}" if points else "")
    if kind in (STOOD, BEGGED, RAN):
        return f"{who} {'stands' if kind == STOOD else 'begs' if kind == BEGGED else 'runs the pack'}"
    if kind == GAVE_ONE:
        return f"{who} gives one: team {team} +{points}"
    if kind == REDEAL:
        return f"pack exhausted: {who} deals again"
    if kind == TRUMP:
        return f"trump {SUIT_NAMES[suit]}"
    if kind == PLAYED:
        return f"{who} plays {card_text(card)}"
    if kind == TRICK:
        return f"{who} wins the trick with {card_text(card)}"
    if kind in _AWARD_TEXT:
        verb = "captured" if kind == HANG_JACK else "held"
        detail = f" ({card_text(card)} {verb} by {who})" if card >= 0 else ""
        return f"{_AWARD_TEXT[kind]}{detail}: team {team} +{points}"
    if kind == DEAL_END:
        return f"deal {deal} scored"
    if kind == MATCH_END:
        return f"match over: team {team} wins"
    raise ValueError(f"unknown event kind {kind!r}")
