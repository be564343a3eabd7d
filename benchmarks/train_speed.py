"""Training throughput: PPO steps per second end to end, split into collection and updates.

    python benchmarks/train_speed.py [--seconds 60] [--config configs/default.yaml]

Five measurements in one run, each MaskablePPO learning for about ``--seconds`` after a warm-up
rollout, torch and numpy's BLAS on one thread:

* ``new, self-play``: ``python -m train``'s path (:mod:`train.ppo.learner_env`) with the config's input,
  network and PPO settings, every opponent the current policy;
* ``new, self-play, overlapped``: the same with ``overlap_updates: true`` (:mod:`train.ppo.overlap`:
  the next rollout is collected on a second thread during the update; "collect" is then the
  time the update waits for it);
* ``new, config's pool``: the same with the config's opponent pool (bots such as ``expert`` act in
  one batched call per tick, and cost what they cost), synchronous and overlapped;
* ``old path``: the training path this project had before the vector engine, rebuilt here: two
  single-agent envs in worker processes (SB3's ``SubprocVecEnv``), the opponents answering one
  decision at a time as :class:`agents.policy.PolicyBot`, the whole observation plus the features
  as input (1,436 floats), separate 256x256 actor and critic, ``n_steps`` 1024 and batch 512.

A step is one learner decision. "collect" is SB3's ``collect_rollouts`` (the envs, the opponents
and the learner's forward passes), "update" its ``train`` (the PPO epochs); overlapped, the
collection runs beside the update, and what is shown is the share of the time spent waiting for it.

Last, the config as ``python -m train`` runs it: the pool path with the config's own
``overlap_updates``, plus what its evaluations cost (one round, ``eval_boards`` against each of
``eval_opponents``, timed here, every ``eval_every`` steps): the rate the real run's progress
line and ``time/steps_per_second`` report, before the warm start and checkpoints.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import SubprocVecEnv

from agents import single_agent_env
from agents.features import INPUT_SIZE, policy_input
from agents.policy import PolicyBot, weights_from_policy
from agents.shared.options import number, run_script
from agents.shared.processes import one_blas_thread
from train.config import DEFAULT_CONFIG, ConfigError, TrainConfig, load_config
from train.ppo.trainer import make_vec_env, new_model


class Timed:
    """Wraps a model's ``collect_rollouts`` and ``train`` to add up the seconds spent in each."""

    def __init__(self, model: MaskablePPO):
        self.seconds = {"collect": 0.0, "update": 0.0}
        for part, name in (("collect", "collect_rollouts"), ("update", "train")):
            setattr(model, name, self._timed(part, getattr(model, name)))

    def _timed(self, part, method):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start

        return run


def measure(model: MaskablePPO, seconds: float) -> dict[str, float]:
    rollout = model.n_steps * model.n_envs
    model.learn(rollout, reset_num_timesteps=False)  # warm up: compile, allocate
    timed = Timed(model)
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        model.learn(rollout, reset_num_timesteps=False)
        steps += rollout
    total = time.perf_counter() - start
    return {
        "steps": steps, "seconds": total, "steps/s": steps / total,
        "collect steps/s": steps / timed.seconds["collect"], "update steps/s": steps / timed.seconds["update"],
        "collect share": timed.seconds["collect"] / total,
    }  # fmt: skip


def new_path(config: TrainConfig) -> MaskablePPO:
    env = make_vec_env(config)
    model = new_model(config, env)
    model.set_logger(_silent())
    env.unwrapped.league.update(weights_from_policy(model.policy))
    return model


