"""One match of All Fours, readable: a one-table view over the compiled engine.

Rules: ``docs/rules.md`` of this repository (Part A; A0 variants in :mod:`allfours_env.rules`), drawn from
the cardgames.zone and novelgames rule pages, pagat's "All Fours in Trinidad" and the BGA
"Caribbean All Fours" help. The rules themselves are written once, in the compiled kernels of
:mod:`allfours_env.vector_kernels` (section numbers A6.5 ... in their comments); a :class:`Game`
holds one table of a :class:`~allfours_env.vector.VectorGame` and reads its state.

A :class:`Game` is one match (or one deal: ``episode="deal"``). Every decision is a call to
:meth:`Game.step` by the seat in :attr:`Game.current`: STAND or BEG (beggar), GIVE_ONE or RUN
(dealer), or a card. Dealing, kicks, runs, redeals and scoring happen inside ``step``. Each
thing that happens is appended to :attr:`Game.events`; awards of points are events with
``points > 0``. Randomness comes only from the ``numpy.random.Generator`` the game is given: the
first-dealer draw (:func:`allfours_env.actions.first_dealer`), then one permutation per deal, drawn
when the deal begins (decks given to the constructor are dealt first).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import typeof

from . import vector_kernels as k
from .actions import *  # noqa: F403  (the vocabulary, importable from here as before)
from .actions import (
    DEAL_OVER,
    EPISODES,
    MATCH_OVER,
    N_ACTIONS,
    PLAY,
    RUN,
    Event,
    IllegalActionError,
    check_start,
    first_dealer,
    illegal_message,
)
from .cards import N_CARDS, N_SEATS, cards_of
from .observation import OBS_SIZE
from .rules import DEFAULT_RULES, Rules
from .vector import VectorGame
from .vector import event_of as _event


def _state(column: int, doc: str = "", kind: type = int) -> property:
    """A property of :class:`Game`: one cell of the table's state row, as ``kind``."""
    return property(lambda game: kind(game._st[column]), doc=doc)


