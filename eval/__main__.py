"""``python -m eval A B [more] --boards N``: duplicate round robin of bots, on the terminal and in files.

Every pair plays the same boards, each twice with the teams swapped (see eval/boards.py and
eval/results.py for the exact definitions). Bad options (counts beyond the limits of
:mod:`eval.api`: at most 1,000,000 board pairs in all), unknown bots, bad bot options, damaged
policy files, an output folder that cannot be written and a kept journal that does not fit the
command (:mod:`eval.journal`) exit with code 2 before anything is played. One evaluation per output
folder: ``--out`` is locked while the command runs (:mod:`eval.run_lock`), and a second command on
it, ``--restart`` or ``--resume`` included, exits with code 2 naming the process that holds it.
Ctrl-C or SIGTERM, at any moment before the results are written, stops the workers at once and
exits with code 130 (143), keeping the boards finished so far. The report is printed before the
files are written, and the files are written all or nothing (:mod:`eval.report`). A write that
fails (a full or read-only disk: the results, the journal, the match logs) says so in one line and
exits with code 1, leaving no temporary file; the journal keeps its whole lines, so ``--resume``
goes on once there is room. A bot program that crashes, hangs or answers what is not a legal move
(``exec:COMMAND``, :mod:`agents.program`) stops the evaluation with one line naming it, its seat, board
and decision, and exit code 1; the finished boards are kept for ``--resume``. ``--logs DIR`` also
writes the match logs (docs/match_log.md) of the first ``--log-boards`` boards of every pair, played
again once the evaluation is done (:mod:`eval.match_logs`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agents.shared.options import count
from agents.shared.processes import WRITE_FAILED_EXIT

if TYPE_CHECKING:  # the heavy imports come inside main(), so that a Ctrl-C while they load is one line
    from .api import Plan
    from .journal import Finished, Journal
    from .results import TournamentResult

DEFAULT_BOARDS = 1000
DEFAULT_OUT = "results/eval"
DEFAULT_LOG_BOARDS = 1
BOT_FAILED_EXIT = 1  # a bot that crashed, hung or answered wrong (an outside program, agents.program)
MAX_LOG_BOARDS = 10_000  # boards logged in all pairs together (two files of a few KB each)


def check_out_dir(path: str, option: str = "--out") -> list[Path]:
    """Make sure ``path`` (given as ``option``) is a folder this process can write, before
    anything is played.

    Returns the folders created here, deepest first (so that an interrupted run can remove them).
    Raises ValueError naming the option and the problem.
    """
    if not path.strip():
        raise ValueError(f"{option} is empty; name the output folder (it is created if missing)")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {path!r} is a file; it must be a folder (it is created if missing)")
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(f"{option} {path!r} is not a writable folder: {err.strerror or err}") from None
    return created


def build_parser() -> argparse.ArgumentParser:
    from allfours_env.engine import EPISODES

    from .api import MAX_BOARD_PAIRS, MAX_BOOTSTRAP, MAX_FIRST_BOARD, max_workers
    from .stats import BOOTSTRAP_RESAMPLES

    parser = argparse.ArgumentParser(
        prog="python -m eval",
        description="Duplicate evaluation of All Fours bots: every pair plays the same boards twice, teams swapped.",
        epilog="Example: python -m eval rule_based random --boards 2000 --rule target_score=7",
    )
    parser.add_argument(
        "bots", nargs="+", metavar="BOT", help="bot names (e.g. random, rule_based), checkpoint paths, or exec:COMMAND (a program outside, "
        "docs/outside_bots.md); 2 or more"
    )
    parser.add_argument(
        "--boards", type=count(1, MAX_BOARD_PAIRS), default=DEFAULT_BOARDS, help=f"boards per pair (default {DEFAULT_BOARDS})"
    )
    parser.add_argument(
        "--rule", action="append", default=[], metavar="KEY=VALUE",
        help="rule variant (docs/rules.md table A0), repeatable, e.g. --rule target_score=7 "
        "--rule undertrump=forbidden_unless_all_trumps; values are read as int, bool (true/false) or text",
    )  # fmt: skip
    parser.add_argument(
        "--episode", choices=EPISODES, default="match",
        help="match (default), or deal: deal episodes, single deals instead of matches (win = more points in the deal)",
    )  # fmt: skip
    parser.add_argument(
        "--workers", type=count(1, max_workers()), default=None,
        help="worker processes (default: all cores; at most 4 per core)",
    )  # fmt: skip
    parser.add_argument(
        "--seed", "--first-board", dest="first_board", type=count(0, MAX_FIRST_BOARD), default=0, metavar="FIRST_BOARD",
        help="first board id: boards FIRST_BOARD .. FIRST_BOARD+N-1 are played (default 0)",
    )  # fmt: skip
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument(
        "--bootstrap",
        type=count(1, MAX_BOOTSTRAP),
        default=BOOTSTRAP_RESAMPLES,
        help=f"bootstrap resamples for ratings (default {BOOTSTRAP_RESAMPLES})",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume", action="store_true",
        help="go on with the interrupted evaluation of the same command in --out: only its missing boards are played",
    )  # fmt: skip
    again.add_argument("--restart", action="store_true", help="discard an interrupted evaluation kept in --out")
    parser.add_argument(
        "--logs", metavar="DIR", help="also write the match logs (JSON, docs/match_log.md) of the first --log-boards "
        "boards of every pair to DIR, played again after the evaluation; python -m agents.web replays them",
    )  # fmt: skip
    parser.add_argument(
        "--log-boards", type=count(1, MAX_LOG_BOARDS), default=None, metavar="N",
        help=f"with --logs: boards per pair to log, two matches each (default {DEFAULT_LOG_BOARDS}; at most "
        f"{MAX_LOG_BOARDS:,} in all pairs together)",
    )  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; a Ctrl-C or SIGTERM at any moment, imports included, ends it with one line
    and exit code 130 (143 for SIGTERM)."""
    from agents.shared.processes import exit_on_stop, handle_stops

    handle_stops()
    try:
        return _main(argv)
    except (KeyboardInterrupt, SystemError) as error:
        return exit_on_stop(error, "python -m eval: {stop}; nothing was written")


