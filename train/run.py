"""Self-play training with MaskablePPO, top to bottom.

1. Check the config (and that the run fits in memory); create (or, with ``resume``, reopen)
   ``runs/<name>/`` and lock it for this run (:mod:`train.run_folder`). A resumed run keeps its
   own saved config (only ``total_steps`` may change, when asked explicitly) and starts from its
   newest intact checkpoint.
2. Build the self-play env: ``n_envs`` tables of the vector engine in this process, the learner
   against an opponent pool, the opponents batched (:mod:`train.selfplay`, :mod:`train.opponents`).
3. Build the MaskablePPO model, a trunk shared by actor and critic (:mod:`train.network`); pin
   torch to one thread. A new model may first imitate a
   teacher bot (:mod:`train.imitation`); a resumed one takes the checkpoint's weights, optimizer
   state and counters (read as data: :mod:`train.checkpoints`).
4. Learn. Between two PPO updates, :class:`Trainer` sends the new weights to the pools, takes
   snapshots, runs duplicate evaluations through the ``eval`` library, writes checkpoints and
   prints progress.
5. Save ``final.zip`` (SB3) and ``final.npz`` (the actor alone, for ``agents.make``), and draw
   the learning curve (``learning_curve.png``, from ``evaluations.csv``; :mod:`train.curve`).

Ctrl-C stops training at once: checkpoint and final writes finish first, and one line says which
checkpoint was kept and how to resume (or, when the final files were being written, that the run
finished).

Tensorboard tags (fixed): SB3's ``train/*`` (losses, entropy, ...) and ``rollout/ep_rew_mean``;
``game/win_rate``, ``game/own_points_per_deal``, ``game/other_points_per_deal`` over the matches
finished since the last update; ``eval/win_rate_vs_<bot>`` with ``eval/win_rate_low_vs_<bot>`` and
``eval/win_rate_high_vs_<bot>`` (95% Wilson interval), ``eval/point_diff_per_deal_vs_<bot>``;
``time/steps_per_second``.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor
from torch.utils.tensorboard import SummaryWriter

from agents.policy import PolicyBot, input_size, save_weights, weights_from_policy
from eval import evaluate
from eval.processes import interrupts_deferred

from . import curve, imitation
from .checkpoints import (
    RUN_CONFIG_FILE,
    ResumeError,
    candidates,
    check_extension,
    load_model_params,
    load_state,
    newest_intact,
    resumed_config,
    save_checkpoint,
    saved_config_file,
    say,
    write_run_config,
)  # fmt: skip
from .config import TrainConfig, check_memory, load_config
from .network import policy_class, policy_kwargs
from .opponents import OpponentPool
from .overlap import OverlappedMaskablePPO
from .run_folder import command, hold_run
from .selfplay import SelfPlayVecEnv
from .state_file import like

TB_NAME = "tensorboard"
PROGRESS_SECONDS = 10.0  # at most one progress line this often, and one after each evaluation
# what SB3 keeps besides weights and optimizer to continue exactly (in the checkpoint's state, not its zip's pickles)
SB3_COUNTERS = (
    "num_timesteps", "_n_updates", "_episode_num", "_last_obs", "_last_episode_starts", "_last_original_obs",
    "ep_info_buffer", "ep_success_buffer",
)  # fmt: skip


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training; the message says what was kept and how to resume."""


def make_vec_env(config: TrainConfig) -> VecMonitor:
    pool = OpponentPool(config.opponents, config.max_snapshots)
    env = SelfPlayVecEnv(
        config.n_envs, pool, config.rules, config.reward, seed=config.seed, layout=config.layout,
        critic_sees_hands=config.critic_sees_hands, horizon=config.horizon,
    )
    return VecMonitor(env)  # episode returns and lengths for rollout/ep_rew_mean


def monitor_state(env: VecMonitor) -> dict[str, Any]:
    return {name: getattr(env, name) for name in ("episode_returns", "episode_lengths", "episode_count")}


