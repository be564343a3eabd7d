"""Checks that what the web server sends a seat holds none of the cards that seat may not see.

Hidden from a seat: the other seats' hands and the undealt stock, at the step of the response.
No field of a response may name one of them, by its text (``QH``) anywhere or by its id (an
``action`` or ``card`` field). The narration and the deal summaries name cards of earlier tricks
and deals (which may sit in a hidden hand of a later deal), so they are checked another way: they
must be exactly what the engine's public events give. Nor may a response of a match still on
carry what deals the hands: no seed, no integer of 32 bits or more, no run of 10 digits or more in
any text (tests/test_web_security.py tries every number a client gets as a seed).
"""

from __future__ import annotations

import re
from typing import Any

from agents.apps.web import views
from allfours_env.cards import N_SEATS, card_text, cards_of
from allfours_env.engine import Game
from allfours_env.render import describe_event

CARD = re.compile(r"\b[2-9TJQKA][CDHS]\b")
LONG_DIGITS = re.compile(r"\d{10,}")
CARD_ID_KEYS = ("action", "card")
PUBLIC_KEYS = ("id", "narration", "deals")  # (the id is random text; the others: checked as public events)


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


def card_ids_in(data: Any) -> set[str]:
    """The cards named by id (an int 0..51 under an ``action`` or ``card`` key) anywhere in JSON data."""
    if isinstance(data, dict):
        found = {card_text(v) for k, v in data.items() if k in CARD_ID_KEYS and type(v) is int and 0 <= v < 52}
        return found.union(*(card_ids_in(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(card_ids_in(v) for v in data))
    return set()


def seed_like(data: Any) -> list[Any]:
    """Integers of 32 bits or more, and texts with 10 digits or more in a row, anywhere in JSON data."""
    if isinstance(data, dict):
        return [x for v in data.values() for x in seed_like(v)]
    if isinstance(data, list):
        return [x for v in data for x in seed_like(v)]
    if isinstance(data, int | float) and not isinstance(data, bool):
        return [data] if abs(data) >= 2**31 and float(data).is_integer() else []
    return LONG_DIGITS.findall(data) if isinstance(data, str) else []


def assert_seat_only(response: dict[str, Any], game: Game, seat: int) -> None:
    """``response`` (a state or a hint, at ``game``'s step) shows ``seat`` nothing hidden from it."""
    hidden = hidden_cards(game, seat)
    shown = {key: value for key, value in response.items() if key not in PUBLIC_KEYS}
    assert "hands" not in (response.get("table") or {}), "all hands open in play mode"
    leaked = (cards_in(shown) | card_ids_in(shown)) & hidden
    assert not leaked, f"step {response.get('step')}: hidden cards {sorted(leaked)} reached player_{seat}"
    if not response.get("over"):
        assert response.get("seed") is None, f"step {response.get('step')}: the seed was sent while the match is on"
        assert not seed_like(shown), f"step {response.get('step')}: seed-like values {seed_like(shown)[:3]} sent"
    public = {describe_event(e) for e in game.events}
    assert set(response.get("narration", [])) <= public, "a narration line that is no public event"
    if "deals" in response:
        latest = views.deals(game.events)[-views.MAX_DEALS :]
        assert response["deals"] == latest, "deal summaries that are not the public events'"
