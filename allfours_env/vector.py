"""Many All Fours matches at once: the batched twin of :class:`allfours_env.engine.Game`.

A :class:`VectorGame` plays ``n`` independent matches ("tables") in lockstep, its state held in
fixed-size numpy arrays (hands and histories as 64-bit card sets) and stepped by the compiled
kernels of :mod:`allfours_env.vector_kernels` (numba), where the rules are written, once. The
one-match :class:`allfours_env.engine.Game` is a one-table view of a VectorGame.

>>> import numpy as np
>>> from allfours_env.vector import VectorGame
>>> vg = VectorGame(1024, target_score=7)        # rule variants as keyword arguments (docs/rules.md A0)
>>> vg.reset(seed=0)
>>> rng = np.random.default_rng(0)
>>> while not vg.is_over.all():
...     obs, mask = vg.observe(), vg.legal_mask()  # (n, OBS_SIZE) float32, (n, 56) bool
...     actions = vg.sample_legal(rng)             # or a policy's choice; ended tables are ignored
...     points = vg.step(actions)                  # (n, 2) points each team gained in this step

Per table, ``current`` is the seat to act (-1 once its match is over), ``observe()`` its
observation (``allfours_env.observation``'s layout; seat 0's view at an ended table),
``legal_mask()`` its legal actions. With ``events=True`` each step's events are recorded
(``events(table)``), as :class:`~allfours_env.engine.Game` logs them. ``step`` checks every action first: any illegal one
raises a ValueError naming the table and changes no table. ``restart(tables)`` starts new matches
at some tables (auto-reset for training loops).

Randomness: each table has its own stream (splitmix64), seeded from ``reset(seed)`` through
``numpy.random.SeedSequence``; table ``i`` plays the same match for a given seed whatever ``n``
is. Decks given in the reset options (or later, ``give_deck``) are dealt first. The first dealer
is drawn by :func:`allfours_env.actions.first_dealer` from permutations of the table's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import vector_kernels as k
from .actions import (
    EPISODES,
    EVENT_KINDS,
    N_ACTIONS,
    RESET_OPTIONS,
    Event,
    check_deck,
    check_options,
    check_seed,
    first_dealer,
    illegal_message,
)
from .cards import N_CARDS, N_SEATS
from .observation import OBS_SIZE, rules_block
from .rules import KICK_POINTS, Rules, given_rules
from .state_check import check_state


class KernelArrays(NamedTuple):
    """A VectorGame's state and buffers in the order the kernels take them (:meth:`VectorGame.step_arrays`)."""

    st: np.ndarray
    bs: np.ndarray
    deck: np.ndarray
    trick_no: np.ndarray
    given: np.ndarray
    n_given: np.ndarray
    rng: np.ndarray
    params: np.ndarray
    kick_points: np.ndarray
    gained: np.ndarray
    ev: np.ndarray
    n_ev: np.ndarray
    rules_block: np.ndarray


MAX_TABLES = 2**22  # about 4M tables: a few GB of state, where a mistyped count would ask for terabytes
OTHER_HANDS_SIZE = (N_SEATS - 1) * N_CARDS  # the other seats' hands, as a critic reads them (other_hands)
_GAME_TIE = {"none": k.TIE_NONE, "non_dealer": k.TIE_NON_DEALER, "dealer": k.TIE_DEALER}
_UNDERTRUMP = {
    "allowed": k.UNDER_ALLOWED,
    "forbidden_unless_all_trumps": k.UNDER_UNLESS_ALL_TRUMPS,
    "forbidden_when_can_follow": k.UNDER_WHEN_CAN_FOLLOW,
}


