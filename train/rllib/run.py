"""Training on Ray RLlib, top to bottom.

1. Read the config; create (or, with ``resume``, reopen) ``<output_dir>/<run_name>/`` and lock it
   (:mod:`eval.run_lock`). A resumed run keeps its saved config (only ``total_steps`` may change,
   when asked explicitly) and restarts from its newest intact checkpoint.
2. Start Ray (:mod:`.cluster`): locally, or on the cluster at ``--address`` / ``$RAY_ADDRESS``.
3. Build PPO: ``n_env_runners`` env runners (one CPU each; Ray places them on the cluster's
   nodes), each sampling ``n_envs_per_runner`` tables of the vector env (:mod:`.env`),
   where the league (:mod:`.league`) plays the other team; the masked module (:mod:`.module`)
   is ``main``; the learner runs in this process.
4. Iterate ``algorithm.train()`` until ``total_steps`` environment steps (the learner's
   decisions): send ``main``'s weights and the league's new snapshots to the env runners, log to
   tensorboard, evaluate the exported actor against bots with duplicate boards (the ``eval``
   library), write checkpoints (the league's snapshots with them), print progress lines.
5. Write a last checkpoint (so ``--resume --total-steps`` can extend the run) and ``final.npz``,
   the actor in the numpy format :func:`agents.make` loads.

Checkpoints are RLlib's own (``Algorithm.save_to_path``) under ``checkpoints/step_<N>/``, written
under a temporary name and renamed into place; RLlib's format pickles Python objects, so resume
only runs you trust. Share ``final.npz``: it is plain arrays.

Tensorboard tags: ``train/*`` (main's learner stats: losses, entropy, KL, ...),
``rollout/episode_return_mean``, ``rollout/episode_len_mean``, ``time/steps_per_second``,
``eval/win_rate_vs_<bot>`` with ``eval/win_rate_low_vs_<bot>``, ``eval/win_rate_high_vs_<bot>``.
Steps/s (progress lines and tensorboard) leave out the time spent in evaluations.
Progress lines also give the run's time elapsed, earlier legs included (:mod:`train.run_folder.run_time`), and
the time left at this process's rate, evaluations included.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import ray
import torch
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.tune.registry import register_env
from tensorboardX import SummaryWriter

from agents.policy import MAX_MEMBER_BYTES, PolicyBot, Weights, save_weights
from agents.shared.atomic_file import write_text
from agents.shared.processes import caught_stop, exit_code, interrupts_deferred, one_blas_thread, stop_name
from eval import evaluate

from train.config import init_weights
from train.ppo.league import League
from train.ray_cluster import cluster_address, start_ray
from train.rllib.config import RLlibConfig, load_rllib_config
from train.rllib.env import LAYOUT, league_of, make_vector_env
from train.rllib.export import module_state_from_weights, weights_from_module_state
from train.rllib.module import ACTIVATION, module_spec
from train.run_folder import run_time
from train.run_folder.checkpoints import (
    RUN_CONFIG_FILE,
    ResumeError,
    TrainingInterrupted,
    candidates,
    check_extension,
    newest_intact,
    resumed_config,
    saved_config_file,
    say,
    write_checkpoint,
    write_run_config,
)  # fmt: skip
from train.run_folder.folder import command, hold_run
from train.run_folder.progress import duration
from train.run_folder.seal import SealError, seal, verify
from train.run_folder.state_file import JSON_FILE, read_state, write_state

TB_NAME = "tensorboard"
PROGRESS_FILE = "progress.json"  # in each checkpoint: the environment steps done
RLLIB_CHECKPOINT_FILE = "rllib_checkpoint.json"  # what RLlib writes into every checkpoint it saves
FINAL_NAME = "final.npz"
LEAGUE_DIR = "league"  # in each checkpoint: the league's state (train/run_folder/state_file.py)
ENV_NAME = "allfours_vector"
# The config's PPO options (SB3's names, configs/rllib.yaml) -> RLlib's PPOConfig.training() arguments.
PPO_OPTIONS = {
    "learning_rate": "lr",
    "rollout_steps": "train_batch_size_per_learner",  # one learner, in this process: the whole rollout
    "batch_size": "minibatch_size",
    "n_epochs": "num_epochs",
    "gamma": "gamma",
    "gae_lambda": "lambda_",
    "clip_range": "clip_param",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
    "max_grad_norm": "grad_clip",
}


def algorithm_config(config: RLlibConfig) -> PPOConfig:
    register_env(ENV_NAME, make_vector_env)  # in Ray's registry, which the env runners read
    env_config = {
        "rules": config.rules, "reward": config.reward, "episode": config.episode,
        "opponents": dict(config.opponents), "max_snapshots": config.max_snapshots, "seed": config.seed,
    }  # fmt: skip
    return (
        PPOConfig()
        .environment(  # actions are Discrete: RLlib's per-env normalizing and clipping would change nothing
            ENV_NAME, env_config=env_config, disable_env_checking=True, normalize_actions=False, clip_actions=False
        )
        .env_runners(
            num_env_runners=config.n_env_runners,
            num_envs_per_env_runner=config.n_envs_per_runner,
            num_cpus_per_env_runner=1,
            gym_env_vectorize_mode="vector_entry_point",  # the env is a vector env already
        )
        .learners(num_learners=0)  # the learner runs in this process
        .rl_module(rl_module_spec=module_spec(config.net_arch))
        .training(**{theirs: getattr(config, ours) for ours, theirs in PPO_OPTIONS.items()})
        .debugging(seed=config.seed)
    )


def _node_of(env_runner: object) -> str:
    """The Ray node an env runner runs on."""
    return ray.get_runtime_context().get_node_id()


def export_main(algo: Algorithm) -> Weights:
    """``main``'s actor as numpy weights (see :mod:`.export`)."""
    state = algo.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])[DEFAULT_MODULE_ID]
    return weights_from_module_state(state, ACTIVATION, LAYOUT)


