"""Label decisions with search: the first step of expert iteration.

``python -m train.labels --out data/labels --count 300000 --worlds 32`` writes a label set
(:mod:`train.rounds.label_set`: its format). Each shard is made on its own, from its own seed:

1. a player (``expert``, or a trained policy for a DAgger round) plays whole matches against
   itself, or against ``opponents``, at ``tables`` tables of the vector engine
   (:class:`allfours_env.arena.Arena`), and every decision of the player with a choice is recorded as
   the seat saw it (observation and legal actions);
2. ``shard_rows`` of those decisions are drawn uniformly, so the labels spread over whole matches
   rather than following a few positions move by move;
3. each is searched by ``search`` with ``ms=0`` (no time budget: the label depends on the seed only;
   ``worlds``, ``confirm``, ``keep`` and ``rollout`` are search's options), reset with a seed of its
   own that the row keeps: every legal action's searched value is stored, and the action search plays.

A shard is made in parts of :data:`PART_ROWS` rows, each a task of its own: a part draws the
shard's positions and row seeds again (from the shard's seed: cheap next to searching) and
searches only its rows, so the shard is the same whichever parts are made when. Parts are dealt
to worker processes (``--workers``, default all cores; the label set does not depend on it) and
written whole by this process as they finish, and a shard once its last part is done (its part
files then removed). A stop loses at most the part each worker is making; the same command goes
on, making only the missing parts and shards, and again any found damaged (every file there is
read and checked first, :mod:`train.rounds.label_set`). Progress lines give labels done, the rate and
the time left. With ``--address HOST:PORT`` the parts are made by a Ray cluster's workers instead
(:mod:`train.rounds.labels_ray`): the same label set, bit for bit.

Exit codes: 0 done; 2 a bad setting, or an ``--out`` that is not a new, empty or label-set folder,
cannot be written or is in use (the command locks it, :mod:`eval.run_lock`), found before any
labelling; 74 (EX_IOERR) a shard that could not be written (a full or read-only disk: one line, no
temporary file left, the finished shards and parts kept); 130 on Ctrl-C and 143 on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import ExitStack
from pathlib import Path

import numpy as np

import agents
from agents.search import ROLLOUTS, SearchBot
from agents.shared.options import number_option
from agents.shared.processes import (
    USAGE_EXIT,
    WRITE_FAILED_EXIT,
    end_workers,
    exit_on_stop,
    handle_stops,
    start_worker,
    stops_held,
    worker_context,
)
from allfours_env.arena import Arena
from allfours_env.rules import parse_rule_options
from allfours_env.vector import VectorGame
from eval.run_lock import RunInUseError, RunLock

from train.config import MAX_WORKERS, check_range
from train.ray_cluster import ClusterError
from train.rounds.label_set import (
    LabelSetError,
    LabelSettings,
    part_path,
    part_rows,
    parts_done,
    parts_of,
    remove_parts,
    shard_path,
    shards_done,
    write_meta,
    write_part,
    write_shard_of_parts,
)  # fmt: skip
from train.rounds.labels_ray import check_address, make_parts_on_ray
from train.run_folder.outputs import write_failed
from train.run_folder.progress import Progress

DEFAULT_TABLES = 16  # one arena of 16 matches gives about 2,500 decisions with a choice
SPREAD = 4  # record at least this many decisions with a choice per label drawn
PART_ROWS = 400  # rows a task labels: about 12 s of a worker in the default run, all a stop can lose of its work
Todo = dict[int, list[int]]  # shard -> its parts still to label


def positions(
    settings: LabelSettings, shard: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shard's decisions to label: (observations, masks, the player's actions), drawn from
    every decision with a choice the player made in whole matches of an :class:`Arena`."""
    rows = settings.rows_of(shard)
    player = player_bot(settings.player)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while sum(len(actions) for _, _, actions in found) < SPREAD * rows:
        game = VectorGame(settings.tables, rules=settings.rules)
        game.reset(seed=int(rng.integers(2**63)))
        arena = Arena(game, [_seats(player, settings.opponents, t, rng) for t in range(settings.tables)])

        def keep(tables, observations, masks, actions, arena=arena):
            mine = (arena.owner[tables, arena.game.current[tables]] == id(player)) & (masks.sum(axis=1) >= 2)
            found.append((observations[mine], masks[mine], actions[mine]))

        arena.on_decisions = keep
        arena.run()
    observations, masks, actions = (np.concatenate(column) for column in zip(*found, strict=True))
    chosen = np.sort(rng.choice(len(actions), size=rows, replace=False))
    return observations[chosen], masks[chosen], actions[chosen]


