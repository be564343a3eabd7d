"""Cards, seats and bit sets: the one place for these facts (docs/rules.md, "Engine conventions").

A card is an int ``suit * 13 + rank``; suits clubs, diamonds, hearts, spades = 0..3 and
rank 0..12 = 2, 3, ..., 10, J, Q, K, A. A set of cards is an int whose bit ``c`` is set when
card ``c`` is in the set, so hands, tricks and histories cost one machine word each.
"""

from __future__ import annotations

from collections.abc import Iterable

N_SEATS = 4
N_SUITS = 4
N_RANKS = 13
N_CARDS = 52

SUIT_LETTERS = "CDHS"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
SUIT_SYMBOLS = "♣♦♥♠"
RANK_LETTERS = "23456789TJQKA"

RANK_TWO, RANK_SIX, RANK_TEN, RANK_JACK, RANK_ACE = 0, 4, 8, 9, 12

# Game-point values (A1.2): 10 = 10, A = 4, K = 3, Q = 2, J = 1, 2..9 = 0; 80 in the pack.
RANK_GAME_VALUE = (0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3, 4)
CARD_GAME_VALUE = tuple(RANK_GAME_VALUE[c % N_RANKS] for c in range(N_CARDS))
TOTAL_GAME_VALUE = sum(CARD_GAME_VALUE)

SUIT_MASK = tuple(((1 << N_RANKS) - 1) << (N_RANKS * s) for s in range(N_SUITS))
FULL_DECK = (1 << N_CARDS) - 1


def suit_of(card: int) -> int:
    return card // N_RANKS


def rank_of(card: int) -> int:
    return card % N_RANKS


def make_card(suit: int, rank: int) -> int:
    return suit * N_RANKS + rank


def team_of(seat: int) -> int:
    """Team 0 = seats 0 and 2, team 1 = seats 1 and 3."""
    return seat % 2


def next_seat(seat: int) -> int:
    """Play and deal go to the right: the seat after ``s`` is ``(s + 1) % 4``."""
    return (seat + 1) % N_SEATS


def beats(card: int, best: int, trump: int) -> bool:
    """Whether ``card`` takes the trick from ``best``, the card now winning it (A7.5): a higher
    card of the same suit, or a trump over a non-trump. ``trump`` is -1 while no suit is trump."""
    if card // N_RANKS == best // N_RANKS:
        return card > best
    return card // N_RANKS == trump


def card_text(card: int) -> str:
    """``0 -> "2C"``, ``8 -> "TC"``, ``51 -> "AS"``."""
    if not 0 <= card < N_CARDS:
        raise ValueError(f"card index must be in 0..51, got {card!r}")
    return RANK_LETTERS[card % N_RANKS] + SUIT_LETTERS[card // N_RANKS]


def parse_card(text: str) -> int:
    """Card text to index: rank then suit letter, ``10`` accepted for ``T``, any case."""
    t = text.strip().upper()
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANK_LETTERS or t[1] not in SUIT_LETTERS:
        raise ValueError(
            f"cannot read card {text!r}: write rank then suit, ranks {RANK_LETTERS} (or 10), "
            f"suits {SUIT_LETTERS}, e.g. 'JH' or '10S'"
        )
    return make_card(SUIT_LETTERS.index(t[1]), RANK_LETTERS.index(t[0]))


def bits_of(cards: Iterable[int]) -> int:
    bits = 0
    for c in cards:
        bits |= 1 << c
    return bits


def cards_of(bits: int) -> list[int]:
    """The card indices in a bit set, ascending."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def cards_text(bits: int) -> str:
    return " ".join(card_text(c) for c in cards_of(bits))