def start_from_policy(algo: Algorithm, weights: Weights) -> None:
    """Set ``main``'s actor (learner and env runners) to ``weights`` (init_policy's, checked by the config)."""
    state = algo.learner_group.get_weights(module_ids=[DEFAULT_MODULE_ID])[DEFAULT_MODULE_ID]
    state = module_state_from_weights(weights, state)
    algo.learner_group.set_weights({DEFAULT_MODULE_ID: state})
    algo.env_runner_group.sync_weights(
        from_worker_or_learner_group=algo.learner_group, inference_only=True, timeout_seconds=None
    )  # waits until every env runner has them


def send_league(algo: Algorithm, league: League, snapshot: bool, everything: bool = False) -> None:
    """``main``'s latest weights (with ``snapshot`` also kept as the newest snapshot) to the
    trainer's league and every env runner's; ``everything``: the whole league (a start, a resume)."""
    main = export_main(algo)
    league.update(main, snapshot)
    state = league.get_state() if everything else None

    def send(runner: object) -> None:
        if runner.env is not None:
            mine = league_of(runner.env)
            mine.set_state(state, main) if everything else mine.update(main, snapshot)

    algo.env_runner_group.foreach_env_runner(send, local_env_runner=True)


def save_checkpoint(algo: Algorithm, league: League, run_dir: Path, steps: int) -> Path:
    def fill(folder: Path) -> None:
        algo.save_to_path(str(folder.resolve()))
        (folder / LEAGUE_DIR).mkdir()
        write_state(folder / LEAGUE_DIR, league.get_state())
        write_text(folder / PROGRESS_FILE, json.dumps({"steps": steps}))
        seal(folder)  # RLlib's files pickle: only this account's own checkpoints are ever loaded

    return write_checkpoint(run_dir, steps, fill)


