"""``python -m agents.review LOG``: where each decision of a match won or lost it.

A review reads a match log (:mod:`agents.apps.match_log`: from the web page, ``python -m agents.play
--log`` or ``python -m eval --logs``) and, for every decision of the chosen seats that had a
choice, estimates the chance to win the match after each legal action **from that seat's
information alone**: the search's estimator (:meth:`agents.search.SearchBot.search`, the one
behind the web page's hints) fed with the seat's observation at that step (``encode(game, seat)``,
what a bot or a person at that seat saw), never the log's hidden cards. Then::

    python -m agents.review match.json                 # every seat; match.review.html and .json
    python -m agents.review match.json --seat 0 2      # one team's decisions
    python -m agents.review match.json --worlds 128    # faster, coarser (default 512)
    python -m agents.review match.json --ms 50         # at most about 50 ms a decision (not repeatable)
    python -m agents.review match.json --open          # also the hands-open analysis, beside the fair one

**What a decision's review holds.** For each legal action: its *chance* (the acting seat's team's
chance to win the match after it, the rest of the deal played by the expert at every seat in
``--worlds`` deals of the unseen cards consistent with what the seat saw, then the match model of
:mod:`allfours_env.match_model` from the deal's final score) and its *points* (the deal's points of the
seat's team minus the other team's, this deal's kicks and gift included, in the same rollouts).
The *best* action is the one of the highest chance; the chosen action's *loss* is the chance it
gave up against the best (0 when it is the best), in points of chance (percentage points).
Decisions with one legal action are not reviewed (nothing to choose).

**Labels** (by the loss, as lichess labels moves by the drop in the chance to win):
inaccuracy 2 points of chance or more, mistake 5 or more, blunder 10 or more
(``THRESHOLDS``). A match of All Fours is many small decisions: most lose nothing, and in eight
matches between ``rule_based`` and ``search`` (docs/results.md) one decision in thirteen of
``rule_based``'s lost 2 points or more, one in eighty 5 or more, none 10 (a lost Jack, a bad beg
late in a match would). The thresholds sit above the estimate's noise at the default precision:
over four seeds the chance a decision lost varies by a standard deviation of 0.01 point at the
median decision and 0.3 to 0.4 at the 90th percentile, and 94 to 98% of the decisions keep their
label (a decision near a threshold may not).

**Per seat.** *Accuracy*: the share of its reviewed decisions whose action was the best or within
1 point of chance of it (``ACCURATE_WITHIN``), in percent: "87%" means 87 of 100 decisions lost
less than 1 in 100 of the match. *Average loss*: the mean chance lost a decision, in points.
*Points a deal lost*: what its flagged decisions (inaccuracies and worse) cost in points,
measured in the same rollouts: the sum over them of the best action's mean deal points minus the
chosen action's, divided by the deals of the match (a redeal is a deal, as ``eval`` counts them).
It is the seat's team's point difference: add a team's two seats for the team.

**The graph**: each team's estimated chance to win the match, as its own seats saw it: after
every reviewed decision of the team's two seats, the chosen action's chance, deal by deal, and
the result at the end. Each team's line is its own estimate from its own cards (the two lines
need not add up to 100%: a team that does not know where the Jack is may think itself ahead).

**Hands open** (``--open``; always in the web page's review, shown on request): beside the fair
review, the same actions played out in the real deal, every card known (the engine's real state
at that step, one world, the expert playing every seat afterwards): what each action would have
given had the seat seen every hand. It reads the hidden cards and is labelled so everywhere; the
fair figures (labels, accuracy, points) never use it.

**Repeatable.** Each decision's search is seeded from ``--seed`` (default 0) and its step in the
log, so a review of a log gives the same figures on any machine and with any number of workers
(``--ms 0``, the default: every world searched). ``--ms N`` gives each decision a time budget of
about N ms instead (fewer worlds where time runs out): quicker on a slow machine, not repeatable.

**Precision and time.** The default, 512 worlds a decision, reviews a match to 14 in 5 to 20 s on
2 cores (docs/results.md, "Reviewing a match"); ``--worlds 128`` is about four times quicker and
twice as noisy. Decisions are reviewed on ``--workers`` processes (default: every core), each
seeded by its step, so the figures do not depend on the workers; progress lines go to stderr.

**Output**: ``--html`` (default ``LOG`` with ``.review.html``) a single self-contained page (the
graph as inline SVG, no external resource, no script): the summary per seat, the graph, the
flagged decisions and every reviewed decision with the table as its seat saw it and each action's
chance and points; ``--json`` (default ``.review.json``) every number (:meth:`MatchReview.to_json`,
for notebooks). Both are written whole or not at all (:mod:`agents.shared.atomic_file`), only once the
review is done, and a short summary is printed.

**Refused** (exit 2, one line, nothing written): a file that is not a match log, a truncated or
edited one (it must replay on the engine: :func:`agents.apps.match_log.loads`), one larger than 8 MB or
of more than ``MAX_REVIEW_ACTIONS`` actions, a FIFO or device as the log (refused before a byte is
read) or as an output (never replaced), a setting out of range, an output folder that cannot
be written. Exit 74 if the disk refuses the report; Ctrl-C (or SIGTERM) stops the workers and
exits 130 (143) with one line, nothing written.

The web page (``python -m agents.web``, mode Review) reviews a finished match or an uploaded log
with the same code and settings, so it shows the same figures (:mod:`agents.apps.web.reviews`: one
review at a time in a background thread, the page polling for it).
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from allfours_env import decode
from allfours_env.cards import N_SEATS
from allfours_env.engine import DEAL_OVER
from allfours_env.render import render_text
from allfours_env.vector import VectorGame

from ..search import Position, SearchBot
from ..shared.atomic_file import atomic_path
from .match_log import MatchLog, MatchLogError, Replay, read
from .web.views import action_label as action_text  # (a card, or a decision in words)

FORMAT = "allfours-review"
VERSION = 1
DEFAULT_WORLDS = 512
DEFAULT_SEED = 0
# Labels by the chance lost against the best action (see the module docstring), worst first.
THRESHOLDS = (("blunder", 0.10), ("mistake", 0.05), ("inaccuracy", 0.02))
LABELS = tuple(name for name, _ in reversed(THRESHOLDS))  # inaccuracy, mistake, blunder
ACCURATE_WITHIN = 0.01  # a decision within this chance of the best counts as accurate
MAX_REVIEW_ACTIONS = 10_000  # actions in a reviewed log (a match to 100 points takes up to about 1,600)
MAX_WORKERS = 8
PROGRESS_SECONDS = 5.0  # a progress line at most this often (and at each tenth of the work)


def label_of(loss: float) -> str | None:
    """``"blunder"``, ``"mistake"``, ``"inaccuracy"`` or None for a chance lost of ``loss``, taken
    to 0.1 point of chance as it is shown (4.96 points is shown 5.0, and is a mistake)."""
    shown = round(loss, 3)
    return next((name for name, threshold in THRESHOLDS if shown >= threshold - 1e-9), None)


@dataclass(frozen=True)
class Settings:
    """How a review searches: ``worlds`` a decision, ``ms`` a time budget (0: none, repeatable),
    ``seed`` of every decision's search (with its step), ``open``: also the hands-open analysis."""

    worlds: int = DEFAULT_WORLDS
    ms: float = 0.0
    seed: int = DEFAULT_SEED
    open: bool = False

    def __post_init__(self) -> None:
        SearchBot(worlds=self.worlds, ms=self.ms)  # (a ValueError now for worlds or ms out of the search's range)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**128:
            raise ValueError(f"seed must be an integer 0..2**128-1, got {self.seed!r}")


