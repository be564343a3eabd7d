"""RLlib's environment steps per second, end to end and in sampling alone, for a config.

    python benchmarks/rllib_speed.py configs/rllib.yaml [--runners 1 2] [--iterations 5]

For each number of env runners: builds the trainer's PPO exactly as ``python -m train --backend
rllib`` does (``train.rllib.run.algorithm_config``), sends the league its weights, runs one
warm-up iteration, then ``--iterations`` timed ones, and prints the environment steps per second
of the whole iteration (sampling and learning, which alternate in PPO) and of sampling alone
(RLlib's ``env_runner_sampling_timer``), the training samples per second end to end (the steps of
the modules the learner trains: all of them on the vector env; on the multi-agent env of earlier
commits, where every seat stepped, ``main``'s only), and the learner's seconds per iteration.
Needs the ``.[rllib]`` environment; the learner runs in this process on one thread, as in training.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import ray
import torch

from agents.shared.options import count, run_script
from train.ppo.league import League
from train.rllib.config import load_rllib_config
from train.rllib.run import algorithm_config, send_league


def trained_steps(result: dict) -> int:
    """The steps of the modules the learner trained in an iteration (the league's, frozen, are listed untrained)."""
    trained = {module for module, stats in result["learners"].items() if stats.get("num_module_steps_trained")}
    per_module = result["env_runners"]["num_module_steps_sampled"]
    return sum(int(steps) for module, steps in per_module.items() if module in trained)


def measure(config, iterations: int) -> tuple[float, float, float, float]:
    algo = algorithm_config(config).build_algo()
    try:
        send_league(algo, League(config.opponents, config.max_snapshots, config.seed), snapshot=False, everything=True)
        algo.train()  # warm-up: compiles, fills the pipelines
        steps = samples = sampling = learning = 0.0
        start = time.perf_counter()
        for _ in range(iterations):
            result = algo.train()
            steps += result["env_runners"]["num_env_steps_sampled"]
            samples += trained_steps(result)
            sampling += result["timers"]["env_runner_sampling_timer"]
            learning += result["timers"]["learner_update_timer"]
        wall = time.perf_counter() - start
    finally:
        algo.stop()
    return steps / wall, steps / sampling, samples / wall, learning / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--runners", type=count(1, 64), nargs="+", default=[1, 2])
    parser.add_argument("--iterations", type=count(1, 10_000), default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = load_rllib_config(args.config)
    for runners in args.runners:
        one = dataclasses.replace(config, n_env_runners=runners)
        total, sampling, samples, learner = measure(one, args.iterations)
        print(
            f"{runners} env runner(s) x {one.n_envs_per_runner} envs, batch {one.rollout_steps}: "
            f"{total:,.0f} steps/s end to end, {sampling:,.0f} steps/s sampling, {samples:,.0f} training samples/s "
            f"end to end, learner {learner:.2f} s an iteration",
            flush=True,
        )
    ray.shutdown()


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/rllib_speed.py"))
