"""Whether arrays are a :class:`~allfours_env.vector.VectorGame` state the engine can go on from.

The compiled kernels index their arrays with the state's own numbers (the seat to act, the next
card of the deck, the position in the deck queue, the cards of the trick), so a state that comes
from outside (a training checkpoint read from disk, ``set_state`` of the env API) is checked
by :func:`check_state` before they touch it, table by table:

1. every field of every table, ended or not, is in its range (a seat 0..3, a card 0..51, -1
   where a field may be unset; bit sets within the 52 cards; positions within the deck queue),
   and every deck queued for a later deal is a whole deck: nothing out of range reaches
   compiled code;
2. a table in play holds a position the rules reach: its deck a permutation of the 52 cards;
   each seat's hand and played cards exactly what the deck dealt it (:func:`actions.deal_seats`),
   the kicks what lies at the deck's kick positions; every finished trick one card from each
   seat and one lead, the cards won those of the finished tricks split between the teams, with
   their Game points; the trick in progress played in turn from its leader, with its led suit
   and best card; the seat to act, the trump and the decisions of the phase; the snapshot of
   High, Low and the Jack (A8.2). From such a state the match plays to its end as any match
   does: the seat to act always has a legal action.

A state that fails is a :class:`StateError` (a ValueError) naming the first table that does not
fit and what is wrong with it. The checks read the columns :mod:`allfours_env.vector_kernels`
names, with numpy, for all tables at once.
"""

from __future__ import annotations

import numpy as np

from . import vector_kernels as k
from .actions import CARDS_DEALT, RUN_CARDS, deal_seats
from .cards import CARD_GAME_VALUE, N_CARDS, N_RANKS, N_SEATS, RANK_JACK, SUIT_MASK, TOTAL_GAME_VALUE
from .rules import KICK_POINTS

MAX_TRICKS = (CARDS_DEALT + 2 * RUN_CARDS) // N_SEATS  # a hand after two runs: 12 cards
MAX_COUNT = 2**40  # deals (and decks) a table may have begun: beyond any match, far below overflow
FIRST_KICK = CARDS_DEALT  # the deck positions of the kicks: 24, then 37 and 50 after runs, and 51
KICK_POSITIONS = (FIRST_KICK, FIRST_KICK + 1 + RUN_CARDS, FIRST_KICK + 2 * (1 + RUN_CARDS), N_CARDS - 1)
MAX_KICK_POINTS = max(max(points) for points in KICK_POINTS.values())
_CARDS = np.arange(N_CARDS)
_SUITS = _CARDS // N_RANKS
_CARD_BITS = np.uint64(1) << _CARDS.astype(np.uint64)
_SUIT_BITS = np.array(SUIT_MASK, dtype=np.uint64)
_GAME_VALUE = np.array(CARD_GAME_VALUE, dtype=np.int64)


class StateError(ValueError):
    """Arrays that are not a state the engine can continue from."""


def check_state(arrays: dict[str, np.ndarray], params: np.ndarray) -> None:
    """Raise StateError unless ``arrays`` (``VectorGame.get_state()``'s names, with their shapes
    and dtypes checked already) are a state of a VectorGame with rule parameters ``params``
    (:func:`allfours_env.vector.rule_params`)."""
    _check_ranges(arrays, params)
    live = np.flatnonzero(arrays["st"][:, k.PHASE] < k.DEAL_OVER)
    if len(live):
        _LiveTables(arrays, params, live).check()


def _fail(tables: np.ndarray, bad: np.ndarray, what: str) -> None:
    if bad.any():
        raise StateError(f"table {int(tables[np.argmax(bad)])}: {what}")


def _outside(values: np.ndarray, low: int, high: int) -> np.ndarray:
    return (values < low) | (values > high)


