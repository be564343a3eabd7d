"""Learner steps per second of the Gymnasium vector env, against ``SyncVectorEnv`` over the
single-agent env in the same run.

    python benchmarks/vector_env_speed.py [--envs 256] [--opponents expert] [--seconds 10] [--rounds 5] [--layout 3]

Both envs play the same tables (``agents.vector_env`` and ``SyncVectorEnv`` of
``agents.single_agent_env``, the same opponents, reward "points"), the learner taking a random
legal action from the mask at every table; opponents' moves happen inside each step and are not
counted. One process, one thread; each env is warmed up (numba compiles) before it is timed, then
timed for ``--seconds`` in all, in ``--rounds`` slices taken in turn with the other's: a machine
whose speed drifts during the run slows both alike.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from gymnasium.vector import SyncVectorEnv

import agents
from agents.policy import INPUT_SIZES
from agents.shared.options import count, number, run_script
from allfours_env.vector import MAX_TABLES


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.where(masks > 0, rng.random(masks.shape), -1.0).argmax(axis=1)


def timed_steps(envs, masks_of, rng: np.random.Generator, seconds: float) -> tuple[int, float]:
    """Learner steps (one step of every table counts num_envs) and the seconds they took."""
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        envs.step(random_legal(masks_of(envs), rng))
        steps += envs.num_envs
    return steps, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=count(1, MAX_TABLES), default=256)
    parser.add_argument("--opponents", default="expert")
    parser.add_argument("--seconds", type=number(0.01, 86_400), default=10.0, help="time per env (default 10)")
    parser.add_argument("--rounds", type=count(1, 1000), default=5, help="slices per env, taken in turn (default 5)")
    parser.add_argument(
        "--layout", type=int, choices=sorted(INPUT_SIZES), default=None, help="observations as this policy input layout"
    )
    args = parser.parse_args()
    try:
        ours = agents.vector_env(args.envs, args.opponents, reward="points", layout=args.layout)
    except (ValueError, OSError) as err:  # an unknown bot
        parser.error(f"--opponents {args.opponents!r}: {err}")
    theirs = SyncVectorEnv([lambda: agents.single_agent_env(args.opponents, reward="points") for _ in range(args.envs)])
    runs = [(ours, lambda e: e.action_masks()), (theirs, lambda e: np.stack(e.call("action_masks")))]
    rng = np.random.default_rng(0)
    for envs, masks_of in runs:
        envs.reset(seed=0)
        for _ in range(20):  # warm-up: numba compiles, caches fill
            envs.step(random_legal(masks_of(envs), rng))
    totals = [[0, 0.0], [0, 0.0]]
    for _ in range(args.rounds):
        for total, (envs, masks_of) in zip(totals, runs):
            steps, seconds = timed_steps(envs, masks_of, rng, args.seconds / args.rounds)
            total[0] += steps
            total[1] += seconds
    fast, slow = (steps / seconds for steps, seconds in totals)
    what = f"{args.envs} envs, {args.opponents} opponents" + (f", layout {args.layout}" if args.layout else "")
    print(
        f"{what}: vector env {fast:,.0f} steps/s; SyncVectorEnv over single_agent_env {slow:,.0f}; {fast / slow:.1f}x"
    )


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/vector_env_speed.py"))
