"""Card reasoning shared by the heuristic bots: trick winners, card counting and void reading.

Everything works on bit sets (bit ``c`` = card ``c``, see :mod:`allfours_env.cards`) and on seats
relative to the observer as the observation gives them: 0 self, 1 the next seat (plays after
me), 2 partner, 3 the previous seat. Legal moves always come from the action mask; nothing here
re-derives the follow-suit rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from allfours_env import View, decode
from allfours_env.cards import (
    CARD_GAME_VALUE,
    FULL_DECK,
    N_RANKS,
    N_SEATS,
    N_SUITS,
    RANK_JACK,
    RANK_TEN,
    SUIT_MASK,
)

SELF, NEXT, PARTNER, PREVIOUS = 0, 1, 2, 3

TENS = sum(1 << (s * N_RANKS + RANK_TEN) for s in range(N_SUITS))


def mask_bits(mask: np.ndarray) -> int:
    """An action mask as a bit set over action ids."""
    return int.from_bytes(np.packbits(mask.astype(bool), bitorder="little").tobytes(), "little")


def is_ours(seat: int) -> bool:
    """Seats 0 and 2 are my team."""
    return seat % 2 == 0


def lowest(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


def highest(bits: int) -> int:
    return bits.bit_length() - 1


# Game value of every set of cards of one suit, indexed by its 13 rank bits.
_SUIT_GAME_VALUE = tuple(
    sum(CARD_GAME_VALUE[r] for r in range(N_RANKS) if bits >> r & 1) for bits in range(1 << N_RANKS)
)
_RANK_BITS = (1 << N_RANKS) - 1


def game_value(bits: int) -> int:
    """Sum of the Game values of the cards in ``bits``."""
    return (
        _SUIT_GAME_VALUE[bits & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> N_RANKS & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> 2 * N_RANKS & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> 3 * N_RANKS & _RANK_BITS]
    )


def suit_bits(card: int) -> int:
    return SUIT_MASK[card // N_RANKS]


def above(card: int) -> int:
    """Cards of the same suit ranked above ``card``."""
    return suit_bits(card) & ~((2 << card) - 1)


def below(card: int) -> int:
    """Cards of the same suit ranked below ``card``."""
    return suit_bits(card) & ((1 << card) - 1)


def trump_jack(trump: int) -> int:
    return trump * N_RANKS + RANK_JACK


def beats(card: int, best: int, trump: int) -> bool:
    """Whether ``card`` takes the lead from ``best``, the card now winning the trick (A7.5)."""
    if card // N_RANKS == best // N_RANKS:
        return card > best
    return card // N_RANKS == trump


def beaters(best: int, trump: int) -> int:
    """All cards that would take the lead from ``best``: higher in its suit, or any trump over a non-trump."""
    bits = above(best)
    if best // N_RANKS != trump:
        bits |= SUIT_MASK[trump]
    return bits


@dataclass(frozen=True)
class Trick:
    """The current trick from my seat: who won so far and who still plays after me."""

    order: tuple[tuple[int, int], ...]  # (relative seat, card) in play order
    led_suit: int | None
    winner: int | None  # relative seat now winning
    best: int | None  # card now winning
    after: tuple[int, ...]  # relative seats that play after me in this trick

    @property
    def cards(self) -> int:
        bits = 0
        for _, card in self.order:
            bits |= 1 << card
        return bits


def trick_winner(order: Sequence[tuple[int, int]], trump: int) -> tuple[int | None, int | None]:
    """(seat, card) now winning a trick given as (seat, card) in play order; (None, None) if empty."""
    winner = best = None
    for seat, card in order:
        if best is None or beats(card, best, trump):
            winner, best = seat, card
    return winner, best


def read_trick(view: View, trump: int) -> Trick:
    order = tuple(view.trick_order)
    winner, best = trick_winner(order, trump)
    after = tuple(range(1, N_SEATS - len(order)))
    led = order[0][1] // N_RANKS if order else None
    return Trick(order, led, winner, best, after)


def unseen(view: View) -> int:
    """Cards I have not seen: in another hand or in the stock (not mine, not played, not kicked)."""
    seen = view.hand_bits | view.kicks_aside_bits
    for bits in view.played_bits:
        seen |= bits
    if view.kick is not None:
        seen |= 1 << view.kick
    return FULL_DECK & ~seen


def cards_left(view: View) -> tuple[int, int, int, int]:
    """Cards still in each relative seat's hand (every hand started the play with as many as mine)."""
    dealt = view.hand_bits.bit_count() + view.played_bits[SELF].bit_count()
    return tuple(dealt - view.played_bits[s].bit_count() for s in range(N_SEATS))


def voids(view: View, trump: int | None) -> tuple[int, int, int, int]:
    """Per relative seat, a bit mask of the suits it has shown it lacks (bit s = suit s).

    Read from the trick history in the observation: a player who did not follow a plain-suit
    lead with that suit or a trump lacks it; one who did not answer a trump lead with a trump
    has no trumps.
    """
    out = [0, 0, 0, 0]
    for trick in view.tricks:
        led = trick[0][1] // N_RANKS
        for seat, card in trick[1:]:
            suit = card // N_RANKS
            if suit != led and (led == trump or suit != trump):
                out[seat] |= 1 << led
    return tuple(out)


class PhaseBot:
    """Base of the deterministic heuristic bots: one method per phase, given the decoded view
    and the legal actions as a bit set (cards only in the play phase)."""

    name = "phase_bot"

    def reset(self, seed: int | None = None) -> None:
        """Deterministic and without memory: the seed is not used."""

    def act(self, observation: dict[str, np.ndarray]) -> int:
        legal = mask_bits(observation["action_mask"])
        if not legal:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        view = decode(observation)
        if view.phase == "stand_or_beg":
            return self.stand_or_beg(view, legal)
        if view.phase == "give_or_run":
            return self.give_or_run(view, legal)
        return self.play(view, legal & FULL_DECK)  # the card actions

    def stand_or_beg(self, view: View, legal: int) -> int:
        raise NotImplementedError

    def give_or_run(self, view: View, legal: int) -> int:
        raise NotImplementedError

    def play(self, view: View, legal: int) -> int:
        raise NotImplementedError
