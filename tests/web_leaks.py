"""Checks that what the web server sends a seat holds none of the cards that seat may not see.

Hidden from a seat: the other seats' hands and the undealt stock, at the step of the response.
The table, the legal actions and a hint must name none of them. The narration and the deal
summaries name cards of earlier tricks and deals (which may sit in a hidden hand of a later deal),
so they are checked another way: they must be exactly what the engine's public events give.
"""

from __future__ import annotations

import re
from typing import Any

from agents.web import views
from allfours_env.cards import N_SEATS, card_text, cards_of
from allfours_env.engine import Game
from allfours_env.render import describe_event

CARD = re.compile(r"\b[2-9TJQKA][CDHS]\b")


def hidden_cards(game: Game, seat: int) -> set[str]:
    """The other seats' cards and the stock: what ``seat`` must not see now."""
    held = 0
    for other in range(N_SEATS):
        if other != seat:
            held |= game.hands[other]
    return {card_text(c) for c in cards_of(held)} | {card_text(c) for c in game.deck[game.next_card :]}


def cards_in(data: Any) -> set[str]:
    """Every card text anywhere in JSON data (a match id aside)."""
    if isinstance(data, dict):
        return set().union(*(cards_in(v) for k, v in data.items() if k != "id"))
    if isinstance(data, list):
        return set().union(*(cards_in(v) for v in data))
    return set(CARD.findall(data)) if isinstance(data, str) else set()


def assert_seat_only(response: dict[str, Any], game: Game, seat: int) -> None:
    """``response`` (a state or a hint, at ``game``'s step) shows ``seat`` nothing hidden from it."""
    hidden = hidden_cards(game, seat)
    shown = {key: response.get(key) for key in ("table", "legal", "values", "expert", "search")}
    assert "hands" not in (response.get("table") or {}), "all hands open in play mode"
    leaked = cards_in(shown) & hidden
    assert not leaked, f"step {response.get('step')}: hidden cards {sorted(leaked)} reached player_{seat}"
    public = {describe_event(e) for e in game.events}
    assert set(response.get("narration", [])) <= public, "a narration line that is no public event"
    if "deals" in response:
        assert response["deals"] == views.deals(game.events), "deal summaries that are not the public events'"
