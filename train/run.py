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
   Then, with ``distil_labels``, rounds of expert iteration turn the actor into a student of
   search (:mod:`train.expert_iteration`: label, fit, evaluate; ``rounds.csv`` and
   ``expert_iteration.png``).
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

import errno
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor
from torch.utils.tensorboard import SummaryWriter

from agents.atomic_file import atomic_path
from agents.policy import PolicyBot, input_size, load_weights, save_weights, weights_from_policy
from eval import evaluate
from eval.processes import caught_stop, exit_code, interrupts_deferred, stop_name

from . import curve, expert_iteration, imitation
from .checkpoints import (
    RUN_CONFIG_FILE,
    ResumeError,
    WriteFailed,
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
from .network import policy_class, policy_kwargs, set_actor
from .opponents import OpponentPool
from .overlap import OverlappedMaskablePPO
from .progress import Progress, duration
from .pull import Pull, PullingPPO
from .run_folder import command, hold_run
from .selfplay import SelfPlayVecEnv
from .state_file import like

TB_NAME = "tensorboard"
# what SB3 keeps besides weights and optimizer to continue exactly (in the checkpoint's state, not its zip's pickles)
SB3_COUNTERS = (
    "num_timesteps", "_n_updates", "_episode_num", "_last_obs", "_last_episode_starts", "_last_original_obs",
    "ep_info_buffer", "ep_success_buffer",
)  # fmt: skip


DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)  # a write the disk refused


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during training; the message says what was kept and how to resume,
    ``code`` is the exit code (130 or 143)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


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
    algorithm = OverlappedMaskablePPO if config.overlap_updates else PullingPPO
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

    def __init__(self, config: TrainConfig, env: VecMonitor, progress: Progress):
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
        self._last_checkpoint = time.monotonic()  # checkpoints come by steps, and at least every checkpoint_minutes
        self._rollout_started = self._rollout_ended = time.monotonic()
        self._own_seconds = 0.0  # evaluations and checkpoints since learning started (for time/* tags)
        self._evaluated_after = -1  # the number of updates the latest evaluation's weights had had

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
        if steps_collected(self.model) == 0:  # the starting point of the learning curve
            self.evaluate()
            self.logger.dump(0)
            self.progress.show()
        self._rollout_started = self._rollout_ended = time.monotonic()

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "scores" in info:
                own, other = info["scores"][info["team"]], info["scores"][1 - info["team"]]
                self._finished.append((own > other, own / info["deals"], other / info["deals"]))
        return True

    def _on_rollout_end(self) -> None:
        self._rollout_ended = time.monotonic()

    def _on_rollout_start(self) -> None:
        """Called after each update (and once at the start): a consistent point to act on."""
        steps = self.model.num_timesteps
        if steps == 0:
            return
        began = time.monotonic()
        self.logger.record("time/collect_seconds", self._rollout_ended - self._rollout_started)
        self.logger.record("time/update_seconds", began - self._rollout_ended)
        self.progress.advance(steps)
        take_snapshot = steps >= self.next_snapshot
        if take_snapshot:
            self.next_snapshot += self.config.snapshot_every
        self._send_weights(take_snapshot)
        evaluated = steps >= self.next_eval
        if evaluated:
            self.next_eval += self.config.eval_every
            self.evaluate()
        self._log_games()
        by_time = time.monotonic() - self._last_checkpoint >= 60 * self.config.checkpoint_minutes
        if steps >= self.next_checkpoint or by_time:
            if steps >= self.next_checkpoint:
                self.next_checkpoint += self.config.checkpoint_every
            self.checkpoint()
        self._own_seconds += time.monotonic() - began
        self.logger.record("time/eval_and_checkpoint_seconds", self._own_seconds)
        self.logger.dump(steps)  # the last update's train/* values and the above, at this step
        if evaluated:
            self.progress.show()
        self._rollout_started = time.monotonic()

    def _on_training_end(self) -> None:
        if isinstance(self.model, OverlappedMaskablePPO):
            self.model.finish_collection()  # the checkpoint below holds the rollout it collected
        self.progress.advance(self.model.num_timesteps)
        if self._evaluated_after != self.model._n_updates:  # not when the last rollout's evaluation saw these weights
            self.evaluate()
            self.logger.dump(self.model.num_timesteps)
        self.checkpoint()  # so that a finished run can be extended with --resume --total-steps

    # -- the pieces
    def _send_weights(self, snapshot: bool) -> None:
        self.selfplay.pool.update(weights_from_policy(self.model.policy), snapshot)

    def evaluate(self) -> None:
        """Evaluate the policy against each of eval_opponents; evaluations.csv and the learning
        curve are written at once, so that an interrupted run has them too."""
        bot = PolicyBot(weights_from_policy(self.model.policy), name="learner")
        self._evaluated_after = self.model._n_updates
        minutes = self.minutes()
        steps, boards = self.model.num_timesteps, self.config.eval_boards
        for opponent in self.config.eval_opponents:
            with self.progress.phase(f"evaluating at step {steps:,} against {opponent}", "boards", boards, quiet=True):
                result = evaluate(
                    bot, opponent, boards=boards, rules=self.config.rules, workers=1, on_progress=self.progress.add
                )
            low, high = result.win_rate_ci
            self.latest_eval[opponent] = (result.win_rate, low, high)
            self.evaluations.append((self.model.num_timesteps, minutes, opponent, result.win_rate, low, high))
            self.logger.record(f"eval/win_rate_vs_{opponent}", result.win_rate)
            self.logger.record(f"eval/win_rate_low_vs_{opponent}", low)
            self.logger.record(f"eval/win_rate_high_vs_{opponent}", high)
            self.logger.record(f"eval/point_diff_per_deal_vs_{opponent}", result.point_diff_per_deal)
        with interrupts_deferred():
            curve.write(self.config.run_dir, self.evaluations)

    def eval_note(self) -> str:
        """The latest evaluations, for the progress lines."""
        return "".join(f"  vs {name} {w:.2f} [{lo:.2f}, {hi:.2f}]" for name, (w, lo, hi) in self.latest_eval.items())

    def _log_games(self) -> None:
        if self._finished:
            won, own, other = np.mean(self._finished, axis=0)
            self.logger.record("game/win_rate", won)
            self.logger.record("game/own_points_per_deal", own)
            self.logger.record("game/other_points_per_deal", other)
            self._finished = []
        start, start_steps = self._clock
        elapsed = max(time.monotonic() - start, 1e-9)
        steps = self.model.num_timesteps - start_steps
        self.logger.record("time/steps_per_second", steps / elapsed)  # the real run's, evaluations included
        self.logger.record("time/learning_steps_per_second", steps / max(elapsed - self._own_seconds, 1e-9))

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
        self._last_checkpoint = time.monotonic()