def _main(argv: Sequence[str] | None) -> int:
    from agents.shared.processes import exit_code, stop_name
    from allfours_env.rules import parse_rule_options

    from .api import EvaluationStopped, plan_round_robin

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.log_boards is not None and args.logs is None:
        parser.error("--log-boards goes with --logs DIR (the folder of the match logs)")
    args.log_boards = min(args.log_boards or DEFAULT_LOG_BOARDS, args.boards)  # boards per pair to log
    created: list[Path] = []
    try:
        plan = plan_round_robin(  # builds each bot once: fewer than 2, a bad spec or option is refused here
            args.bots,
            boards=args.boards,
            rules=parse_rule_options(args.rule),
            workers=args.workers,
            episode=args.episode,
            first_board=args.first_board,
            bootstrap=args.bootstrap,
        )
        logged = len(plan.pairs) * args.log_boards
        if args.logs is not None and logged > MAX_LOG_BOARDS:
            raise ValueError(
                f"--logs would log {logged:,} boards (--log-boards for each pair), more than {MAX_LOG_BOARDS:,} in "
                "all: lower --log-boards"
            )
        created = check_out_dir(args.out)
        if args.logs is not None:
            created += check_out_dir(args.logs, "--logs")  # writable now, not after the whole evaluation
    except (ValueError, FileNotFoundError, TypeError) as error:
        _remove(created)
        parser.error(str(error))
    try:
        with contextlib.ExitStack() as held:
            _hold(held, parser, args.out)
            return _evaluate(parser, plan, args)
    except EvaluationStopped as stopped:  # before any board was finished: nothing is kept, lock released
        _remove(created)
        print(f"\npython -m eval: {stop_name(stopped.stop)}; nothing was written to {args.out}", file=sys.stderr)
        return exit_code(stopped.stop)
    except SystemExit:  # refused before any play (a journal that does not fit, a folder in use): no folder left
        _remove(created)
        raise