def rule_params(rules: Rules, episode: str = "match") -> np.ndarray:
    """The rules and the episode ("match" or "deal") as the int64 vector the kernels read (``P_*``)."""
    params = np.zeros(k.N_PARAMS, dtype=np.int64)
    params[k.P_TARGET] = rules.target_score
    params[k.P_HANG] = rules.hang_jack_points
    params[k.P_GAME_POINTS] = rules.game_points
    params[k.P_GAME_TIE] = _GAME_TIE[rules.game_tie]
    params[k.P_UNDERTRUMP] = _UNDERTRUMP[rules.undertrump]
    params[k.P_GIVE_TO_TARGET] = rules.give_one_to_reach_target == "allowed"
    params[k.P_GIVE_NEEDS_TRUMP] = rules.give_one_requires_trump
    params[k.P_STAND_NEEDS_TRUMP] = rules.stand_requires_trump
    params[k.P_REDEAL] = rules.exhausted_pack == "redeal"
    params[k.P_SINGLE_TRUMP_BOTH] = rules.single_trump_counts_high_and_low
    params[k.P_DEAL_BATCH] = rules.deal_batch
    params[k.P_DEAL_EPISODE] = episode == "deal"
    return params


def _state_column(column: int | slice, what: str, shape: str = "(n,)") -> property:
    """A read-only property of :class:`VectorGame`: ``column`` of its state at every table, copied."""
    return property(lambda game: game._st[:, column].copy(), doc=f"int64 {shape}: {what}.")


