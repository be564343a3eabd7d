"""Run the boards of every pair, in-process or on worker processes, results in board order.

Work is cut into tasks of consecutive boards of one pair. Each worker builds its bots once
(two instances per bot, one per seat of its team) and reuses them, resetting them with the
board's seeds before every match; results are put back in (pair, board) order, so they do not
depend on the number of workers or on the order in which tasks finish.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from agents import Bot
from allfours_env.rules import Rules

from .boards import make_board
from .bots import BotFactory
from .play import BoardRecord, play_board
from .processes import bind_to_parent

TASKS_PER_WORKER = 8  # enough tasks to balance the load and to move the progress bar
MAX_TASK_BOARDS = 200  # cap on boards per task
SEATS_PER_TEAM = 2

Task = tuple[int, int, int]  # (pair index, first board, end board)


class _Player:
    """Plays tasks with bots built on first use and kept for later tasks."""

    def __init__(
        self, factories: Sequence[BotFactory], pairs: Sequence[tuple[int, int]], rules: Rules, episode: str
    ):
        self.factories = factories
        self.pairs = pairs
        self.rules = rules
        self.episode = episode
        self.bots: dict[int, list[Bot]] = {}

    def _team(self, bot: int) -> list[Bot]:
        if bot not in self.bots:
            self.bots[bot] = [self.factories[bot]() for _ in range(SEATS_PER_TEAM)]
        return self.bots[bot]

    def play(self, task: Task) -> list[BoardRecord]:
        pair, start, end = task
        a, b = self.pairs[pair]
        a_bots, b_bots = self._team(a), self._team(b)
        return [
            play_board(make_board(board, self.rules), a_bots, b_bots, self.rules, self.episode)
            for board in range(start, end)
        ]


_worker: _Player | None = None  # the player of a worker process


def _init_worker(
    parent: int, factories: Sequence[BotFactory], pairs: Sequence[tuple[int, int]], rules: Rules, episode: str
) -> None:
    global _worker
    bind_to_parent(parent)
    _worker = _Player(factories, pairs, rules, episode)


def _play_in_worker(task: Task) -> list[BoardRecord]:
    return _worker.play(task)


def make_tasks(n_pairs: int, boards: range, workers: int) -> list[Task]:
    """Tasks of at most ``MAX_TASK_BOARDS`` consecutive boards, about TASKS_PER_WORKER per worker."""
    size = max(1, min(MAX_TASK_BOARDS, math.ceil(n_pairs * len(boards) / (workers * TASKS_PER_WORKER))))
    return [
        (pair, start, min(start + size, boards.stop))
        for pair in range(n_pairs)
        for start in range(boards.start, boards.stop, size)
    ]


def _context() -> multiprocessing.context.BaseContext:
    """Fork where available: workers inherit the imported modules, the bot factories and the
    policy weights the parent already loaded (so no torch code runs in a forked worker)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_pairs(
    factories: Sequence[BotFactory],
    pairs: Sequence[tuple[int, int]],
    boards: range,
    rules: Rules,
    episode: str,
    workers: int,
    on_progress: Callable[[int], None] | None = None,
) -> list[list[BoardRecord]]:
    """Board records of each pair ``(a, b)`` (indices into ``factories``), in board order.

    ``on_progress(k)`` is called after each task with the number of boards it finished.
    """
    tasks = make_tasks(len(pairs), boards, workers)
    done: dict[Task, list[BoardRecord]] = {}
    if workers == 1:
        player = _Player(factories, pairs, rules, episode)
        for task in tasks:
            done[task] = player.play(task)
            if on_progress:
                on_progress(task[2] - task[1])
    else:
        with ProcessPoolExecutor(
            max_workers=min(workers, len(tasks)),
            mp_context=_context(),
            initializer=_init_worker,
            initargs=(os.getpid(), factories, pairs, rules, episode),
        ) as pool:
            pending: dict[Future, Task] = {}
            try:
                pending.update((pool.submit(_play_in_worker, task), task) for task in tasks)
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        task = pending.pop(future)
                        done[task] = future.result()
                        if on_progress:
                            on_progress(task[2] - task[1])
            except BaseException:  # Ctrl-C or a failed task: stop now, not after the running tasks
                for process in list(pool._processes.values()):  # the executor has no public kill
                    process.kill()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    results: list[list[BoardRecord]] = [[] for _ in pairs]
    for task in tasks:  # tasks are in (pair, board) order
        results[task[0]].extend(done[task])
    return results
