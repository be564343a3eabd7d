"""Build reproducible test decks for the All Fours engine.

A deck is a permutation of the 52 card indices, dealt from index 0 up (docs/rules.md, "Engine
conventions"): ``deck[k]`` goes to seat ``(dealer + 1 + k) % 4`` for k = 0..23 and ``deck[24]`` is
the kick; a run deals the next 12 cards the same way (from the seat after the dealer) and then
kicks the next card, so the kicks sit at indices 24, 37, 50 and 51.

:func:`build_deck` puts the requested cards at the positions that deal them to the requested
seats (first deal and runs), the requested kicks at the kick positions, optional cards deep in the
stock, and fills every other position in a fixed order: the unused cards in ascending index order
(clubs 2..A, diamonds, hearts, spades) into the free positions in ascending order. Cards may be
given as indices or as text (``"JH"``, ``"TC"``, ``"10S"``).

    build_deck(dealer=0, hands={1: ["KH", "3C"]}, kicks=["4H", "KS"], runs=[{3: ["AH"]}])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from allfours_env.cards import parse_card

N_CARDS = 52
KICK_INDICES = (24, 37, 50, 51)
# (first index, number of cards) of the first deal, the first run and the second run.
_BLOCKS = ((0, 24), (25, 12), (38, 12))

Card = int | str


def card_id(card: Card) -> int:
    """A card index from an index or card text."""
    return parse_card(card) if isinstance(card, str) else int(card)


def deal_positions(dealer: int, seat: int, block: int = 0, batch: int = 1) -> list[int]:
    """Deck indices dealt to ``seat``: block 0 = the first deal, 1 = the first run, 2 = the second run."""
    start, n = _BLOCKS[block]
    return [start + k for k in range(n) if (dealer + 1 + k // batch) % 4 == seat]


def build_deck(
    dealer: int = 0,
    hands: Mapping[int, Iterable[Card]] | None = None,
    kicks: Sequence[Card] = (),
    runs: Sequence[Mapping[int, Iterable[Card]]] = (),
    stock: Iterable[Card] = (),
    at: Mapping[int, Card] | None = None,
    batch: int = 1,
) -> list[int]:
    """A 52-card deck (list of card indices) realising the requested deal.

    hands: seat -> cards dealt to it in the first deal (at most 6).
    kicks: up to four kicks, placed at indices 24, 37, 50, 51 in that order.
    runs: for the first (and second) run, seat -> cards it receives (at most 3 per run).
    stock: cards placed at the highest free indices (left undealt unless the pack is run that far).
    at: explicit index -> card placements.
    batch: the ``deal_batch`` rule (1 or 3) the deck is meant for.
    """
    deck: list[int | None] = [None] * N_CARDS
    used: set[int] = set()

    def put(index: int, card: Card) -> None:
        c = card_id(card)
        if deck[index] is not None:
            raise ValueError(f"deck index {index} is requested twice")
        if c in used:
            raise ValueError(f"card {card!r} is requested twice")
        deck[index] = c
        used.add(c)

    def place(block: int, wanted: Mapping[int, Iterable[Card]], limit: int) -> None:
        for seat, cards in wanted.items():
            cards = list(cards)
            positions = deal_positions(dealer, seat, block, batch)
            if len(cards) > limit:
                raise ValueError(f"seat {seat} can get at most {limit} cards in block {block}, got {cards}")
            for index, card in zip(positions, cards):
                put(index, card)

    place(0, hands or {}, 6)
    if len(runs) > 2:
        raise ValueError("at most two runs deal cards")
    for block, run in enumerate(runs, 1):
        place(block, run, 3)
    if len(kicks) > len(KICK_INDICES):
        raise ValueError("at most four kicks")
    for index, card in zip(KICK_INDICES, kicks):
        put(index, card)
    for index, card in (at or {}).items():
        put(index, card)
    for card in stock:
        put(max(i for i, c in enumerate(deck) if c is None), card)

    rest = iter(c for c in range(N_CARDS) if c not in used)
    return [c if c is not None else next(rest) for c in deck]
