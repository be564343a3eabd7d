"""Card reasoning shared by the heuristic bots and the policy features: trick winners, card
counting and void reading.

Everything works on bit sets (bit ``c`` = card ``c``, see :mod:`allfours_env.cards`) and on seats
relative to the observer as the observation gives them: 0 self, 1 the next seat (plays after
me), 2 partner, 3 the previous seat. Legal moves always come from the action mask; nothing here
re-derives the follow-suit rules. The functions on ints are the only implementation: the bots
call them as Python, and :mod:`agents.features` compiles the very same ones with numba
(``register_jitable``), so they are written in the subset of Python numba reads.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

import allfours_env.numba_ints  # noqa: F401  (compiled code may call beats, team_of, int.bit_length...)
from allfours_env import View, decode
from allfours_env.cards import (
    CARD_GAME_VALUE,
    FULL_DECK,
    N_CARDS,
    N_RANKS,
    N_SEATS,
    N_SUITS,
    RANK_JACK,
    RANK_TEN,
    SUIT_MASK,
    beats,
    team_of,
)
from allfours_env.observation import LAYOUT

SELF, NEXT, PARTNER, PREVIOUS = 0, 1, 2, 3

TRICK_NUMBER_BITS = LAYOUT["trick_number"].size // N_CARDS  # per card in the observation
TRICK_SLOTS = 1 << TRICK_NUMBER_BITS  # trick numbers 0..15
_HEX_DIGIT_VALUE = bytes.maketrans(b"0123456789abcdef", bytes(range(16)))
assert TRICK_NUMBER_BITS == 4, "voids() reads the trick numbers as hex digits"

TENS = sum(1 << (s * N_RANKS + RANK_TEN) for s in range(N_SUITS))


def mask_bits(mask: np.ndarray) -> int:
    """An action mask as a bit set over action ids."""
    return int.from_bytes(np.packbits(mask.astype(bool), bitorder="little").tobytes(), "little")


def is_ours(seat: int) -> bool:
    """Seats 0 and 2 are my team."""
    return team_of(seat) == team_of(SELF)


@register_jitable
def lowest(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


@register_jitable
def highest(bits: int) -> int:
    return bits.bit_length() - 1


# Game value of every set of cards of one suit, indexed by its 13 rank bits.
_SUIT_GAME_VALUE = np.array(
    [sum(CARD_GAME_VALUE[r] for r in range(N_RANKS) if bits >> r & 1) for bits in range(1 << N_RANKS)], dtype=np.int64
)
_RANK_BITS = (1 << N_RANKS) - 1


@register_jitable
def game_value(bits: int) -> int:
    """Sum of the Game values of the cards in ``bits``."""
    return (
        _SUIT_GAME_VALUE[bits & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> N_RANKS & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> 2 * N_RANKS & _RANK_BITS]
        + _SUIT_GAME_VALUE[bits >> 3 * N_RANKS & _RANK_BITS]
    )


@register_jitable
def suit_bits(card: int) -> int:
    return SUIT_MASK[card // N_RANKS]


@register_jitable
def above(card: int) -> int:
    """Cards of the same suit ranked above ``card``."""
    return suit_bits(card) & ~((2 << card) - 1)


@register_jitable
def below(card: int) -> int:
    """Cards of the same suit ranked below ``card``."""
    return suit_bits(card) & ((1 << card) - 1)


@register_jitable
def trump_jack(trump: int) -> int:
    return trump * N_RANKS + RANK_JACK


@register_jitable
def beaters(best: int, trump: int) -> int:
    """All cards that would take the lead from ``best``: higher in its suit, or any trump over a
    non-trump (none with ``trump`` -1: no trump and no kick, which no decision meets)."""
    bits = above(best)
    if trump >= 0 and best // N_RANKS != trump:
        bits |= SUIT_MASK[trump]
    return bits


@register_jitable
def unseen_bits(hand: int, kick: int, kicks_aside: int, played: int) -> int:
    """Cards I have not seen: in another hand or in the stock (not mine, not played, not the
    live kick ``kick`` (-1 if none), not kicked and set aside)."""
    seen = hand | kicks_aside | played
    if kick >= 0:
        seen |= 1 << kick
    return FULL_DECK & ~seen


@register_jitable
def winning_play(cards: Sequence[int], trump: int) -> int:
    """Index in ``cards`` (a trick in play order) of the card now winning it; -1 if empty."""
    best = -1
    for i in range(len(cards)):
        if best < 0 or beats(cards[i], cards[best], trump):
            best = i
    return best


@register_jitable
def shows_void(led: int, card: int, trump: int) -> bool:
    """Whether playing ``card`` to a trick that ``led`` led shows the player lacks the led suit:
    neither followed it nor trumped a plain-suit lead (a trump lead answered without a trump)."""
    suit, led_suit = card // N_RANKS, led // N_RANKS
    return suit != led_suit and (led_suit == trump or suit != trump)


@register_jitable
def voids_shown(
    played: Sequence[int], led: int, trick_of: Sequence[int], trump: int, out: MutableSequence[int],
    lead_of_trick: MutableSequence[int],
) -> None:
    """Write into ``out[seat]`` the suits (bit s = suit s) each relative seat has shown it lacks
    in this deal's tricks: ``played[seat]`` the cards each seat played, ``led`` those that led
    their trick, ``trick_of[card]`` the number of the trick a played card fell in, ``trump`` -1
    while none. ``lead_of_trick`` is scratch space, one slot per trick number: the caller gives
    both, so the compiled features reuse two arrays instead of allocating per table."""
    for number in range(len(lead_of_trick)):
        lead_of_trick[number] = -1
    bits = led
    while bits:
        card = lowest(bits)
        lead_of_trick[trick_of[card]] = card
        bits &= bits - 1
    for seat in range(N_SEATS):
        out[seat] = 0
        bits = played[seat] & ~led
        while bits:
            card = lowest(bits)
            lead = lead_of_trick[trick_of[card]]
            if lead >= 0 and shows_void(lead, card, trump):
                out[seat] |= 1 << (lead // N_RANKS)
            bits &= bits - 1


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
    i = winning_play([card for _, card in order], trump)
    return order[i] if i >= 0 else (None, None)


def read_trick(view: View, trump: int) -> Trick:
    order = tuple(view.trick_order)
    winner, best = trick_winner(order, trump)
    after = tuple(range(1, N_SEATS - len(order)))
    led = order[0][1] // N_RANKS if order else None
    return Trick(order, led, winner, best, after)


def unseen(view: View) -> int:
    """Cards I have not seen: in another hand or in the stock (not mine, not played, not kicked)."""
    played = 0
    for bits in view.played_bits:
        played |= bits
    return unseen_bits(view.hand_bits, -1 if view.kick is None else view.kick, view.kicks_aside_bits, played)


def cards_left(view: View) -> tuple[int, int, int, int]:
    """Cards still in each relative seat's hand (every hand started the play with as many as mine)."""
    dealt = view.hand_bits.bit_count() + view.played_bits[SELF].bit_count()
    return tuple(dealt - view.played_bits[s].bit_count() for s in range(N_SEATS))


def voids(view: View, trump: int | None) -> tuple[int, int, int, int]:
    """Per relative seat, a bit mask of the suits it has shown it lacks (bit s = suit s), read
    from this deal's tricks in the observation (see :func:`voids_shown`)."""
    # One hex digit per card (trick numbers are 4 bits), card 0 first, as a bytes of ints 0..15.
    trick_of = f"{view.trick_numbers:0{N_CARDS}x}"[::-1].encode().translate(_HEX_DIGIT_VALUE)
    out = [0] * N_SEATS
    voids_shown(view.played_bits, view.led_bits, trick_of, -1 if trump is None else trump, out, [-1] * TRICK_SLOTS)
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
        return self.decide(decode(observation), legal)

    def decide(self, view: View, legal: int) -> int:
        """The action for a decoded view and the legal actions as a bit set over action ids."""
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