class _OldView(gym.ObservationWrapper):
    """The old training view: the observation followed by every feature (1,436 floats)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (INPUT_SIZE,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return policy_input(observation, self.env.action_masks())

    def action_masks(self) -> np.ndarray:
        return self.env.action_masks()


def _old_env(weights: dict) -> gym.Env:
    torch.set_num_threads(1)
    opponents = PolicyBot(weights, deterministic=False)
    return _OldView(single_agent_env(opponents=opponents, reward="points"))


def old_path(seed: int) -> MaskablePPO:
    policy_kwargs = {"net_arch": [256, 256], "activation_fn": torch.nn.ReLU}
    probe = MaskablePPO("MlpPolicy", _OldView(single_agent_env(opponents="random")), policy_kwargs=policy_kwargs,
                        device="cpu", seed=seed)  # fmt: skip
    weights = weights_from_policy(probe.policy)  # the opponents: the (untrained) policy itself
    env = SubprocVecEnv([lambda: _old_env(weights)] * 2, start_method="fork")
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=1024, batch_size=512, n_epochs=4, policy_kwargs=policy_kwargs, device="cpu", seed=seed
    )
    model.set_logger(_silent())
    return model


def _silent():
    from stable_baselines3.common.logger import configure

    return configure(None, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=number(0.1, 86_400), default=60.0, help="learning time per measurement")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="the config whose network and PPO settings to time")
    parser.add_argument("--skip-old", action="store_true", help="leave out the old path")
    args = parser.parse_args()
    torch.set_num_threads(1)
    one_blas_thread()  # as python -m train
    def variant(**overrides) -> TrainConfig:  # the config, no warm start, nothing written
        return load_config(args.config, imitate="", output_dir=os.devnull, **overrides)

    try:
        config = variant()
    except ConfigError as err:
        parser.error(str(err))
    runs = {
        "new, self-play": lambda: new_path(variant(opponents={"self": 1.0}, overlap_updates=False)),
        "new, self-play, overlapped": lambda: new_path(variant(opponents={"self": 1.0}, overlap_updates=True)),
        "new, config's pool": lambda: new_path(variant(overlap_updates=False)),
        "new, config's pool, overlapped": lambda: new_path(variant(overlap_updates=True)),
    }
    if not args.skip_old:
        runs["old path"] = lambda: old_path(config.seed)
    print(f"config {args.config}: {config.n_envs} tables x n_steps {config.n_steps}, batch {config.batch_size}, "
          f"{config.n_epochs} epochs, input {config.policy_input}, actor {config.net_arch}, critic {config.critic_arch} "
          f"(hands: {config.critic_sees_hands}); pool {config.opponents}")  # fmt: skip
    results = {}
    for name, build in runs.items():
        model = build()
        results[name] = r = measure(model, args.seconds)
        if name == "new, config's pool":
            eval_seconds = evaluation_seconds(config, model)
        model.env.close()
        if "overlapped" in name:
            parts = f"waiting for the collection {r['collect share']:.0%} of the time"
        else:
            parts = f"collect {r['collect steps/s']:,.0f}/s, update {r['update steps/s']:,.0f}/s, collect {r['collect share']:.0%} of the time"
        print(f"{name:31s} {r['steps/s']:8,.0f} steps/s  ({parts}; {r['steps']:,} steps in {r['seconds']:.0f}s)", flush=True)
    if "old path" in results:
        for name in ("new, self-play", "new, self-play, overlapped"):
            print(f"{name} / old path: {results[name]['steps/s'] / results['old path']['steps/s']:.1f}x")
    path = "new, config's pool, overlapped" if config.overlap_updates else "new, config's pool"
    real = 1 / (1 / results[path]["steps/s"] + eval_seconds / config.eval_every)
    print(
        f"as python -m train runs {args.config.name}: {real:,.0f} steps/s ({path.removeprefix('new, ')}, "
        f"and a round of evaluations, {eval_seconds:.0f}s, every {config.eval_every:,} steps)"
    )


def evaluation_seconds(config: TrainConfig, model: MaskablePPO) -> float:
    """Seconds of one round of the config's evaluations during training (as train.ppo.trainer.Trainer does)."""
    from eval import evaluate

    bot = PolicyBot(weights_from_policy(model.policy), name="learner")
    start = time.perf_counter()
    for opponent in config.eval_opponents:
        evaluate(bot, opponent, boards=config.eval_boards, rules=config.rules, workers=1)
    return time.perf_counter() - start


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/train_speed.py"))
