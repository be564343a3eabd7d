"""Does a network play better averaged over suit relabellings, or over several networks?

    python benchmarks/averaged_policy.py agents/pretrained/student_v3.npz [MORE.npz ...] --suits 24 \
        --against student --boards 5000 --first-board 17000000000 --workers 2

This plays, against ``--against`` on duplicate boards, the player whose action is the best mean
log-probability of the given networks over ``--suits`` relabellings each (24: all of them; 6:
those that keep the first suit in place; 1: none; :class:`agents.averaged.AveragedPolicy`), and
prints the result with the time a decision.
"""

from __future__ import annotations

import argparse
import time

from agents.averaged import RELABELLINGS, AveragedPolicy
from agents.policy import PolicyBot
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from eval.api import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="+", help="policy files of one input layout")
    parser.add_argument("--suits", type=int, choices=sorted(RELABELLINGS), default=24, help="relabellings averaged")
    parser.add_argument("--against", default="student", help="the opponent's bot spec")
    parser.add_argument("--boards", type=count(1, 1_000_000), default=5000)
    parser.add_argument("--first-board", type=count(0, 2**62), default=0)
    parser.add_argument("--workers", type=count(1, 64), default=2)
    args = parser.parse_args()
    one_blas_thread()

    def averaged() -> AveragedPolicy:  # a factory: each worker process builds its own
        return AveragedPolicy([PolicyBot.from_file(p) for p in args.networks], RELABELLINGS[args.suits])

    started = time.monotonic()
    try:
        averaged()
        result = evaluate(
            averaged, args.against, boards=args.boards, first_board=args.first_board, workers=args.workers
        )
    except (OSError, ValueError) as err:  # a missing or damaged network, an unknown bot, a bad count
        parser.error(str(err))
    low, high = result.win_rate_ci
    p_low, p_high = result.point_diff_ci
    print(f"{averaged().name} vs {args.against}, {result.boards} board pairs from {result.first_board}:")
    print(
        f"  win rate {result.win_rate:.3f} [{low:.3f}, {high:.3f}] ({result.wins} won, {result.splits} split, "
        f"{result.losses} lost); points a deal {result.point_diff_per_deal:+.3f} [{p_low:+.3f}, {p_high:+.3f}]"
    )
    for side, stats in (("averaged", result.stats_a), (args.against, result.stats_b)):
        print(f"  {side}: {1000 * stats.think_seconds / max(stats.moves, 1):.3f} ms a decision")
    print(f"  {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/averaged_policy.py"))