def _bits(column: int, doc: str = "") -> property:
    """A property of :class:`Game`: one bit set of the table's row of bit sets (bit c = card c)."""
    return property(lambda game: int(game._bs[column]), doc=doc)


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
        decks, scores = check_start(rules, decks, dealer, scores)
        if rng is None and (len(decks) == 0 or (dealer is None and not isinstance(rules.first_dealer, int))):
            raise ValueError("a random generator is needed unless every deck and the dealer are given")
        self.rules = rules
        self.rng = rng
        self.episode = episode
        self.start_scores: tuple[int, int] = scores  # before the first deal (a match log records them)
        if dealer is None:
            dealer = first_dealer(rules.first_dealer, lambda: rng.permutation(N_CARDS))
        if not decks:
            decks = [rng.permutation(N_CARDS).tolist()]  # the first deal's, drawn as it begins
        self._core = core = VectorGame(1, episode, events=True, rules=rules)
        # The decks, dealer and scores are checked: the match starts as VectorGame.reset starts it
        # from options, without checking them again.
        core._queue_given(core._all_tables, [decks])
        core._deal_first(core._all_tables, np.array([dealer]), np.array([scores]))
        self._rows()
        self._events: list[Event] = core.events(0)
        self._unread: list[list[int]] = []  # rows of the kernels' event buffer, made Events when the log is read
        self._legal = -1  # the legal actions' bits, once asked for, until the next step

    def _rows(self) -> None:
        """Views of the table's state rows (again after a restore or a new deck, which may replace
        the arrays)."""
        core = self._core
        self._st, self._bs, self._deck, self._trick_no = core._st[0], core._bs[0], core._deck[0], core._trick_no[0]
        self._ev, self._points = core._ev[0], core._points[0]
        # The kernels' arguments, gathered once: a step crosses into compiled code with no lookups.
        self._step_args = (core._st, core._bs, core._deck, core._trick_no, core._given, core._n_given, core._rng, 0)
        self._step_rules = (core._params, core._kick_points, core._points, core._ev, core._n_ev)
        self._observe_args = (core._st, core._bs, core._trick_no, 0)
        self._step_one = _compiled(k.step_one, (*self._step_args, 0, *self._step_rules))
        self._legal_args = (core._st, core._bs, 0, core._params)
        self._legal_bits = _compiled(k.legal_bits, self._legal_args)
        self._observe_rules = (core._params, core._rules_block)
        self._observe_one = _compiled(
            k.observe_one, (*self._observe_args, 0, *self._observe_rules, *_observation_arrays())
        )

    _ROWS = (
        "_st", "_bs", "_deck", "_trick_no", "_ev", "_points", "_step_args", "_step_rules", "_step_one",
        "_observe_args", "_observe_rules", "_observe_one", "_legal_args", "_legal_bits",
    )  # fmt: skip

    def __getstate__(self) -> dict:
        """For copy and pickle: the row views are made again from the copied table."""
        return {name: value for name, value in self.__dict__.items() if name not in self._ROWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._rows()

    # ---------------------------------------------------------------- the state

    @property
    def events(self) -> list[Event]:
        """The log of the match, every event in order (the game's own list). Steps keep their
        events as plain rows until the log is read: making Events at every step cost as much as
        the compiled step itself."""
        if self._unread:
            self._events.extend(map(_event, self._unread))
            self._unread.clear()
        return self._events

    @events.setter
    def events(self, events: list[Event]) -> None:
        """Replace the log (a replay's kept games share the events of one checked replay)."""
        self._unread.clear()
        self._events = events

    phase = _state(k.PHASE)
    current = _state(k.CURRENT, "The seat to act; -1 when the phase is terminal.")

    @property
    def is_over(self) -> bool:
        return self._st[k.PHASE] >= DEAL_OVER

    @property
    def scores(self) -> list[int]:
        return [int(self._st[k.SCORE0]), int(self._st[k.SCORE1])]

    winner = _state(k.WINNER, "The team that won the match, -1 while it goes on.")
    dealer = _state(k.DEALER)

    @property
    def beggar(self) -> int:
        return (self.dealer + 1) % N_SEATS

    deal_number = _state(k.DEAL_NUMBER, "Deals begun (a redeal counts).")

    @property
    def deck(self) -> list[int]:
        """The deck of this deal."""
        return self._deck.tolist()

    next_card = _state(k.NEXT_CARD, "Index in :attr:`deck` of the next card to deal or kick.")
    kick = _state(k.KICK, "The live kick, -1 if none.")
    kicks_aside = _bits(k.KICKS_ASIDE)
    trump = _state(k.TRUMP)
    stood = _state(k.STOOD, kind=bool)
    begged = _state(k.BEGGED, kind=bool)
    gave_one = _state(k.GAVE_ONE_DONE, kind=bool)
    ran = _state(k.RAN, kind=bool)

    @property
    def hands(self) -> list[int]:
        """Each seat's hand as a bit set (bit c = card c)."""
        return [int(h) for h in self._bs[k.HAND : k.HAND + N_SEATS]]

    def hand(self, seat: int) -> list[int]:
        return cards_of(int(self._bs[k.HAND + seat]))

    @property
    def played(self) -> list[int]:
        """Cards each seat has played this deal (bit sets)."""
        return [int(p) for p in self._bs[k.PLAYED : k.PLAYED + N_SEATS]]

    led = _bits(k.LED, "Cards that led their trick (a bit set).")

    @property
    def trick_numbers(self) -> int:
        """4 bits per card: the 1-based number of the trick it was played to (0: not played)."""
        numbers = 0
        for card in np.flatnonzero(self._trick_no):
            numbers |= int(self._trick_no[card]) << (4 * int(card))
        return numbers

    @property
    def won(self) -> list[int]:
        """Cards captured by each team (bit sets)."""
        return [int(self._bs[k.WON]), int(self._bs[k.WON + 1])]

    @property
    def game_totals(self) -> list[int]:
        """Each team's game points (card values) captured this deal."""
        return [int(self._st[k.GAME0]), int(self._st[k.GAME1])]

    @property
    def trick(self) -> list[int]:
        """The cards of the trick in play, in play order."""
        return [int(c) for c in self._st[k.TRICK_CARDS : k.TRICK_CARDS + self._st[k.TRICK_LEN]]]

    def table(self) -> list[tuple[int, int]]:
        """The current trick as (seat, card) pairs in play order."""
        return [((self.leader + i) % N_SEATS, c) for i, c in enumerate(self.trick)]

    leader = _state(k.LEADER)
    led_suit = _state(k.LED_SUIT)
    win_card = _state(k.WIN_CARD, "The best card of the trick in play so far.")
    win_seat = _state(k.WIN_SEAT)
    tricks_played = _state(k.TRICKS_PLAYED)
    n_tricks = _state(k.N_TRICKS)
    trumps_in_hands = _bits(k.TRUMPS_IN_HANDS, "The trumps in the hands when play began (A8.2), a bit set.")
    high_card = _state(k.HIGH_CARD)
    low_card = _state(k.LOW_CARD)
    jack_card = _state(k.JACK_CARD)
    high_holder = _state(k.HIGH_HOLDER)
    low_holder = _state(k.LOW_HOLDER)
    jack_holder = _state(k.JACK_HOLDER)
    jack_winner = _state(k.JACK_WINNER, "The seat that won the trick with the trump jack, -1 before.")

    @property
    def points(self) -> tuple[int, int]:
        """The points each team was awarded in the latest step (or by the first kick, before any)."""
        team0, team1 = self._points.tolist()
        return team0, team1

    def legal_bits(self) -> int:
        """Legal actions as a bit set over action ids 0..55 (0 in a terminal phase)."""
        if self._legal < 0:
            self._legal = int(self._legal_bits(*self._legal_args))
        return self._legal

    def legal_actions(self) -> list[int]:
        return cards_of(self.legal_bits())

    def observe(self, seat: int) -> tuple[np.ndarray, np.ndarray]:
        """``seat``'s observation vector (float32, see :mod:`allfours_env.observation`) and action
        mask (int8[56]: its legal actions if it is the seat to act, else all 0), new arrays."""
        row, mask = _observation_arrays()
        bits = self._observe_one(*self._observe_args, seat, *self._observe_rules, row, mask)
        if bits:  # the seat to act: its mask is the legal actions, kept for step
            self._legal = bits
        return row, mask

    # ---------------------------------------------------------------- playing

    def step(self, action: int) -> None:
        """Apply the decision of :attr:`current`. An illegal action raises and changes nothing."""
        st = self._st
        if st[_PHASE] >= DEAL_OVER:
            what = "match" if self.phase == MATCH_OVER else "deal"
            raise IllegalActionError(f"no action is possible: the {what} is over")
        legal = self._legal
        if legal < 0:
            legal = self.legal_bits()
        if type(action) is not int:
            if isinstance(action, np.integer):
                action = int(action)
            elif isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":  # SB3's predict
                action = int(action)
        if not (type(action) is int and 0 <= action < N_ACTIONS and legal >> action & 1):
            raise IllegalActionError(illegal_message(self.current, self.phase, action, legal))
        self._legal = -1
        if not self._may_start_a_deal(action) or self._core._n_given[0] > st[_NEXT_DECK]:  # or a deck waits
            self._apply(action)
        elif self.rng is not None:
            self._apply_with_a_drawn_deck(action)
        else:
            self._apply_with_no_generator(action)

    def _apply(self, action: int) -> None:
        """The kernels' step of a legal action (checked by :meth:`step`), its events logged."""
        recorded = self._step_one(*self._step_args, action, *self._step_rules)
        self._unread.extend(self._ev[:recorded].tolist())

    def _apply_with_a_drawn_deck(self, action: int) -> None:
        """Apply ``action``, which may begin a deal: a deal takes the generator's next deck, drawn
        only if the deal does begin. The deck is drawn and queued first, and taken back (the
        generator rewound) if no deal began (the match ended, or the pack was run without a redeal)."""
        core, rng = self._core, self.rng
        rewind, queued = rng.bit_generator.state, int(core._n_given[0])
        queue = core._given
        core._give_each(np.array([0]), rng.permutation(N_CARDS)[None])
        if core._given is not queue:  # the queue grew into a new array: the kernels' arguments change
            self._rows()
        self._apply(action)
        if self._st[_NEXT_DECK] == queued:  # no deal began
            core._n_given[0] = queued
            rng.bit_generator.state = rewind

    def _apply_with_no_generator(self, action: int) -> None:
        """Apply ``action``, which may begin a deal, when no generator was given: a deal that
        begins with no given deck left is undone, and a ValueError says so."""
        core = self._core
        saved, logged = core.get_state(), len(self.events)
        self._apply(action)
        if core._n_given[0] >= self._st[_NEXT_DECK]:  # the deal, if one began, took a given deck
            return
        core._restore(saved)
        del self.events[logged:]
        self._rows()
        raise ValueError("the given decks ran out and no random generator was given")

    def _may_start_a_deal(self, action: int) -> bool:
        """Whether ``action`` can begin a deal: running the pack (a redeal) or the deal's last card."""
        if action >= N_CARDS:
            return action == RUN
        st = self._st
        return st[_PHASE] == PLAY and st[k.TRICK_LEN] == N_SEATS - 1 and st[k.TRICKS_PLAYED] + 1 == st[k.N_TRICKS]


_PHASE, _NEXT_DECK = k.PHASE, k.NEXT_DECK  # the columns every step reads, without a module lookup


def _observation_arrays() -> tuple[np.ndarray, np.ndarray]:
    """A new observation row and action mask, as :meth:`Game.observe` fills them."""
    return np.empty(OBS_SIZE, dtype=np.float32), np.empty(N_ACTIONS, dtype=np.int8)


_COMPILED: dict = {}


def _compiled(kernel, args: tuple) -> object:
    """``kernel``'s compiled function for the types of ``args``, to call without numba's dispatch,
    which types every argument at every call (about a microsecond for the step's 12 arrays, a
    tenth of a decision of ``env()``). A one-table game's arguments are always of the same types:
    looked up once per process."""
    compiled = _COMPILED.get(kernel)
    if compiled is None:
        compiled = _COMPILED[kernel] = kernel.compile(tuple(typeof(arg) for arg in args))
    return compiled