def new_model(config: TrainConfig, env: VecMonitor) -> MaskablePPO:
    algorithm = OverlappedMaskablePPO if config.overlap_updates else MaskablePPO
    return algorithm(
        policy_class(config.critic_arch),
        env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        policy_kwargs=policy_kwargs(config.net_arch, config.critic_arch, input_size(config.layout)),
        tensorboard_log=str(config.run_dir),
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


class Trainer(BaseCallback):
    """Everything that happens between two PPO updates (see the module docstring)."""

    def __init__(self, config: TrainConfig, env: VecMonitor, progress: bool = True):
        super().__init__()
        self.config = config
        self.env = env
        self.selfplay: SelfPlayVecEnv = env.unwrapped
        self.progress = progress
        self.evaluations: list[tuple[int, float, str, float, float, float]] = []  # steps, minutes, bot, win, low, high
        self.minutes_before = 0.0  # minutes the run took before this process (resumed runs)
        self._started = time.monotonic()  # this process's part of the run, warm start included
        self.next_snapshot = config.snapshot_every
        self.next_eval = config.eval_every
        self.next_checkpoint = config.checkpoint_every
        self.latest_eval: dict[str, tuple[float, float, float]] = {}
        self._finished: list[tuple[bool, float, float]] = []  # (won, own per deal, other per deal)
        self._clock = (time.monotonic(), 0)  # (time, steps) when learning started, for steps/s
        self._last_print = 0.0

    # -- state that a checkpoint must carry
    def state(self) -> dict[str, Any]:
        names = ("next_snapshot", "next_eval", "next_checkpoint", "latest_eval", "evaluations")
        return {k: getattr(self, k) for k in names} | {"minutes_before": self.minutes()}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state`; a ValueError (or TypeError) names what does not fit."""
        mine = self.state()
        if set(state) != set(mine):
            raise ValueError(f"the trainer's state must have the keys {sorted(mine)}, got {sorted(state)}")
        for name in mine:
            like(f"trainer {name}", state[name], mine[name])
        for bot, row in state["latest_eval"].items():
            _check_row(f"the evaluation (win, low, high) against {bot!r}", row, (0.0, 0.0, 0.0))
        for row in state["evaluations"]:
            _check_row("an evaluations row (steps, minutes, bot, win, low, high)", row, (0, 0.0, "", 0.0, 0.0, 0.0))
        for name, value in state.items():
            setattr(self, name, value)

    # -- SB3 hooks
    def minutes(self) -> float:
        """Minutes the run has taken so far (warm start included), across resumes."""
        return self.minutes_before + (time.monotonic() - self._started) / 60

    def _on_training_start(self) -> None:
        self._clock = (time.monotonic(), self.model.num_timesteps)
        if self.model.num_timesteps == 0:  # the starting point of the learning curve
            self.evaluate()
            self.logger.dump(0)
            self._print_progress()

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "scores" in info:
                own, other = info["scores"][info["team"]], info["scores"][1 - info["team"]]
                self._finished.append((own > other, own / info["deals"], other / info["deals"]))
        return True

    def _on_rollout_start(self) -> None:
        """Called after each update (and once at the start): a consistent point to act on."""
        steps = self.model.num_timesteps
        if steps == 0:
            return
        take_snapshot = steps >= self.next_snapshot
        if take_snapshot:
            self.next_snapshot += self.config.snapshot_every
        self._send_weights(take_snapshot)
        evaluated = steps >= self.next_eval
        if evaluated:
            self.next_eval += self.config.eval_every
            self.evaluate()
        self._log_games()
        if steps >= self.next_checkpoint:
            self.next_checkpoint += self.config.checkpoint_every
            self.checkpoint()
        self.logger.dump(steps)  # the last update's train/* values and the above, at this step
        if evaluated or time.monotonic() - self._last_print >= PROGRESS_SECONDS:
            self._print_progress()

    def _on_training_end(self) -> None:
        if isinstance(self.model, OverlappedMaskablePPO):
            self.model.finish_collection()  # the checkpoint below holds the rollout it collected
        self.evaluate()
        self.logger.dump(self.model.num_timesteps)
        self._print_progress()
        self.checkpoint()  # so that a finished run can be extended with --resume --total-steps

    # -- the pieces
    def _send_weights(self, snapshot: bool) -> None:
        self.selfplay.pool.update(weights_from_policy(self.model.policy), snapshot)

    def evaluate(self) -> None:
        bot = PolicyBot(weights_from_policy(self.model.policy), name="learner")
        minutes = self.minutes()
        for opponent in self.config.eval_opponents:
            result = evaluate(bot, opponent, boards=self.config.eval_boards, rules=self.config.rules, workers=1)
            low, high = result.win_rate_ci
            self.latest_eval[opponent] = (result.win_rate, low, high)
            self.evaluations.append((self.model.num_timesteps, minutes, opponent, result.win_rate, low, high))
            self.logger.record(f"eval/win_rate_vs_{opponent}", result.win_rate)
            self.logger.record(f"eval/win_rate_low_vs_{opponent}", low)
            self.logger.record(f"eval/win_rate_high_vs_{opponent}", high)
            self.logger.record(f"eval/point_diff_per_deal_vs_{opponent}", result.point_diff_per_deal)

    def _log_games(self) -> None:
        if self._finished:
            won, own, other = np.mean(self._finished, axis=0)
            self.logger.record("game/win_rate", won)
            self.logger.record("game/own_points_per_deal", own)
            self.logger.record("game/other_points_per_deal", other)
            self._finished = []
        start, start_steps = self._clock
        now = time.monotonic()
        self.logger.record("time/steps_per_second", (self.model.num_timesteps - start_steps) / max(now - start, 1e-9))

    def checkpoint(self) -> None:
        state = {
            "trainer": self.state(),
            "env_state": {"selfplay": self.selfplay.get_state(), "monitor": monitor_state(self.env)},
            "sb3": {name: getattr(self.model, name) for name in SB3_COUNTERS},  # + the waiting rollout, if overlapped
            "torch_rng": torch.get_rng_state().numpy(),
            "numpy_global_rng": np.random.get_state(),  # SB3 shuffles minibatches with it
            "python_rng": random.getstate(),
        }
        if isinstance(self.model, OverlappedMaskablePPO):
            state["sb3"]["pending_rollout"] = self.model.pending_state()
        with interrupts_deferred():
            save_checkpoint(self.config.run_dir, self.model.num_timesteps, self.model, state)

    def _print_progress(self) -> None:
        if not self.progress:
            return
        start, start_steps = self._clock
        now = time.monotonic()
        steps, total = self.model.num_timesteps, self.model._total_timesteps
        rate = (steps - start_steps) / max(now - start, 1e-9)
        line = f"[train] {steps:,}/{total:,} steps ({steps / total:.0%})  {rate:,.0f} steps/s"
        for name, (win, low, high) in self.latest_eval.items():
            line += f"  vs {name} {win:.2f} [{low:.2f}, {high:.2f}]"
        print(line, file=sys.stderr, flush=True)
        self._last_print = now


def _check_row(name: str, row: Any, references: tuple) -> None:
    if len(like(name, row, ())) != len(references):
        raise ValueError(f"{name} must have {len(references)} items, got {row!r}")
    for value, reference in zip(row, references):
        like(name, value, reference)


class PhaseProgress:
    """Progress lines of a warm-start phase on stderr: the first call, then at most one every
    PROGRESS_SECONDS and the last, each with the rate and the time left."""

    def __init__(self, what: str, unit: str, enabled: bool) -> None:
        self.what, self.unit, self.enabled = what, unit, enabled
        self.start, self.last = time.monotonic(), -float("inf")

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < PROGRESS_SECONDS and done < total):
            return
        self.last = now
        elapsed = now - self.start
        rate = done / max(elapsed, 1e-9)
        left = f"{(total - done) / rate:.0f}s left" if rate > 0 else "starting"
        print(
            f"[train] {self.what}: {done:,}/{total:,} {self.unit} ({done / total:.0%})  {rate:,.0f} {self.unit}/s  "
            f"{elapsed:.0f}s elapsed, {left}",
            file=sys.stderr,
            flush=True,
        )


def warm_start(model: MaskablePPO, config: TrainConfig, progress: bool) -> None:
    """Behaviour cloning of ``config.imitate`` (see train/imitation.py), logged as ``imitation/*``."""
    start = time.monotonic()
    recording = PhaseProgress(f"recording {config.imitate}", "decisions", progress)
    data = imitation.record(config, seed=config.seed, report=recording)
    fitting = PhaseProgress("imitation fit", "samples", progress)
    metrics = imitation.fit(model.policy, data, config, seed=config.seed, report=fitting)
    writer = SummaryWriter(str(config.run_dir / "imitation"))
    for key, value in metrics.items():
        writer.add_scalar(f"imitation/{key}", value, 0)
    writer.close()
    if progress:
        print(
            f"[train] imitated {config.imitate} on {len(data.actions):,} decisions in {time.monotonic() - start:.0f}s: "
            f"accuracy {metrics['accuracy']:.3f}",
            file=sys.stderr,
            flush=True,
        )


def _restore(config: TrainConfig, folder: Path, progress: bool) -> tuple[VecMonitor, Trainer, MaskablePPO, int]:
    """A new env, trainer and model continuing from checkpoint ``folder``: ResumeError if it is
    damaged or does not fit ``config`` (nothing outside the new objects is kept then, but the
    global generators, which the next successful restore sets again)."""
    state, params = load_state(folder), load_model_params(folder)
    env = make_vec_env(config)
    trainer = Trainer(config, env, progress)
    model = new_model(config, env)
    try:
        model.set_parameters(params, exact_match=True, device="cpu")
        counters = state["sb3"]
        n, inputs = config.n_envs, env.observation_space.shape[0]
        references = {
            "_last_obs": np.zeros((n, inputs), np.float32), "_last_episode_starts": np.zeros(n, bool),
            "num_timesteps": 0, "_n_updates": 0, "_episode_num": 0,
        }  # fmt: skip
        for name in SB3_COUNTERS:
            value = counters[name]
            if name in references:
                like(f"sb3 {name}", value, references[name])
            setattr(model, name, value)
        if isinstance(model, OverlappedMaskablePPO):
            model.restore_pending(counters.get("pending_rollout"))
        trainer.selfplay.set_state(state["env_state"]["selfplay"])
        for name, value in state["env_state"]["monitor"].items():
            setattr(env, name, like(f"monitor {name}", value, getattr(env, name)))
        torch.set_rng_state(torch.from_numpy(like("torch_rng", state["torch_rng"], torch.get_rng_state().numpy())))
        np.random.set_state(state["numpy_global_rng"])
        random.setstate(state["python_rng"])
        trainer.restore(state["trainer"])
    except (KeyError, ValueError, TypeError, RuntimeError, AttributeError, IndexError) as err:
        raise ResumeError(f"checkpoint {folder} does not fit this run: {type(err).__name__}: {err}") from None
    return env, trainer, model, counters["num_timesteps"]


def _resume(given: TrainConfig, progress: bool, extend: bool) -> tuple[TrainConfig, VecMonitor, Trainer, MaskablePPO]:
    """The run's config and a model, env and trainer continuing from its newest intact checkpoint;
    the run's ``config.yaml`` is (re)written only once that checkpoint has been restored."""
    run_dir = given.run_dir
    path = saved_config_file(run_dir)
    if path is None:
        raise ResumeError(
            f"{run_dir} has no {RUN_CONFIG_FILE} and its checkpoints hold no copy of it; resume with --config naming "
            "the config the run was started with"
        )
    saved = load_config(path)
    config = resumed_config(given, saved, path, extend)
    folder, (env, trainer, model, step), skipped = newest_intact(run_dir, lambda f: _restore(config, f, progress))
    for reason in skipped:
        say(f"skipping a checkpoint: {reason}")
    check_extension(config, saved, step)
    if path.parent != run_dir:
        say(f"{run_dir / RUN_CONFIG_FILE} was missing: the run's config is the copy in {path}, written back")
    if path.parent != run_dir or config.total_steps != saved.total_steps:
        write_run_config(config, saved)
    say(f"resuming {run_dir} from checkpoint {folder.name} at step {step:,} of {config.total_steps:,}")
    return config, env, trainer, model


def train(config: TrainConfig, resume: bool = False, progress: bool = True, extend: bool = False) -> Path:
    """Run (or resume) training; returns the path of the final SB3 checkpoint.

    With ``resume``, ``config`` must equal the run's saved config but for ``total_steps``, which
    may differ only when ``extend`` is true (the command line's ``--total-steps``). Raises
    ConfigError, ResumeError, ``train.lock.RunInUseError``, or TrainingInterrupted on Ctrl-C.
    """
    check_memory(config)
    with hold_run(config, resume):
        return train_in_held_run(config, resume, progress, extend)


def train_in_held_run(config: TrainConfig, resume: bool, progress: bool, extend: bool) -> Path:
    """:func:`train`, in a run folder this process holds already (:func:`train.run_folder.hold_run`)."""
    torch.set_num_threads(1)  # on 2 cores, torch's default threading makes small-network PPO far slower
    run_dir = config.run_dir
    model: MaskablePPO | None = None
    try:
        if resume:
            config, env, trainer, model = _resume(config, progress, extend)
        else:
            env = make_vec_env(config)
            trainer = Trainer(config, env, progress)
            model = new_model(config, env)
            if config.imitate:
                warm_start(model, config, progress)
            trainer.selfplay.pool.update(weights_from_policy(model.policy))  # before learn() resets the env
        remaining = config.total_steps - model.num_timesteps
        if remaining > 0:
            model.learn(
                total_timesteps=remaining, callback=trainer, reset_num_timesteps=not resume, tb_log_name=TB_NAME
            )
        final = run_dir / "final.zip"
        with interrupts_deferred(reraise=False) as interrupted:
            tmp = run_dir / ".final.tmp.zip"
            model.save(tmp)
            tmp.replace(final)
            save_weights(weights_from_policy(model.policy), run_dir / "final.npz")
            curve.write(run_dir, trainer.evaluations)
        if interrupted:
            say("Ctrl-C came while the final files were written: the run had finished, and they were written whole")
        return final
    except KeyboardInterrupt:
        if model is not None and getattr(model, "_logger", None) is not None:
            model.logger.close()  # the tensorboard events written so far stay readable
        raise TrainingInterrupted(_interrupted_message(config, model)) from None


def _interrupted_message(config: TrainConfig, model: MaskablePPO | None) -> str:
    step = model.num_timesteps if model is not None else 0
    kept = candidates(config.run_dir)
    if not kept:
        return (
            f"[train] interrupted at step {step:,}, before the first checkpoint: nothing to resume. Start it again with "
            f"the same command (without --resume): the start's files are then removed first"
        )
    return f"[train] interrupted at step {step:,}; kept checkpoint {kept[0].name}. Resume with: {command(config, '--resume')}"
