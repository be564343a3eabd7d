"""Does a network play better averaged over suit relabellings, or over several networks?

    python benchmarks/averaged_policy.py agents/pretrained/student_v3.npz [MORE.npz ...] --suits 24 \
        --against student --boards 5000 --first-board 17000000000 --workers 2

Suits have no order (docs/rules.md A1.1), so a position with its suits relabelled plays the same
(``allfours_env.observation.suit_relabelling``); a network fitted with relabelled copies of its
labels is still not exactly invariant, and its errors differ from one relabelling to the next.
This plays, against ``--against`` on duplicate boards, the player whose action is the best mean
log-probability of the given networks over ``--suits`` relabellings each (24: all of them; 6:
those that keep the first suit in place; 1: none), and prints the result with the time a decision.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence

import numpy as np

from agents.base import Observation
from agents.policy import PolicyBot, batch_inputs, choose, load_weights
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from allfours_env.observation import suit_relabelling
from eval.api import evaluate

ALL_RELABELLINGS = list(itertools.permutations(range(4)))
CHOICES = {24: ALL_RELABELLINGS, 6: [p for p in ALL_RELABELLINGS if p[0] == 0], 1: [(0, 1, 2, 3)]}


class AveragedPolicy:
    """Acts by the mean masked log-softmax of ``networks``, each over the relabellings ``suits``."""

    def __init__(self, paths: Sequence[str], suits: Sequence[tuple[int, ...]]):
        self.networks = [PolicyBot(load_weights(p), name=p) for p in paths]
        self.relabellings = [suit_relabelling(s) for s in suits]
        self.name = f"averaged({len(paths)} networks x {len(suits)} relabellings)"

    def log_probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        legal = masks > 0
        total = np.zeros(masks.shape)
        for obs_index, action_index in self.relabellings:
            relabelled, relabelled_mask = observations[:, obs_index], masks[:, action_index]
            for net in self.networks:
                logits = net.logits(batch_inputs(net.layout, relabelled, relabelled_mask)).astype(np.float64)
                logits = np.where(relabelled_mask > 0, logits, -np.inf)
                logits -= logits.max(axis=1, keepdims=True)
                log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
                back = np.empty_like(log_p)
                back[:, action_index] = log_p  # action a of the relabelled position is action_index[a] here
                total += np.where(legal, back, 0.0)
        return total / (len(self.relabellings) * len(self.networks))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks)
        return choose(self.log_probabilities(np.asarray(observations), masks).astype(np.float32), masks, None)

    def act(self, observation: Observation) -> int:
        mask = np.asarray(observation["action_mask"])[None]
        return int(self.act_batch(np.asarray(observation["observation"])[None], mask)[0])

    def reset(self, seed: int | None = None) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("networks", nargs="+", help="policy files of one input layout")
    parser.add_argument("--suits", type=int, choices=sorted(CHOICES), default=24, help="relabellings averaged")
    parser.add_argument("--against", default="student", help="the opponent's bot spec")
    parser.add_argument("--boards", type=count(1, 1_000_000), default=5000)
    parser.add_argument("--first-board", type=count(0, 2**62), default=0)
    parser.add_argument("--workers", type=count(1, 64), default=2)
    args = parser.parse_args()
    one_blas_thread()

    def averaged() -> AveragedPolicy:  # a factory: each worker process builds its own
        return AveragedPolicy(args.networks, CHOICES[args.suits])

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
