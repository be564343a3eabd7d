"""The pure All Fours engine: Trinidad rules, no PettingZoo, no Gymnasium.

Rules: ``docs/rules.md`` of this repository (Part A; A0 variants in :mod:`allfours_env.rules`), drawn from
the cardgames.zone and novelgames rule pages, pagat's "All Fours in Trinidad" and the BGA
"Caribbean All Fours" help. Section numbers in comments (A6.5 ...) point into docs/rules.md.

A :class:`Game` is one match (or one deal: ``episode="deal"``). Every decision is a call to
:meth:`Game.step` by the seat in :attr:`Game.current`: STAND or BEG (beggar), GIVE_ONE or RUN
(dealer), or a card. Dealing, kicks, runs, redeals and scoring happen inside ``step``. Each
thing that happens is appended to :attr:`Game.events`; awards of points are events with
``points > 0``. Randomness comes only from the ``numpy.random.Generator`` the game is given
(shuffles and the first-dealer draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .cards import (
    CARD_GAME_VALUE,
    N_CARDS,
    N_RANKS,
    N_SEATS,
    RANK_JACK,
    SUIT_MASK,
    beats,
    card_text,
    cards_of,
)
from .rules import DEFAULT_RULES, KICK_POINTS, Rules

# Action ids (docs/rules.md "Engine conventions"): 0..51 play that card, then the four decisions.
STAND, BEG, GIVE_ONE, RUN = 52, 53, 54, 55
N_ACTIONS = 56
DECISION_NAMES = {STAND: "STAND", BEG: "BEG", GIVE_ONE: "GIVE_ONE", RUN: "RUN"}

# Phases: who must decide what. The last two are terminal (no seat to act).
STAND_OR_BEG, GIVE_OR_RUN, PLAY, DEAL_OVER, MATCH_OVER = range(5)
PHASE_NAMES = ("stand_or_beg", "give_or_run", "play", "deal_over", "match_over")

# Episodes: "match" plays until a team reaches the target; "deal" stops (phase DEAL_OVER) once
# one deal is scored, or earlier if the match ends in it.
EPISODES = ("match", "deal")

CARDS_DEALT = 24  # 6 to each seat (A4.2)
RUN_CARDS = 12  # 3 more to each seat (A6.5b)

# Event kinds. Awards (points > 0 change the score) are KICK, GIVE_ONE_AWARD and the four
# end-of-deal kinds; everything else is a record of what happened.
DEAL = "deal"
KICK = "kick"
STOOD = "stand"
BEGGED = "beg"
GAVE_ONE = "give_one"
RAN = "run"
REDEAL = "redeal"
TRUMP = "trump"
PLAYED = "play"
TRICK = "trick"
HIGH = "high"
LOW = "low"
JACK = "jack"
HANG_JACK = "hang_jack"
GAME = "game"
DEAL_END = "deal_end"
MATCH_END = "match_end"
AWARD_KINDS = (KICK, GAVE_ONE, HIGH, LOW, JACK, HANG_JACK, GAME)


class Event(NamedTuple):
    """One thing that happened. ``seat``/``team``/``card``/``suit``/``deal`` are -1 where they do
    not apply; ``points`` is what an award scored (0 for every other kind).

    deal: seat = dealer, deal = its number (1-based, a redeal counts); kick: seat = dealer,
    team = dealer's team, card = the kick, points = its kick points; stand/beg/run: seat = who
    decided; give_one: seat = dealer, team = beggar's team; redeal: seat = dealer; trump: suit =
    the trump suit; play: seat plays card; trick: seat = winner, team = its team, card =
    winning card; high/low/jack: seat = holder, card = that trump; hang_jack: seat = trick
    winner, card = the jack; game: team with more game points; deal_end: seat = dealer, deal =
    its number; match_end: team = winner.
    """

    kind: str
    seat: int = -1
    team: int = -1
    points: int = 0
    card: int = -1
    suit: int = -1
    deal: int = -1


class IllegalActionError(ValueError):
    """An action that is not legal now; the game state is unchanged."""


class _MatchOver(Exception):
    """Raised inside an award that reaches the target: the rest of the step is abandoned (A9.1)."""


def action_text(action: int) -> str:
    """Card text for 0..51, the decision name for 52..55."""
    return DECISION_NAMES[action] if action in DECISION_NAMES else card_text(action)


def check_deck(deck: Sequence[int], where: str = "deck") -> list[int]:
    """A deck as a list of ints, or a ValueError if it is not a permutation of 0..51."""
    if isinstance(deck, (str, bytes)) or not isinstance(deck, Sequence | np.ndarray):
        raise ValueError(f"{where} must be a sequence of 52 card indices (ints 0..51), got {type(deck).__name__}")
    bad = [c for c in deck if isinstance(c, bool) or not isinstance(c, int | np.integer)]
    if bad:
        raise ValueError(f"{where} must hold card indices as ints 0..51, got {bad[0]!r} ({type(bad[0]).__name__})")
    cards = [int(c) for c in deck]
    if len(cards) != N_CARDS:
        raise ValueError(f"{where} has {len(cards)} cards; a deck is a permutation of 0..51 (52 cards)")
    if sorted(cards) != list(range(N_CARDS)):
        bad = sorted({c for c in cards if not 0 <= c < N_CARDS} | {c for c in cards if cards.count(c) > 1})
        raise ValueError(f"{where} is not a permutation of 0..51 (out of range or repeated: {bad})")
    return cards


def check_seed(seed: object) -> int | None:
    """A seed as ``numpy.random.default_rng`` takes it: None (fresh entropy) or an int 0 or more,
    of any size (numpy integers count as ints), else a ValueError. A bool or a float is not a seed."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(
            f"seed must be None or a non-negative integer (0 or more, any size), got {seed!r} ({type(seed).__name__})"
        )
    return int(seed)