@dataclass(frozen=True)
class Move:
    """A decision of a log: where it was (step, deal, phase, the score before it, team 0's first),
    whose it was (``seat``) and what it did (``action``)."""

    step: int
    seat: int
    deal: int
    phase: str
    scores: tuple[int, int]
    action: int


@dataclass(frozen=True)
class Decision(Move):
    """One decision to review: its :class:`Move`, what its seat saw (``observation``, ``mask``), the
    table as the seat saw it in text; ``state`` only for the hands-open analysis (the engine's real
    state: it holds every hand, and the fair review never reads it)."""

    observation: np.ndarray
    mask: np.ndarray
    table_text: str
    state: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class DecisionReview(Move):
    """A reviewed decision: its :class:`Move`, each legal action's chance (for the acting seat's team)
    and deal points, the best, the chosen one's loss and label; ``open_*`` from the hands-open analysis."""

    actions: tuple[int, ...]
    values: tuple[float, ...]
    points: tuple[float, ...]
    worlds: int
    seconds: float
    table_text: str = ""
    open_values: tuple[float, ...] | None = None
    open_points: tuple[float, ...] | None = None

    def _index(self, action: int) -> int:
        return self.actions.index(action)

    @property
    def best(self) -> int:
        """The action of the highest chance (the first such, by action id)."""
        return self.actions[int(np.argmax(self.values))]

    @property
    def value(self) -> float:
        """The chosen action's chance: the acting team's chance after this decision."""
        return self.values[self._index(self.action)]

    @property
    def loss(self) -> float:
        """The chance the chosen action gave up against the best (>= 0)."""
        return max(self.values) - self.value

    @property
    def points_lost(self) -> float:
        """The best action's mean deal points minus the chosen one's."""
        return self.points[self._index(self.best)] - self.points[self._index(self.action)]

    @property
    def label(self) -> str | None:
        return label_of(self.loss)

    @property
    def open_best(self) -> int | None:
        return None if self.open_values is None else self.actions[int(np.argmax(self.open_values))]

    @property
    def open_loss(self) -> float | None:
        if self.open_values is None:
            return None
        return max(self.open_values) - self.open_values[self._index(self.action)]

    def to_json(self) -> dict[str, Any]:
        rows = []
        for i, action in enumerate(self.actions):
            row = {"action": action, "text": action_text(action), "value": self.values[i], "points": self.points[i],
                   "loss": max(self.values) - self.values[i]}  # fmt: skip
            if self.open_values is not None:
                row.update(open_value=self.open_values[i], open_points=self.open_points[i],
                           open_loss=max(self.open_values) - self.open_values[i])  # fmt: skip
            rows.append(row)
        out = {
            "step": self.step, "seat": self.seat, "team": self.seat % 2, "deal": self.deal, "phase": self.phase,
            "scores": list(self.scores), "action": self.action, "text": action_text(self.action),
            "best": self.best, "best_text": action_text(self.best), "value": self.value, "best_value": max(self.values),
            "loss": self.loss, "points_lost": self.points_lost, "label": self.label, "worlds": self.worlds,
            "seconds": round(self.seconds, 4), "actions": rows, "table": self.table_text,
        }  # fmt: skip
        if self.open_values is not None:
            out["open"] = {"best": self.open_best, "best_text": action_text(self.open_best), "loss": self.open_loss,
                           "label": label_of(self.open_loss)}  # fmt: skip
        return out