def read_progress(folder: Path) -> int:
    """The steps a checkpoint was taken at; ResumeError if it is not a complete RLlib checkpoint
    sealed by this account (:mod:`train.run_folder.seal`): nothing of a foreign one is read."""
    try:
        verify(folder)
        for name in (RLLIB_CHECKPOINT_FILE, f"{LEAGUE_DIR}/{JSON_FILE}"):
            if not (folder / name).is_file():
                raise ValueError(f"no {name}")
        steps = json.loads((folder / PROGRESS_FILE).read_text())["steps"]
        if not isinstance(steps, int) or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    except SealError as err:
        raise ResumeError(f"{err}: RLlib checkpoints pickle, so only this account's own are loaded") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ResumeError(f"{folder} is not an intact RLlib checkpoint: {type(err).__name__}: {err}") from None
    return steps


class Progress:
    """Tensorboard scalars, evaluations and progress lines; ``minutes()``: the run's so far, earlier legs included."""

    def __init__(self, config: RLlibConfig, steps: int, show: bool, minutes: Callable[[], float]):
        self.config = config
        self.show = show
        self.minutes = minutes
        self.writer = SummaryWriter(str(config.run_dir / TB_NAME))
        self.clock = (time.monotonic(), steps)
        self.eval_seconds = 0.0  # left out of steps/s: the rate is the training's
        self.latest_eval: dict[str, tuple[float, float, float]] = {}

    def rate(self, steps: int) -> float:
        start, start_steps = self.clock
        return (steps - start_steps) / max(time.monotonic() - start - self.eval_seconds, 1e-9)

    def log(self, result: dict, steps: int) -> None:
        for key, value in result.get("learners", {}).get(DEFAULT_MODULE_ID, {}).items():
            if isinstance(value, (int, float, np.number)) and np.isfinite(value):  # scalars; some are NaN early
                self.writer.add_scalar(f"train/{key}", float(value), steps)
        runners = result.get("env_runners", {})
        for key in ("episode_return_mean", "episode_len_mean"):
            if key in runners:
                self.writer.add_scalar(f"rollout/{key}", float(runners[key]), steps)
        self.writer.add_scalar("time/steps_per_second", self.rate(steps), steps)

    def evaluate(self, weights: Weights, steps: int) -> None:
        start = time.monotonic()
        bot = PolicyBot(weights, name="learner")
        for opponent in self.config.eval_opponents:
            result = evaluate(bot, opponent, boards=self.config.eval_boards, rules=self.config.rules, workers=1)
            low, high = result.win_rate_ci
            self.latest_eval[opponent] = (result.win_rate, low, high)
            for tag, value in (("win_rate", result.win_rate), ("win_rate_low", low), ("win_rate_high", high)):
                self.writer.add_scalar(f"eval/{tag}_vs_{opponent}", value, steps)
        self.writer.flush()
        self.eval_seconds += time.monotonic() - start

    def line(self, steps: int) -> None:
        if not self.show:
            return
        total = self.config.total_steps
        start, start_steps = self.clock
        done, seconds = steps - start_steps, time.monotonic() - start
        left = f"{duration(max(total - steps, 0) * seconds / done)} left" if done > 0 else "starting"  # evaluations in
        text = (
            f"[train] {steps:,}/{total:,} steps ({steps / total:.0%})  {self.rate(steps):,.0f} steps/s  "
            f"{duration(60 * self.minutes())} elapsed, {left}"
        )
        for name, (win, low, high) in self.latest_eval.items():
            text += f"  vs {name} {win:.2f} [{low:.2f}, {high:.2f}]"
        print(text, file=sys.stderr, flush=True)


def train(
    config: RLlibConfig, resume: bool = False, progress: bool = True, extend: bool = False, address: str | None = None
) -> Path:
    """Run (or resume) training; returns the path of ``final.npz``. See the module docstring.

    Raises ClusterError, before anything is written, when the cluster asked for is unreachable.
    """
    address = cluster_address(address)
    with hold_run(config, resume, backend="rllib"):
        return _train_locked(config, resume, progress, extend, address)