def check_start(
    rules: Rules, decks: Sequence[Sequence[int]] | None, dealer: int | None, scores: Sequence[int] | None
) -> tuple[list[list[int]], tuple[int, int]]:
    """The reset options of a match, checked: ``(decks as lists of ints, scores)``, or a ValueError
    that says what is allowed. ``dealer`` must be None or a seat 0..3."""
    if decks is None:
        decks = []
    elif isinstance(decks, (str, bytes)) or not isinstance(decks, Sequence | np.ndarray):
        raise ValueError("decks must be a list of decks, each a permutation of 0..51")
    elif len(decks) and not isinstance(decks[0], Sequence | np.ndarray):
        raise ValueError("decks must be a list of decks (a list of lists), each a permutation of 0..51")
    checked = [check_deck(d, f"decks[{i}]") for i, d in enumerate(decks)]
    if dealer is not None and (isinstance(dealer, bool) or not isinstance(dealer, int | np.integer) or not 0 <= dealer < N_SEATS):
        raise ValueError(f"dealer must be a seat 0..3, got {dealer!r}")
    if scores is None:
        scores = (0, 0)
    if (
        isinstance(scores, (str, bytes))
        or not isinstance(scores, Sequence | np.ndarray)
        or len(scores) != 2
        or any(isinstance(s, bool) or not isinstance(s, int | np.integer) for s in scores)
    ):
        raise ValueError(f"scores must be two integers [team0, team1], got {scores!r}")
    if min(scores) < 0 or max(scores) >= rules.target_score:
        raise ValueError(
            f"scores must be in 0..{rules.target_score - 1} (below target_score {rules.target_score}), got {list(scores)}"
        )
    return checked, (int(scores[0]), int(scores[1]))