def steps_collected(model: MaskablePPO) -> int:
    """The PPO steps the tables have made: the model's counter, and the steps of a restored
    rollout that it counts only once that rollout is trained on (train/overlap.py); 0 only
    before PPO's first rollout."""
    return model.num_timesteps + (model.uncounted_steps if isinstance(model, OverlappedMaskablePPO) else 0)


def _check_row(name: str, row: Any, references: tuple) -> None:
    if len(like(name, row, ())) != len(references):
        raise ValueError(f"{name} must have {len(references)} items, got {row!r}")
    for value, reference in zip(row, references):
        like(name, value, reference)


def warm_start(model: MaskablePPO, config: TrainConfig, progress: Progress) -> None:
    """Behaviour cloning of ``config.imitate`` (see train/imitation.py), logged as ``imitation/*``."""
    start = time.monotonic()
    with progress.phase(f"recording {config.imitate}", "decisions", config.imitation_steps):
        data = imitation.record(config, seed=config.seed, report=lambda done, total: progress.advance(done))
    with progress.phase("imitation fit", "samples", config.imitation_epochs * len(data.actions)):
        metrics = imitation.fit(model.policy, data, config, seed=config.seed, report=lambda done, total: progress.advance(done))
    writer = SummaryWriter(str(config.run_dir / "imitation"))
    for key, value in metrics.items():
        writer.add_scalar(f"imitation/{key}", value, 0)
    writer.close()
    progress.say(
        f"imitated {config.imitate} on {len(data.actions):,} decisions in {duration(time.monotonic() - start)}: "
        f"accuracy {metrics['accuracy']:.3f}"
    )


def _restore(config: TrainConfig, folder: Path, progress: Progress) -> tuple[VecMonitor, Trainer, MaskablePPO, int]:
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
        before_learning = like("sb3 num_timesteps", counters["num_timesteps"], 0) == 0  # a warm start's checkpoint
        for name in SB3_COUNTERS:
            value = counters[name]
            if name in references and not (value is None and before_learning):
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


def _resume(given: TrainConfig, progress: Progress, extend: bool) -> tuple[TrainConfig, VecMonitor, Trainer, MaskablePPO]:
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
    folder, (env, trainer, model, _), skipped = newest_intact(run_dir, lambda f: _restore(config, f, progress))
    for reason in skipped:
        say(f"skipping a checkpoint: {reason}")
    step = model.num_timesteps  # trained on: a rollout collected ahead is not (train/overlap.py)
    check_extension(config, saved, step)
    if path.parent != run_dir:
        say(f"{run_dir / RUN_CONFIG_FILE} was missing: the run's config is the copy in {path}, written back")
    if path.parent != run_dir or config.total_steps != saved.total_steps:
        write_run_config(config, saved)
    ahead = steps_collected(model) - step
    waiting = f" (the rollout collected ahead, to step {step + ahead:,}, is trained on first)" if ahead else ""
    say(f"resuming {run_dir} from checkpoint {folder.name} at step {step:,} of {config.total_steps:,}{waiting}")
    return config, env, trainer, model