def decisions(log: MatchLog, seats: Sequence[int] = range(N_SEATS), open_hands: bool = False) -> list[Decision]:
    """The decisions of ``seats`` with more than one legal action, in order, from a checked log.

    Each holds the seat's observation at that step (``game.observe(seat)``, exactly what a bot
    there got); ``open_hands`` adds the engine's real state, for the hands-open analysis only."""
    return list(iter_decisions(log, choice_steps(log, seats), open_hands))


@lru_cache(maxsize=16)
def legal_counts(log: MatchLog) -> tuple[tuple[int, int], ...]:
    """The seat to act and how many legal actions it had, at each step of a checked log."""
    replay = Replay(log)
    return tuple((game.current, len(game.legal_actions())) for game in map(replay.game_at, range(replay.steps)))


def choice_steps(log: MatchLog, seats: Sequence[int] = range(N_SEATS)) -> list[int]:
    """The steps of ``seats``' decisions with a choice (the ones a review reviews)."""
    return [step for step, (seat, n) in enumerate(legal_counts(log)) if seat in seats and n > 1]


def iter_decisions(log: MatchLog, steps: Sequence[int], open_hands: bool = False) -> Iterator[Decision]:
    """The decisions at ``steps`` (:func:`choice_steps`) one at a time, so a long match is never held whole."""
    replay = Replay(log)
    for step in steps:
        game = replay.game_at(step)
        seat = game.current
        observation, mask = game.observe(seat)
        view = decode(observation)
        state = game._core.get_state() if open_hands else None  # (the real hands: the hands-open analysis)
        yield Decision(
            step, seat, game.deal_number, view.phase, (game.scores[0], game.scores[1]), log.actions[step],
            observation.copy(), mask.copy(), render_text(view, seat), state,
        )  # fmt: skip