def _deal_order(first_seat: int, n_cards: int, batch: int) -> tuple[int, ...]:
    """Seat receiving each card, one at a time (batch 1) or in packets of three (A4.2)."""
    return tuple((first_seat + k // batch) % N_SEATS for k in range(n_cards))


# _DEAL_SEATS[batch][dealer][n] -> seat of each of the n cards dealt from the seat after dealer.
_DEAL_SEATS = {
    b: [{n: _deal_order((d + 1) % N_SEATS, n, b) for n in (CARDS_DEALT, RUN_CARDS)} for d in range(N_SEATS)]
    for b in (1, 3)
}


def deal_seats(dealer: int, n_cards: int, batch: int) -> tuple[int, ...]:
    """The seat receiving each card of a first deal (24 cards) or a run (12), dealer ``dealer``."""
    return _DEAL_SEATS[batch][dealer][n_cards]


class Game:
    """One match of All Fours. See the module docstring; docs/rules.md is the specification."""

    def __init__(
        self,
        rules: Rules = DEFAULT_RULES,
        rng: np.random.Generator | None = None,
        *,
        decks: Sequence[Sequence[int]] | None = None,
        dealer: int | None = None,
        scores: Sequence[int] | None = None,
        episode: str = "match",
    ) -> None:
        # Validate everything before touching any state or the generator.
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
        self._decks, scores = check_start(rules, decks, dealer, scores)
        if rng is None:
            if len(self._decks) == 0 or (dealer is None and not isinstance(rules.first_dealer, int)):
                raise ValueError("a random generator is needed unless every deck and the dealer are given")
        self.rules = rules
        self.rng = rng
        self.episode = episode
        self._kick_values = KICK_POINTS[rules.kick_points]
        self._deal_seats = _DEAL_SEATS[rules.deal_batch]
        self._target = rules.target_score
        self._next_deck_index = 0

        self.scores = [int(scores[0]), int(scores[1])]
        self.events: list[Event] = []
        self.deal_number = 0
        self.phase = STAND_OR_BEG
        self.current = -1  # seat to act; -1 when the phase is terminal
        self.winner = -1  # team that won the match
        self.dealer = int(dealer) if dealer is not None else self._first_dealer()
        try:
            self._start_deal()
        except _MatchOver:
            pass

    # ---------------------------------------------------------------- queries

    @property
    def beggar(self) -> int:
        return (self.dealer + 1) % N_SEATS

    @property
    def is_over(self) -> bool:
        return self.phase >= DEAL_OVER

    def legal_bits(self) -> int:
        """Legal actions as a bit set over action ids 0..55 (0 in a terminal phase)."""
        legal = self._legal
        if legal < 0:
            phase = self.phase
            if phase == PLAY:
                legal = self._legal_cards()
            elif phase == STAND_OR_BEG:
                legal = self._legal_stand_or_beg()
            elif phase == GIVE_OR_RUN:
                legal = self._legal_give_or_run()
            else:
                legal = 0
            self._legal = legal
        return legal

    def legal_actions(self) -> list[int]:
        return cards_of(self.legal_bits())

    def hand(self, seat: int) -> list[int]:
        return cards_of(self.hands[seat])

    def table(self) -> list[tuple[int, int]]:
        """The current trick as (seat, card) pairs in play order."""
        return [((self.leader + i) % N_SEATS, c) for i, c in enumerate(self.trick)]

    # ---------------------------------------------------------------- legal actions per phase

    def _legal_stand_or_beg(self) -> int:
        legal = 1 << STAND | 1 << BEG
        if self.rules.stand_requires_trump and not self.hands[self.current] & SUIT_MASK[self.kick // N_RANKS]:
            legal = 1 << BEG
        return legal

    def _legal_give_or_run(self) -> int:
        rules = self.rules
        give = True
        if rules.give_one_to_reach_target == "forbidden" and self.scores[self.beggar % 2] + 1 >= self._target:
            give = False  # A6.8: the point would end the match, the dealer must run
        if rules.give_one_requires_trump and not self.hands[self.current] & SUIT_MASK[self.kick // N_RANKS]:
            give = False
        return 1 << RUN | (1 << GIVE_ONE if give else 0)

    def _legal_cards(self) -> int:
        hand = self.hands[self.current]
        if not self.trick:
            return hand  # A7.2: any lead
        trump_mask = SUIT_MASK[self.trump]
        if self.led_suit == self.trump:
            return hand & trump_mask or hand  # A7.3: follow trump if able
        follow = hand & SUIT_MASK[self.led_suit]
        legal = follow | hand & trump_mask if follow else hand  # void: anything, trumping optional
        undertrump = self.rules.undertrump
        if undertrump != "allowed" and self.win_card // N_RANKS == self.trump:  # A7.4
            under = hand & trump_mask & ((1 << self.win_card) - 1)  # trumps below the best one played
            if under and (follow if undertrump == "forbidden_when_can_follow" else hand & ~trump_mask):
                legal &= ~under
        return legal

    # ---------------------------------------------------------------- apply

    def step(self, action: int) -> None:
        """Apply the decision of :attr:`current`. An illegal action raises and changes nothing."""
        if self.phase >= DEAL_OVER:
            raise IllegalActionError(f"no action is possible: the {'match' if self.phase == MATCH_OVER else 'deal'} is over")
        legal = self.legal_bits()
        if type(action) is not int and isinstance(action, np.integer):
            action = int(action)
        if not (type(action) is int and 0 <= action < N_ACTIONS and legal >> action & 1):
            raise IllegalActionError(self._illegal_message(action, legal))
        self._legal = -1
        try:
            if action < N_CARDS:
                self._play(action)
            elif action == STAND:
                self.events.append(Event(STOOD, self.current))
                self.stood = True
                self._start_play(self.kick // N_RANKS)
            elif action == BEG:
                self.events.append(Event(BEGGED, self.current))
                self.begged = True
                self.phase = GIVE_OR_RUN
                self.current = self.dealer
            elif action == GIVE_ONE:
                self.gave_one = True
                self._award(self.beggar % 2, 1, GAVE_ONE, self.dealer)
                self._start_play(self.kick // N_RANKS)
            else:
                self.events.append(Event(RAN, self.current))
                self.ran = True
                self._run_the_pack()
        except _MatchOver:
            pass

    def _illegal_message(self, action: object, legal: int) -> str:
        legal_text = ", ".join(action_text(a) for a in cards_of(legal))
        if isinstance(action, int | np.integer) and not isinstance(action, bool) and 0 <= action < N_ACTIONS:
            what = action_text(int(action))
        else:
            what = f"{action!r} (actions are ints 0..55)"
        return f"player_{self.current} cannot take action {what} now ({PHASE_NAMES[self.phase]}); legal: {legal_text}"

    # ---------------------------------------------------------------- dealing, kicks, runs (A3-A6)

    def _first_dealer(self) -> int:
        rule = self.rules.first_dealer
        if isinstance(rule, int):
            return rule
        rng = self.rng
        if rule == "random":
            return int(rng.integers(N_SEATS))
        if rule == "first_jack":  # deal face up to seats 0, 1, 2, 3, ... until a jack (NLCB)
            deck = rng.permutation(N_CARDS)
            first = next(i for i, c in enumerate(deck) if c % N_RANKS == RANK_JACK)
            return first % N_SEATS
        # "cut": every seat draws a card, highest rank deals, tied seats draw again.
        seats = list(range(N_SEATS))
        while len(seats) > 1:
            ranks = rng.permutation(N_CARDS)[: len(seats)] % N_RANKS
            best = ranks.max()
            seats = [s for s, r in zip(seats, ranks) if r == best]
        return seats[0]

    def _next_deck(self) -> list[int]:
        if self._next_deck_index < len(self._decks):
            deck = self._decks[self._next_deck_index]
        elif self.rng is None:
            raise ValueError(f"the {len(self._decks)} given decks ran out and no random generator was given")
        else:
            deck = self.rng.permutation(N_CARDS).tolist()
        self._next_deck_index += 1
        return deck

    def _start_deal(self) -> None:
        """A4-A5: a fresh deck, six cards each from the seat after the dealer, then the kick."""
        self.deck = deck = self._next_deck()
        self.deal_number += 1
        self.hands = hands = [0, 0, 0, 0]
        for seat, card in zip(self._deal_seats[self.dealer][CARDS_DEALT], deck):
            hands[seat] |= 1 << card
        self.next_card = CARDS_DEALT
        self.kick = -1
        self.kicks_aside = 0
        self.trump = -1
        self.stood = self.begged = self.gave_one = self.ran = False
        self.played = [0, 0, 0, 0]  # cards played by each seat this deal
        self.led = 0  # cards that led their trick
        self.trick_numbers = 0  # 4 bits per card: 1-based number of the trick it was played to
        self.won = [0, 0]  # cards captured by each team
        self.game_totals = [0, 0]
        self.trick: list[int] = []
        self.last_trick: list[int] = []
        self.leader = self.led_suit = self.win_card = self.win_seat = -1
        self.tricks_played = self.n_tricks = 0
        self._legal = -1
        self.phase = STAND_OR_BEG
        self.current = -1
        self.events.append(Event(DEAL, self.dealer, deal=self.deal_number))
        self._turn_kick()
        self.current = self.beggar

    def _turn_kick(self) -> None:
        """A5: turn up the next card; the dealer's team scores its kick points at once."""
        self.kick = card = self.deck[self.next_card]
        self.next_card += 1
        points = self._kick_values[card % N_RANKS]
        if points:
            self._award(self.dealer % 2, points, KICK, self.dealer, card)
        else:
            self.events.append(Event(KICK, self.dealer, self.dealer % 2, 0, card))

    def _run_the_pack(self) -> None:
        """A6.5-A6.6: set the kick aside, deal three more each, kick again until the suit changes."""
        begged_suit = self.kick // N_RANKS
        deck, hands = self.deck, self.hands
        while True:
            self.kicks_aside |= 1 << self.kick
            self.kick = -1
            left = N_CARDS - self.next_card
            if left >= RUN_CARDS + 1:
                start = self.next_card
                for seat, card in zip(self._deal_seats[self.dealer][RUN_CARDS], deck[start : start + RUN_CARDS]):
                    hands[seat] |= 1 << card
                self.next_card = start + RUN_CARDS
            elif left == 0 or self.rules.exhausted_pack == "redeal":
                self.events.append(Event(REDEAL, self.dealer))
                self._start_deal()  # same dealer, points kept (A6.6, A3.2)
                return
            self._turn_kick()
            if self.kick // N_RANKS != begged_suit:
                self._start_play(self.kick // N_RANKS)
                return

    # ---------------------------------------------------------------- trick play (A7)

    def _start_play(self, trump: int) -> None:
        """Fix the trump and take the A8.2 snapshot of who holds High, Low and the Jack."""
        self.trump = trump
        self.events.append(Event(TRUMP, suit=trump))
        mask = SUIT_MASK[trump]
        hands = self.hands
        in_hands = (hands[0] | hands[1] | hands[2] | hands[3]) & mask
        self.trumps_in_hands = in_hands
        self.high_card = self.low_card = self.jack_card = -1
        self.high_holder = self.low_holder = self.jack_holder = self.jack_winner = -1
        if in_hands:
            self.high_card = in_hands.bit_length() - 1
            self.low_card = (in_hands & -in_hands).bit_length() - 1
            jack = trump * N_RANKS + RANK_JACK
            for seat in range(N_SEATS):
                h = hands[seat]
                if h >> self.high_card & 1:
                    self.high_holder = seat
                if h >> self.low_card & 1:
                    self.low_holder = seat
                if h >> jack & 1:
                    self.jack_holder, self.jack_card = seat, jack
        self.n_tricks = hands[0].bit_count()
        self.phase = PLAY
        self.leader = self.current = self.beggar

    def _play(self, card: int) -> None:
        seat = self.current
        bit = 1 << card
        self.hands[seat] ^= bit
        self.played[seat] |= bit
        self.events.append(Event(PLAYED, seat, card=card))
        self.trick_numbers |= (self.tricks_played + 1) << (4 * card)
        trick = self.trick
        suit = card // N_RANKS
        if not trick:
            self.led |= bit
            self.led_suit, self.win_card, self.win_seat = suit, card, seat
        elif beats(card, self.win_card, self.trump):  # A7.5
            self.win_card, self.win_seat = card, seat
        trick.append(card)
        if len(trick) < N_SEATS:
            self.current = (seat + 1) % N_SEATS
            return
        # A7.5: the trick is complete.
        winner = self.win_seat
        team = winner % 2
        bits = 0
        for c in trick:
            bits |= 1 << c
            self.game_totals[team] += CARD_GAME_VALUE[c]
        self.won[team] |= bits
        if self.jack_card >= 0 and bits >> self.jack_card & 1:
            self.jack_winner = winner
        self.events.append(Event(TRICK, winner, team, card=self.win_card))
        self.last_trick = trick
        self.trick = []
        self.tricks_played += 1
        self.leader = self.current = winner
        if self.tricks_played == self.n_tricks:
            self._score_deal()

    # ---------------------------------------------------------------- scoring (A8, A9)

    def _award(self, team: int, points: int, kind: str, seat: int = -1, card: int = -1) -> None:
        self.scores[team] += points
        self.events.append(Event(kind, seat, team, points, card))
        if self.scores[team] >= self._target:
            self.phase = MATCH_OVER
            self.current = -1
            self.winner = team
            self._legal = -1
            self.events.append(Event(MATCH_END, team=team))
            raise _MatchOver

    def _score_deal(self) -> None:
        """A8.3: High, Low, Jack, Game in this order, the match ending at the first to the target."""
        rules = self.rules
        if self.trumps_in_hands:
            self._award(self.high_holder % 2, 1, HIGH, self.high_holder, self.high_card)
            if self.low_card != self.high_card or rules.single_trump_counts_high_and_low:
                self._award(self.low_holder % 2, 1, LOW, self.low_holder, self.low_card)
            if self.jack_holder >= 0:
                holder_team, winner = self.jack_holder % 2, self.jack_winner
                if winner % 2 == holder_team:
                    self._award(holder_team, 1, JACK, self.jack_holder, self.jack_card)
                else:
                    self._award(winner % 2, rules.hang_jack_points, HANG_JACK, winner, self.jack_card)
        g0, g1 = self.game_totals
        if g0 != g1:
            self._award(0 if g0 > g1 else 1, rules.game_points, GAME)
        elif g0 > 0 and rules.game_tie != "none":
            dealer_team = self.dealer % 2
            self._award(dealer_team if rules.game_tie == "dealer" else 1 - dealer_team, rules.game_points, GAME)
        self.events.append(Event(DEAL_END, self.dealer, deal=self.deal_number))
        self.current = -1
        if self.episode == "deal":
            self.phase = DEAL_OVER
            return
        self.dealer = (self.dealer + 1) % N_SEATS
        self._start_deal()