def _field_ranges(params: np.ndarray) -> dict[int, tuple[int, int]]:
    """The values each column of ``st`` may hold at any table, ended or not (-1: unset)."""
    card, seat, suit, flag = (-1, N_CARDS - 1), (-1, N_SEATS - 1), (-1, 3), (-1, 1)
    largest_award = max(int(params[k.P_HANG]), int(params[k.P_GAME_POINTS]), MAX_KICK_POINTS)
    score = (-1, int(params[k.P_TARGET]) - 1 + largest_award)
    ranges = {
        k.PHASE: (0, k.MATCH_OVER), k.CURRENT: seat, k.DEALER: seat, k.DEAL_NUMBER: (-1, MAX_COUNT),
        k.NEXT_CARD: (-1, N_CARDS), k.KICK: card, k.TRUMP: suit, k.STOOD: flag, k.BEGGED: flag,
        k.GAVE_ONE_DONE: flag, k.RAN: flag, k.SCORE0: score, k.SCORE1: score, k.GAME0: (-1, TOTAL_GAME_VALUE),
        k.GAME1: (-1, TOTAL_GAME_VALUE), k.TRICK_LEN: (-1, N_SEATS - 1), k.LEADER: seat, k.LED_SUIT: suit,
        k.WIN_CARD: card, k.WIN_SEAT: seat, k.TRICKS_PLAYED: (-1, MAX_TRICKS), k.N_TRICKS: (-1, MAX_TRICKS),
        k.HIGH_CARD: card, k.LOW_CARD: card, k.JACK_CARD: card, k.HIGH_HOLDER: seat, k.LOW_HOLDER: seat,
        k.JACK_HOLDER: seat, k.JACK_WINNER: seat, k.WINNER: (-1, 1), k.NEXT_DECK: (-1, MAX_COUNT),
    }  # fmt: skip
    ranges.update({k.TRICK_CARDS + i: card for i in range(N_SEATS)})
    return ranges


def _check_ranges(arrays: dict[str, np.ndarray], params: np.ndarray) -> None:
    st, given, n_given = arrays["st"], arrays["given"], arrays["n_given"]
    tables = np.arange(len(st))
    for column, (low, high) in _field_ranges(params).items():
        _fail(tables, _outside(st[:, column], low, high), f"st column {column} must be {low}..{high}")
    on_table = np.arange(N_SEATS) < st[:, k.TRICK_LEN, None]
    unset = on_table & (st[:, k.TRICK_CARDS : k.TRICK_CARDS + N_SEATS] < 0)
    _fail(tables, unset.any(axis=1), "a card of the trick in progress is unset")
    _fail(tables, (arrays["bs"] >> np.uint64(N_CARDS)).any(axis=1), "a bit set holds bits beyond the 52 cards")
    for name, high in (("deck", N_CARDS - 1), ("trick_no", MAX_TRICKS), ("given", N_CARDS - 1)):
        values = arrays[name].reshape(len(st), -1)
        _fail(tables, _outside(values, 0, high).any(axis=1), f"{name} must hold 0..{high}")
    _fail(tables, _outside(n_given, 0, given.shape[1]), f"n_given must be 0..{given.shape[1]} (the queue's length)")
    slots = np.arange(given.shape[1])
    queued = (slots >= np.maximum(st[:, k.NEXT_DECK], 0)[:, None]) & (slots < n_given[:, None])
    whole = (np.sort(given, axis=2) == _CARDS).all(axis=2)
    _fail(tables, (queued & ~whole).any(axis=1), "a deck queued for a later deal is not a permutation of 0..51")


def _members(sets: np.ndarray) -> np.ndarray:
    """bool (..., 52): the cards of each bit set."""
    return sets[..., None] & _CARD_BITS != 0


def _set_of(cards: np.ndarray) -> np.ndarray:
    """uint64 (L,): the bit set of each row of a bool (L, 52) card matrix."""
    return np.bitwise_or.reduce(np.where(cards, _CARD_BITS, np.uint64(0)), axis=1)