class Reviewer:
    """Reviews decisions one at a time with one search bot, reseeded for each (see ``Settings``)."""

    def __init__(self, settings: Settings, rules: Any = None) -> None:
        self.settings = settings
        self.rules = rules  # the log's full rules, for the hands-open analysis
        self.bot = SearchBot(worlds=settings.worlds, ms=settings.ms, margin=0.0, seed=settings.seed)

    def review(self, decision: Decision) -> DecisionReview:
        """The fair review of ``decision`` (from its observation and step alone), and the hands-open
        analysis if the settings ask for it and the decision holds the state."""
        start = time.perf_counter()
        # The search is seeded from the review's seed and the step (numpy's SeedSequence takes the pair), so a
        # decision's figures depend on neither the order nor the worker; it reads the seat's observation alone.
        self.bot.reset([self.settings.seed, decision.step])
        searched = self.bot.search({"observation": decision.observation, "action_mask": decision.mask})
        legal = tuple(int(a) for a in np.flatnonzero(decision.mask))
        open_values = open_points = None
        if self.settings.open and decision.state is not None:
            open_values, open_points = self.open_values(decision, np.array(legal))
        return DecisionReview(
            decision.step, decision.seat, decision.deal, decision.phase, decision.scores, decision.action, legal,
            tuple(map(float, searched.values)), tuple(map(float, searched.points)), searched.worlds,
            time.perf_counter() - start, decision.table_text, open_values, open_points,
        )  # fmt: skip

    def open_values(self, decision: Decision, legal: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Hands open: each action played out once in the real deal (the engine's state at the step)."""
        world = VectorGame(1, episode="deal", rules=self.rules)
        world.set_state(decision.state)
        team = decision.seat % 2
        start = Position.from_view(decode(decision.observation)).start_scores  # (own team's first)
        start_abs = start if team == 0 else (start[1], start[0])
        out = self.bot.play_from(world, legal, self.rules, start_abs, team)[:, 0, :]
        return tuple(map(float, out[0])), tuple(map(float, out[1]))


# ---------------------------------------------------------------- the whole match


@dataclass(frozen=True)
class SeatSummary:
    seat: int
    player: str
    decisions: int  # reviewed: with a choice
    forced: int  # with one legal action (not reviewed)
    accuracy: float | None  # share within ACCURATE_WITHIN of the best
    mean_loss: float | None
    counts: dict[str, int]  # per label
    points_lost: float  # by its flagged decisions, in the whole match
    points_lost_a_deal: float

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat, "team": self.seat % 2, "player": self.player, "decisions": self.decisions,
            "forced": self.forced, "accuracy": self.accuracy, "mean_loss": self.mean_loss, **self.counts,
            "points_lost": self.points_lost, "points_lost_a_deal": self.points_lost_a_deal,
        }  # fmt: skip


@dataclass(frozen=True)
class MatchReview:
    log: MatchLog
    seats: tuple[int, ...]
    settings: Settings
    decisions: tuple[DecisionReview, ...]
    seconds: float
    workers: int = 1

    @property
    def deals(self) -> int:
        return len(self.log.decks)

    @cached_property
    def starts(self) -> list[dict[str, Any]]:
        """:func:`deal_starts` of the log, replayed once for the JSON and the graph."""
        return deal_starts(self.log)

    def summary(self, seat: int) -> SeatSummary:
        """The seat's accuracy, average loss, labels and the points a deal its flagged decisions cost."""
        mine = [d for d in self.decisions if d.seat == seat]
        forced = sum(1 for who, n in legal_counts(self.log) if who == seat and n == 1)
        counts = {name: sum(d.label == name for d in mine) for name in LABELS}
        lost = sum(d.points_lost for d in mine if d.label)
        accuracy = sum(d.loss < ACCURATE_WITHIN for d in mine) / len(mine) if mine else None
        mean_loss = sum(d.loss for d in mine) / len(mine) if mine else None
        return SeatSummary(seat, self.log.players[seat], len(mine), forced, accuracy, mean_loss, counts, lost,
                           lost / max(1, self.deals))  # fmt: skip

    def graph(self) -> list[dict[str, Any]]:
        """Each team's estimated chance to win the match after every reviewed decision of its
        seats (the chosen action's chance, as the acting seat saw it), then the result for both."""
        points = [{"step": d.step + 1, "team": d.seat % 2, "seat": d.seat, "chance": d.value, "label": d.label}
                  for d in self.decisions]  # fmt: skip
        if self.log.winner in (0, 1):
            end = len(self.log.actions)
            points += [{"step": end, "team": t, "seat": None, "chance": float(t == self.log.winner), "label": None}
                       for t in (0, 1)]  # fmt: skip
        return points

    def to_json(self) -> dict[str, Any]:
        """Every number of the review (see the module docstring), JSON-ready."""
        log = self.log
        return {
            "format": FORMAT, "version": VERSION,
            "log": {"players": list(log.players), "source": log.source, "seed": None if log.seed is None else str(log.seed),
                    "rules": dataclasses.asdict(log.rules), "episode": log.episode, "dealer": log.dealer,
                    "actions": len(log.actions), "deals": self.deals, "scores": list(log.scores), "winner": log.winner},
            "settings": {"worlds": self.settings.worlds, "ms": self.settings.ms, "seed": self.settings.seed,
                         "open": self.settings.open, "seats": list(self.seats),
                         "thresholds": dict(THRESHOLDS), "accurate_within": ACCURATE_WITHIN,
                         "workers": self.workers},
            "seconds": round(self.seconds, 2),
            "command": command_line(self),
            "seats": [self.summary(s).to_json() for s in self.seats],
            "graph": self.graph(),
            "deal_starts": self.starts,
            "decisions": [d.to_json() for d in self.decisions],
        }  # fmt: skip


def deal_starts(log: MatchLog) -> list[dict[str, Any]]:
    """Each deal's first step, dealer and score before it (team 0's first)."""
    replay = Replay(log)
    out, deal = [], 0
    for step in range(replay.steps + 1):
        game = replay.game_at(step)
        if game.deal_number != deal and game.phase < DEAL_OVER:
            deal = game.deal_number
            out.append({"deal": deal, "step": step, "dealer": game.dealer, "scores": [game.scores[0], game.scores[1]]})
    return out


def command_line(review: MatchReview) -> str:
    """The command that gives this review's figures again (with ``--ms 0``)."""
    parts = ["python -m agents.review LOG"]
    if tuple(review.seats) != tuple(range(N_SEATS)):
        parts.append("--seat " + " ".join(map(str, review.seats)))
    if review.settings.worlds != DEFAULT_WORLDS:
        parts.append(f"--worlds {review.settings.worlds}")
    if review.settings.ms:
        parts.append(f"--ms {review.settings.ms:g}")
    if review.settings.seed != DEFAULT_SEED:
        parts.append(f"--seed {review.settings.seed}")
    if review.settings.open:
        parts.append("--open")
    return " ".join(parts)


# ---------------------------------------------------------------- running it

_worker: Reviewer | None = None  # a worker process's reviewer


def _init_worker(parent: int, settings: Settings, rules: Any) -> None:
    from ..shared.processes import start_worker

    global _worker
    start_worker(parent)
    _worker = Reviewer(settings, rules)


def _review_in_worker(decision: Decision) -> DecisionReview:
    return _worker.review(decision)


def review_each(todo: Sequence[Decision], settings: Settings, rules: Any, workers: int = 1) -> Iterator[DecisionReview]:
    """Each decision's review, as it is done (in any order with several workers)."""
    if workers <= 1 or len(todo) < 2:
        reviewer = Reviewer(settings, rules)
        for decision in todo:
            yield reviewer.review(decision)
        return
    from ..shared.processes import end_workers, stops_held, worker_context

    # Load the compiled kernels once, before the workers fork, so that they inherit them.
    SearchBot(worlds=2, ms=0, seed=0).search({"observation": todo[0].observation, "action_mask": todo[0].mask})
    with ProcessPoolExecutor(
        max_workers=min(workers, len(todo)), mp_context=worker_context(), initializer=_init_worker,
        initargs=(os.getpid(), settings, rules),
    ) as pool:  # fmt: skip
        pending: set[Future] = set()
        try:
            with stops_held():  # the workers fork at the first submit
                # The slow decisions (bids, a deal's first plays) early, so the last ones are short.
                pending.update(pool.submit(_review_in_worker, d) for d in sorted(todo, key=_cost, reverse=True))
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in ready:
                    yield future.result()
        except BaseException:  # Ctrl-C, or a failed decision: stop the workers now
            end_workers(pool)
            raise


def _cost(decision: Decision) -> int:
    """About how long a decision takes: legal actions times the cards left to play."""
    return int(decision.mask.sum()) * (1 + int(decision.observation[:52].sum()))


class ProgressLines:
    """``  40/150 decisions (27%), 9 s, about 24 s left`` on a stream, every tenth of the work or
    every PROGRESS_SECONDS, whichever comes first."""

    def __init__(self, total: int, stream: Any = None) -> None:
        self.total, self.stream = total, stream if stream is not None else sys.stderr
        self.start = self.last = time.perf_counter()
        self.next_tenth = 1

    def __call__(self, done: int) -> None:
        now = time.perf_counter()
        tenth = done * 10 // max(1, self.total)
        if done < self.total and tenth < self.next_tenth and now - self.last < PROGRESS_SECONDS:
            return
        self.next_tenth, self.last = tenth + 1, now
        elapsed = now - self.start
        left = f", about {elapsed * (self.total - done) / done:.0f} s left" if 0 < done < self.total else ""
        print(f"  {done}/{self.total} decisions ({100 * done // max(1, self.total)}%), {elapsed:.0f} s{left}",
              file=self.stream, flush=True)  # fmt: skip


def review_match(
    log: MatchLog, seats: Sequence[int] = range(N_SEATS), settings: Settings = Settings(), workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> MatchReview:
    """Review every decision of ``seats`` in ``log`` (checked); ``progress(done)`` after each."""
    start = time.perf_counter()
    todo = decisions(log, seats, settings.open)
    done: list[DecisionReview] = []
    for review in review_each(todo, settings, log.rules, workers):
        done.append(review)
        if progress:
            progress(len(done))
    done.sort(key=lambda d: d.step)
    return MatchReview(log, tuple(sorted(set(seats))), settings, tuple(done), time.perf_counter() - start, workers)


# ---------------------------------------------------------------- the report

COLORS = {"team0": "#1f5fa8", "team1": "#c0392b", "inaccuracy": "#d4a017", "mistake": "#e67e22", "blunder": "#b3001b"}
CSS = """
body { font: 15px/1.45 system-ui, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto; max-width: 980px;
  padding: 1rem; color: #1c1c1c; background: #fafaf7; }
h1 { font-size: 1.5rem; margin: 0.2rem 0; } h2 { font-size: 1.15rem; margin: 1.4rem 0 0.4rem; }
table { border-collapse: collapse; margin: 0.3rem 0; } td, th { padding: 0.2rem 0.55rem; text-align: left;
  border-bottom: 1px solid #ddd; white-space: nowrap; } th { font-weight: 600; font-size: 0.85rem; color: #444; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 0.85rem; } .wrap { overflow-x: auto; }
.inaccuracy { color: #9a7400; } .mistake { color: #c25e00; } .blunder { color: #b3001b; font-weight: 700; }
tr.chosen td { font-weight: 700; } tr.best td:first-child::after { content: " \\2605"; color: #1f6b3a; }
details { background: white; border: 1px solid #ddd; border-radius: 6px; margin: 0.35rem 0; padding: 0.3rem 0.6rem; }
summary { cursor: pointer; } pre { background: #f1f3ee; padding: 0.4rem; overflow-x: auto; font-size: 0.85rem; }
.open { color: #5b4a8a; } svg { max-width: 100%; height: auto; background: white; border: 1px solid #ddd; }
"""


def _pct(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{100 * value:.{digits}f}%"


def _pts(value: float) -> str:
    return f"{100 * value:.1f}"


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def graph_svg(review: MatchReview, width: int = 920, height: int = 280) -> str:
    """Each team's estimated chance over the match as inline SVG (deals as bands, flagged decisions as dots)."""
    left, right, top, bottom = 44, 12, 14, 30
    steps = max(1, len(review.log.actions))
    x = lambda step: left + (width - left - right) * step / steps
    y = lambda chance: top + (height - top - bottom) * (1.0 - chance)
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            'role="img" aria-label="each team\'s estimated chance to win the match, move by move">')]  # fmt: skip
    starts = review.starts
    for i, deal in enumerate(starts):
        x0, x1 = x(deal["step"]), x(starts[i + 1]["step"] if i + 1 < len(starts) else steps)
        if i % 2:
            out.append(f'<rect x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{height - top - bottom}" fill="#f1f3ee"/>')
        out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 8}" font-size="10" text-anchor="middle" fill="#666">'
                   f'{deal["deal"]}</text>')  # fmt: skip
    for chance in (0.0, 0.25, 0.5, 0.75, 1.0):
        dash = ' stroke-dasharray="4 3"' if chance == 0.5 else ""
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(chance):.1f}" y2="{y(chance):.1f}" stroke="#ccc"{dash}/>')
        out.append(f'<text x="{left - 6}" y="{y(chance) + 4:.1f}" font-size="11" text-anchor="end" fill="#555">'
                   f'{100 * chance:.0f}%</text>')  # fmt: skip
    graph = review.graph()
    for team in (0, 1):
        path = " ".join(f"{x(p['step']):.1f},{y(p['chance']):.1f}" for p in graph if p["team"] == team)
        if path:
            out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[f"team{team}"]}" stroke-width="2"/>')
    for p in graph:
        if p["label"]:
            out.append(f'<circle cx="{x(p["step"]):.1f}" cy="{y(p["chance"]):.1f}" r="4.5" fill="{COLORS[p["label"]]}">'
                       f'<title>move {p["step"]}: player_{p["seat"]}, {p["label"]}</title></circle>')  # fmt: skip
    out.append(f'<text x="{left + 4}" y="{top + 12}" font-size="12" fill="{COLORS["team0"]}">team 0 (player_0, player_2)</text>')
    out.append(f'<text x="{left + 4}" y="{top + 27}" font-size="12" fill="{COLORS["team1"]}">team 1 (player_1, player_3)</text>')
    out.append(f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end" fill="#666">deal</text>')
    out.append("</svg>")
    return "\n".join(out)


def html_report(review: MatchReview) -> str:
    """The review as one self-contained HTML page (see the module docstring)."""
    log, settings = review.log, review.settings
    names = [f"player_{s} ({_esc(log.players[s] or '?')})" for s in range(N_SEATS)]
    if log.winner in (0, 1):
        result = f"team {log.winner} won {log.scores[log.winner]} to {log.scores[1 - log.winner]}"
    else:
        result = f"unfinished at {log.scores[0]} to {log.scores[1]}"
    flagged = [d for d in review.decisions if d.label]
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>All Fours match review: {_esc(', '.join(log.players))}</title><style>{CSS}</style></head><body>",
        "<h1>All Fours match review</h1>",
        (f"<p>Team 0: {names[0]} and {names[2]}; team 1: {names[1]} and {names[3]}. To {log.rules.target_score}: "
         f"{result}, {review.deals} deals, {len(log.actions)} moves"
         f"{', logged by ' + _esc(log.source) if log.source else ''}.</p>"),
        (f'<p class="note">Every chance is the acting seat\'s from its own cards only: {settings.worlds} deals of the '
         f"cards it had not seen, consistent with what it had seen, the rest of the deal played out by the expert "
         f"after each legal action, then the chance to win the match from the deal's final score. "
         f"{len(review.decisions)} decisions with a choice reviewed in {review.seconds:.0f} s; "
         f"<code>{_esc(command_line(review))}</code> gives these figures again"
         f"{'' if not settings.ms else ' (not exactly: a time budget was used)'}.</p>"),
    ]  # fmt: skip
    parts.append("<h2>Per seat</h2><div class=\"wrap\"><table><tr><th>seat</th><th>player</th>"
                 '<th class="num">decisions</th><th class="num">accuracy</th><th class="num">average loss</th>'
                 '<th class="num">inaccuracies</th><th class="num">mistakes</th><th class="num">blunders</th>'
                 '<th class="num">points a deal lost</th></tr>')  # fmt: skip
    for seat in review.seats:
        s = review.summary(seat)
        parts.append(
            f"<tr><td>player_{seat} (team {seat % 2})</td><td>{_esc(s.player)}</td><td class=\"num\">{s.decisions}</td>"
            f"<td class=\"num\">{_pct(s.accuracy, 0)}</td>"
            f"<td class=\"num\">{'' if s.mean_loss is None else _pts(s.mean_loss)}</td>"
            + "".join(f'<td class="num {n}">{s.counts[n]}</td>' for n in LABELS)
            + f'<td class="num">{s.points_lost_a_deal:.2f}</td></tr>'
        )
    parts.append(
        "</table></div>"
        f'<p class="note">Accuracy: the share of a seat\'s decisions whose action was the best or within '
        f"{100 * ACCURATE_WITHIN:g} point of chance of it. Average loss: the chance lost a decision, in points of chance "
        f"(percentage points). Labels by the chance lost against the best action: inaccuracy {100 * THRESHOLDS[2][1]:g} "
        f"points or more, mistake {100 * THRESHOLDS[1][1]:g}, blunder {100 * THRESHOLDS[0][1]:g}. Points a deal lost: the deal "
        "points the flagged decisions cost (the best action's mean points minus the chosen one's, in the same "
        "rollouts), over the deals of the match; a team's is the sum of its two seats'.</p>"
    )  # fmt: skip
    parts.append("<h2>Each team's chance to win, move by move</h2>")
    parts.append(graph_svg(review))
    parts.append('<p class="note">Each team\'s chance as its own seats estimated it from their own cards: after '
                 "each of their reviewed decisions, the chosen action's chance (the two lines need not add up to "
                 "100%); shaded bands are deals, dots the flagged decisions.</p>")  # fmt: skip
    parts.append(f"<h2>Flagged decisions ({len(flagged)})</h2>")
    if flagged:
        parts.append('<div class="wrap"><table><tr><th>move</th><th>deal</th><th>seat</th><th>played</th><th>best</th>'
                     '<th class="num">chance</th><th class="num">best</th><th class="num">lost</th><th>label</th></tr>')  # fmt: skip
        for d in flagged:
            parts.append(
                f'<tr><td><a href="#move-{d.step}">{d.step + 1}</a></td><td>{d.deal}</td><td>player_{d.seat}</td>'
                f"<td>{_esc(action_text(d.action))}</td><td>{_esc(action_text(d.best))}</td>"
                f'<td class="num">{_pct(d.value)}</td><td class="num">{_pct(max(d.values))}</td>'
                f'<td class="num">{_pts(d.loss)}</td><td class="{d.label}">{d.label}</td></tr>'
            )
        parts.append("</table></div>")
    else:
        parts.append("<p>None: every reviewed decision was within "
                     f"{100 * THRESHOLDS[2][1]:g} points of chance of the best.</p>")  # fmt: skip
    parts.append("<h2>Every reviewed decision</h2>")
    if settings.open:
        parts.append('<p class="note open">Hands open: beside the fair figures, each action played out once in the '
                     "real deal with every card known (the expert playing every seat afterwards). It uses the cards "
                     "the seat could not see; the labels and figures above never do.</p>")  # fmt: skip
    for d in review.decisions:
        label = f' <span class="{d.label}">{d.label}</span>' if d.label else ""
        parts.append(
            f'<details id="move-{d.step}"{" open" if d.label in ("mistake", "blunder") else ""}><summary>move {d.step + 1}, '
            f"deal {d.deal}, player_{d.seat} ({_esc(log.players[d.seat])}): {_esc(action_text(d.action))}, "
            f"{_pct(d.value)}{'' if d.action == d.best else f', best {_esc(action_text(d.best))} {_pct(max(d.values))}'}"
            f"{label}</summary><pre>{_esc(d.table_text)}</pre>"
        )
        head = '<tr><th>action</th><th class="num">chance</th><th class="num">lost</th><th class="num">deal points</th>'
        if d.open_values is not None:
            head += '<th class="num open">hands open: chance</th><th class="num open">deal points</th>'
        parts.append('<div class="wrap"><table>' + head + "</tr>")
        order = sorted(range(len(d.actions)), key=lambda i: -d.values[i])
        for i in order:
            action = d.actions[i]
            classes = " ".join(c for c, on in (("chosen", action == d.action), ("best", action == d.best)) if on)
            row = (f'<tr class="{classes}"><td>{_esc(action_text(action))}{" (played)" if action == d.action else ""}</td>'
                   f'<td class="num">{_pct(d.values[i])}</td><td class="num">{_pts(max(d.values) - d.values[i])}</td>'
                   f'<td class="num">{d.points[i]:+.2f}</td>')  # fmt: skip
            if d.open_values is not None:
                row += f'<td class="num open">{_pct(d.open_values[i])}</td><td class="num open">{d.open_points[i]:+.0f}</td>'
            parts.append(row + "</tr>")
        parts.append(f'</table></div><p class="note">{d.worlds} worlds, {1000 * d.seconds:.0f} ms</p></details>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def summary_lines(review: MatchReview) -> list[str]:
    """What the command prints: per seat, then every flagged decision, worst first (as many as the report has)."""
    log = review.log
    header = (f"{'seat':<10}{'player':<22}{'decisions':>10}{'accuracy':>10}{'avg loss':>10}{'inacc.':>8}"
              f"{'mistakes':>10}{'blunders':>10}{'points a deal lost':>20}")  # fmt: skip
    lines = [header]
    for seat in review.seats:
        s = review.summary(seat)
        name = s.player if len(s.player) <= 20 else s.player[:19] + "…"
        lines.append(
            f"{f'player_{seat}':<10}{name:<22}{s.decisions:>10}{_pct(s.accuracy, 0):>10}"
            f"{'' if s.mean_loss is None else _pts(s.mean_loss):>10}{s.counts['inaccuracy']:>8}{s.counts['mistake']:>10}"
            f"{s.counts['blunder']:>10}{s.points_lost_a_deal:>20.2f}"
        )
    flagged = sorted((d for d in review.decisions if d.label), key=lambda d: -d.loss)
    if flagged:
        lines.append(f"Flagged decisions, worst first ({len(flagged)}):")
    for d in flagged:
        lines.append(
            f"  move {d.step + 1:>3}, deal {d.deal}, player_{d.seat} ({log.players[d.seat][:20]}): {d.label} "
            f"{action_text(d.action)} {_pct(d.value)}, best {action_text(d.best)} {_pct(max(d.values))} "
            f"({_pts(d.loss)} points of chance)"
        )
    return lines


# ---------------------------------------------------------------- the command


def read_log(path: str | Path) -> MatchLog:
    """The checked log in ``path``; a MatchLogError (one line) for anything else."""
    path = Path(path)
    if path.is_dir():
        raise MatchLogError(f"{path} is a folder, not a match log")
    try:
        return read(path, max_actions=MAX_REVIEW_ACTIONS)
    except OSError as error:
        raise MatchLogError(f"cannot read {path}: {error.strerror or error}") from None


def output_path(text: str | None, log_path: Path, suffix: str, option: str) -> Path:
    """The output file (default beside the log), checked writable now; a ValueError saying why not."""
    from .match_log import check_log_path

    path = Path(text) if text else log_path.with_name(log_path.stem + suffix)
    try:
        return check_log_path(str(path), option, "." + suffix.rsplit(".", 1)[-1])  # a .html or .json file
    except ValueError as error:
        hint = "" if text else f" (the default is beside the log: choose another with {option} PATH)"
        raise ValueError(f"{error}{hint}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agents.review",
        description="Review a match log: each decision's chance to win the match after every legal action, from "
        "its seat's own cards; inaccuracies, mistakes and blunders; a graph; an HTML report and JSON.",
        epilog="Example: python -m agents.review match.json --seat 0 2   (see the module docstring: "
        "python -c 'import agents.apps.review; help(agents.apps.review)')",
    )  # fmt: skip
    parser.add_argument("log", metavar="LOG", help="a match log (.json: the web page, agents.play --log, eval --logs)")
    parser.add_argument("--seat", type=int, nargs="+", choices=range(N_SEATS), default=list(range(N_SEATS)),
                        metavar="S", help="the seats whose decisions are reviewed (default: all four)")  # fmt: skip
    parser.add_argument("--worlds", type=int, default=DEFAULT_WORLDS,
                        help=f"deals of the unseen cards searched a decision (default {DEFAULT_WORLDS}; fewer: quicker, noisier)")  # fmt: skip
    parser.add_argument("--ms", type=float, default=0.0,
                        help="time budget a decision in ms (default 0: none, every world, repeatable)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the searches (with each step)")
    parser.add_argument("--open", action="store_true",
                        help="also the hands-open analysis (every card known), beside the fair one")  # fmt: skip
    parser.add_argument("--html", metavar="PATH", help="the report (default: LOG's name with .review.html, beside it)")
    parser.add_argument("--json", metavar="PATH", help="every number (default: LOG's name with .review.json)")
    parser.add_argument("--workers", type=int, default=None,
                        help=f"processes (default: one a core, at most {MAX_WORKERS})")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ..shared.processes import USAGE_EXIT, exit_on_stop, handle_stops

    handle_stops()
    args = build_parser().parse_args(argv)
    try:  # (a stop while the log is read is one line too)
        try:
            settings = Settings(args.worlds, args.ms, args.seed, args.open)
            workers = args.workers if args.workers is not None else min(MAX_WORKERS, os.cpu_count() or 1)
            if not 1 <= workers <= MAX_WORKERS:
                raise ValueError(f"--workers must be 1..{MAX_WORKERS}, got {workers}")
            log = read_log(args.log)
            html_path = output_path(args.html, Path(args.log), ".review.html", "--html")
            json_path = output_path(args.json, Path(args.log), ".review.json", "--json")
            if html_path.resolve() == json_path.resolve():
                raise ValueError("--html and --json name the same file")
            for option, path in (("--html", html_path), ("--json", json_path)):
                if path.resolve() == Path(args.log).resolve():
                    raise ValueError(f"{option} names the match log itself: the report would overwrite it")
        except (ValueError, MatchLogError) as error:
            print(f"python -m agents.review: {error}", file=sys.stderr, flush=True)
            return USAGE_EXIT
        return _run(log, args, settings, workers, html_path, json_path)
    except BaseException as error:
        return exit_on_stop(error, "{stop}: the review was stopped, nothing written")


def _run(log: MatchLog, args: argparse.Namespace, settings: Settings, workers: int, html_path: Path, json_path: Path) -> int:
    from ..shared.processes import WRITE_FAILED_EXIT, interrupts_deferred

    seats = sorted(set(args.seat))
    todo = len(choice_steps(log, seats))
    players = ", ".join(f"player_{s} {log.players[s] or '?'}" for s in range(N_SEATS))
    print(f"reviewing {args.log}: {players}; {len(log.actions)} moves, {todo} decisions with a choice of seats "
          f"{' '.join(map(str, seats))}, {settings.worlds} worlds each"
          f"{f' (at most about {settings.ms:g} ms)' if settings.ms else ''}, {workers} worker"
          f"{'s' if workers > 1 else ''}", file=sys.stderr, flush=True)  # fmt: skip
    review = review_match(log, seats, settings, workers, ProgressLines(todo))
    print(f"reviewed {len(review.decisions)} decisions in {review.seconds:.1f} s", file=sys.stderr, flush=True)
    report, data = html_report(review), json.dumps(review.to_json(), indent=1) + "\n"
    try:
        # (each whole or not at all; a stop waits until both are written)
        with interrupts_deferred(), atomic_path(html_path) as html_tmp, atomic_path(json_path) as json_tmp:
            html_tmp.write_text(report, encoding="utf-8")
            json_tmp.write_text(data, encoding="utf-8")
    except OSError as error:
        print(f"python -m agents.review: could not write the report: {error.strerror or error}; nothing was written",
              file=sys.stderr, flush=True)  # fmt: skip
        return WRITE_FAILED_EXIT
    print("\n".join(summary_lines(review)))
    print(f"wrote {html_path} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