def _remove(created: list[Path]) -> None:
    """Remove the folders this run created that are still empty, deepest first."""
    for folder in sorted(created, key=lambda p: len(p.absolute().parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _hold(held: contextlib.ExitStack, parser: argparse.ArgumentParser, out: str) -> None:
    """Lock ``out`` for this process until ``held`` closes (eval.run_lock); exit 2 if another holds it."""
    from .run_lock import RunInUseError, RunLock

    try:
        lock = held.enter_context(RunLock(Path(out), work="evaluation", way_out="pick another --out"))
    except RunInUseError as error:
        parser.error(str(error))
    except OSError as error:
        parser.error(f"--out {out!r}: cannot take its lock: {error.strerror or error}")
    if lock.stale_pid is not None:
        print(f"python -m eval: took over the lock of process {lock.stale_pid}, which no longer runs", file=sys.stderr)


def _evaluate(parser: argparse.ArgumentParser, plan: Plan, args: argparse.Namespace) -> int:
    """Play ``plan`` and write its results, with ``--out`` locked; the exit code. An
    EvaluationStopped before any board was finished passes on (the caller cleans up)."""
    from agents.shared.processes import exit_code, stop_name
    from allfours_env.match import BotFailure

    from .api import EvaluationStopped, play_plan
    from .journal import Journal, JournalError, JournalWriteError
    from .report import format_report

    journal = Journal(Path(args.out), plan)
    try:
        finished = _journal_to_continue(journal, args)
    except JournalError as error:
        parser.error(str(error))
    try:
        if not finished:
            journal.start()
    except JournalWriteError as error:
        print(f"python -m eval: {error}; nothing was played", file=sys.stderr)
        return WRITE_FAILED_EXIT
    try:
        result = play_plan(plan, not args.no_progress, finished=finished, on_task=journal.add)
    except JournalWriteError as error:
        print(
            f"\npython -m eval: {error}; the evaluation stopped. The boards the journal holds are kept: once "
            "it can be written, the same command with --resume plays only the rest",
            file=sys.stderr,
        )
        return WRITE_FAILED_EXIT
    except BotFailure as failure:  # a program bot that crashed, hung or answered wrong (agents.program)
        print(
            f"\npython -m eval: {failure}; the evaluation stopped. Its finished boards are kept in {args.out}: once "
            "the bot is mended, the same command with --resume plays only the rest",
            file=sys.stderr,
        )
        return BOT_FAILED_EXIT
    except EvaluationStopped as stopped:
        if stopped.partial is None:
            journal.remove()
            raise
        print(format_report(stopped.partial))
        code = _write(stopped.partial, args.out)
        print(
            f"python -m eval: {stop_name(stopped.stop)} after {stopped.boards_done:,} of {stopped.boards_planned:,} "
            f"board pairs; the partial results above are in {args.out}, and its finished boards are kept: "
            "the same command with --resume plays only the rest",
            file=sys.stderr,
        )
        return code or exit_code(stopped.stop)
    print(format_report(result))  # first: the results are on the terminal whatever happens to the files
    code = _write(result, args.out)
    if code:
        print("python -m eval: the boards are kept: the same command with --resume writes them without playing again",
              file=sys.stderr)  # fmt: skip
        return code
    if args.logs is not None:
        code = _write_logs(plan, args.logs, args.log_boards)
    if code == 0:
        journal.remove()  # last: until the logs are written too, --resume can write them
    return code


def _journal_to_continue(journal: Journal, args: argparse.Namespace) -> Finished:
    """The boards finished before that this run goes on from ({} for a fresh start); a
    JournalError when an interrupted evaluation would otherwise be lost or mixed in, or its
    journal does not fit this evaluation (JournalWriteError: its cut last line cannot be removed)."""
    from .journal import JournalError

    if args.restart or not journal.exists():
        if args.resume:
            raise JournalError(f"--resume: {args.out} holds no interrupted evaluation to go on with")
        return {}
    finished = journal.load()  # a JournalError if it is another evaluation's, or does not fit the plan
    if not args.resume:
        raise JournalError(
            f"{args.out} holds an interrupted evaluation of these boards ({len(finished):,} board pairs done): "
            "add --resume to go on with it, or --restart to start it again"
        )
    journal.drop_torn_tail()
    return finished


def _write_logs(plan: Plan, folder: str, boards: int) -> int:
    """Write the match logs (see eval.match_logs); 0, or WRITE_FAILED_EXIT with one line saying why."""
    from .match_logs import write_match_logs

    again = "the results are written, and the same command with --resume writes the logs without playing again"
    try:
        written = write_match_logs(plan, Path(folder), boards)
    except OSError as err:
        print(f"python -m eval: could not write the match logs to {folder}: {err.strerror or err}; {again}",
              file=sys.stderr)  # fmt: skip
        return WRITE_FAILED_EXIT
    except (KeyboardInterrupt, SystemError) as error:
        from agents.shared.processes import exit_on_stop

        return exit_on_stop(error, "python -m eval: {stop} while writing match logs; " + again)
    print(f"match logs: {len(written)} in {folder}")
    return 0


def _write(result: TournamentResult, out: str) -> int:
    """Write the result files (all or nothing); 0, or WRITE_FAILED_EXIT with one line saying so."""
    from agents.shared.processes import interrupts_deferred

    from .report import write_outputs

    try:
        with interrupts_deferred(reraise=False) as interrupted:
            written = write_outputs(result, out)
    except OSError as err:
        print(
            f"python -m eval: could not write the results to {out}: {err.strerror or err}; nothing was "
            "written there (the report above is the result)",
            file=sys.stderr,
        )
        return WRITE_FAILED_EXIT
    print("\nwritten: " + ", ".join(str(p) for p in written))
    if interrupted:
        print("python -m eval: a stop signal came while the results were written; they were written whole", file=sys.stderr)
    return 0


if __name__ == "__main__":
    code = main()
    if code in (130, 143):  # stopped by a signal  # nothing is left to save: skip the slow teardown of torch (a .zip policy)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