def train(config: TrainConfig, resume: bool = False, progress: bool = True, extend: bool = False) -> Path:
    """Run (or resume) training; returns the path of the final SB3 checkpoint.

    With ``resume``, ``config`` must equal the run's saved config but for ``total_steps``, which
    may differ only when ``extend`` is true (the command line's ``--total-steps``). ``progress``:
    progress lines on stderr. Raises ConfigError, ResumeError, ``train.lock.RunInUseError``, or
    TrainingInterrupted on Ctrl-C or SIGTERM.
    """
    check_memory(config)
    lines = Progress(progress)
    try:
        with hold_run(config, resume):
            return train_in_held_run(config, resume, lines, extend)
    finally:
        lines.close()


def train_in_held_run(config: TrainConfig, resume: bool, progress: Progress, extend: bool) -> Path:
    """:func:`train`, in a run folder this process holds already (:func:`train.run_folder.hold_run`)."""
    torch.set_num_threads(1)  # on 2 cores, torch's default threading makes small-network PPO far slower
    run_dir = config.run_dir
    model: MaskablePPO | None = None
    try:
        with progress.phase(f"building {config.n_envs} tables and the networks (a first run also compiles the engine)"):
            if resume:
                config, env, trainer, model = _resume(config, progress, extend)
            else:
                env = make_vec_env(config)
                trainer = Trainer(config, env, progress)
                model = new_model(config, env)
        if not resume:
            if config.imitate:
                warm_start(model, config, progress)
            trainer.selfplay.pool.update(weights_from_policy(model.policy))  # before learn() resets the env
            if config.imitate or config.distil_labels:  # the warm start is kept: a run stopped later goes on from here
                trainer.model = model
                trainer.checkpoint()
        learning_starts = steps_collected(model) == 0  # also when resumed from the warm start's checkpoint
        if learning_starts and config.distil_labels:  # (a resumed run's rounds go on from their files)
            student = expert_iteration.run_rounds(config, weights_from_policy(model.policy), progress, trainer.minutes)
            set_actor(model.policy, student)
            trainer.selfplay.pool.update(weights_from_policy(model.policy))
        if config.student_pull and config.distil_labels:  # (no rounds: no student to pull toward)
            teacher = load_weights(expert_iteration.student_path(run_dir, len(config.distil_labels)))
            model.pull = Pull(teacher, config.student_pull, config.student_pull_steps, config.seed)
        if learning_starts:
            for stale in run_dir.glob(f"{TB_NAME}_*"):  # the logs of a start stopped before its first checkpoint
                shutil.rmtree(stale)
        remaining = config.total_steps - model.num_timesteps  # (steps trained on: train/overlap.py)
        if remaining > 0:
            with progress.phase("PPO", "steps", config.total_steps, model.num_timesteps, trainer.eval_note):
                model.learn(
                    total_timesteps=remaining, callback=trainer, reset_num_timesteps=learning_starts, tb_log_name=TB_NAME
                )
        final = run_dir / "final.zip"
        with interrupts_deferred(reraise=False) as interrupted:
            with atomic_path(final) as tmp:
                model.save(tmp)
            save_weights(weights_from_policy(model.policy), run_dir / "final.npz")
            curve.write(run_dir, trainer.evaluations)
        if interrupted:
            say("a stop signal came while the final files were written: the run had finished, and they were written whole")
        return final
    except (KeyboardInterrupt, SystemError) as error:  # (compiled code may wrap a stop in a SystemError)
        stop = caught_stop(error)
        if stop is None:
            raise
        if model is not None and getattr(model, "_logger", None) is not None:
            model.logger.close()  # the tensorboard events written so far stay readable
        raise TrainingInterrupted(_interrupted_message(config, model, stop), exit_code(stop)) from None
    except (WriteFailed, OSError) as error:
        if isinstance(error, OSError) and error.errno not in DISK_ERRNOS:
            raise
        if model is not None and getattr(model, "_logger", None) is not None:
            model.logger.close()
        raise WriteFailed(_write_failed_message(config, error)) from None


def _write_failed_message(config: TrainConfig, error: WriteFailed | OSError) -> str:
    """The one line of a run stopped by a file it could not write: what, why, and the way on."""
    what = str(error) if isinstance(error, WriteFailed) else f"cannot write {error.filename or 'a file'}: {error.strerror}"
    kept = candidates(config.run_dir)
    if not kept:
        return f"[train] {what}; no checkpoint kept. Once the disk has room, start the run again with the same command"
    return (
        f"[train] {what}; the run stopped, its latest checkpoint is {kept[0].name}. Once the disk has room (and is "
        f"writable), resume with: {command(config, '--resume')}"
    )


def _interrupted_message(config: TrainConfig, model: MaskablePPO | None, stop: KeyboardInterrupt) -> str:
    step = model.num_timesteps if model is not None else 0
    kept = candidates(config.run_dir)
    what = f"[train] {stop_name(stop)} at step {step:,}"
    if not kept:
        return (
            f"{what}, before the first checkpoint: nothing to resume. Start it again with the same command "
            "(without --resume): the start's files are then removed first"
        )
    return f"{what}; kept checkpoint {kept[0].name}. Resume with: {command(config, '--resume')}"