def _train_locked(config: RLlibConfig, resume: bool, progress: bool, extend: bool, address: str | None) -> Path:
    run_dir = config.run_dir
    steps = 0
    started, earlier_legs = time.monotonic(), (run_time.read_minutes(run_dir) or 0.0) if resume else 0.0

    def minutes() -> float:
        return earlier_legs + (time.monotonic() - started) / 60

    if resume:
        folder, steps, skipped = newest_intact(run_dir, read_progress)
        for reason in skipped:
            say(f"skipping a damaged checkpoint: {reason}")
        path = saved_config_file(run_dir)
        if path is None:
            raise ResumeError(f"{run_dir} has no {RUN_CONFIG_FILE} and its checkpoints hold no copy of it")
        saved = load_rllib_config(path)
        config = resumed_config(config, saved, path, extend)
        check_extension(config, saved, steps)
        if path.parent != run_dir or config.total_steps != saved.total_steps:
            write_run_config(config, saved)
    torch.set_num_threads(1)  # the learner runs here
    one_blas_thread()
    where = start_ray(address)
    algo = None
    interrupted: TrainingInterrupted | None = None
    try:
        algo = algorithm_config(config).build_algo()
        league = League(config.opponents, config.max_snapshots, config.seed)
        if resume:
            algo.restore_from_path(str(folder.resolve()))
            league_bytes = (1 + config.max_snapshots) * MAX_MEMBER_BYTES
            league.set_state(read_state(folder / LEAGUE_DIR, 2**20, league_bytes), export_main(algo))
            say(f"resuming {run_dir} from checkpoint {folder.name} at step {steps:,} of {config.total_steps:,}")
        elif config.init_policy:
            start_from_policy(algo, init_weights(config.init_policy, LAYOUT, config.net_arch))
            say(f"main starts from {config.init_policy}")
        send_league(algo, league, snapshot=False, everything=True)
        nodes = set(algo.env_runner_group.foreach_env_runner(_node_of, local_env_runner=False))
        say(
            f"training on {where}: {config.n_env_runners} env runner(s) x {config.n_envs_per_runner} envs"
            + (f", on {len(nodes)} node(s)" if nodes else ", sampling in this process")
        )
        report = Progress(config, steps, progress, minutes)
        if steps == 0:  # the starting point of the learning curve
            report.evaluate(export_main(algo), steps)
            report.line(steps)
        next_eval = (steps // config.eval_every + 1) * config.eval_every
        next_checkpoint = (steps // config.checkpoint_every + 1) * config.checkpoint_every
        while steps < config.total_steps:
            result = algo.train()
            previous, steps = steps, steps + int(result["env_runners"]["num_env_steps_sampled"])
            send_league(algo, league, snapshot=steps // config.snapshot_every > previous // config.snapshot_every)
            report.log(result, steps)
            if steps >= next_eval or steps >= config.total_steps:
                next_eval += config.eval_every
                report.evaluate(export_main(algo), steps)
            if steps >= next_checkpoint:
                next_checkpoint += config.checkpoint_every
                save_checkpoint(algo, league, run_dir, steps)
                run_time.write_minutes(run_dir, minutes())
            report.line(steps)
        save_checkpoint(algo, league, run_dir, steps)
        final = run_dir / FINAL_NAME
        save_weights(export_main(algo), final)
        report.writer.close()
        return final
    except (KeyboardInterrupt, SystemError) as error:  # (Ray raises a plain KeyboardInterrupt for either stop)
        stop = caught_stop(error)
        if stop is None:
            raise
        kept = candidates(run_dir)
        # raised after the shutdown below: Ray logs a dead actor with logger.exception, which would print
        # the traceback of whatever exception is in flight
        interrupted = TrainingInterrupted(
            f"[train] {stop_name(stop)} at step {steps:,}; "
            + (f"kept checkpoint {kept[0].name}. Resume with: {command(config, '--resume', backend='rllib')}" if kept
               else "before the first checkpoint: nothing to resume; start it again with the same command"),
            exit_code(stop),
        )
    finally:
        with contextlib.suppress(OSError):  # this leg's time, for a later --resume (train/run_folder/run_time.py)
            run_time.write_minutes(run_dir, minutes())
        with interrupts_deferred(reraise=False):  # a second Ctrl-C does not cut the actors' shutdown
            if algo is not None:
                algo.stop()
            ray.shutdown()
    raise interrupted  # (reached only after a stop: every other way out of the try returns or raises)
