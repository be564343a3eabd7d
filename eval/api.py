"""The library entry points: :func:`evaluate` (one pair) and :func:`round_robin` (every pair)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.shared.processes import caught_stop
from allfours_env.checks import count
from allfours_env.engine import EPISODES
from allfours_env.rules import Rules, as_rules

from .boards import EVAL_NAMESPACE, MATCHES_PER_BOARD
from .bots import BotFactory, BotSource, check_bots
from .play import BoardRecord
from .progress import Progress
from .results import PairResult, Rating, TournamentResult, summarize_pair
from .runner import run_pairs
from .stats import BOOTSTRAP_RESAMPLES, bootstrap_bradley_terry

MIN_BOTS_FOR_RATINGS = 3
BOOTSTRAP_STREAM = 1  # bootstrap generator: SeedSequence([EVAL_NAMESPACE, BOOTSTRAP_STREAM, first_board, boards])
# The largest evaluation that runs: every board pair's record is held in memory until the end
# (about 3 KB each, so 3 GB at this cap), and its tasks are all made at the start.
MAX_BOARD_PAIRS = 1_000_000  # boards x pairs
MAX_FIRST_BOARD = 2**62  # board ids stay far inside numpy's seed range
WORKERS_PER_CORE = 4  # more workers than cores only share them, and each holds its own bots in memory
MAX_BOOTSTRAP = 10**6
MAX_BOOTSTRAP_CELLS = 10**7  # resamples x bots**2: the rating bootstrap holds a few float64 arrays of this size


def max_workers() -> int:
    """The most worker processes an evaluation starts on this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def _check_size(n_bots: int, boards: int, bootstrap: int) -> None:
    """Refuse an evaluation too large to hold in memory (module constants say why)."""
    n_pairs = n_bots * (n_bots - 1) // 2
    if n_pairs * boards > MAX_BOARD_PAIRS:
        raise ValueError(
            f"{n_bots} bots on {boards:,} boards make {n_pairs * boards:,} board pairs, more than the "
            f"{MAX_BOARD_PAIRS:,} an evaluation holds in memory: evaluate fewer boards or bots at a time"
        )
    if n_bots >= MIN_BOTS_FOR_RATINGS and bootstrap * n_bots**2 > MAX_BOOTSTRAP_CELLS:
        raise ValueError(
            f"bootstrap {bootstrap:,} with {n_bots} bots is too large: the ratings' bootstrap needs resamples "
            f"x bots**2 <= {MAX_BOOTSTRAP_CELLS:,} (here at most {MAX_BOOTSTRAP_CELLS // n_bots**2:,} resamples)"
        )


@dataclass(frozen=True)
class Plan:
    """A validated round robin, ready to play: :func:`plan_round_robin` makes it, :func:`play_plan` plays it."""

    factories: tuple[BotFactory, ...]
    names: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]
    boards: range
    rules: Rules
    episode: str
    workers: int
    bootstrap: int


def plan_round_robin(
    bots: Sequence[BotSource],
    boards: int = 1000,
    rules: Rules | Mapping[str, Any] | None = None,
    workers: int | None = None,
    episode: str = "match",
    first_board: int = 0,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
) -> Plan:
    """Validate the arguments of :func:`round_robin` (building each bot once); nothing is played.

    Raises ValueError (unknown bot, bad rule, bad bot option, fewer than 2 bots, counts out of
    range or too large together: see the module's MAX_* constants), TypeError (not a bot) or
    FileNotFoundError (missing checkpoint).
    """
    if len(bots) < 2:
        raise ValueError(f"need at least 2 bots to compare, got {len(bots)}")
    boards = count("boards", boards, 1, MAX_BOARD_PAIRS)
    first_board = count("first_board", first_board, 0, MAX_FIRST_BOARD)
    workers = count("workers", (os.cpu_count() or 1) if workers is None else workers, 1, max_workers())
    bootstrap = count("bootstrap", bootstrap, 1, MAX_BOOTSTRAP)
    _check_size(len(bots), boards, bootstrap)
    if episode not in EPISODES:
        raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
    rules = as_rules(rules)
    factories, names = check_bots(bots)
    return Plan(
        factories=tuple(factories),
        names=tuple(names),
        pairs=tuple(itertools.combinations(range(len(bots)), 2)),
        boards=range(first_board, first_board + boards),
        rules=rules,
        episode=episode,
        workers=workers,
        bootstrap=bootstrap,
    )


class EvaluationStopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM (``stop``) during play: ``partial`` is the result of the boards finished
    so far (None if no pair finished one), ``boards_done`` of ``boards_planned`` board pairs."""

    def __init__(self, stop: KeyboardInterrupt, partial: TournamentResult | None, boards_done: int, boards_planned: int):
        super().__init__()
        self.stop, self.partial, self.boards_done, self.boards_planned = stop, partial, boards_done, boards_planned


def identity(plan: Plan) -> dict[str, Any]:
    """What names an evaluation (JSON-ready): the same identity plays the same boards the same way."""
    return {
        "bots": list(plan.names), "first_board": plan.boards.start, "boards": len(plan.boards),
        "rules": plan.rules.changed(), "episode": plan.episode, "eval_namespace": EVAL_NAMESPACE,
    }  # fmt: skip


def play_plan(
    plan: Plan,
    progress: bool = False,
    on_progress: Callable[[int], None] | None = None,
    finished: Mapping[tuple[int, int], BoardRecord] | None = None,
    on_task: Callable[[int, list[BoardRecord]], None] | None = None,
) -> TournamentResult:
    """Play every pair of ``plan`` on its boards and compute the statistics.

    ``on_progress(k)`` hears of every ``k`` boards finished; ``finished``: records of boards
    played before (by (pair index, board) of the plan, else ValueError), not played again;
    ``on_task(pair, records)`` hears of the records of each task as it finishes. A Ctrl-C or
    SIGTERM raises :class:`EvaluationStopped` with the results of the boards finished so far; a
    bot that fails (:class:`~allfours_env.match.BotFailure`) stops the play and passes on.
    """
    finished = dict(finished or {})
    for (pair, board), record in finished.items():
        if pair not in range(len(plan.pairs)) or board not in plan.boards or record.board != board:
            raise ValueError(f"finished: ({pair!r}, {board!r}) is not a (pair, board) of the plan with its record")
    hooks = [on_progress] if on_progress else []
    bar = None
    if progress:
        unit = "deals" if plan.episode == "deal" else "matches"
        bar = Progress(len(plan.pairs) * len(plan.boards), MATCHES_PER_BOARD, unit, done=len(finished))
        hooks.append(bar.update)

    def task_done(pair: int, records: list[BoardRecord]) -> None:  # (run_pairs adds the records to finished)
        if on_task:
            on_task(pair, records)
        for hook in hooks:
            hook(len(records))

    try:
        records = run_pairs(
            plan.factories, plan.pairs, plan.boards, plan.rules, plan.episode, plan.workers, task_done, finished
        )
    except (KeyboardInterrupt, SystemError) as error:
        stop = caught_stop(error)
        if stop is None:
            raise
        planned = len(plan.pairs) * len(plan.boards)
        raise EvaluationStopped(stop, _partial(plan, finished), len(finished), planned) from None
    finally:
        if bar:
            bar.close()
    return summarize(plan, records)


def summarize(plan: Plan, records: Sequence[Sequence[BoardRecord]], partial: bool = False) -> TournamentResult:
    """The statistics of each pair's board records (in board order); ratings with 3+ bots, unless ``partial``."""
    names = plan.names
    results = tuple(
        summarize_pair(names[a], names[b], recs, plan.episode) for (a, b), recs in zip(plan.pairs, records) if recs
    )
    ratings = None
    if len(names) >= MIN_BOTS_FOR_RATINGS and not partial:
        rng = np.random.default_rng([EVAL_NAMESPACE, BOOTSTRAP_STREAM, plan.boards.start, len(plan.boards)])
        pair_scores = {pair: r.board_scores for pair, r in zip(plan.pairs, results)}
        elo, low, high = bootstrap_bradley_terry(len(names), pair_scores, rng, plan.bootstrap)
        ratings = tuple(Rating(n, float(e), (float(lo), float(hi))) for n, e, lo, hi in zip(names, elo, low, high))
    planned = len(plan.boards) if partial else None
    return TournamentResult(names, plan.rules.changed(), results, ratings, boards_planned=planned)


def _partial(plan: Plan, finished: Mapping[tuple[int, int], BoardRecord]) -> TournamentResult | None:
    """The result of the boards finished so far, each pair over its own (None if none)."""
    if not finished:
        return None
    records = [[finished[key] for key in sorted(k for k in finished if k[0] == pair)] for pair in range(len(plan.pairs))]
    return summarize(plan, records, partial=True)


def round_robin(
    bots: Sequence[BotSource],
    *,
    progress: bool = False,
    on_progress: Callable[[int], None] | None = None,
    **options: Any,
) -> TournamentResult:
    """Play the boards of :func:`plan_round_robin` (``options``: its ``boards``, ``rules``,
    ``workers``, ``episode``, ``first_board``, ``bootstrap``) for every pair of ``bots``.

    ``bots``: spec strings, bot factories or bot instances (see :mod:`eval.bots`; only spec
    strings are sure to reach worker processes). ``rules``: rule variants (docs/rules.md A0).
    ``workers``: processes (None: all cores; 1: in this process). ``episode``: "match" (default)
    or "deal" (deal episodes: single deals instead of matches). ``progress``: a progress bar on
    stderr; ``on_progress(k)``: called with the number of boards each time some finish.
    ``bootstrap``: resamples for the rating intervals (ratings only with 3+ bots). Bad arguments
    raise before any play (see :func:`plan_round_robin`).
    """
    return play_plan(plan_round_robin(bots, **options), progress, on_progress)


def evaluate(
    bot_a: BotSource,
    bot_b: BotSource,
    boards: int = 1000,
    rules: Rules | Mapping[str, Any] | None = None,
    workers: int = 1,
    episode: str = "match",
    first_board: int = 0,
    progress: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> PairResult:
    """Duplicate evaluation of ``bot_a`` against ``bot_b`` (see :func:`round_robin` for the arguments).

    The default ``workers=1`` plays in this process, so an in-process policy (a bot instance or
    an unpicklable factory) works, e.g. from a training callback.
    """
    bots = [bot_a, bot_b]
    options = {"boards": boards, "rules": rules, "workers": workers, "episode": episode, "first_board": first_board}
    return round_robin(bots, progress=progress, on_progress=on_progress, **options).pairs[0]
