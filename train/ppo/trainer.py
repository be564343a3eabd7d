"""The PPO stage: MaskablePPO from the network the run has made (or ``init_policy``), against the
league, and :class:`Trainer`, everything that happens between two of its updates.

:func:`new_model` builds the model (:mod:`train.ppo.network`; with a start network, the
fine-tuning recipe of :mod:`train.ppo.fine_tune`; rollouts overlapping updates,
:mod:`train.ppo.overlap`) on the learner env (:func:`make_vec_env`, :mod:`train.ppo.learner_env`).
Between two updates the :class:`Trainer` sends the new weights to the league, takes snapshots,
runs duplicate evaluations through the ``eval`` library (and against the start network: the
curve that shows a drift within minutes), writes checkpoints and prints progress; with
``max_minutes``, learning ends at the first update after the run has taken that long
(:class:`OutOfTime`). :func:`restore` continues a model, env and trainer from a checkpoint once
every value read has been checked against the run.

Tensorboard tags (fixed): SB3's ``train/*`` (losses, entropy, ...) and ``rollout/ep_rew_mean``;
``game/win_rate``, ``game/own_points_per_deal``, ``game/other_points_per_deal`` over the matches
finished since the last update; ``eval/win_rate_vs_<bot>`` with ``eval/win_rate_low_vs_<bot>`` and
``eval/win_rate_high_vs_<bot>`` (its 95% interval over board pairs), ``eval/point_diff_per_deal_vs_<bot>``;
``start/score``, ``start/low``, ``start/high``, ``start/points_per_deal``, ``start/points_low``,
``start/points_high`` (the learner against the network PPO started from, ``start_curve.csv``);
``warmup/explained_variance`` (the critic's warm-up, ``warmup.csv``); ``time/steps_per_second``.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

from agents.policy import PolicyBot, input_size, load_weights, save_weights, weights_from_policy
from agents.shared.processes import interrupts_deferred
from allfours_env.checks import brief, count, in_range, keys, like, number
from eval import evaluate
from train.config import TrainConfig
from train.ppo.fine_tune import WARMUP_FILE, CriticWarmup, FineTunePPO
from train.ppo.learner_env import LearnerVecEnv, make_learner_env
from train.ppo.network import policy_class, policy_kwargs
from train.ppo.overlap import PENDING_ARRAYS, OverlappedMaskablePPO
from train.run_folder import curve, run_time
from train.run_folder.checkpoints import ResumeError, checkpoint_step, load_model_params, load_state, save_checkpoint
from train.run_folder.progress import Progress
from train.run_folder.state_checks import numpy_global_state, python_random_state, torch_rng_state

TB_NAME = "tensorboard"
START_FILE = "start.npz"  # the actor PPO started from (after the warm start and rounds, or init_policy)
START = "start"  # the start network, as the curve names it (evaluations.csv, start_curve.csv)
START_CURVE_FILE = "start_curve.csv"
PPO_FILE = "ppo.npz"  # PPO's own network (final.zip's actor) in a run with the gate, beside the kept final.npz
START_COLUMNS = ("steps", "minutes", "score", "low", "high", "points_per_deal", "points_low", "points_high")
# what SB3 keeps besides weights and optimizer to continue exactly (in the checkpoint's state, not its zip's pickles)
SB3_COUNTERS = (
    "num_timesteps", "_n_updates", "_episode_num", "_last_obs", "_last_episode_starts", "_last_original_obs",
    "ep_info_buffer", "ep_success_buffer",
)  # fmt: skip


MISC_BYTES = 2**20  # in a checkpoint's files, room for what does not grow with the run (generators, counters, headers)


class OutOfTime(Exception):
    """The run has taken ``max_minutes``: PPO ends at this update (Trainer's last checkpoint written)."""


def make_vec_env(config: TrainConfig) -> VecMonitor:
    return VecMonitor(make_learner_env(config))  # episode returns and lengths for rollout/ep_rew_mean


def monitor_state(env: VecMonitor) -> dict[str, Any]:
    return {name: getattr(env, name) for name in ("episode_returns", "episode_lengths", "episode_count")}


def starts_from_network(config: TrainConfig) -> bool:
    """Whether PPO starts from a network (the rounds' student or init_policy), which the fine-tuning
    recipe keeps (train/ppo/fine_tune.py), or from a new actor or the warm start alone."""
    return bool(config.init_policy or config.distil_labels)


def curve_bots(config: TrainConfig) -> list[str]:
    """The bots of the learning curve: eval_opponents, and the start network if the run measures against it."""
    return [*config.eval_opponents, *([START] if config.start_eval_boards else [])]


def new_model(config: TrainConfig, env: VecMonitor) -> FineTunePPO:
    algorithm = OverlappedMaskablePPO if config.overlap_updates else FineTunePPO
    model = algorithm(
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
        target_kl=config.target_kl or None,
        normalize_advantage=config.normalize_advantage,
        policy_kwargs=policy_kwargs(
            config.net_arch, config.critic_arch, input_size(config.layout), config.critic_learning_rate
        ),
        tensorboard_log=str(config.run_dir),
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if starts_from_network(config):
        model.warmup = CriticWarmup(config.critic_warmup_steps)
    return model


class Trainer(BaseCallback):
    """Everything that happens between two PPO updates (see the module docstring)."""

    def __init__(self, config: TrainConfig, env: VecMonitor, progress: Progress):
        super().__init__()
        self.config = config
        self.env = env
        self.tables: LearnerVecEnv = env.unwrapped
        self.progress = progress
        self.evaluations: list[tuple[int, float, str, float, float, float]] = []  # steps, minutes, bot, win, low, high
        self.start_curve: list[tuple[float, ...]] = []  # START_COLUMNS: against the start network
        self._warmup_seen = 0  # warm-up rollouts written to WARMUP_FILE
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
        names = ("next_snapshot", "next_eval", "next_checkpoint", "latest_eval", "evaluations", "start_curve")
        warmup = self._warmup()
        return {k: getattr(self, k) for k in names} | {
            "minutes_before": self.minutes(), "warmup": warmup.state() if warmup is not None else None,
        }  # fmt: skip

    def _warmup(self) -> CriticWarmup | None:
        """The model's critic warm-up (None: none, or no model attached yet)."""
        return getattr(self.model, "warmup", None) if getattr(self, "model", None) is not None else None

    def restore(self, state: dict[str, Any], step: int, warmup: CriticWarmup | None = None) -> None:
        """Continue from a :meth:`state` of a checkpoint at ``step``, once it is checked: the
        schedule's next steps (multiples of their period, at most a period past ``step``), the
        evaluations (against eval_opponents, no later than ``step``, rates in [0, 1], no more
        than the run can have made). A ValueError (or TypeError) names what does not fit."""
        config, mine = self.config, self.state()
        state = {"start_curve": [], "warmup": None} | state  # (checkpoints written before they were kept)
        keys("the trainer's state", state, mine)
        for name, every in (
            ("next_snapshot", config.snapshot_every), ("next_eval", config.eval_every),
            ("next_checkpoint", config.checkpoint_every),
        ):  # fmt: skip
            if count(f"trainer {name}", state[name], every, step + every) % every:
                raise ValueError(f"trainer {name} must be a multiple of {every:,}, got {state[name]:,}")
        for bot, row in like("trainer latest_eval", state["latest_eval"], {}).items():
            name = f"the latest evaluation against {brief(bot)}"
            _evaluation_row(name, (step, 0.0, bot, *like(name, row, ())), step, config)
        rows = like("trainer evaluations", state["evaluations"], [])
        most = len(curve_bots(config)) * (2 + step // config.eval_every + step // (config.n_envs * config.n_steps))
        if len(rows) > most:  # the start, every eval_every steps, and the end of each part of a resumed run
            raise ValueError(f"trainer evaluations holds {len(rows):,} rows; at step {step:,} at most {most:,}")
        for row in rows:
            _evaluation_row("an evaluations row (steps, minutes, bot, win, low, high)", row, step, config)
        if [row[0] for row in rows] != sorted(row[0] for row in rows):
            raise ValueError("trainer evaluations must be in the order of their steps")
        number("trainer minutes_before", state["minutes_before"], 0.0)
        for row in like("trainer start_curve", state["start_curve"], []):
            if not isinstance(row, (tuple, list)) or len(row) != len(START_COLUMNS):
                raise ValueError(f"a start_curve row must be {len(START_COLUMNS)} values ({', '.join(START_COLUMNS)})")
            count("a start_curve row's steps", row[0], 0, step)
            number("a start_curve row's minutes", row[1], 0.0)
            number("a start_curve row's score", row[2], 0.0, 1.0)
            number("a start_curve row's points a deal", row[5], -1e9, 1e9)
            for bound in (*row[3:5], *row[6:]):  # (NaN: an interval over a single board pair)
                if not (isinstance(bound, float) and (math.isnan(bound) or -1e9 <= bound <= 1e9)):
                    raise ValueError(f"a start_curve row's interval bounds must be numbers or NaN, got {brief(bound)}")
        if len(state["start_curve"]) > most:
            raise ValueError(f"trainer start_curve holds {len(state['start_curve']):,} rows; at most {most:,}")
        state_warmup = state.pop("warmup")
        if warmup is not None and state_warmup is not None:
            warmup.set_state(state_warmup, step)
            self._warmup_seen = len(warmup.rows)
        elif state_warmup is not None:
            raise ValueError("the checkpoint holds a critic warm-up this run does not have")
        for name, value in state.items():
            setattr(self, name, value)

    # -- SB3 hooks
    def minutes(self) -> float:
        """Minutes the run has taken so far (warm start included), across resumes."""
        return self.minutes_before + (time.monotonic() - self._started) / 60

    def _on_training_start(self) -> None:
        self._clock = (time.monotonic(), self.model.num_timesteps)
        if steps_collected(self.model) == 0:  # the starting point of the learning curve, and its network
            save_weights(weights_from_policy(self.model.policy), self.config.run_dir / START_FILE)
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
        self._warmup_news()
        take_snapshot = steps >= self.next_snapshot
        if take_snapshot:
            self.next_snapshot += self.config.snapshot_every
        self.tables.league.update(weights_from_policy(self.model.policy), take_snapshot)
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
        if self.config.max_minutes and self.minutes() >= self.config.max_minutes:
            self._on_training_end()  # nothing is in flight here: the checkpoint holds all a resume needs
            raise OutOfTime
        self._rollout_started = time.monotonic()

    def _on_training_end(self) -> None:
        if isinstance(self.model, OverlappedMaskablePPO):
            self.model.finish_collection()  # the checkpoint below holds the rollout it collected
        self.progress.advance(self.model.num_timesteps)
        self._warmup_news()
        if self._evaluated_after != self.model._n_updates:  # not when the last rollout's evaluation saw these weights
            self.evaluate()
            self.logger.dump(self.model.num_timesteps)
        self.checkpoint()  # so that a finished run can be extended with --resume --total-steps

    # -- the pieces
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
        if self.config.start_eval_boards:
            self._against_start(bot, minutes)
        with interrupts_deferred():
            curve.write(self.config.run_dir, self.evaluations)
            if self.config.start_eval_boards:
                curve.write_csv(self.config.run_dir / START_CURVE_FILE, START_COLUMNS, self.start_curve)

    def _against_start(self, bot: PolicyBot, minutes: float) -> None:
        """The learner against the network PPO started from, on the same boards every time: a
        drift below it shows in minutes (``start/*`` in tensorboard, start_curve.csv)."""
        start = PolicyBot(load_weights(self.config.run_dir / START_FILE), name=START)
        boards, steps = self.config.start_eval_boards, self.model.num_timesteps
        with self.progress.phase(f"evaluating at step {steps:,} against the start", "boards", boards, quiet=True):
            result = evaluate(bot, start, boards=boards, rules=self.config.rules, workers=1, on_progress=self.progress.add)
        low, high = result.win_rate_ci
        row = (steps, minutes, result.win_rate, low, high, result.point_diff_per_deal, *result.point_diff_ci)
        self.start_curve.append(row)
        self.latest_eval[START] = (result.win_rate, low, high)
        self.evaluations.append((steps, minutes, START, result.win_rate, low, high))
        for name, value in zip(START_COLUMNS[2:], row[2:]):
            self.logger.record(f"start/{name}", value)

    def eval_note(self) -> str:
        """The latest evaluations (and the critic's warm-up), for the progress lines."""
        notes = "".join(f"  vs {name} {w:.3f} [{lo:.3f}, {hi:.3f}]" for name, (w, lo, hi) in self.latest_eval.items())
        if self.start_curve:
            notes += f" {self.start_curve[-1][5]:+.3f} a deal"
        warmup = self._warmup()
        return notes + (warmup.note() if warmup is not None else "")

    def _warmup_news(self) -> None:
        """While the critic warms up: its curve in the run folder; the line that says it has ended."""
        warmup = self._warmup()
        if warmup is None or len(warmup.rows) == self._warmup_seen:
            return
        self._warmup_seen = len(warmup.rows)
        with interrupts_deferred():
            curve.write_csv(self.config.run_dir / WARMUP_FILE, ("steps", "explained_variance"), warmup.rows)
        if not warmup.active:
            self.progress.say(
                f"critic warm-up over at step {warmup.rows[-1][0]:,} ({len(warmup.rows)} rollouts): explained "
                f"variance {warmup.rows[-1][1]:.3f}, best {warmup.best:.3f}; the actor learns from here"
            )

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
            "env_state": {"learner": self.tables.get_state(), "monitor": monitor_state(self.env)},
            "sb3": {name: getattr(self.model, name) for name in SB3_COUNTERS},  # + the waiting rollout, if overlapped
            "torch_rng": torch.get_rng_state().numpy(),
            "numpy_global_rng": np.random.get_state(),  # SB3 shuffles minibatches with it
            "python_rng": random.getstate(),
        }
        if isinstance(self.model, OverlappedMaskablePPO):
            state["sb3"]["pending_rollout"] = self.model.pending_state()
        with interrupts_deferred():
            save_checkpoint(self.config.run_dir, self.model.num_timesteps, self.model, state)
            run_time.write_minutes(self.config.run_dir, self.minutes())
        self._last_checkpoint = time.monotonic()


def steps_collected(model: MaskablePPO) -> int:
    """The PPO steps the tables have made: the model's counter, and the steps of a restored
    rollout that it counts only once that rollout is trained on (train/ppo/overlap.py); 0 only
    before PPO's first rollout."""
    return model.num_timesteps + (model.uncounted_steps if isinstance(model, OverlappedMaskablePPO) else 0)


def _evaluation_row(name: str, row: Any, step: int, config: TrainConfig) -> None:
    """A ValueError unless ``row`` is (steps, minutes, bot, win, low, high) of an evaluation at
    most at ``step`` against one of eval_opponents, its rates in [0, 1]."""
    if not isinstance(row, tuple) or len(row) != 6:
        raise ValueError(f"{name} must be 6 values, got {brief(row)}")
    count(f"{name}: steps", row[0], 0, step)
    number(f"{name}: minutes", row[1], 0.0)
    if not isinstance(row[2], str) or row[2] not in curve_bots(config):
        raise ValueError(f"{name}: bot must be one of {curve_bots(config)}, got {brief(row[2])}")
    for value in row[3:]:
        number(f"{name}: rates", value, 0.0, 1.0)


def restore(
    config: TrainConfig, folder: Path, progress: Progress, planned: int | None = None
) -> tuple[VecMonitor, Trainer, MaskablePPO]:
    """A new env, trainer and model continuing from checkpoint ``folder``: ResumeError if it is
    damaged or does not fit ``config`` (``planned``: the most steps the run was ever set to train,
    which bounds its checkpoints; ``config``'s by default). Its files are read within the sizes
    this run's objects take, every value is checked against the run before it is used, and the
    global generators are set last, so a refused checkpoint changes nothing outside the new objects."""
    step = checkpoint_step(folder)
    rollout = config.n_envs * config.n_steps
    planned = config.total_steps if planned is None else planned
    last = (math.ceil(planned / rollout) + 1) * rollout  # the last checkpoint: a rollout past total_steps
    if step % rollout or step > last:
        raise ResumeError(
            f"checkpoint {folder} is at step {step:,}: this run checkpoints at multiples of {rollout:,} up to {last:,}"
        )
    env = make_vec_env(config)
    trainer = Trainer(config, env, progress)
    model = new_model(config, env)
    json_bytes, array_bytes, model_bytes = _sizes(config, env, model, step)
    state = load_state(folder, json_bytes, array_bytes)
    params = load_model_params(folder, model.policy, model_bytes)
    try:
        generators = (
            torch_rng_state(state["torch_rng"]), numpy_global_state(state["numpy_global_rng"]),
            python_random_state(state["python_rng"]),
        )  # fmt: skip
        model.set_parameters(params, exact_match=True, device="cpu")
        observations = trainer.tables.set_state(state["env_state"]["learner"], weights_from_policy(model.policy))
        if trainer.tables.env.started != (step > 0):
            raise ValueError(f"the tables must be {'in play' if step else 'as built'} at step {step:,}")
        _restore_monitor(env, state["env_state"]["monitor"], step)
        _restore_counters(model, state["sb3"], step, observations)
        trainer.restore(state["trainer"], step, model.warmup)
        if trainer.tables.league.taken != trainer.next_snapshot // config.snapshot_every - 1:
            raise ValueError("the league's snapshots must be those the trainer's schedule has taken")
    except (KeyError, ValueError, TypeError, RuntimeError, AttributeError, IndexError) as err:
        raise ResumeError(f"checkpoint {folder} does not fit this run: {type(err).__name__}: {err}") from None
    torch.set_rng_state(torch.from_numpy(generators[0].copy()))
    np.random.set_state(generators[1])
    random.setstate(generators[2])
    return env, trainer, model


def _sizes(config: TrainConfig, env: VecMonitor, model: MaskablePPO, step: int) -> tuple[int, int, int]:
    """The most bytes a checkpoint of this run at ``step`` takes: its state.json, the arrays of
    its state.npz, its model.zip; a file beyond them is refused unread."""
    n, inputs = config.n_envs, env.observation_space.shape[0]
    actor = sum(a.nbytes for a in weights_from_policy(model.policy).values())
    tensors = sum(p.numel() * p.element_size() for p in model.policy.parameters())
    rollout = sum(getattr(model.rollout_buffer, name).nbytes for name in PENDING_ARRAYS)
    game = sum(a.nbytes for a in env.unwrapped.game.get_state().values())
    networks = actor * (1 + config.max_snapshots)  # the league's current policy and snapshots
    arrays = rollout + networks + game + 8 * n * inputs + MISC_BYTES
    rows = len(curve_bots(config)) * (2 + step // config.eval_every + step // (n * config.n_steps))
    json_bytes = MISC_BYTES + 1024 * n + 256 * rows  # per table: an opponent and a bot's state; evaluations
    # weights and Adam's moments; SB3's data: the spaces, _last_obs (and from versions before 2026-12 a rollout buffer
    # and a policy copy of overlapped runs, base64)
    model_zip = 6 * tensors + 2 * rollout + 64 * inputs + 8 * n * inputs + MISC_BYTES
    return json_bytes, arrays, model_zip


def _restore_monitor(env: VecMonitor, state: Any, step: int) -> None:
    """The episode counters of VecMonitor (rollout/ep_rew_mean), checked against ``step``."""
    n = env.num_envs
    keys("the monitor's state", state, monitor_state(env))
    returns = like("monitor episode_returns", state["episode_returns"], env.episode_returns)
    lengths = like("monitor episode_lengths", state["episode_lengths"], env.episode_lengths)
    in_range("monitor episode_returns", returns)
    in_range("monitor episode_lengths", lengths, 0, step // n)
    episodes = count("monitor episode_count", state["episode_count"], 0, step)
    env.episode_returns, env.episode_lengths, env.episode_count = returns.copy(), lengths.copy(), episodes


def _restore_counters(model: MaskablePPO, counters: Any, step: int, observations: np.ndarray) -> None:
    """SB3's counters, last observation and episode buffers (and an overlapped run's rollout
    collected ahead), checked against ``step`` and the tables' ``observations``."""
    overlapped = isinstance(model, OverlappedMaskablePPO)
    keys("sb3", counters, (*SB3_COUNTERS, "pending_rollout") if overlapped else SB3_COUNTERS)
    rollout = model.n_steps * model.n_envs
    count("sb3 num_timesteps", counters["num_timesteps"], step, step)  # the folder's step
    if overlapped and (counters["pending_rollout"] is None) != (step == 0):
        raise ValueError("an overlapped run's checkpoint holds a rollout collected ahead once PPO has begun, only then")
    trained = step - rollout if overlapped and step else step
    updates = model.n_epochs * (trained // rollout)  # n_epochs passes over each rollout trained on...
    fewest = trained // rollout if model.target_kl else updates  # ...or with target_kl, at least one
    count("sb3 _n_updates", counters["_n_updates"], fewest, updates)
    count("sb3 _episode_num", counters["_episode_num"], 0, step)
    if step == 0:  # before learn(): SB3 has set none of them
        if any(counters[name] is not None for name in SB3_COUNTERS[3:]):
            raise ValueError(f"before PPO, sb3 {', '.join(SB3_COUNTERS[3:])} must be None")
    else:
        if not np.array_equal(like("sb3 _last_obs", counters["_last_obs"], observations), observations):
            raise ValueError("sb3 _last_obs must be the observation of the tables' state")
        like("sb3 _last_episode_starts", counters["_last_episode_starts"], np.zeros(model.n_envs, bool))
        if counters["_last_original_obs"] is not None:
            raise ValueError("sb3 _last_original_obs must be None (no VecNormalize)")
        most = step // model.n_envs
        _episode_buffer("sb3 ep_info_buffer", counters["ep_info_buffer"], model, lambda info: _episode_info(info, most))
        successes = counters["ep_success_buffer"]
        _episode_buffer("sb3 ep_success_buffer", successes, model, lambda ok: like("a success", ok, True))
    for name in SB3_COUNTERS:
        setattr(model, name, counters[name])
    if overlapped:
        model.restore_pending(counters["pending_rollout"])


def _episode_buffer(name: str, buffer: Any, model: MaskablePPO, check: Any) -> None:
    if not isinstance(buffer, deque) or buffer.maxlen != model._stats_window_size:
        raise ValueError(f"{name} must be a deque of at most {model._stats_window_size} items, got {brief(buffer)}")
    for item in buffer:
        check(item)


def _episode_info(info: Any, most_steps: int) -> None:
    """A ValueError unless ``info`` is VecMonitor's record of an episode: return, length, time."""
    keys("an episode's info", info, ("r", "l", "t"))
    number("an episode's return", info["r"])
    count("an episode's length", info["l"], 1, most_steps)
    number("an episode's time", info["t"], 0.0)