def _at(rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """rows[i, index[i]] for each row i (index clipped to 0 where it is -1: the caller masks it)."""
    return np.take_along_axis(rows, np.maximum(index, 0)[:, None], axis=1)[:, 0]


def _deal_owners(batch: int) -> np.ndarray:
    """int (4, 52): by dealer, the seat each deck position is dealt to (-1: a kick position)."""
    owners = np.full((N_SEATS, N_CARDS), -1)
    for dealer in range(N_SEATS):
        first, run = deal_seats(dealer, CARDS_DEALT, batch), deal_seats(dealer, RUN_CARDS, batch)
        owners[dealer] = [*first, -1, *run, -1, *run, -1, -1]
    return owners


class _LiveTables:
    """The checks of the tables in play (indices ``live``), in an order where each relies only on
    what the ones before it established."""

    def __init__(self, arrays: dict[str, np.ndarray], params: np.ndarray, live: np.ndarray) -> None:
        self.live, self.params = live, params
        self.st, self.bs = arrays["st"][live], arrays["bs"][live]
        self.deck = arrays["deck"][live].astype(np.int64)
        self.trick_no = arrays["trick_no"][live].astype(np.int64)
        self.play = self.col(k.PHASE) == k.PLAY
        self.hands = self.bs[:, k.HAND : k.HAND + N_SEATS]
        self.played = self.bs[:, k.PLAYED : k.PLAYED + N_SEATS]

    def col(self, column: int) -> np.ndarray:
        return self.st[:, column]

    def fail(self, bad: np.ndarray, what: str) -> None:
        _fail(self.live, bad, what)

    def check(self) -> None:
        self.check_match()
        self.check_deal()
        self.check_tricks()
        self.check_trick_in_progress()
        self.check_phase()
        self.check_snapshot()

    def check_match(self) -> None:
        col, target = self.col, int(self.params[k.P_TARGET])
        self.fail((col(k.DEALER) < 0) | (col(k.CURRENT) < 0), "a match in play has no dealer or no seat to act")
        self.fail(col(k.WINNER) != -1, "a match in play has a winner")
        self.fail((col(k.DEAL_NUMBER) < 1) | (col(k.NEXT_DECK) < 1), "a deal in play was never begun")
        scores = self.st[:, k.SCORE0 : k.SCORE1 + 1]
        self.fail(_outside(scores, 0, target - 1).any(axis=1), f"a match in play has a score outside 0..{target - 1}")

    def check_deal(self) -> None:
        """The deck, the kicks, and the cards each seat holds or played, as the deck dealt them."""
        deck, next_card = self.deck, self.col(k.NEXT_CARD)
        self.fail((np.sort(deck, axis=1) != _CARDS).any(axis=1), "the deck is not a permutation of 0..51")
        after_kick = np.array(KICK_POSITIONS) + 1
        self.fail(~np.isin(next_card, after_kick), f"the deck's next card must be one of {tuple(after_kick)}")
        self.fail((next_card == N_CARDS) & (self.params[k.P_REDEAL] != 0), "the last card was kicked under redeal")
        turned = _at(deck, next_card - 1)
        self.fail(self.col(k.KICK) != turned, "the kick is not the last card turned from the deck")
        dealt = _CARDS < next_card[:, None]  # deck positions dealt so far
        kicks = _set_of(self.at_positions(dealt & np.isin(_CARDS, KICK_POSITIONS)))
        aside = kicks & ~(np.uint64(1) << turned.astype(np.uint64))
        self.fail(self.bs[:, k.KICKS_ASIDE] != aside, "the kicks set aside are not the deck's earlier kicks")
        owners = _deal_owners(int(self.params[k.P_DEAL_BATCH]))[self.col(k.DEALER)]
        for seat in range(N_SEATS):
            given = _set_of(self.at_positions(dealt & (owners == seat)))
            held, played = self.hands[:, seat], self.played[:, seat]
            wrong = (held & played != 0) | (held | played != given)
            self.fail(wrong, f"player_{seat}'s hand and played cards are not what the deck dealt it")

    def at_positions(self, positions: np.ndarray) -> np.ndarray:
        """bool (L, 52) by card: the cards at the deck positions where ``positions`` (L, 52)."""
        cards = np.zeros_like(positions)
        np.put_along_axis(cards, self.deck, positions, axis=1)
        return cards

    def check_tricks(self) -> None:
        """One card from each seat and one lead in every finished trick; the cards won, their Game points."""
        tricks_played, trick_len, leader = self.col(k.TRICKS_PLAYED), self.col(k.TRICK_LEN), self.col(k.LEADER)
        bad = _outside(tricks_played, 0, MAX_TRICKS - 1) | _outside(trick_len, 0, N_SEATS - 1)
        self.fail(bad, "a deal in play has no trick in progress")
        number = np.arange(MAX_TRICKS + 1)  # a card's 1-based trick number (0: not played)
        finished = (number >= 1) & (number <= tricks_played[:, None])  # (L, 13)
        current = number == tricks_played[:, None] + 1
        in_trick = (np.arange(N_SEATS) - leader[:, None]) % N_SEATS < trick_len[:, None]  # (L, 4) by seat
        played = _members(self.played)  # (L, 4, 52)
        numbered = self.trick_no[:, :, None] == number  # (L, 52, 13)
        per_trick = (played[..., None] & numbered[:, None]).sum(axis=2)  # (L, 4, 13)
        expected = finished[:, None, :] | current[:, None, :] & in_trick[..., None]
        self.fail((per_trick != expected).any(axis=(1, 2)), "the cards played are not one from each seat a trick")
        self.any_played = played.any(axis=1)
        self.fail(((self.trick_no != 0) != self.any_played).any(axis=1), "a card not played has a trick number")
        leads = (_members(self.bs[:, k.LED])[..., None] & numbered).sum(axis=1)
        expected_leads = finished | current & (trick_len[:, None] > 0)
        self.fail((leads != expected_leads).any(axis=1), "the cards led are not one a trick")
        self.in_trick = self.any_played & (self.trick_no == tricks_played[:, None] + 1)
        won0, won1 = self.bs[:, k.WON], self.bs[:, k.WON + 1]
        done = _set_of(self.any_played & ~self.in_trick)
        self.fail((won0 & won1 != 0) | (won0 | won1 != done), "the cards won are not those of the finished tricks")
        for team in (0, 1):
            points = (_members(self.bs[:, k.WON + team]) * _GAME_VALUE).sum(axis=1)
            self.fail(self.col(k.GAME0 + team) != points, f"team {team}'s Game points are not those of its cards won")

    def check_trick_in_progress(self) -> None:
        """Played in turn from its leader, each card its seat's; its led suit and best card."""
        trick_len, leader, trump = self.col(k.TRICK_LEN), self.col(k.LEADER), self.col(k.TRUMP)
        turn = (leader < 0) | (self.col(k.CURRENT) != (leader + trick_len) % N_SEATS)
        self.fail(self.play & turn, "the seat to act is not the next in the trick")
        cards = self.st[:, k.TRICK_CARDS : k.TRICK_CARDS + N_SEATS]
        played = _members(self.played) & self.in_trick[:, None]  # (L, 4, 52): each seat's card of this trick
        best, best_seat = cards[:, 0], leader
        for i in range(N_SEATS - 1):
            seat, card, on_table = (leader + i) % N_SEATS, np.maximum(cards[:, i], 0), i < trick_len
            its_own = _at(np.take_along_axis(played, seat[:, None, None], axis=1)[:, 0], card)
            self.fail(on_table & ~its_own, f"card {i} of the trick in progress is not its seat's card in it")
            beats = np.where(card // N_RANKS == best // N_RANKS, card > best, card // N_RANKS == trump)
            better = on_table & (i > 0) & beats
            best, best_seat = np.where(better, card, best), np.where(better, seat, best_seat)
        started = trick_len > 0
        self.fail(started & (self.col(k.LED_SUIT) != cards[:, 0] // N_RANKS), "the led suit is not the first card's")
        wrong_best = (self.col(k.WIN_CARD) != best) | (self.col(k.WIN_SEAT) != best_seat)
        self.fail(started & wrong_best, "the trick's best card is not the one winning it")
        self.fail(self.in_trick.sum(axis=1) != trick_len, "the trick in progress is not the cards played to it")

    def check_phase(self) -> None:
        """The seat to act, the trump and the decisions of each phase (A6), and the deal's length."""
        col, play, bidding = self.col, self.play, ~self.play
        phase, dealer = col(k.PHASE), col(k.DEALER)
        stood, begged, gave, ran = col(k.STOOD), col(k.BEGGED), col(k.GAVE_ONE_DONE), col(k.RAN)
        self.fail(bidding & (col(k.TRICKS_PLAYED) + col(k.TRICK_LEN) != 0), "a card was played before the trump")
        self.fail(bidding & (col(k.NEXT_CARD) != FIRST_KICK + 1), "the pack was run before the trump was fixed")
        self.fail(bidding & (col(k.TRUMP) != -1), "a trump is fixed before play")
        beggar_turn = (col(k.CURRENT) == (dealer + 1) % N_SEATS) & (stood | begged | gave | ran == 0)
        self.fail((phase == k.STAND_OR_BEG) & ~beggar_turn, "not the beggar's decision, or one taken already")
        dealer_turn = (col(k.CURRENT) == dealer) & (begged == 1) & (stood | gave | ran == 0)
        self.fail((phase == k.GIVE_OR_RUN) & ~dealer_turn, "not the dealer's decision after a beg")
        stand = (stood == 1) & (begged | gave | ran == 0)
        beg = (stood == 0) & (begged == 1) & (gave + ran == 1) & (gave * ran == 0)
        self.fail(play & ~(stand | beg), "play began without a stand, a gift or a run")
        self.fail(play & ((ran == 1) != (col(k.NEXT_CARD) > FIRST_KICK + 1)), "the deck and the run disagree")
        self.fail(play & (col(k.TRUMP) != col(k.KICK) // N_RANKS), "the trump is not the kick's suit")
        begged_suit = self.deck[:, FIRST_KICK] // N_RANKS
        aside_other = (_members(self.bs[:, k.KICKS_ASIDE]) & (_SUITS != begged_suit[:, None])).any(axis=1)
        bad_run = (ran == 1) & ((col(k.TRUMP) == begged_suit) | aside_other)
        self.fail(play & bad_run, "a run kicked on past a new suit, or ended on the begged suit")
        hand_size = _members(self.hands[:, 0] | self.played[:, 0]).sum(axis=1)
        self.fail(play & (col(k.N_TRICKS) != hand_size), "the deal's number of tricks is not the hand size")
        self.fail(play & (col(k.TRICKS_PLAYED) >= col(k.N_TRICKS)), "every trick of the deal is played")

    def check_snapshot(self) -> None:
        """A8.2: who held High, Low and the Jack when play began, and which team won the Jack."""
        col, play = self.col, self.play
        trump = np.maximum(col(k.TRUMP), 0)
        dealt = np.bitwise_or.reduce(self.hands | self.played, axis=1)
        trumps_dealt = dealt & _SUIT_BITS[trump]
        self.fail(play & (self.bs[:, k.TRUMPS_IN_HANDS] != trumps_dealt), "the trumps in hands are not those dealt")
        trumps = _members(trumps_dealt)
        some = trumps.any(axis=1)
        high = np.where(some, N_CARDS - 1 - np.argmax(trumps[:, ::-1], axis=1), -1)
        low = np.where(some, np.argmax(trumps, axis=1), -1)
        jack = trump * N_RANKS + RANK_JACK
        jack = np.where(_at(trumps, jack), jack, -1)
        owner = np.full(trumps.shape, -1)
        for seat in range(N_SEATS):
            owner = np.where(_members(self.hands[:, seat] | self.played[:, seat]), seat, owner)
        columns = ((high, k.HIGH_CARD, k.HIGH_HOLDER), (low, k.LOW_CARD, k.LOW_HOLDER), (jack, k.JACK_CARD, k.JACK_HOLDER))
        for card, card_column, holder_column in columns:
            holder = np.where(card >= 0, _at(owner, card), -1)
            wrong = (col(card_column) != card) | (col(holder_column) != holder)
            self.fail(play & wrong, "the snapshot of who held High, Low and the Jack is wrong")
        won_by = np.where(_members(self.bs[:, k.WON + 1]), 1, np.where(_members(self.bs[:, k.WON]), 0, -1))
        jack_team = np.where(jack >= 0, _at(won_by, jack), -1)
        winner = col(k.JACK_WINNER)
        wrong = np.where(jack_team < 0, winner != -1, (winner < 0) | (winner % 2 != jack_team))
        self.fail(play & wrong, "the Jack's winner is not the team that won it")