def player_bot(spec: str) -> agents.Bot:
    """The bot whose decisions are labelled: one that answers many tables at once."""
    player = agents.make(spec)
    if not hasattr(player, "act_batch"):
        raise ValueError(
            f"the player must answer many tables at once (act_batch): expert or a policy file, not {player.name!r}"
        )
    return player


def _seats(player: agents.Bot, opponents: str, table: int, rng: np.random.Generator) -> list[agents.Bot]:
    """Table ``table``'s four bots: the player at every seat, or, against ``opponents``, at the
    seats of team ``table % 2`` (so each team's seats are the player's at half the tables)."""
    if not opponents:
        return [player] * 4

    def opponent() -> agents.Bot:  # (made and seeded seat by seat)
        bot = agents.make(opponents)
        bot.reset(int(rng.integers(2**63)))
        return bot

    return [player if seat % 2 == table % 2 else opponent() for seat in range(4)]


def label_shard(
    settings: LabelSettings, shard: int, on_label=None, rows: range | None = None
) -> dict[str, np.ndarray]:
    """The columns of the shard's ``rows`` (default: all; see :mod:`train.rounds.label_set`);
    ``on_label()`` is called after each label. The positions and every row's seed come from the
    shard's seed, whichever rows are searched."""
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, shard]))
    observations, masks, player_actions = positions(settings, shard, rng)
    seeds = rng.integers(2**63, size=len(player_actions), dtype=np.uint64)
    rows = range(len(player_actions)) if rows is None else rows
    observations, masks, player_actions, seeds = (
        a[rows.start : rows.stop] for a in (observations, masks, player_actions, seeds)
    )
    search = teacher(settings)
    values = np.full(masks.shape, np.nan, dtype=np.float32)
    search_actions = np.empty(len(rows), dtype=np.int16)
    for i in range(len(rows)):
        search.reset(int(seeds[i]))
        search_actions[i] = search.act({"observation": observations[i], "action_mask": masks[i].view(np.int8)})
        searched = search.last_search
        values[i, searched.actions] = searched.values
        if on_label:
            on_label()
    return {
        "observation": observations.astype(np.float32),
        "action_mask": masks,
        "values": values,
        "search_action": search_actions,
        "player_action": player_actions.astype(np.int16),
        "search_seed": seeds,
    }


def teacher(settings: LabelSettings) -> SearchBot:
    """The search that labels the set of ``settings`` (:meth:`LabelSettings.search_options`)."""
    return SearchBot(**settings.search_options())


_counter = None  # labels done, shared by the workers with the parent


def _init_worker(parent: int | None, counter) -> None:
    """A worker's start (``parent``: the process it dies with; None in-process)."""
    global _counter
    if parent is not None:
        start_worker(parent)
    _counter = counter


def _make_part(settings: LabelSettings, shard: int, part: int, rows: int) -> tuple[int, int, dict[str, np.ndarray]]:
    """Part ``part`` (of ``rows`` rows each) of shard ``shard``: (shard, part, its columns). In a
    worker: the parent writes them, so that a worker ended at any moment leaves no file behind."""

    def tick() -> None:
        if _counter is not None:
            with _counter.get_lock():
                _counter.value += 1

    return shard, part, label_shard(settings, shard, tick, part_rows(settings, shard, part, rows))


def labelling_work(settings: LabelSettings) -> str:
    """The run plan's kind of work for ``settings``' labels: with a network's rollouts search labels
    at about a quarter of the rate it does with a bot's (docs/expert_iteration.md), so the two are
    timed apart."""
    return "labelling" if settings.rollout in ROLLOUTS else "labelling with a network's rollouts"


