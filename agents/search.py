"""Determinized search (Perfect Information Monte Carlo): the strongest bot that needs no training.

At each decision with more than one legal action the bot

1. samples ``worlds`` deals of the cards it has not seen to the other three hands and the stock,
   each consistent with everything its observation shows: its own hand, the cards played by each
   seat, the kicks, the number of cards each seat still holds, the suits a seat has shown it
   lacks by not following (voids, :func:`agents.hand_reading.voids`), and a card of the kick's
   suit where a rule variant allowed a stand or a gift only with one;
2. rebuilds each world as a deck dealt by the engine's convention, replays the deal's public
   history (stand / beg / give one / run, every card played) on a :class:`VectorGame` with one
   table per (world, legal action), and takes each table's candidate action;
3. plays every table to the end of the deal with the rollout policy, every seat by it, and
   scores it by the chance to win the match from the final score (the match model of
   :mod:`allfours_env.match_model`; 1 or 0 where the match ended in the deal);
4. picks the action with the best mean over the worlds (ties: the lowest action id), but keeps
   the expert's own choice (or ``keep``'s) unless the best beats it by more than ``margin`` (a
   chance of the match): with a few dozen worlds most differences between good actions are
   sampling noise, and the expert is a better tie-breaker than the noise.

The default rollout policy is the expert (:mod:`agents.expert`, compiled, one call for all the
tables of a tick): each seat plays as the expert would from what it knows in that world, its own
hand and what has been played, so the searcher improves on the expert by one step of lookahead.
``rollout=greedy`` is the older, cheaper policy of :func:`agents.search_kernels.rollout_actions`,
which looks one trick ahead seeing the world's hands.

Options (``agents.make("search:worlds=32,ms=50")``): ``worlds``, the most worlds sampled per
decision (default 64); ``ms``, the time budget per decision in milliseconds (default 100;
``ms=0``: no budget); ``rollout``, "expert" (default), "greedy", or a policy file (its network
plays every seat of the rollouts, its best action; expert iteration's search on top of its
student); ``margin`` (default 0.01; 0: plain argmax); ``keep``, "expert" (default) or a policy
file: whose choice is kept unless a searched action beats it by the margin (a network's: search
on top of the network as its prior, with any rollout policy); ``confirm`` (with ``ms=0``; default 0,
off), the worlds to search in all before leaving the kept choice: when the first ``worlds``
say another action beats it by the margin, ``confirm - worlds`` more worlds are searched and the
choice is made on all of them. ``worlds`` and ``confirm`` are at most ``MAX_WORLDS`` (4,096:
about 6 s and 240 MB a decision among a dozen legal actions here) and ``ms`` at most ``MAX_MS``
(a minute), so that no option can ask for unbounded memory or time. ``opponents``, a bot
(an :func:`agents.make` spec other than a search: ``random``, ``rule_based``, ``expert``,
``pretrained``, ``student``, a policy file) the other team is assumed to play as (default none;
see "Opponent model").
Search's departures from the expert are mostly noise at a few dozen worlds (of those at 32 worlds,
an independent search repeats 27%, and at 128 worlds returns to the expert's choice 60% of the
time), so confirming them is cheap where it matters: for labels that teach a network.

Removed on 2026-12-07 (issue 63: no shipped bot, config or command used them; their figures stay
in the docs):

* ``explore``, the rollout policy's chance of a uniformly random legal action (0 by default since
  the expert became the rollout policy, 2026-12-01; no figure was measured with it);
* ``infer``, worlds drawn in proportion to a network's likelihood of the other seats' decisions
  (policy-based inference, Rebstock, Solinas, Buro et al. 2019): ``infer=student``'s worlds named
  the hidden cards' holders a little better than uniform sampling on the student's own play
  (docs/results.md, "Policy-based inference"), but on top of the student it made +0.101 points a
  deal against ``search_v1`` where the same search without it made +0.085, within the noise, at
  four times the cost (docs/expert_iteration.md, "What each lever adds");
* ``cut`` and ``value``, the value cut: the rollouts stopped after ``cut`` tricks and the rest of
  the deal valued by a value network (``agents/values.py``, the shipped ``value_v1.npz``, fitted
  by ``python -m train.values``). On top of the student, the student's rollouts cut after one
  trick made -0.081 points a deal against ``search_v1`` where whole ``expert`` rollouts made
  +0.085: the network's error (0.115 of a chance, root mean square) dwarfed the differences
  between the actions it had to rank (docs/expert_iteration.md, "What each lever adds").

Opponent model (``search:opponents=TARGET``): a local best response to TARGET, the search of
issue 42 that measures how much can be taken from a bot that is known. Two things change:

* rollouts: the other team's seats are played by TARGET (through :class:`allfours_env.arena.Arena`,
  a batch bot for all the tables at once, any other bot table by table), my team's by the rollout
  policy as without the option;
* worlds: where TARGET is deterministic (a bot with ``act_batch``, such as ``expert`` or a
  network, or a heuristic :class:`agents.hand_reading.PhaseBot` such as ``rule_based``), only the
  worlds in which TARGET would have made every decision the other team made this deal (stand,
  beg, give one, run, each card played) are searched: TARGET's likelihood of what was seen is 1
  in those and 0 in the others. They are drawn by rejection, in rounds of the batch's worlds, until
  the batch is full or ``MODEL_ROUNDS`` rounds are drawn (a batch may then hold fewer worlds);
  where no world agrees (TARGET does not explain the play: the opponents are not TARGET) the
  batch searches the first round's worlds, as without the option, so a decision is always made.
  Any other TARGET (``random``) is taken as uniform over the legal actions: its likelihood is the
  same in every world, and the worlds are those of the plain search.

Without the option nothing changes: the rollouts and worlds (and the draws from the seed) are
those of the plain search.

Against ``rule_based`` over 100 deal boards (``python -m eval search:opponents=rule_based
rule_based --boards 100 --first-board 1000000000 --episode deal``, and the same with ``search``)
the model gained nothing that shows at this size: +0.60 [+0.36, +0.84] points a deal, the plain
search +0.62 [+0.36, +0.89]. Under the default budget it searched 26 worlds at a decision with a
choice in 118 ms (the plain search 64 worlds in 31 ms), on a machine shared with another job:
rule_based is asked table by table in Python, in the rollouts and for the worlds, of which 12%
agreed with its play (14% of batches found none and searched the plain worlds).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator

import numpy as np

from allfours_env import BEG, GIVE_ONE, RUN, STAND, View, decode
from allfours_env.arena import Arena
from allfours_env.cards import N_CARDS, N_RANKS, N_SEATS, SUIT_MASK, cards_of
from allfours_env.engine import CARDS_DEALT, RUN_CARDS, deal_seats
from allfours_env.rules import KICK_POINTS, Rules
from allfours_env.vector import VectorGame

from .base import Bot, Observation, SeededBot, act_rows, legal_actions, make, player_bots
from .expert import expert_actions
from .hand_reading import PhaseBot, cards_left, unseen, voids
from allfours_env.match_model import MAX_MODELLED_TARGET, match_equity
from .policy import PolicyBot
from .program import is_program_spec
from .search_kernels import rollout_actions, sample_worlds

DEFAULT_WORLDS = 64
DEFAULT_MARGIN = 0.01  # chance of the match by which a searched action must beat the kept choice
ROLLOUTS = ("expert", "greedy")
POLICY_SUFFIXES = (".npz", ".zip")  # an option's value that names a policy file
DEFAULT_ROLLOUT = "expert"
DEFAULT_MS = 100.0  # time budget per decision, milliseconds (0: none)
MAX_WORLDS = 4096  # the most worlds (and confirm) an option may ask for
MAX_MS = 60_000.0  # the longest time budget an option may ask for
MIN_BATCH_WORLDS = 8  # the fewest worlds a batch under a time budget searches
BATCH_TABLES = 64  # under a time budget, a batch holds at most this many tables (worlds x legal actions)
LARGE_BATCH_TABLES = 1024  # search() without a budget: batches of at most this many tables (faster than one huge one)
MAX_RESAMPLES = 1000
MODEL_ROUNDS = 8  # with opponents: rounds of worlds drawn for a batch before it settles for fewer (or none agree)
KICK_POSITIONS = (CARDS_DEALT, CARDS_DEALT + 1 + RUN_CARDS, CARDS_DEALT + 2 + 2 * RUN_CARDS, N_CARDS - 1)
RUN_STARTS = (CARDS_DEALT + 1, CARDS_DEALT + 2 + RUN_CARDS)  # first card of the first and second run
OTHERS = (1, 2, 3)  # the other seats, relative to the searcher (seat 0 in every world)


@dataclasses.dataclass(frozen=True)
class Position:
    """What a world rebuilds from the observation: the deal's public history, seats relative to me."""

    rules: Rules
    dealer: int
    kicks: tuple[int, ...]  # the kicks set aside (any order: all of the begged suit), then the live one
    runs_dealt: int  # runs that dealt cards to the hands (0, 1 or 2)
    start_scores: tuple[int, int]  # own team, other team, before this deal's kicks and give-one
    history: tuple[int, ...]  # the public actions of the deal, in order
    played: tuple[int, int, int, int]  # cards each seat has played (bit sets)
    hand: int
    left: tuple[int, int, int, int]  # cards each seat still holds
    unseen: int
    voids: tuple[int, int, int, int]  # suits each seat has shown it lacks (bit s = suit s)
    must_hold: tuple[tuple[int, int], ...]  # (seat, cards): the seat was dealt one of these cards

    @classmethod
    def from_view(cls, view: View) -> Position:
        rules = view.rules
        aside = cards_of(view.kicks_aside_bits)
        kicks = tuple(aside) + ((view.kick,) if view.kick is not None else ())
        kick_points = KICK_POINTS[rules.kick_points]
        dealer_team = view.dealer % 2
        gained = [0, 0]
        gained[dealer_team] += sum(kick_points[c % N_RANKS] for c in kicks)
        history: list[int] = []
        if view.stood:
            history.append(STAND)
        elif view.begged:
            history.append(BEG)
            if view.gave_one:
                history.append(GIVE_ONE)
                gained[1 - dealer_team] += 1
            elif view.ran:
                history.append(RUN)
        history += [card for trick in view.tricks for _, card in trick]
        # A stand or a gift that the rules allow only with a card of the kick's suit shows one.
        must_hold = []
        if view.kick is not None or aside:
            suit_bits = SUIT_MASK[kicks[0] // N_RANKS]
            beggar = (view.dealer + 1) % N_SEATS
            if view.stood and rules.stand_requires_trump:
                must_hold.append((beggar, suit_bits))
            if view.gave_one and rules.give_one_requires_trump:
                must_hold.append((view.dealer, suit_bits))
        return cls(
            rules=rules,
            dealer=view.dealer,
            kicks=kicks,
            runs_dealt=min(len(aside), len(RUN_STARTS)),
            start_scores=(view.scores[0] - gained[0], view.scores[1] - gained[1]),
            history=tuple(history),
            played=view.played_bits,
            hand=view.hand_bits,
            left=cards_left(view),
            unseen=unseen(view),
            voids=_with_undertrump_voids(voids(view, view.trump), view, rules),
            must_hold=tuple((seat, bits) for seat, bits in must_hold if seat != 0),
        )


def _with_undertrump_voids(shown: tuple[int, ...], view: View, rules: Rules) -> tuple[int, ...]:
    """Voids that an undertrump ban makes certain: under "forbidden_when_can_follow" a seat that
    undertrumped a plain-suit lead lacks that suit; under "forbidden_unless_all_trumps" it held
    nothing but trumps (A7.4)."""
    if rules.undertrump == "allowed" or view.trump is None:
        return shown
    out = list(shown)
    trump = view.trump
    for trick in view.tricks:
        led = trick[0][1] // N_RANKS
        if led == trump:
            continue
        best_trump = -1
        for seat, card in trick:
            if card // N_RANKS != trump:
                continue
            if card < best_trump:  # an undertrump
                lacks = 1 << led if rules.undertrump == "forbidden_when_can_follow" else 0b1111 & ~(1 << trump)
                out[seat] |= lacks
            best_trump = max(best_trump, card)
    return tuple(out)


def sample_hidden(position: Position, rng: np.random.Generator, n_worlds: int) -> np.ndarray:
    """Cards held by each seat in ``n_worlds`` worlds consistent with ``position``: (worlds, 4)
    bit sets, seat 0 my hand. The unseen cards go to the other seats and the stock at random,
    each seat's count as the observation says, never a suit it has shown it lacks
    (:func:`agents.search_kernels.sample_worlds`), and a card of the kick's suit to a seat whose
    stand or gift the rules allowed only with one (``stand_requires_trump``,
    ``give_one_requires_trump``)."""
    cards = np.array(cards_of(position.unseen), dtype=np.int64)
    others = [position.left[s] for s in OTHERS]
    room = np.array([*others, len(cards) - sum(others)], dtype=np.int64)
    may_hold = np.array([0b1111 & ~position.voids[s] for s in OTHERS] + [0b1111], dtype=np.int64)
    others_held = np.zeros((n_worlds, len(OTHERS)), dtype=np.uint64)
    todo = np.arange(n_worlds)
    for _ in range(MAX_RESAMPLES):
        orders = rng.permuted(np.tile(cards, (len(todo), 1)), axis=1)
        held = np.zeros((len(todo), len(OTHERS)), dtype=np.uint64)
        sample_worlds(orders, room, may_hold, rng.random((len(todo), 2 * len(cards))), held)
        others_held[todo] = held
        ok = np.ones(len(todo), dtype=bool)
        for seat, bits in position.must_hold:  # rare (two rule variants): rejection is enough
            ok &= ((held[:, seat - 1] | np.uint64(position.played[seat])) & np.uint64(bits)) != 0
        todo = todo[~ok]
        if not len(todo):
            break
    else:
        raise RuntimeError(f"no world consistent with the observation after {MAX_RESAMPLES} tries")
    hands = np.empty((n_worlds, N_SEATS), dtype=np.uint64)
    hands[:, 0], hands[:, 1:] = position.hand, others_held
    return hands


def world_deck(
    position: Position, held: tuple[int, ...], rng: np.random.Generator, runs_drawn: bool = False
) -> list[int]:
    """The deck that deals this world by the engine's convention: each seat's cards of the deal
    (held now and played) at its deal positions, the kicks at the kick positions, the stock
    shuffled into the rest. Which of a seat's cards came with a run is hidden: they go to its
    positions in card order (enough for the play, which begins after the runs), or with
    ``runs_drawn`` in a random order, so that the hands held at the bids are drawn too."""
    deck = [-1] * N_CARDS
    batch = position.rules.deal_batch
    positions = [[] for _ in range(N_SEATS)]
    for k, seat in enumerate(deal_seats(position.dealer, CARDS_DEALT, batch)):
        positions[seat].append(k)
    for start in RUN_STARTS[: position.runs_dealt]:
        for k, seat in enumerate(deal_seats(position.dealer, RUN_CARDS, batch)):
            positions[seat].append(start + k)
    dealt = 0
    for seat in range(N_SEATS):
        cards = cards_of(held[seat] | position.played[seat])
        if runs_drawn and position.runs_dealt:
            cards = rng.permutation(cards).tolist()
        for index, card in zip(positions[seat], cards, strict=True):
            deck[index] = card
            dealt |= 1 << card
    for index, card in zip(KICK_POSITIONS, position.kicks):
        deck[index] = card
        dealt |= 1 << card
    stock = iter(rng.permutation(cards_of(((1 << N_CARDS) - 1) & ~dealt)).tolist())
    return [card if card >= 0 else next(stock) for card in deck]


def match_value(scores: np.ndarray, winner: np.ndarray, rules: Rules) -> np.ndarray:
    """My team's (team 0's) chance to win the match at the end of each table's deal."""
    target = rules.target_score
    if target > MAX_MODELLED_TARGET:  # far from the target: the point difference decides
        value = 0.5 + (scores[:, 0] - scores[:, 1]) / (4.0 * target)
    else:
        value = np.array([match_equity(int(a), int(b), rules) for a, b in scores])
    return np.where(winner == 0, 1.0, np.where(winner == 1, 0.0, value))


@dataclasses.dataclass(frozen=True)
class Searched:
    """What one decision with a choice searched: worlds, batches, seconds in all and in the slowest
    batch, the legal actions and each one's mean value over the worlds (the chance to win the match);
    from :meth:`SearchBot.search` also each one's mean ``points`` (the deal's points of my team
    minus the other's, at the end of the deal in the rollouts)."""

    worlds: int
    batches: int
    seconds: float
    slowest_batch: float
    actions: np.ndarray
    values: np.ndarray
    points: np.ndarray | None = None

    def regret(self, action: int) -> float:
        """The best action's value minus ``action``'s (a chance of the match; 0 for the best)."""
        return float(self.values.max() - self.values[np.flatnonzero(self.actions == action)[0]])


def even_batch(worlds_left: int, n_actions: int) -> int:
    """The worlds of a batch when time is not short: ``worlds_left`` split evenly into as few
    batches as hold at most ``BATCH_TABLES`` tables (worlds x actions) each, or
    ``MIN_BATCH_WORLDS`` worlds where the actions are many (see the module docstring)."""
    cap = max(MIN_BATCH_WORLDS, BATCH_TABLES // n_actions)
    return -(-worlds_left // -(-worlds_left // cap))


def next_batch(worlds_left: int, n_actions: int, done: int, elapsed: float, seconds_left: float) -> int:
    """Worlds in the next batch of a budgeted decision that has searched ``done`` worlds in
    ``elapsed`` seconds and has ``seconds_left`` (> 0): as many as the time per world measured so
    far says fit, but at least ``MIN_BATCH_WORLDS`` (or ``worlds_left``) and at most
    :func:`even_batch`."""
    fit = int(seconds_left * done / elapsed) if elapsed > 0 else worlds_left
    return min(even_batch(worlds_left, n_actions), max(MIN_BATCH_WORLDS, fit))


def _policy_option(option: str, value: str, names: tuple[str, ...]) -> PolicyBot | None:
    """The network of an option that takes one of ``names`` or a policy file (None for a name);
    a ValueError naming what is allowed otherwise."""
    if isinstance(value, str) and value.endswith(POLICY_SUFFIXES):
        return PolicyBot.from_file(value)  # deterministic: its best action
    if value not in names:
        allowed = f"'{names[0]}'" if len(names) == 1 else f"one of {names}"
        raise ValueError(f"search option {option} must be {allowed} or a policy file (.npz or .zip), got {value!r}")
    return None


def _opponent_model(spec: str | None) -> Bot | None:
    """The bot of the ``opponents`` option (None: no model); a ValueError naming what is allowed
    for an unknown bot or a search (a search in every rollout would be far too slow)."""
    if spec is None:
        return None
    names = [name for name in player_bots() if not name.startswith("search")]
    problem = ValueError(
        f"search option opponents must be a bot that is not a search, one of {names} or a policy file "
        f"(.npz or .zip), got {spec!r}"
    )
    if not isinstance(spec, str) or spec.partition(":")[0].strip() not in names and not spec.endswith(POLICY_SUFFIXES):
        raise problem
    if is_program_spec(spec.strip()):  # never a program (exec:COMMAND): a search the web page seats must not start one
        raise problem
    try:
        return make(spec)
    except ValueError:
        raise problem from None


class SearchBot(SeededBot):
    """PIMC search; see the module docstring. ``last_search`` tells what the latest decision with a
    choice searched (:class:`Searched`; None before the first)."""

    name = "search"

    def __init__(
        self,
        worlds: int = DEFAULT_WORLDS,
        ms: float | None = DEFAULT_MS,
        rollout: str = DEFAULT_ROLLOUT,
        margin: float = DEFAULT_MARGIN,
        confirm: int = 0,
        keep: str = "expert",
        opponents: str | None = None,
        seed: int | None = None,
    ) -> None:
        if isinstance(worlds, bool) or not isinstance(worlds, int) or not 1 <= worlds <= MAX_WORLDS:
            raise ValueError(f"search option worlds must be an integer 1..{MAX_WORLDS:,}, got {worlds!r}")
        if ms is not None and (
            isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) or not 0 <= ms <= MAX_MS
        ):
            raise ValueError(
                "search option ms must be a time budget per decision in milliseconds, "
                f"a number above 0 (at most {MAX_MS:,.0f}), "
                f"or 0 for no budget (all the worlds every decision, deterministic for a seed), got {ms!r}"
            )
        self._rollout_policy = _policy_option("rollout", rollout, ROLLOUTS)
        self._keep_policy = _policy_option("keep", keep, ("expert",))
        self._opponents = _opponent_model(opponents)
        # A deterministic model's likelihood of a decision is 1 or 0; any other's is taken as uniform.
        self._filters_worlds = hasattr(self._opponents, "act_batch") or isinstance(self._opponents, PhaseBot)
        if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin <= 1:
            raise ValueError(f"search option margin must be a chance in 0..1, got {margin!r}")
        if confirm and (
            isinstance(confirm, bool) or not isinstance(confirm, int) or not worlds < confirm <= MAX_WORLDS or ms
        ):
            raise ValueError(
                f"search option confirm must be a number of worlds above worlds ({worlds}) up to {MAX_WORLDS:,}, "
                f"with ms=0, got {confirm!r}"
            )
        super().__init__(seed)
        self.confirm = confirm
        self.ms = float(ms) if ms else 0.0  # None (the Python spelling of old) is no budget too
        self.worlds, self.rollout = worlds, rollout
        self.margin = float(margin)
        self.opponents = opponents
        self.last_search: Searched | None = None
        if self._opponents is not None:
            self._opponents.reset(seed)  # (random's own generator: a seeded search repeats)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        if self._opponents is not None:
            self._opponents.reset(seed)

    def act(self, observation: Observation) -> int:
        start = time.perf_counter()
        legal = legal_actions(observation)
        if len(legal) == 1:
            return int(legal[0])
        position = Position.from_view(decode(observation))
        kept = 0  # the kept choice (the expert's or keep's network's), as an index into legal
        if self.margin or self.confirm:
            observations, masks = observation["observation"][None], np.asarray(observation["action_mask"])[None]
            keeper = expert_actions if self._keep_policy is None else self._keep_policy.act_batch
            kept = int(np.flatnonzero(legal == keeper(observations, masks)[0])[0])
        if not self.ms:  # no budget: every world in one batch, as deterministic as the seed
            searched = self.evaluate(position, legal, self.worlds)
            totals, done, batches = searched.sum(axis=0), len(searched), 1
            if self.confirm and self._choice(totals / done, kept) != kept:  # more worlds before leaving the kept choice
                searched = self.evaluate(position, legal, self.confirm - done)
                totals += searched.sum(axis=0)
                done, batches = done + len(searched), 2
            slowest = time.perf_counter() - start
        else:
            totals, done, batches, slowest = self._budgeted(position, legal, start)
        values = totals / done
        self.last_search = Searched(done, batches, time.perf_counter() - start, slowest, legal, values)
        return int(legal[self._choice(values, kept)])

    def _choice(self, values: np.ndarray, kept: int) -> int:
        """The best action's index, but the kept one's unless the best beats it by the margin."""
        best = int(np.argmax(values))
        return kept if self.margin and values[best] - values[kept] <= self.margin else best

    def _budgeted(
        self, position: Position, legal: np.ndarray, start: float, measure: Callable[..., np.ndarray] | None = None
    ) -> tuple[np.ndarray, int, int, float]:
        """Worlds searched in batches until ``self.ms`` from ``start`` are spent or all
        ``self.worlds`` are done: the first batch of :func:`even_batch` worlds, each next one sized
        by :func:`next_batch`. A batch starts only before the deadline, so the decision ends at
        most one batch after it. Without a budget (``ms=0``) every world, in batches of at most
        LARGE_BATCH_TABLES tables.
        ``measure(position, legal, n_worlds)``: :meth:`evaluate` (the default) or :meth:`outcomes`,
        worlds on its second axis from the end. Returns its sums over the worlds, worlds, batches,
        slowest batch's seconds."""
        measure = self.evaluate if measure is None else measure
        deadline = start + self.ms / 1000.0
        totals: np.ndarray | float = 0.0
        done = batches = 0
        slowest = 0.0
        per_batch = max(1, LARGE_BATCH_TABLES // len(legal))  # worlds a batch without a budget
        batch = even_batch(self.worlds, len(legal)) if self.ms else min(per_batch, self.worlds)
        while True:
            began = time.perf_counter()
            searched = measure(position, legal, batch)
            totals = totals + searched.sum(axis=-2)
            now = time.perf_counter()
            done, batches, slowest = done + searched.shape[-2], batches + 1, max(slowest, now - began)
            if done >= self.worlds or self.ms and now >= deadline:
                return totals, done, batches, slowest
            if self.ms:
                batch = next_batch(self.worlds - done, len(legal), done, now - start, deadline - now)
            else:
                batch = min(per_batch, self.worlds - done)

    def evaluate(self, position: Position, actions: np.ndarray, n_worlds: int) -> np.ndarray:
        """Value (match-win chance) of each action in each of ``n_worlds`` sampled worlds, (worlds, actions)."""
        return self.outcomes(position, actions, n_worlds)[0]

    def outcomes(self, position: Position, actions: np.ndarray, n_worlds: int) -> np.ndarray:
        """Each action in each of ``n_worlds`` sampled worlds: (2, worlds, actions), [0] its value
        (the chance to win the match), [1] the deal's points of my team minus the other's at the
        end of the deal (the kicks and a gift of this deal included)."""
        if self._filters_worlds:
            return self.play_out(position, actions, self.modelled_decks(position, n_worlds))
        return self.play_out(position, actions, self.sample_decks(position, n_worlds))

    def sample_decks(self, position: Position, n_worlds: int, runs_drawn: bool = False) -> list[list[int]]:
        """The decks of ``n_worlds`` worlds consistent with ``position``: the hands of
        :func:`sample_hidden`, each dealt by :func:`world_deck`, drawn from the bot's generator in that order."""
        hands = sample_hidden(position, self._rng, n_worlds)
        return [world_deck(position, tuple(map(int, held)), self._rng, runs_drawn) for held in hands]

    def modelled_decks(self, position: Position, n_worlds: int) -> list[list[int]]:
        """The decks of up to ``n_worlds`` worlds in which the opponents' model made every decision
        of theirs seen (:meth:`model_agrees`), drawn by rejection in rounds of ``n_worlds`` until
        ``n_worlds`` agree or ``MODEL_ROUNDS`` rounds are drawn; the first round's if none agrees."""
        kept: list[list[int]] = []
        first: list[list[int]] = []
        for _ in range(MODEL_ROUNDS):
            decks = self.sample_decks(position, n_worlds, runs_drawn=True)
            first = first or decks
            kept += [deck for deck, agrees in zip(decks, self.model_agrees(position, decks)) if agrees]
            if len(kept) >= n_worlds:
                break
        return kept[:n_worlds] or first

    def model_agrees(self, position: Position, decks: list[list[int]]) -> np.ndarray:
        """Whether, in the world of each deck, the opponents' model (``opponents``) would have made
        every decision the other team made this deal (bool per deck): the deal's history replayed,
        the model asked at each of their decisions with more than one legal action."""
        agree = np.ones(len(decks), dtype=bool)
        for worlds, masks, action in self._replayed(position, decks, (1, 3)):
            asked = np.flatnonzero(agree & (masks.sum(axis=1) > 1))
            if len(asked):
                agree[asked] = act_rows(self._opponents, worlds.observe(tables=asked), masks[asked]) == action
            if not agree.any():
                break  # (no world left to replay)
        return agree

    @staticmethod
    def _replayed(
        position: Position, decks: list[list[int]], seats: tuple[int, ...]
    ) -> Iterator[tuple[VectorGame, np.ndarray, int]]:
        """The deal's history replayed in the world of each deck (a table each): before each
        action of one of ``seats`` (the same seat at every table), the tables, their legal masks
        and the action."""
        n = len(decks)
        start = {"dealer": position.dealer, "scores": list(position.start_scores)}
        worlds = VectorGame(n, episode="deal", rules=position.rules)
        worlds.reset(seed=0, options=[{"decks": [d], **start} for d in decks])  # (no draw: the history is all)
        for action in position.history:
            if worlds.current[0] in seats:
                yield worlds, worlds.legal_mask(), action
            worlds.step(np.full(n, action, dtype=np.int64))

    def play_out(self, position: Position, actions: np.ndarray, decks: list[list[int]]) -> np.ndarray:
        """Each action played out in the world of each deck (dealt as :func:`world_deck` deals
        one: this deal's deck, seats relative to me): (2, worlds, actions) as :meth:`outcomes`."""
        n_worlds = len(decks)
        start = {"dealer": position.dealer, "scores": list(position.start_scores)}
        worlds = VectorGame(n_worlds, episode="deal", rules=position.rules)
        worlds.reset(seed=int(self._rng.integers(2**32)), options=[{"decks": [d], **start} for d in decks])
        for action in position.history:
            worlds.step(np.full(n_worlds, action, dtype=np.int64))
        return self.play_from(worlds, actions, position.rules, position.start_scores)

    def play_from(
        self, worlds: VectorGame, actions: np.ndarray, rules: Rules, start_scores: tuple[int, int], team: int = 0
    ) -> np.ndarray:
        """Each action taken at every table of ``worlds`` (a deal episode at a decision), then the
        rollouts to the end of the deal: (2, tables, actions), [0] ``team``'s chance to win the
        match, [1] its points minus the other team's since ``start_scores`` (team 0's first). With
        ``opponents`` the other team's seats are played by that bot (its arena: ``team``'s seats
        are the arena's learner seats, played by the rollout policy)."""
        n_worlds, n_actions = worlds.n, len(actions)
        games = worlds.repeat(n_actions)  # table w * n_actions + i: world w, then actions[i]
        games.step(np.tile(actions, n_worlds))
        arena = None
        if self._opponents is not None:
            seats = [None if seat % 2 == team else self._opponents for seat in range(N_SEATS)]
            arena = Arena(games, [seats] * games.n, compiled=True)
            arena.run()  # the opponents play until one of my team's seats is to act
        while not games.is_over.all():
            games.step(self._rollout_actions(games))
            if arena is not None:
                arena.run()
        scores = games.scores
        values = match_value(scores, games.winner, rules)
        points = (scores[:, 0] - start_scores[0]) - (scores[:, 1] - start_scores[1])
        if team:
            values, points = 1.0 - values, -points
        return np.stack([values, points]).reshape(2, n_worlds, n_actions)

    def search(self, observation: Observation) -> Searched:
        """Search one decision without choosing: every legal action's mean chance to win the match
        and mean points of the deal over the worlds (:class:`Searched`, with ``points``), from the
        observation alone. The estimator behind the web page's hints and the review
        (:mod:`agents.apps.review`). With ``ms=0`` all ``worlds`` are searched, in batches of at most
        ``LARGE_BATCH_TABLES`` tables (worlds x actions; one batch for up to 85 worlds, so a hint
        gives the values ``act`` weighs), deterministic for the seed; with a budget as ``act`` searches."""
        start = time.perf_counter()
        legal = legal_actions(observation)
        position = Position.from_view(decode(observation))
        totals, done, batches, slowest = self._budgeted(position, legal, start, self.outcomes)
        values, points = totals / done
        return Searched(done, batches, time.perf_counter() - start, slowest, legal, values, points)

    def _rollout_actions(self, games: VectorGame) -> np.ndarray:
        """The rollout policy's action at every table that is not over (0 elsewhere)."""
        choice = np.zeros(games.n, dtype=np.int64)
        if self.rollout == "greedy":
            st, bs, params = games.kernel_state()
            rollout_actions(st, bs, params, choice)
            return choice
        live = ~games.is_over
        observations, masks = games.observe(), games.legal_mask()
        act = expert_actions if self._rollout_policy is None else self._rollout_policy.act_batch
        if live.all():  # most ticks: no copy of the observations (a fresh large array costs page faults)
            choice[:] = act(observations, masks)
        else:
            choice[live] = act(observations[live], masks[live])
        return choice


# The frozen reference (issue 41): the default search of 2026-12-05 without its time budget, the
# opponent every later search and student is measured against, so that old and new meet in one
# process. Its options are written out, not taken from the defaults above, and
# tests/golden/search_v1_decisions.txt holds its choices: it plays as ``search:ms=0`` played then.
V1_OPTIONS = {
    "worlds": 64, "ms": 0, "rollout": "expert", "margin": 0.01, "confirm": 0, "keep": "expert",
}  # fmt: skip


def search_v1(seed: int | None = None) -> SearchBot:
    """``search_v1``: the frozen reference search (:data:`V1_OPTIONS`); it takes no options but a seed."""
    bot = SearchBot(**V1_OPTIONS, seed=seed)
    bot.name = "search_v1"
    return bot