class VectorGame:
    """``n`` matches of All Fours stepped together; see the module docstring.

    ``episode``: "match" (default) plays whole matches; "deal" ends each table's episode when its
    deal is scored (or when the match ends in it), like ``env(episode="deal")``. Rule variants:
    ``rules``, a :class:`~allfours_env.rules.Rules` (valid once made, so taken as it is), or the
    keys of docs/rules.md table A0 as keyword arguments; an unknown key or value raises a
    ValueError listing what is allowed.
    """

    def __init__(
        self, n: int, episode: str = "match", events: bool = False, rules: Rules | None = None, **rule_kwargs: Any
    ) -> None:
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= MAX_TABLES:
            raise ValueError(f"n (the number of tables) must be an integer 1..{MAX_TABLES:,}, got {n!r}")
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
        if not isinstance(events, bool):
            raise ValueError(f"events must be True or False (record each step's events), got {events!r}")
        self.n = n = int(n)
        self.rules = given_rules(rules, rule_kwargs)
        self.episode = episode
        self._params = rule_params(self.rules, episode)
        self._kick_points = np.array(KICK_POINTS[self.rules.kick_points], dtype=np.int64)
        self._rules_block = rules_block(self.rules)
        self._st = np.full((n, k.N_FIELDS), -1, dtype=np.int64)
        self._st[:, k.PHASE] = k.MATCH_OVER  # nothing to play before reset()
        self._bs = np.zeros((n, k.N_SETS), dtype=np.uint64)
        self._deck = np.zeros((n, N_CARDS), dtype=np.int8)
        self._trick_no = np.zeros((n, N_CARDS), dtype=np.int8)
        self._given = np.zeros((n, 0, N_CARDS), dtype=np.int8)
        self._n_given = np.zeros(n, dtype=np.int64)
        self._rng = np.zeros(n, dtype=np.uint64)
        self._points = np.zeros((n, 2), dtype=np.int64)
        self._mask = np.zeros((n, N_ACTIONS), dtype=bool)
        self._all_tables = np.ones(n, dtype=bool)
        self._ev = np.zeros((n, k.MAX_EVENTS if events else 0, k.EVENT_FIELDS), dtype=np.int64)
        self._n_ev = np.zeros(n, dtype=np.int64)

    # ---------------------------------------------------------------- starting matches

    def reset(self, seed: int | None = None, options: Sequence[dict | None] | None = None) -> np.ndarray:
        """Start a new match at every table.

        ``seed`` seeds every table's random stream (None: fresh entropy; else an int 0 or more).
        ``options``: None, or a list of ``n`` dicts (or None), each like the env's reset options
        ``{"decks": [deck, ...], "dealer": seat, "scores": [team0, team1]}``. A bad seed or bad
        options raise a ValueError (naming the table) and change nothing. Returns the points
        (int64 (n, 2)) each team gained from the first kick at each table.
        """
        streams = np.random.SeedSequence(check_seed(seed)).generate_state(self.n, np.uint64)
        return self.restart(np.ones(self.n, dtype=bool), options, streams)

    def restart(
        self, tables: np.ndarray, options: Sequence[dict | None] | None = None, streams: np.ndarray | None = None
    ) -> np.ndarray:
        """Start a new match at every table where the bool array ``tables`` is True; the others go
        on. ``options``: None (score 0-0, dealer by the ``first_dealer`` rule, decks from the
        table's stream), or a list of ``n`` dicts or Nones as :meth:`reset` takes them (entries of
        tables not restarted are ignored); bad ones raise a ValueError and change nothing.
        ``streams`` (uint64 (n,)), if given, seeds the random streams of the restarted tables.
        Returns the points each team gained at each restarted table from its first kick."""
        tables = self._check_tables(tables)
        decks, dealers, scores = self._starts(tables, options)
        if streams is not None:
            self._rng[tables] = np.asarray(streams, dtype=np.uint64)[tables]
        scratch = np.empty(N_CARDS, dtype=np.int8)

        def permutation(t: int) -> np.ndarray:
            k.shuffle(self._rng, t, scratch)
            return scratch

        for t in np.flatnonzero(tables & (dealers < 0)):  # a dealer of -1: drawn from the table's stream
            dealers[t] = first_dealer(self.rules.first_dealer, lambda t=t: permutation(t))
        self._queue_given(tables, decks)
        return self._deal_first(tables, dealers, scores)

    def _starts(
        self, tables: np.ndarray, options: Sequence[dict | None] | None
    ) -> tuple[list[list[list[int]]], np.ndarray, np.ndarray]:
        """The checked decks, dealers (-1: by the rule) and scores of the starts at ``tables``."""
        n = self.n
        decks: list[list[list[int]]] = [[] for _ in range(n)]
        dealers = np.full(n, -1, dtype=np.int64)
        scores = np.zeros((n, 2), dtype=np.int64)
        if options is not None:
            listed = isinstance(options, Sequence) and not isinstance(options, str | bytes)
            listed = listed or isinstance(options, np.ndarray) and options.ndim == 1
            if not listed or len(options) != n:
                got = f"{len(options)} entries" if listed else type(options).__name__
                raise ValueError(
                    f"options must be None or a list of {n} dicts or Nones, one per table (each dict with keys "
                    f"{RESET_OPTIONS}); got {got}"
                )
            for t in np.flatnonzero(tables):
                decks[t], dealer, scores[t] = check_options(self.rules, options[t], f"options[{int(t)}]")
                dealers[t] = -1 if dealer is None else dealer
        return decks, dealers, scores

    def _queue_given(self, tables: np.ndarray, decks: Sequence | dict[int, list] | None) -> None:
        """Empty the deck queues of ``tables`` (matches about to start) and queue ``decks[t]``."""
        self._n_given[tables] = 0
        self._st[tables, k.NEXT_DECK] = 0
        if decks is None:
            return
        starting = np.flatnonzero(tables)
        queues = [decks[t] for t in starting.tolist()]
        for i in range(max(map(len, queues), default=0)):  # each table's i-th deck, all at once
            having = [j for j, queue in enumerate(queues) if len(queue) > i]
            self._give_each(starting[having], np.array([queues[j][i] for j in having]))

    def _deal_first(self, tables: np.ndarray, dealers: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The first deal of the matches at ``tables``, with their ``dealers`` (their deck queues
        set by :meth:`_queue_given`)."""
        self._points[:] = 0
        self._n_ev[tables] = 0
        k.start_matches(
            self._st, self._bs, self._deck, self._trick_no, self._given, self._n_given, dealers, scores,
            self._rng, tables, self._params, self._kick_points, self._points, self._ev, self._n_ev,
        )
        return self._points.copy()

    def give_deck(self, table: int, deck: Sequence[int]) -> None:
        """Queue ``deck`` (a permutation of 0..51) for ``table``'s next deal that has none given:
        deals take the given decks in order, then shuffle from the table's stream."""
        self._give_each(np.array([table]), np.array([check_deck(deck)]))

    def _give_each(self, tables: np.ndarray, decks: np.ndarray) -> None:
        """Queue ``decks[i]`` (checked already) for table ``tables[i]`` (distinct tables)."""
        counts = self._n_given[tables]
        if counts.max() >= self._given.shape[1]:  # no room left: the deck queues grow by doubling
            grown = np.zeros((self.n, max(4, 2 * (int(counts.max()) + 1)), N_CARDS), dtype=np.int8)
            grown[:, : self._given.shape[1]] = self._given
            self._given = grown
        self._given[tables, counts] = decks
        self._n_given[tables] = counts + 1

    def decks_waiting(self) -> np.ndarray:
        """int64 (n,): the given decks each table's later deals have not taken yet (-1: a deal
        began with none given, and took one from the table's stream)."""
        return self._n_given - self._st[:, k.NEXT_DECK]

    def event_buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' event buffers, read only: ``ev`` int64 (n, capacity, 7) (kind code in
        ``actions.EVENT_KINDS``, seat, team, points, card, suit, deal) and ``n_ev`` (n,), the
        events of each table's latest step (see :meth:`events`); for batched tallies."""
        return self._ev, self._n_ev

    _STATE_ARRAYS = ("_st", "_bs", "_deck", "_trick_no", "_given", "_n_given", "_rng")

    def get_state(self) -> dict[str, np.ndarray]:
        """Every table's state and random stream as plain arrays (copies), for checkpoints:
        ``set_state`` of it continues exactly where this game is."""
        return {name.lstrip("_"): getattr(self, name).copy() for name in self._STATE_ARRAYS}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Continue from a :meth:`get_state` of a VectorGame with the same ``n`` and rules; a state
        that does not fit (names, shapes, dtypes) or is not one the engine can go on from (values
        out of range, a position the rules cannot reach: :mod:`allfours_env.state_check`) raises a
        ValueError naming what is wrong, and changes nothing."""
        arrays = {}
        for name in self._STATE_ARRAYS:
            mine, theirs = getattr(self, name), state.get(name.lstrip("_")) if isinstance(state, dict) else None
            fits = isinstance(theirs, np.ndarray) and theirs.dtype == mine.dtype and theirs.ndim == mine.ndim
            fits = fits and theirs.shape[0] == self.n and theirs.shape[2:] == mine.shape[2:]
            if not fits or (name != "_given" and theirs.shape != mine.shape):
                raise ValueError(f"state[{name.lstrip('_')!r}] does not fit a VectorGame of {self.n} tables")
            arrays[name] = theirs.copy()
        check_state({name.lstrip("_"): array for name, array in arrays.items()}, self._params)
        self.__dict__.update(arrays)

    def _restore(self, state: dict[str, np.ndarray]) -> None:
        """Go back to a :meth:`get_state` of this very game, taken over unchecked: an undo, for
        the engine's own use (:meth:`set_state` checks states from anywhere else)."""
        self.__dict__.update({name: state[name.lstrip("_")] for name in self._STATE_ARRAYS})

    def repeat(self, copies: int) -> VectorGame:
        """A new VectorGame with ``copies`` copies of every table, table ``t * copies + j`` being
        copy j of table t (state and random stream alike): branch each position into several
        continuations, as search does."""
        if isinstance(copies, bool) or not isinstance(copies, int | np.integer) or copies < 1:
            raise ValueError(f"copies must be a positive integer, got {copies!r}")
        out = VectorGame.__new__(VectorGame)
        out.__dict__.update(self.__dict__)
        out.n = self.n * int(copies)
        for name in (*self._STATE_ARRAYS, "_points", "_mask", "_all_tables", "_ev", "_n_ev"):
            setattr(out, name, np.repeat(getattr(self, name), copies, axis=0))
        return out

    # ---------------------------------------------------------------- queries

    current = _state_column(k.CURRENT, "the seat to act at each table, -1 where its match (or deal episode) is over")
    scores = _state_column(slice(k.SCORE0, k.SCORE1 + 1), "each table's score, team 0 then team 1", "(n, 2)")
    winner = _state_column(k.WINNER, "the team that won each table's match, -1 while it goes on")
    dealer = _state_column(k.DEALER, "the dealer of each table's deal")
    deal_number = _state_column(k.DEAL_NUMBER, "the number of deals begun at each table (a redeal counts)")
    phase = _state_column(k.PHASE, "each table's phase, as ``allfours_env.engine`` numbers them (PHASE_NAMES)")

    @property
    def is_over(self) -> np.ndarray:
        """bool (n,): whether each table's match (or deal episode) is over."""
        return self._st[:, k.PHASE] >= k.DEAL_OVER

    @property
    def hands(self) -> np.ndarray:
        """uint64 (n, 4): each seat's hand as a bit set (bit c = card c), seat 0 first. Hidden
        information: for centralized critics and search, never for a policy's input."""
        return self._bs[:, k.HAND : k.HAND + N_SEATS].copy()

    def other_hands(self, seats: np.ndarray) -> np.ndarray:
        """float32 (n, OTHER_HANDS_SIZE): at each table the hands of the three seats after
        ``seats[t]`` (next, partner, previous; 52 card flags each): what a critic may read in
        training ("perfect-training, imperfect-execution") and a policy may not."""
        others = self._bs[np.arange(self.n)[:, None], k.HAND + (seats[:, None] + np.arange(1, N_SEATS)) % N_SEATS]
        bits = np.unpackbits(others[..., None].view(np.uint8), axis=-1, bitorder="little")  # (n, 3, 64)
        return bits[..., :N_CARDS].reshape(self.n, OTHER_HANDS_SIZE).astype(np.float32)

    def kernel_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(st, bs, params)``: the state arrays and rule parameters, for compiled policies that
        read a table's state (columns in :mod:`allfours_env.vector_kernels`). Read only."""
        return self._st, self._bs, self._params

    def step_arrays(self) -> KernelArrays:
        """The arrays :func:`~allfours_env.vector_kernels.apply_action` and
        :func:`~allfours_env.vector_kernels.observe_row` work on, for compiled players that step
        their tables themselves (``ExpertBot.play_vector``). Live, not copies."""
        return KernelArrays(
            self._st, self._bs, self._deck, self._trick_no, self._given, self._n_given, self._rng, self._params,
            self._kick_points, self._points, self._ev, self._n_ev, self._rules_block,
        )

    def legal_mask(self) -> np.ndarray:
        """bool (n, 56): the legal actions of each table's seat to act (all False where it is over)."""
        k.legal_masks(self._st, self._bs, self._params, self._mask)
        return self._mask.copy()

    def observe(self, seats: np.ndarray | None = None, tables: np.ndarray | None = None) -> np.ndarray:
        """float32 (n, OBS_SIZE): each table's observation for the seat to act (seat 0 where the
        table is over), or for ``seats[t]`` (int array of seats 0..3) if given; with ``tables``
        (an int array of table indices), only those tables' rows, in that order."""
        if seats is None:
            seats = np.maximum(self._st[:, k.CURRENT], 0)
        else:
            seats = np.asarray(seats)
            if seats.shape != (self.n,) or seats.dtype.kind not in "iu" or ((seats < 0) | (seats >= N_SEATS)).any():
                raise ValueError(f"seats must be an int array of shape ({self.n},) with seats 0..3")
            seats = seats.astype(np.int64, copy=False)
        st, bs, trick_no = self._st, self._bs, self._trick_no
        if tables is not None:
            tables = np.asarray(tables)
            if tables.ndim != 1 or tables.dtype.kind not in "iu" or ((tables < 0) | (tables >= self.n)).any():
                raise ValueError(f"tables must be a 1-d int array of table indices 0..{self.n - 1}")
            st, bs, trick_no, seats = st[tables], bs[tables], trick_no[tables], seats[tables]
        out = np.empty((len(st), OBS_SIZE), dtype=np.float32)
        k.observe_all(st, bs, trick_no, seats, self._params, self._rules_block, out)
        return out

    def sample_legal(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random legal action per table (0 where the table is over), drawn from ``rng``."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError(
                f"sample_legal takes a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
            )
        out = np.empty(self.n, dtype=np.int64)
        k.sample_legal_all(self._st, self._bs, self._params, rng.random(self.n), out)
        return out

    # ---------------------------------------------------------------- stepping

    def step(self, actions: np.ndarray, tables: np.ndarray | None = None) -> np.ndarray:
        """Apply one action per table (entries of ended tables are ignored) and return the points
        (int64 (n, 2)) each team gained in this step. ``tables``: a bool mask of the tables that
        move (None: all); the others keep their state and their entries are ignored, so that
        some seats can answer while others wait (a learner's tables while opponents play).
        Any illegal action raises a ValueError naming the first such table, and no table changes."""
        actions = np.asarray(actions)
        if actions.shape != (self.n,) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an int array of shape ({self.n},), one action id 0..55 per table; "
                f"got {actions.dtype} {actions.shape}"
            )
        tables = self._all_tables if tables is None else self._check_tables(tables)
        actions = actions.astype(np.int64, copy=False)
        bad = k.first_illegal(self._st, self._bs, actions, tables, self._params)
        if bad >= 0:
            legal = int(k.legal_bits(self._st, self._bs, bad, self._params))
            why = illegal_message(self._st[bad, k.CURRENT], self._st[bad, k.PHASE], int(actions[bad]), legal)
            raise ValueError(f"table {bad}: {why}; no table changed")
        self._n_ev[tables] = 0  # (also at tables already over, which record nothing)
        k.step_all(
            self._st, self._bs, self._deck, self._trick_no, self._given, self._n_given, self._rng, actions, tables,
            self._params, self._kick_points, self._points, self._ev, self._n_ev,
        )
        return self._points.copy()

    def events(self, table: int) -> list[Event]:
        """The events of ``table``'s latest step (or of its match's start, after ``reset`` or
        ``restart``), in order, as the scalar engine logs them; needs ``VectorGame(..., events=True)``."""
        if self._ev.shape[1] == 0:
            raise ValueError("this VectorGame records no events: make it with events=True")
        count = int(self._n_ev[table])
        if count > self._ev.shape[1]:
            raise RuntimeError(f"table {table} made {count} events in one step; the buffer holds {self._ev.shape[1]}")
        return [event_of(row) for row in self._ev[table, :count].tolist()]

    def _check_tables(self, tables: np.ndarray) -> np.ndarray:
        tables = np.asarray(tables)
        if tables.shape != (self.n,) or tables.dtype != bool:
            raise ValueError(f"tables must be a bool array of shape ({self.n},), got {tables.dtype} {tables.shape}")
        return tables


__all__ = ["VectorGame", "rule_params"]


def event_of(row: list[int]) -> Event:
    """The :class:`Event` of one row of the kernels' event buffer (a list, taken over: its kind
    code is replaced by the kind's name)."""
    row[0] = EVENT_KINDS[row[0]]
    return _make_event(row)


_make_event = Event._make  # tuple.__new__ on a list: no Python-level __new__ per event