def make_labels(
    settings: LabelSettings, folder: Path, workers: int, progress: Progress | None = None, rows: int = PART_ROWS,
    address: str | None = None,
) -> None:  # fmt: skip
    """Make the label set of ``settings`` in ``folder``, or its missing (or damaged) parts and
    shards, in parts of ``rows`` rows (on the Ray cluster at ``address``, if given)."""
    label_shards(settings, folder, open_label_set(settings, folder, rows), workers, progress, rows, address)


def open_label_set(settings: LabelSettings, folder: Path, rows: int = PART_ROWS) -> Todo:
    """Make ``folder`` a label set of ``settings`` (or check that it is one) and read every shard
    and part there: the parts (of ``rows`` rows) still to make, shard by shard, those damaged
    among them (said on stderr) included. A LabelSetError or an OSError if the folder is not a
    label set's or cannot be written."""
    write_meta(folder, settings)
    done, damaged = shards_done(folder, settings)
    for shard, problem in damaged.items():
        print(f"[labels] {problem}; {shard_path(folder, shard).name} is labelled again", file=sys.stderr)
    todo: Todo = {}
    for shard in range(settings.shards()):
        if shard in done:
            remove_parts(folder, shard)  # a stop came between writing the shard and removing its parts
            continue
        kept, broken = parts_done(folder, shard, rows, settings)
        for part, problem in broken.items():
            print(f"[labels] {problem}; {part_path(folder, shard, part).name} is labelled again", file=sys.stderr)
        todo[shard] = [p for p in range(parts_of(settings, shard, rows)) if p not in kept]
    return todo


