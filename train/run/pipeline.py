"""The run, top to bottom: warm start, rounds of expert iteration, the last step, PPO, the gate.

1. Check the config (and that the run fits in memory); create (or, with ``resume``, reopen)
   ``runs/<name>/`` and lock it for this run (:mod:`train.run_folder.folder`). A resumed run keeps its
   own saved config (only ``total_steps`` may change, when asked explicitly) and starts from its
   newest intact checkpoint.
2. Build the learner env: ``n_envs`` tables of the Gymnasium vector env in this process, the
   learner against the league, the opponents batched (:mod:`train.ppo.learner_env`, :mod:`train.ppo.league`).
3. Build the MaskablePPO model, a trunk shared by actor and critic (:mod:`train.ppo.network`); pin
   torch to one thread. A new model may start from a network's actor (``init_policy``) or first
   imitate a teacher bot (:mod:`train.imitation`); a resumed one takes the checkpoint's weights, optimizer
   state and counters (read as data, within the sizes of the run's objects:
   :mod:`train.run_folder.checkpoints`), once every value has been checked against the run (the step of
   the checkpoint's folder, the config, the networks, the tables' state; :func:`train.ppo.trainer.restore`).
   Then, with ``distil_labels``, rounds of expert iteration turn the actor into a student of
   search, and ``step_labels`` takes one step more from the last (:mod:`train.rounds.expert_iteration`:
   label, fit, evaluate; ``rounds.csv`` and ``expert_iteration.png``).
4. Learn (:mod:`train.ppo.trainer`). Between two PPO updates, its :class:`Trainer` sends the
   new weights to the league, takes snapshots, runs duplicate evaluations through the ``eval``
   library, writes checkpoints and prints progress; with ``max_minutes``, learning ends at the
   first update after the run has taken that long (a resumed run counts its earlier minutes).
5. Save ``start.npz`` (the actor PPO started from) at PPO's first step; at the end ``final.zip``
   (SB3) and ``final.npz`` (the actor alone, for ``agents.make``), and draw the learning curve
   (``learning_curve.png``, from ``evaluations.csv``; :mod:`train.run_folder.curve`).

The run's first line names its folder, config and stages, and every progress line its stage and
the time left for the whole run and how sure it is (:mod:`train.run.plan`; a config's first run
here times a slice of each kind of work first, :mod:`train.run.calibration`). Ctrl-C stops training at once:
checkpoint and final writes finish first, and one line says what the run folder keeps for
``--resume`` (the checkpoint, the rounds' students, the labels of the round under way) and how
to resume (or, when the final files were being written, that the run finished). A file the disk refuses to take (full, read-only) stops the run the same way, with
:class:`train.run_folder.checkpoints.WriteFailed` (exit code 74): the previous checkpoint stays the latest.

Tensorboard tags: :mod:`train.ppo.trainer` (the rounds': :mod:`train.rounds.expert_iteration`).

A run that starts from a network is fine-tuned (:mod:`train.ppo.fine_tune`): the critic warms up
first, the actor stays anchored to its start, and at the end the gate keeps PPO's network as
``final.npz`` only if it beats the start (``final_gate.json``).
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import time
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import VecMonitor
from torch.utils.tensorboard import SummaryWriter

from agents.policy import Weights, load_weights, save_weights, weights_from_policy
from agents.shared.atomic_file import atomic_path
from agents.shared.processes import caught_stop, exit_code, interrupts_deferred, one_blas_thread, stop_name
from train import imitation
from train.config import TrainConfig, check_memory, init_weights, load_config
from train.ppo.fine_tune import GATE_FILE, keep_the_better
from train.ppo.network import set_actor
from train.ppo.pull import Pull
from train.ppo.trainer import (
    PPO_FILE,
    START_FILE,
    TB_NAME,
    OutOfTime,
    Trainer,
    make_vec_env,
    new_model,
    restore,
    starts_from_network,
    steps_collected,
)  # fmt: skip
from train.rounds import expert_iteration
from train.run import calibration
from train.run import plan as run_plan
from train.run_folder import curve, run_time
from train.run_folder.checkpoints import (
    RUN_CONFIG_FILE, ResumeError, TrainingInterrupted, WriteFailed, candidates, check_extension, newest_intact,
    resumed_config, saved_config_file, say, write_run_config,
)
from train.run_folder.folder import command, hold_run
from train.run_folder.progress import Progress, duration

DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)  # a write the disk refused


def warm_start(model: MaskablePPO, config: TrainConfig, progress: Progress) -> None:
    """Behaviour cloning of ``config.imitate`` (see train/imitation.py), logged as ``imitation/*``."""
    start = time.monotonic()
    with progress.phase(f"recording {config.imitate}", "decisions", config.imitation_steps, work="recording"):
        data = imitation.record(config, seed=config.seed, report=lambda done, total: progress.advance(done))
    with progress.phase("imitation fit", "samples", config.imitation_epochs * len(data.actions), work="imitation fit"):
        metrics = imitation.fit(model.policy, data, config, seed=config.seed, report=lambda done, total: progress.advance(done))
    writer = SummaryWriter(str(config.run_dir / "imitation"))
    for key, value in metrics.items():
        writer.add_scalar(f"imitation/{key}", value, 0)
    writer.close()
    progress.say(
        f"imitated {config.imitate} on {len(data.actions):,} decisions in {duration(time.monotonic() - start)}: "
        f"accuracy {metrics['accuracy']:.3f}"
    )


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
    saved = load_config(path, saved_run=True)
    config = resumed_config(given, saved, path, extend)
    planned = max(config.total_steps, saved.total_steps)  # a --total-steps below the run's step is named below
    folder, (env, trainer, model), skipped = newest_intact(run_dir, lambda f: restore(config, f, progress, planned))
    for reason in skipped:
        say(f"skipping a checkpoint: {reason}")
    kept_minutes = run_time.read_minutes(run_dir)  # every leg, the time after the checkpoint too
    trainer.minutes_before = max(trainer.minutes_before, kept_minutes or 0.0)
    step = model.num_timesteps  # trained on: a rollout collected ahead is not (train/ppo/overlap.py)
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
    progress lines on stderr. Raises ConfigError, ResumeError, ``eval.run_lock.RunInUseError``, or
    TrainingInterrupted on Ctrl-C or SIGTERM.
    """
    check_memory(config)
    lines = Progress(progress)
    try:
        with hold_run(config, resume):
            return train_in_held_run(config, resume, lines, extend)
    finally:
        lines.close()


def train_in_held_run(
    config: TrainConfig, resume: bool, progress: Progress, extend: bool, source: str = "", address: str | None = None
) -> Path:
    """:func:`train`, in a run folder this process holds already (:func:`train.run_folder.folder.hold_run`);
    ``source``: the config file, for the run's first line."""
    torch.set_num_threads(1)  # on 2 cores, torch's default threading makes small-network PPO far slower
    one_blas_thread()
    run_dir = config.run_dir
    model: MaskablePPO | None = None
    trainer: Trainer | None = None
    try:
        with progress.phase(f"building {config.n_envs} tables and the networks (a first run also compiles the engine)"):
            if resume:
                config, env, trainer, model = _resume(config, progress, extend)
            else:
                env = make_vec_env(config)
                trainer = Trainer(config, env, progress)
                model = new_model(config, env)
                if config.init_policy:
                    set_actor(model.policy, init_weights(config.init_policy, config.layout, config.net_arch))
        progress.say(run_plan.start_line(config, source, resume))
        plan = run_plan.plan_run(config, resume, model.num_timesteps, lambda: 60 * trainer.minutes())
        calibration.calibrate(plan, config, model.policy, progress)
        progress.plan = plan
        if not resume:
            if config.imitate:
                warm_start(model, config, progress)
            trainer.tables.league.update(weights_from_policy(model.policy))  # before learn() resets the env
            if config.imitate or config.distil_labels:  # the warm start is kept: a run stopped later goes on from here
                trainer.model = model
                trainer.checkpoint()
        learning_starts = steps_collected(model) == 0  # also when resumed from the warm start's checkpoint
        if learning_starts and config.distil_labels:  # (a resumed run's rounds go on from their files)
            start = weights_from_policy(model.policy)
            student = expert_iteration.run_rounds(config, start, progress, trainer.minutes, address)
            set_actor(model.policy, student)
            trainer.tables.league.update(weights_from_policy(model.policy))
        if config.student_pull and (config.distil_labels or config.init_policy):  # (else no network to pull toward)
            model.pull = Pull(_teacher(config, model), config.student_pull, config.student_pull_steps, config.seed)
        if learning_starts:
            for stale in run_dir.glob(f"{TB_NAME}_*"):  # the logs of a start stopped before its first checkpoint
                shutil.rmtree(stale)
        remaining = config.total_steps - model.num_timesteps  # (steps trained on: train/ppo/overlap.py)
        if remaining > 0:
            with (
                progress.phase("PPO", "steps", config.total_steps, model.num_timesteps, trainer.eval_note, work="PPO"),
                contextlib.suppress(OutOfTime),
            ):
                model.learn(
                    total_timesteps=remaining, callback=trainer, reset_num_timesteps=learning_starts, tb_log_name=TB_NAME
                )
        final = run_dir / "final.zip"
        trained = actor = weights_from_policy(model.policy)
        gated = bool(config.final_gate_boards and starts_from_network(config))
        if gated:
            actor = _gate(config, trained, progress)
        with interrupts_deferred(reraise=False) as interrupted:
            with atomic_path(final) as tmp:
                model.save(tmp)
            if gated:
                save_weights(trained, run_dir / PPO_FILE)  # final.zip's actor, whichever the gate kept
            save_weights(actor, run_dir / "final.npz")
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
    finally:
        if trainer is not None:  # this leg's time, for a later --resume (a full disk: the checkpoint's figure)
            with contextlib.suppress(OSError):
                run_time.write_minutes(run_dir, trainer.minutes())


def _gate(config: TrainConfig, trained: Weights, progress: Progress) -> Weights:
    """The network ``final.npz`` keeps: PPO's or its start, whichever the gate finds better (train/ppo/fine_tune.py)."""
    boards = config.final_gate_boards
    start = load_weights(config.run_dir / START_FILE)
    with progress.phase("the gate: PPO's network against its start", "boards", boards):
        kept, measure = keep_the_better(trained, start, boards, config.rules, config.run_dir, progress.add)
    mean, low, high = measure["points_per_deal"]
    progress.say(
        f"the gate: PPO's network against its start {mean:+.3f} [{low:+.3f}, {high:+.3f}] points a deal over "
        f"{boards:,} board pairs: final.npz is {'PPO' if measure['kept'] == 'trained' else 'the start'}'s network "
        f"({GATE_FILE}; PPO's own is {PPO_FILE} and final.zip, which --resume goes on from)"
    )
    return kept


def _teacher(config: TrainConfig, model: MaskablePPO) -> Weights:
    """The network PPO is pulled toward: the last round's student (a ResumeError if it is missing
    or damaged), or without rounds ``init_policy``'s."""
    if not config.distil_labels:
        return init_weights(config.init_policy, config.layout, config.net_arch)
    path = expert_iteration.student_path(config.run_dir, len(config.rounds))
    try:
        return expert_iteration.read_student(path, weights_from_policy(model.policy))
    except ValueError as err:
        raise ResumeError(
            f"the student PPO is pulled toward ({path}) is missing or damaged: {err}. The run cannot go on exactly "
            "without it (put it back, or start again under another --run-name)"
        ) from None


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
    """The last line of a stopped run: what its folder holds for --resume (:func:`train.run.plan.kept`)."""
    step = model.num_timesteps if model is not None else 0
    what = f"[train] {stop_name(stop)} at step {step:,}"
    if not candidates(config.run_dir):
        return (
            f"{what}, before the first checkpoint: nothing to resume. Start it again with the same command "
            "(without --resume): the start's files are then removed first"
        )
    return f"{what}; kept {run_plan.kept(config)}. Resume with: {command(config, '--resume')}"
