"""``python -m eval A B [more] --boards N``: duplicate round robin of bots, on the terminal and in files.

Every pair plays the same boards, each twice with the teams swapped (see eval/boards.py and
eval/results.py for the exact definitions). Bad options, unknown bots, damaged policy files and
an output folder that cannot be written exit with code 2 before anything is played. Ctrl-C, at any
moment before the results are written, stops the workers at once and exits with code 130, writing
nothing. The report is printed before the files are written, and the files are written all or
nothing (:mod:`eval.report`): a write that fails (a full disk) says so, leaves the output folder as
it was and exits with code 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_BOARDS = 1000
MAX_BOARDS = 10**9  # boards per pair: at 100 matches a second, half a year of play
MAX_FIRST_BOARD = 2**62  # board ids stay far inside numpy's seed range
MAX_WORKERS = 1024
MAX_BOOTSTRAP = 10**6
DEFAULT_OUT = "results/eval"
INTERRUPTED_EXIT = 130  # the shell's code for a process ended by SIGINT
WRITE_FAILED_EXIT = 1


def _count(minimum: int, maximum: int) -> Any:
    """An argparse type: an integer in minimum..maximum."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be in {minimum:,}..{maximum:,}, got {value}")
        return value

    return parse


def check_out_dir(path: str) -> list[Path]:
    """Make sure ``path`` is a folder this process can write, before anything is played.

    Returns the folders created here, deepest first (so that an interrupted run can remove them).
    Raises ValueError naming the problem.
    """
    if not path.strip():
        raise ValueError("--out is empty; name the output folder (it is created if missing)")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {path!r} is a file; it must be a folder (it is created if missing)")
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(f"--out {path!r} is not a writable folder: {err.strerror or err}") from None
    return created


def build_parser() -> argparse.ArgumentParser:
    from allfours_env.engine import EPISODES

    from .stats import BOOTSTRAP_RESAMPLES

    parser = argparse.ArgumentParser(
        prog="python -m eval",
        description="Duplicate evaluation of All Fours bots: every pair plays the same boards twice, teams swapped.",
        epilog="Example: python -m eval rule_based random --boards 2000 --rule target_score=7",
    )
    parser.add_argument(
        "bots", nargs="+", metavar="BOT", help="bot names (e.g. random, rule_based) or checkpoint paths; 2 or more"
    )
    parser.add_argument(
        "--boards", type=_count(1, MAX_BOARDS), default=DEFAULT_BOARDS, help=f"boards per pair (default {DEFAULT_BOARDS})"
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
    parser.add_argument("--workers", type=_count(1, MAX_WORKERS), default=None, help="worker processes (default: all cores)")
    parser.add_argument(
        "--seed", "--first-board", dest="first_board", type=_count(0, MAX_FIRST_BOARD), default=0, metavar="FIRST_BOARD",
        help="first board id: boards FIRST_BOARD .. FIRST_BOARD+N-1 are played (default 0)",
    )  # fmt: skip
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument(
        "--bootstrap",
        type=_count(1, MAX_BOOTSTRAP),
        default=BOOTSTRAP_RESAMPLES,
        help=f"bootstrap resamples for ratings (default {BOOTSTRAP_RESAMPLES})",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; a Ctrl-C at any moment, imports included, ends it with one line and exit 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("\npython -m eval: interrupted; nothing was written", file=sys.stderr)
        return INTERRUPTED_EXIT


def _main(argv: Sequence[str] | None) -> int:
    from allfours_env.rules import parse_rule_options

    from .api import plan_round_robin, play_plan
    from .processes import interrupts_deferred
    from .report import format_report, write_outputs

    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.bots) < 2:
        parser.error(f"need at least 2 bots to compare, got {len(args.bots)}: {' '.join(args.bots)}")
    try:
        plan = plan_round_robin(
            args.bots,
            boards=args.boards,
            rules=parse_rule_options(args.rule),
            workers=args.workers,
            episode=args.episode,
            first_board=args.first_board,
            bootstrap=args.bootstrap,
        )
        created = check_out_dir(args.out)
    except (ValueError, FileNotFoundError, TypeError) as error:
        parser.error(str(error))
    try:
        result = play_plan(plan, progress=not args.no_progress)
    except KeyboardInterrupt:
        for folder in created:
            folder.rmdir()
        print(f"\npython -m eval: interrupted; nothing was written to {args.out}", file=sys.stderr)
        return INTERRUPTED_EXIT
    print(format_report(result))  # first: the results are on the terminal whatever happens to the files
    try:
        with interrupts_deferred(reraise=False) as interrupted:
            written = write_outputs(result, args.out)
    except OSError as err:
        print(
            f"python -m eval: could not write the results to {args.out}: {err.strerror or err}; nothing was "
            "written there (the report above is the result)",
            file=sys.stderr,
        )
        return WRITE_FAILED_EXIT
    print("\nwritten: " + ", ".join(str(p) for p in written))
    if interrupted:
        print("python -m eval: Ctrl-C came while the results were written; they were written whole", file=sys.stderr)
    return 0


if __name__ == "__main__":
    code = main()
    if code == INTERRUPTED_EXIT:  # nothing is left to save: skip the slow teardown of torch (a .zip policy)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
