"""Run the boards of every pair, in-process or on worker processes, results in board order.

Work is cut into tasks of consecutive boards of one pair; a task's boards are played at once,
as tables of the vector engine (:mod:`eval.batch`), every bot instance reset with its board's
seeds, and results are put back in (pair, board) order, so they do not depend on the number of
workers or on the order in which tasks finish.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from agents import Bot
from agents.shared.processes import end_workers, start_worker, stops_held, worker_context
from allfours_env.rules import Rules

from .batch import play_boards
from .boards import make_board
from .bots import BotFactory
from .play import BoardRecord

TASKS_PER_WORKER = 8  # enough tasks to balance the load and to move the progress bar
MAX_TASK_BOARDS = 200  # cap on boards per task

Task = tuple[int, int, int]  # (pair index, first board, end board)


class _Player:
    """Plays tasks, each a run of boards at once (:func:`eval.batch.play_boards`); a batch bot's
    one instance is kept for later tasks."""

    def __init__(
        self, factories: Sequence[BotFactory], pairs: Sequence[tuple[int, int]], rules: Rules, episode: str
    ):
        self.factories = factories
        self.pairs = pairs
        self.rules = rules
        self.episode = episode
        self.shared: dict[int, Bot] = {}

    def play(self, task: Task) -> list[BoardRecord]:
        pair, start, end = task
        a, b = self.pairs[pair]
        boards = [make_board(board, self.rules) for board in range(start, end)]
        return play_boards(boards, self.factories[a], self.factories[b], self.rules, self.episode, self.shared)


_worker: _Player | None = None  # the player of a worker process


def _init_worker(
    parent: int, factories: Sequence[BotFactory], pairs: Sequence[tuple[int, int]], rules: Rules, episode: str
) -> None:
    global _worker
    start_worker(parent)
    _worker = _Player(factories, pairs, rules, episode)


def _play_in_worker(task: Task) -> list[BoardRecord]:
    return _worker.play(task)


def make_tasks(n_pairs: int, boards: range, workers: int, finished: Iterable[tuple[int, int]] = ()) -> list[Task]:
    """Tasks of at most ``MAX_TASK_BOARDS`` consecutive boards not yet ``finished`` ((pair, board)
    pairs), about TASKS_PER_WORKER per worker."""
    done: list[list[int]] = [[] for _ in range(n_pairs)]
    for pair, board in finished:
        done[pair].append(board)
    runs = [(pair, run) for pair in range(n_pairs) for run in _missing_runs(boards, sorted(done[pair]))]
    size = max(1, min(MAX_TASK_BOARDS, math.ceil(sum(len(run) for _, run in runs) / (workers * TASKS_PER_WORKER))))
    return [(pair, start, min(start + size, run.stop)) for pair, run in runs for start in range(run.start, run.stop, size)]


def _missing_runs(boards: range, done: list[int]) -> Iterator[range]:
    """The runs of consecutive boards of ``boards`` that are not in the sorted list ``done``."""
    start = boards.start
    for board in done:
        if board >= boards.stop:
            break
        if board > start:
            yield range(start, board)
        start = max(start, board + 1)
    if start < boards.stop:
        yield range(start, boards.stop)


def run_pairs(
    factories: Sequence[BotFactory],
    pairs: Sequence[tuple[int, int]],
    boards: range,
    rules: Rules,
    episode: str,
    workers: int,
    on_task: Callable[[int, list[BoardRecord]], None] | None = None,
    finished: dict[tuple[int, int], BoardRecord] | None = None,
) -> list[list[BoardRecord]]:
    """Board records of each pair ``(a, b)`` (indices into ``factories``), in board order.

    ``finished``: the records played already, by (pair index, board); the other boards are played
    and added to it task by task. ``on_task(pair, records)`` hears of each task's records as soon
    as it is done (in the parent process), before the next is waited for.
    """
    finished = {} if finished is None else finished
    tasks = make_tasks(len(pairs), boards, workers, finished)

    def done(task: Task, records: list[BoardRecord]) -> None:
        finished.update(((task[0], r.board), r) for r in records)
        if on_task:
            on_task(task[0], records)

    if workers == 1:
        player = _Player(factories, pairs, rules, episode)
        for task in tasks:
            done(task, player.play(task))
    elif tasks:
        with ProcessPoolExecutor(
            max_workers=min(workers, len(tasks)),
            mp_context=worker_context(),
            initializer=_init_worker,
            initargs=(os.getpid(), factories, pairs, rules, episode),
        ) as pool:
            pending: dict[Future, Task] = {}
            try:
                with stops_held():  # the workers fork at the first submit
                    pending.update((pool.submit(_play_in_worker, task), task) for task in tasks)
                while pending:
                    ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in ready:
                        done(pending.pop(future), future.result())
            except BaseException:  # Ctrl-C or a failed task: stop now, not after the running tasks
                end_workers(pool)
                raise
    return [[finished[(pair, board)] for board in boards] for pair in range(len(pairs))]
