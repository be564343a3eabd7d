"""Decisions per second of the vector engine at several batch sizes, beside the scalar ``env()``.

    python benchmarks/vector_speed.py [--seconds 3] [--sizes 1 64 256 1024 4096]

Uniformly random legal play at every table (``VectorGame.sample_legal``), matches restarted as
they end, one process, one thread. Each batch size is timed four ways, every step reading:

* ``mask``: ``legal_mask()``;
* ``obs+mask``: ``observe()`` and ``legal_mask()``;
* ``obs+mask+features``: the same and ``agents.features.batch_policy_input`` (the policy input);

and the cost of one decision is split into its parts (step, observe, mask, features, sampling the
action) from separate timers. The scalar ``env()`` (PettingZoo AEC, observation and mask read at
every decision), the per-row ``agents.features.policy_input`` and, from a checkout, the per-row
Python features the batched ones replaced (frozen in tests/test_features.py) are timed in the
same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents.shared.options import count, number, run_script
from allfours_env.vector import MAX_TABLES, VectorGame

try:  # the batched policy features (agents.features); the benchmark runs without them
    from agents.features import batch_policy_input, policy_input
except ImportError:
    batch_policy_input = policy_input = None

PARTS = ("step", "observe", "mask", "features", "sample")


def bench_vector(
    n: int, seconds: float, observe: bool, features: bool, seed: int = 0
) -> tuple[float, dict[str, float]]:
    """(decisions per second, seconds per decision of each part) for ``n`` tables."""
    vg = VectorGame(n)
    vg.reset(seed=seed)
    rng = np.random.default_rng(seed)
    spent = dict.fromkeys(PARTS, 0.0)
    decisions = 0
    clock = time.perf_counter
    start = clock()
    while clock() - start < seconds:
        live = n - int(vg.is_over.sum())
        t0 = clock()
        if observe:
            obs = vg.observe()
        t1 = clock()
        mask = vg.legal_mask()
        t2 = clock()
        if features:
            batch_policy_input(obs, mask)
        t3 = clock()
        actions = vg.sample_legal(rng)
        t4 = clock()
        vg.step(actions)
        over = vg.is_over
        if over.any():
            vg.restart(over)
        t5 = clock()
        decisions += live
        for part, seconds_spent in zip(PARTS, (t5 - t4, t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            spent[part] += seconds_spent
    elapsed = clock() - start
    return decisions / elapsed, {part: s / decisions for part, s in spent.items()}


def bench_scalar_env(seconds: float) -> float:
    sys.path.insert(0, str(Path(__file__).parent))
    from speed import bench_aec

    import allfours_env

    decisions, _, elapsed = bench_aec(allfours_env.env, seconds)
    return decisions / elapsed


def bench_per_row(function: Callable, seconds: float) -> float:
    """Seconds per call of a per-row feature function ``(observation, mask)``, on observations of random play."""
    vg = VectorGame(256)
    vg.reset(seed=0)
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(20):
        obs, mask = vg.observe(), vg.legal_mask()
        rows += [(o, m.astype(np.int8)) for o, m, over in zip(obs, mask, vg.is_over) if not over]
        vg.step(vg.sample_legal(rng))
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        obs, mask = rows[calls % len(rows)]
        function(obs, mask)
        calls += 1
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=number(0.01, 86_400), default=3.0, help="seconds per measurement (default 3)")
    parser.add_argument("--sizes", type=count(1, MAX_TABLES), nargs="+", default=[1, 64, 256, 1024, 4096])
    args = parser.parse_args(argv)
    VectorGame(1).reset(seed=0)  # compile (or load) the kernels outside the timings
    warm = VectorGame(2)
    warm.reset(seed=0)
    warm.step(warm.sample_legal(np.random.default_rng(0)))
    if batch_policy_input is not None:
        batch_policy_input(warm.observe(), warm.legal_mask())

    scalar = bench_scalar_env(args.seconds)
    print(f"scalar env() (AEC, obs + mask): {scalar:,.0f} decisions/s\n")
    modes: list[tuple[str, bool, bool]] = [("mask", False, False), ("obs+mask", True, False)]
    if batch_policy_input is not None:
        modes.append(("obs+mask+features", True, True))
    header = "| tables | " + " | ".join(f"{name} decisions/s" for name, _, _ in modes) + " | obs+mask / env() |"
    print(header)
    print("|" + "---:|" * (len(modes) + 2))
    split: dict[int, dict[str, float]] = {}
    for n in args.sizes:
        rates = []
        for name, observe, features in modes:
            rate, parts = bench_vector(n, args.seconds, observe, features)
            rates.append(rate)
            if name == modes[-1][0]:
                split[n] = parts
        print(f"| {n:,} | " + " | ".join(f"{r:,.0f}" for r in rates) + f" | {rates[1] / scalar:.1f}x |", flush=True)

    print("\nCost of one decision, microseconds (mode " + modes[-1][0] + "):\n")
    print("| tables | " + " | ".join(PARTS) + " |")
    print("|" + "---:|" * (len(PARTS) + 1))
    for n, parts in split.items():
        print(f"| {n:,} | " + " | ".join(f"{parts[p] * 1e6:.2f}" for p in PARTS) + " |")
    if policy_input is not None:
        best = min(parts["features"] for parts in split.values())
        print(f"\nbatched policy input: at best {best * 1e6:.2f} us per decision")
        rows = [("policy_input (per row, same kernel)", policy_input)]
        try:  # the per-row Python implementation the batched one replaced, frozen in the tests
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
            from tests.test_features import reference_features

            rows.append(("previous per-row features (tests/test_features.py reference)", reference_features))
        except ImportError:
            pass
        for name, function in rows:
            per_row = bench_per_row(function, args.seconds)
            print(f"{name}: {per_row * 1e6:.1f} us per call; batched is {per_row / best:.0f}x cheaper")


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/vector_speed.py"))
