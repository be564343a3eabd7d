"""How well the search's worlds name the holders of the hidden cards, on a player's positions.

    python benchmarks/belief_quality.py [--player student] [--positions 2000] [--worlds 128]

``--player`` (``expert``, ``student``, ``pretrained`` or a policy file) plays itself on the vector
engine (:func:`train.beliefs.record`); at the positions kept, each seat's hidden cards are
compared with the worlds the search draws, uniformly among the deals the observation allows
(:class:`agents.beliefs.SampledBeliefs`), ``--worlds`` worlds a position. Printed
(:func:`agents.beliefs.quality`): the mean log-likelihood of the true holder a hidden card, how
often the most likely holder is the true one (every hidden card, and the hidden trumps), and the
seconds it took. One thread.

Until issue 63 it also measured the worlds of ``search:infer=NETWORK``, drawn by a network's
likelihood of the other seats' decisions (``--infer``); that option left the search, and its
figures stay in docs/results.md ("Policy-based inference", and issue 59's PPO leg).
"""

from __future__ import annotations

import argparse
import json
import time

import agents
from agents.beliefs import SampledBeliefs, quality, trump_cards
from agents.expert import expert_actions
from agents.search import MAX_WORLDS
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from train.beliefs import record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--player", default="student", help="whose self-play gives the positions")
    parser.add_argument("--positions", type=count(1, 10**7), default=2000)
    parser.add_argument("--worlds", type=count(1, MAX_WORLDS), default=128, help="worlds a position")
    parser.add_argument("--seed", type=count(0, 2**63 - 1), default=1_000_003)
    args = parser.parse_args()
    one_blas_thread()
    try:
        play = expert_actions if args.player == "expert" else agents.make(args.player).act_batch
    except (ValueError, OSError, AttributeError) as err:  # an unknown bot or network; a bot that plays no batch
        parser.error(f"--player {args.player!r}: {err}")
    observations, positions, truth = record(args.positions, args.seed, play)
    trumps = trump_cards(positions, observations)
    start = time.perf_counter()
    probs = SampledBeliefs(args.worlds, args.seed).probs(observations, positions)
    results = {"uniform sampling": {**quality(probs, truth, trumps), "seconds": round(time.perf_counter() - start, 1)}}
    print(json.dumps({"player": args.player, "positions": args.positions, "worlds": args.worlds, **results}, indent=1))


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/belief_quality.py"))
