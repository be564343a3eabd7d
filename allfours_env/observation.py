"""What one seat may know, as a flat float32 vector, and back again.

The layout is one table, :data:`LAYOUT`, used by the encoder, the decoder and the docs. Seats in
the observation are relative to the observer: 0 = self, 1 = the next seat (right-hand
opponent, plays after self), 2 = partner, 3 = the previous seat (left-hand opponent).

The pieces up to ``decisions`` are 0/1 flags, built as one big int of bits and unpacked in a
single numpy call, so encoding costs a few microseconds. Then come the scalars (scores, target,
game points) and last the ``rules`` block, which states the rule variant: it is constant for a
match, so it is computed once per :class:`~allfours_env.rules.Rules` and copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING

import numpy as np

from .actions import N_ACTIONS
from .cards import (
    N_CARDS, N_SEATS, N_SUITS, SUIT_NAMES, TOTAL_GAME_VALUE, card_text, cards_of, make_card, rank_of, suit_of,
)
from .rules import Rules

if TYPE_CHECKING:
    from .engine import Game

# The rules block: every key of table A0 that changes play or scoring, in A0 order. A tuple of
# values is one-hot in that order, bool is one 0/1 flag, int is value / target_score (decoded
# with round(x * target)). The value orders are part of the layout: never reorder them.
RULE_SLOTS: tuple[tuple[str, tuple | type], ...] = (
    ("kick_points", ("trinidad", "tobago")),
    ("hang_jack_points", int),
    ("game_points", int),
    ("game_tie", ("none", "non_dealer", "dealer")),
    ("undertrump", ("allowed", "forbidden_unless_all_trumps", "forbidden_when_can_follow")),
    ("give_one_to_reach_target", ("forbidden", "allowed")),
    ("give_one_requires_trump", bool),
    ("stand_requires_trump", bool),
    ("exhausted_pack", ("kick_remaining", "redeal")),
    ("single_trump_counts_high_and_low", bool),
)
# Left out: target_score (in the ``target`` piece), first_dealer and deal_batch (who deals the
# first deal and whether cards come off the deck one or three at a time: neither changes the
# play or the scoring, and a bot cannot act on them).
UNENCODED_RULES = ("target_score", "first_dealer", "deal_batch")


def _slot_size(kind: tuple | type) -> int:
    return len(kind) if isinstance(kind, tuple) else 1


def _rules_meaning() -> str:
    parts, offset = [], 0
    for key, kind in RULE_SLOTS:
        size = _slot_size(kind)
        where = f"[{offset}..{offset + size - 1}]" if size > 1 else f"[{offset}]"
        what = ", ".join(kind) if isinstance(kind, tuple) else "/ target_score" if kind is int else "0/1"
        parts.append(f"{where} {key} {what}")
        offset += size
    return (
        "the rule variant (docs/rules.md A0): " + "; ".join(parts)
        + ". target_score is in `target`; first_dealer and deal_batch change neither play nor scoring"
        " and are left out"
    )


# (name, size, meaning). Offsets follow in order; see LAYOUT.
_PIECES = (
    ("hand", 52, "cards in own hand"),
    ("kick", 52, "the live kick (turned-up card), if any"),
    ("kicks_aside", 52, "kicks of this deal set aside by runs"),
    ("table", 4 * 52, "current trick: card played by relative seat r at [r*52 + card]"),
    ("played", 4 * 52, "every card played this deal by relative seat r at [r*52 + card]"),
    ("led", 52, "cards played this deal that led their trick"),
    ("trick_number", 4 * 52, "per card, the 1-based number of its trick in 4 bits at [4*card..4*card+3], low bit first"),
    ("won", 2 * 52, "cards captured this deal: own team [0..51], other team [52..103]"),
    ("trump", 4, "trump suit once fixed (C, D, H, S); all 0 before"),
    ("phase", 4, "stand_or_beg, give_or_run, play, over"),
    ("dealer", 4, "dealer as relative seat"),
    ("beggar", 4, "beggar (seat after the dealer) as relative seat"),
    ("leader", 4, "leader of the current trick as relative seat (play phase only)"),
    ("partner", 4, "partner as relative seat (always 2)"),
    ("decisions", 4, "this deal: stood, begged, gave one, ran the pack"),
    ("scores", 2, "own team, other team score / target_score, capped at 1"),
    ("target", 1, "1 / target_score"),
    ("game_points", 2, f"game points won this deal, own team, other team / {TOTAL_GAME_VALUE}"),
    ("rules", sum(_slot_size(kind) for _, kind in RULE_SLOTS), _rules_meaning()),
)


@dataclass(frozen=True)
class Piece:
    name: str
    offset: int
    size: int
    meaning: str

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)


LAYOUT = {
    name: Piece(name, offset, size, meaning)
    for (name, size, meaning), offset in zip(_PIECES, accumulate([size for _, size, _ in _PIECES], initial=0))
}
OBS_SIZE = sum(p.size for p in LAYOUT.values())
N_FLAGS = LAYOUT["scores"].offset  # everything before the scalars is a 0/1 flag
_RULES = LAYOUT["rules"].slice

# Full state for centralized critics: every hand by absolute seat, the undealt stock, the
# seat to act, then seat 0's observation (public information with seat 0 as reference).
STATE_LAYOUT = (("hands", 4 * 52), ("stock", 52), ("to_act", 4), ("seat0_observation", OBS_SIZE))
STATE_SIZE = sum(size for _, size in STATE_LAYOUT)


_KICK = LAYOUT["kick"].offset
_KICKS_ASIDE = LAYOUT["kicks_aside"].offset
_TABLE = LAYOUT["table"].offset
_PLAYED = LAYOUT["played"].offset
_WON = LAYOUT["won"].offset
_LED = LAYOUT["led"].offset
_TRICK_NUMBER = LAYOUT["trick_number"].offset
_TRUMP = LAYOUT["trump"].offset
_PHASE = LAYOUT["phase"].offset
_DEALER = LAYOUT["dealer"].offset
_BEGGAR = LAYOUT["beggar"].offset
_LEADER = LAYOUT["leader"].offset
_PARTNER = LAYOUT["partner"].offset
_DECISIONS = LAYOUT["decisions"].offset


def encode(game: Game, seat: int) -> np.ndarray:
    """The observation vector of ``seat`` (a new float32 array of OBS_SIZE), written by the
    compiled engine (``vector_kernels``), the one encoder of the layout."""
    return game.observe(seat)[0]


def action_mask(game: Game, seat: int) -> np.ndarray:
    """int8 mask over the 56 actions; all zero unless ``seat`` is to act."""
    return game.observe(seat)[1]


def encode_with_mask(game: Game, seat: int) -> tuple[np.ndarray, np.ndarray]:
    """``(encode(game, seat), action_mask)``: the mask (int8[56]) is the legal actions if ``seat``
    is the one to act, else all zeros."""
    return game.observe(seat)


@lru_cache(maxsize=64)
def rules_block(rules: Rules) -> np.ndarray:
    """The ``rules`` piece of the observation for ``rules`` (float32, read-only, one per Rules)."""
    values: list[float] = []
    for key, kind in RULE_SLOTS:
        value = getattr(rules, key)
        if isinstance(kind, tuple):
            values.extend(float(value == choice) for choice in kind)
        elif kind is int:
            values.append(value / rules.target_score)
        else:
            values.append(float(value))
    block = np.array(values, dtype=np.float32)
    block.flags.writeable = False
    return block


def observation_high(rules: Rules) -> np.ndarray:
    """Upper bound of every observation value under ``rules``: 1, except the rules block's
    points / target_score where the points exceed the target (a new float32 array of OBS_SIZE)."""
    high = np.ones(OBS_SIZE, dtype=np.float32)
    high[_RULES] = np.maximum(1.0, rules_block(rules))
    return high


@lru_cache(maxsize=64)
def _rules_of_block(block: bytes, target: int) -> Rules:
    """The inverse of :func:`rules_block` (its float32 bytes and the decoded target)."""
    values = np.frombuffer(block, dtype=np.float32).tolist()
    kwargs: dict[str, object] = {"target_score": target}
    offset = 0
    for key, kind in RULE_SLOTS:
        size = _slot_size(kind)
        if isinstance(kind, tuple):
            one_hot = values[offset : offset + size]
            kwargs[key] = kind[one_hot.index(max(one_hot))]
        elif kind is int:
            kwargs[key] = round(values[offset] * target)
        else:
            kwargs[key] = values[offset] > 0.5
        offset += size
    return Rules(**kwargs)


def encode_state(game: Game) -> np.ndarray:
    """The full state (see STATE_LAYOUT) as a new float32 array of STATE_SIZE."""
    hands = 0
    for seat in range(N_SEATS):
        hands |= game.hands[seat] << (seat * N_CARDS)
    stock = 0
    for card in game.deck[game.next_card :]:
        stock |= 1 << card
    bits = hands | stock << (4 * N_CARDS)
    if game.current >= 0:
        bits |= 1 << (5 * N_CARDS + game.current)
    n_bits = 5 * N_CARDS + N_SEATS
    raw = np.frombuffer(bits.to_bytes((n_bits + 7) // 8, "little"), dtype=np.uint8)
    flags = np.unpackbits(raw, bitorder="little", count=n_bits)
    return np.concatenate([flags.astype(np.float32), encode(game, 0)])


# ---------------------------------------------------------------- decoding


@dataclass(frozen=True, slots=True)
class View:
    """A readable observation. Seats are relative to the observer (0 self, 1 next, 2 partner,
    3 previous); cards are indices (see :mod:`allfours_env.cards`); teams are "own"/"other"
    as index 0/1. Bit-set fields (``*_bits``) hold the same cards as ints for fast bots."""

    hand_bits: int
    kick: int | None
    kicks_aside_bits: int
    table: dict[int, int]
    played_bits: tuple[int, int, int, int]
    led_bits: int
    trick_numbers: int
    won_bits: tuple[int, int]
    trump: int | None
    phase: str
    dealer: int
    beggar: int
    leader: int | None
    partner: int
    stood: bool
    begged: bool
    gave_one: bool
    ran: bool
    scores: tuple[int, int]
    game_points: tuple[int, int]
    rules: Rules  # the play and scoring keys; first_dealer and deal_batch at their defaults

    @property
    def target(self) -> int:
        """The score that wins the match (the rules' target_score)."""
        return self.rules.target_score

    def __str__(self) -> str:
        """The view in words and card names (``repr`` shows the fields); seats relative to the observer."""
        seats = ("you", "next", "partner", "previous")

        def names(cards: list[int]) -> str:
            return " ".join(map(card_text, cards)) or "-"

        lead = f", {seats[self.leader]} to lead the trick" if self.leader is not None and not self.table else ""
        return "\n".join([
            f"phase {self.phase}: dealer {seats[self.dealer]}, beggar {seats[self.beggar]}{lead}",
            f"hand {names(self.hand)}",
            f"kick {names([] if self.kick is None else [self.kick])}, set aside {names(self.kicks_aside)}, "
            f"trump {'not fixed' if self.trump is None else SUIT_NAMES[self.trump]}; "
            f"{', '.join(self.decided) or 'no decision'}",
            "trick " + (", ".join(f"{seats[s]} {card_text(c)}" for s, c in self.trick_order) or "-"),
            "played " + "; ".join(f"{seats[r]} {names(cards)}" for r, cards in enumerate(self.played)),
            f"won: own team {names(self.won[0])}; other team {names(self.won[1])}",
            f"score {self.scores[0]}-{self.scores[1]} (own team first) of {self.target}; "
            f"Game points {self.game_points[0]}-{self.game_points[1]}",
            f"rules: {self.rules.changed() or 'the defaults'}",
        ])  # fmt: skip

    @property
    def decided(self) -> list[str]:
        """This deal's decisions taken, in words: "stood", "begged", "gave one", "ran the pack"."""
        done = (self.stood, self.begged, self.gave_one, self.ran)
        return [word for word, taken in zip(("stood", "begged", "gave one", "ran the pack"), done) if taken]

    @property
    def hand(self) -> list[int]:
        return cards_of(self.hand_bits)

    @property
    def kicks_aside(self) -> list[int]:
        return cards_of(self.kicks_aside_bits)

    @property
    def played(self) -> tuple[list[int], ...]:
        return tuple(cards_of(b) for b in self.played_bits)

    @property
    def won(self) -> tuple[list[int], list[int]]:
        return cards_of(self.won_bits[0]), cards_of(self.won_bits[1])

    @property
    def tricks(self) -> list[list[tuple[int, int]]]:
        """Every trick of this deal so far, the current one last if begun, each as (relative
        seat, card) in play order (rebuilt from who played what, in which trick, who led)."""
        by_trick: dict[int, list[tuple[int, int]]] = {}
        for seat, bits in enumerate(self.played_bits):
            for card in cards_of(bits):
                by_trick.setdefault(self.trick_numbers >> 4 * card & 0xF, []).append((seat, card))
        out = []
        for number in sorted(by_trick):
            plays = by_trick[number]
            leader = next(seat for seat, card in plays if self.led_bits >> card & 1)
            out.append(sorted(plays, key=lambda play: (play[0] - leader) % N_SEATS))
        return out

    @property
    def trick_order(self) -> list[tuple[int, int]]:
        """The current trick as (relative seat, card) in play order."""
        if self.leader is None:
            return []
        seats = [(self.leader + i) % N_SEATS for i in range(len(self.table))]
        return [(s, self.table[s]) for s in seats]


_CARDS_MASK = (1 << N_CARDS) - 1
_PHASES = ("stand_or_beg", "give_or_run", "play", "over")


def _one_hot(bits: int, offset: int) -> int | None:
    v = bits >> offset & 0b1111
    return v.bit_length() - 1 if v else None


def decode(observation: np.ndarray | dict) -> View:
    """Turn an observation (the vector, or the dict ``observe`` returns) into a :class:`View`."""
    obs = observation["observation"] if isinstance(observation, dict) else observation
    if getattr(obs, "shape", None) != (OBS_SIZE,):
        raise ValueError(f"an observation has shape ({OBS_SIZE},), got {getattr(obs, 'shape', type(obs).__name__)}")
    bits = int.from_bytes(np.packbits(obs[:N_FLAGS] > 0.5, bitorder="little").tobytes(), "little")
    cards = _CARDS_MASK
    kick = bits >> _KICK & cards
    table = {}
    for rel in range(N_SEATS):
        c = bits >> (_TABLE + rel * N_CARDS) & cards
        if c:
            table[rel] = c.bit_length() - 1
    decisions = bits >> _DECISIONS
    target = round(1.0 / float(obs[N_FLAGS + 2]))
    scalars = obs[N_FLAGS : _RULES.start].tolist()
    return View(
        hand_bits=bits & cards,
        kick=kick.bit_length() - 1 if kick else None,
        kicks_aside_bits=bits >> _KICKS_ASIDE & cards,
        table=table,
        played_bits=tuple(bits >> (_PLAYED + r * N_CARDS) & cards for r in range(N_SEATS)),
        led_bits=bits >> _LED & cards,
        trick_numbers=bits >> _TRICK_NUMBER & ((1 << 4 * N_CARDS) - 1),
        won_bits=(bits >> _WON & cards, bits >> (_WON + N_CARDS) & cards),
        trump=_one_hot(bits, _TRUMP),
        phase=_PHASES[_one_hot(bits, _PHASE)],
        dealer=_one_hot(bits, _DEALER),
        beggar=_one_hot(bits, _BEGGAR),
        leader=_one_hot(bits, _LEADER),
        partner=_one_hot(bits, _PARTNER),
        stood=bool(decisions & 1),
        begged=bool(decisions >> 1 & 1),
        gave_one=bool(decisions >> 2 & 1),
        ran=bool(decisions >> 3 & 1),
        scores=(round(scalars[0] * target), round(scalars[1] * target)),
        game_points=(round(scalars[3] * TOTAL_GAME_VALUE), round(scalars[4] * TOTAL_GAME_VALUE)),
        rules=_rules_of_block(np.asarray(obs[_RULES], dtype=np.float32).tobytes(), target),
    )


# ---------------------------------------------------------------- suit symmetry

# Suits have no order (docs/rules.md A1.1): relabelling them maps a position to one that plays
# the same. The pieces indexed by card (each a run of 52 slots, ``trick_number`` 4 bits a card)
# and the trump suit move with the relabelling; every other piece stays.
_CARD_PIECES = ("hand", "kick", "kicks_aside", "table", "played", "led", "won")


def suit_relabelling(suits: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Gather indices ``(obs_index, action_index)`` that relabel suit ``s`` as ``suits[s]``: for
    an observation ``x`` and anything per action ``a`` (mask, values), ``x[..., obs_index]`` and
    ``a[..., action_index]`` are those of the relabelled position. ``suits`` is a permutation of
    0..3."""
    if sorted(suits) != list(range(N_SUITS)):
        raise ValueError(f"suits must be a permutation of 0..{N_SUITS - 1}, got {suits!r}")
    card = np.array([make_card(suits[suit_of(c)], rank_of(c)) for c in range(N_CARDS)])  # card c's new id
    moved = np.arange(OBS_SIZE)  # moved[p]: where slot p's value goes
    for name in _CARD_PIECES:
        piece = LAYOUT[name]
        for start in range(piece.offset, piece.offset + piece.size, N_CARDS):
            moved[start : start + N_CARDS] = start + card
    numbers = LAYOUT["trick_number"].offset
    bits = np.arange(4)
    for c in range(N_CARDS):
        moved[numbers + 4 * c + bits] = numbers + 4 * card[c] + bits
    trump = LAYOUT["trump"].offset
    moved[trump : trump + N_SUITS] = trump + np.array(suits)
    obs_index = np.empty(OBS_SIZE, dtype=np.int64)
    obs_index[moved] = np.arange(OBS_SIZE)
    action_index = np.arange(N_ACTIONS)  # the cards, then the four decisions (which stay)
    action_index[card] = np.arange(N_CARDS)
    return obs_index, action_index


def layout_table() -> str:
    """The observation layout as a Markdown table (for the docs)."""
    rows = ["| index | size | name | meaning |", "|---|---|---|---|"]
    for p in LAYOUT.values():
        index = f"{p.offset}..{p.offset + p.size - 1}" if p.size > 1 else f"{p.offset}"
        rows.append(f"| {index} | {p.size} | `{p.name}` | {p.meaning} |")
    return "\n".join(rows)


__all__ = [
    "LAYOUT", "OBS_SIZE", "RULE_SLOTS", "STATE_SIZE", "View", "action_mask", "decode", "encode", "encode_state",
    "layout_table", "observation_high", "rules_block", "suit_relabelling",
]