def label_shards(
    settings: LabelSettings, folder: Path, todo: Todo, workers: int, progress: Progress | None = None,
    rows: int = PART_ROWS, address: str | None = None,
) -> None:  # fmt: skip
    """Make parts ``todo`` (of ``rows`` rows each) of the label set of ``settings`` in ``folder``
    (:func:`open_label_set`), and each shard once its parts are all done: by ``workers`` processes
    here, or as tasks on the Ray cluster at ``address`` (:mod:`train.rounds.labels_ray`; the same labels)."""
    tasks = [(shard, part) for shard, parts in todo.items() for part in parts]
    already = settings.count - sum(len(part_rows(settings, *task, rows)) for task in tasks)
    missing = {shard: set(parts) for shard, parts in todo.items()}
    for shard in [shard for shard, parts in missing.items() if not parts]:  # every part was on disk
        write_shard_of_parts(folder, shard, settings, rows, {})

    def keep(shard: int, part: int, columns: dict[str, np.ndarray]) -> None:
        missing[shard].discard(part)
        if missing[shard]:
            write_part(folder, shard, part, columns, settings.rules)
        else:
            write_shard_of_parts(folder, shard, settings, rows, {part: columns})

    progress = progress or Progress(enabled=False)
    context = worker_context()
    counter = context.Value("q", 0)
    with progress.phase("labelling", "labels", settings.count, done=already, work=labelling_work(settings)):
        if address:
            arguments = [(settings, *task, rows) for task in tasks]
            make_parts_on_ray(address, _make_part, arguments, keep, lambda made: progress.advance(already + made))
            return
        if workers == 1:
            _init_worker(None, counter)
            for task in tasks:
                keep(*_make_part(settings, *task, rows))
                progress.advance(already + counter.value)
            return
        with ProcessPoolExecutor(
            max_workers=max(1, min(workers, len(tasks))), mp_context=context,
            initializer=_init_worker, initargs=(os.getpid(), counter),
        ) as pool:  # fmt: skip
            try:
                with stops_held():  # the workers fork at the first submit
                    pending: set[Future] = {pool.submit(_make_part, settings, *task, rows) for task in tasks}
                while pending:
                    finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                    for future in finished:
                        keep(*future.result())
                    progress.advance(already + counter.value)
            except BaseException:  # a stop, a failed part or write: end now, not after the running parts
                end_workers(pool)
                raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.labels", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="the label set's folder")
    parser.add_argument("--count", type=int, default=300_000, help="decisions to label (default 300000)")
    number_option(parser, "--worlds", 32, "worlds searched per decision")
    number_option(parser, "--margin", 0.01, "search's margin")
    number_option(parser, "--confirm", 0, "worlds in all before a label leaves the expert's choice (search's; 0: off)")
    parser.add_argument("--keep", default="expert", help="whose choice a label keeps unless search beats it by the "
                        "margin: expert or a policy file (search on top of the network)")
    parser.add_argument("--rollout", default="expert", help="search's rollout policy: expert, greedy or a policy file")
    parser.add_argument("--player", default="expert", help="whose play reaches the positions: expert or a policy file")
    parser.add_argument(
        "--opponents", default="", help="a bot the player plays against (default: itself at every seat)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shard-rows", type=int, default=1000, help="decisions per shard (default 1000)")
    parser.add_argument("--tables", type=int, default=DEFAULT_TABLES, help="matches played at once per shard")
    parser.add_argument(
        "--workers", type=int, default=min(os.cpu_count() or 1, MAX_WORKERS), help="default: every core"
    )
    parser.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--address", help="HOST:PORT of a Ray cluster whose workers make the parts (the same labels; needs the "
        "rllib extra)",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    handle_stops()
    try:
        with ExitStack() as held:
            try:  # every setting and the folder, before any work
                settings = check_settings(args)
                for bot in filter(None, (settings.player, settings.opponents)):
                    agents.make(bot)  # an unknown bot fails now, with the list of bots
                teacher(settings)  # and a missing or damaged policy file of search's
                if args.address:
                    check_address(args.address)
                todo = _open_out(settings, args.out, held)
            except (ValueError, FileNotFoundError, RunInUseError) as err:  # LabelSetError, ConfigError: ValueErrors
                print(f"python -m train.labels: error: {err}", file=sys.stderr)
                return USAGE_EXIT
            progress = Progress(enabled=not args.quiet)
            start = time.monotonic()
            label_shards(settings, args.out, todo, args.workers, progress, address=args.address)
            progress.say(f"{settings.count:,} labels in {args.out} ({time.monotonic() - start:.0f} s)")
            return 0
    except ClusterError as err:  # the cluster refused to be joined (checked reachable before the work)
        print(f"python -m train.labels: error: {err}", file=sys.stderr)
        return USAGE_EXIT
    except OSError as err:  # a shard or part the disk refused: the finished ones are whole
        print(f"python -m train.labels: {write_failed(err)}; the finished shards and parts are kept: once the disk "
              "has room, the same command goes on", file=sys.stderr)  # fmt: skip
        return WRITE_FAILED_EXIT
    except (KeyboardInterrupt, SystemError) as error:
        return exit_on_stop(error, "{stop}: stopped; the finished shards and parts are kept, the same command goes on")


def _open_out(settings: LabelSettings, out: Path, held: ExitStack) -> Todo:
    """:func:`open_label_set` for ``--out``, locked for this process until ``held`` closes (a second
    labelling there is a RunInUseError, not mixed in); a folder that cannot be made or written is a
    LabelSetError."""
    try:
        if out.is_dir() or not out.exists():  # (write_meta words the refusal of a file)
            out.mkdir(parents=True, exist_ok=True)
            held.enter_context(RunLock(out, work="labelling", way_out="pick another --out"))
        return open_label_set(settings, out)
    except OSError as err:
        raise LabelSetError(
            f"cannot write the label folder {out}: {err.strerror or err}; give a writable --out"
        ) from None


def check_settings(args: argparse.Namespace) -> LabelSettings:
    """The label set's settings from the command line, each checked (:class:`LabelSettings`), and
    ``--workers``; a ValueError naming the bad one."""
    check_range("--workers", args.workers, 1, MAX_WORKERS)
    rules = parse_rule_options(args.rule)
    return LabelSettings(
        count=args.count, worlds=args.worlds, margin=args.margin, rollout=args.rollout, player=args.player,
        seed=args.seed, shard_rows=args.shard_rows, tables=args.tables, rules=rules, confirm=args.confirm,
        opponents=args.opponents, keep=args.keep,
    )  # fmt: skip

