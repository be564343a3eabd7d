"""A short calibration at a run's start: each kind of work no rate is known for, timed on a tiny slice.

A config's first run on a machine has no earlier rates (:mod:`train.run.rates`), so the whole run's
time left would wait for every stage to be timed. Before the warm start, each kind of work no run
has timed is done a little by the code that does it in the run, on throwaway copies (nothing the
run keeps or draws from changes). A slice's rate carries its start-up costs and its luck, so an
estimate from it is rough (:data:`train.run.plan.BANDS`) until the run's own rate replaces it; a
kind whose slice fails stays untimed (named, not guessed).

The default config on the 2-core machine shared with other work (2026-12-06): the calibration took
3 to 4 s; its rates against the run's own, recording 20,000 to 29,000 decisions/s against 43,000 to
53,000 (its slice is mostly start-up), imitation fit 12,000 to 17,000 samples/s against 19,400 to
19,900, labelling 100 to 130 labels/s against 88 to 103. Two fresh runs' first lines said 1h27m and
1h54m left ±50%; once labelling was timed (fit, evaluation and PPO still from the calibration),
1h44m to 1h50m and 1h52m to 2h00m ±33% to 35%.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from agents.policy import save_weights, weights_from_policy
from eval import evaluate

from train import imitation
from train.config import TrainConfig
from train.ppo.overlap import OverlappedMaskablePPO
from train.ppo.trainer import make_vec_env, new_model
from train.rounds import expert_iteration as ei
from train.rounds.distil import Actor, Labels, SparseRows, fit, read_labels
from train.rounds.label_set import FILE_SETTINGS
from train.rounds.labels import make_labels
from train.run.plan import RunPlan
from train.run_folder.progress import Progress

RECORD_DECISIONS = 4096  # four of the imitation fit's batches (batch_size 1024)
LABELS = 8  # a label takes tens of ms with the default search
FIT_ROWS = 4096  # the labels' rows repeated to fill four of the fit's batches: small batches cost more a row
PPO_STEPS_PER_TABLE = 8  # a rollout of n_envs x this, n_epochs updates of it


def calibrate(plan: RunPlan, config: TrainConfig, policy, progress: Progress) -> None:
    """Time a slice of each kind of work ``plan`` has no rate for, so that the first progress line gives the whole
    run's time left (``policy``: the run's new model's, copied, never changed)."""
    kinds = plan.untimed()
    if not kinds or not progress.enabled:  # (a quiet run shows no estimate)
        return
    progress.say(f"calibrating: a slice of {', '.join(kinds)} (no rate for them yet)")
    begun = time.monotonic()
    rates: dict[str, float] = {}
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()  # the run's draws stay the run's
    try:
        _calibrate(config, policy, kinds, rates)
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
    plan.calibrated = {kind: rate for kind, rate in rates.items() if kind in kinds}
    plan.calibration_seconds = time.monotonic() - begun


def _calibrate(config: TrainConfig, policy, kinds: list[str], rates: dict[str, float]) -> None:
    workers = ei.label_workers(config)  # the run labels and evaluates with its workers
    with tempfile.TemporaryDirectory(prefix="calibration-") as folder:
        start, labels = Path(folder) / "start.npz", Path(folder) / "labels"
        save_weights(weights_from_policy(policy), start)
        if "recording" in kinds or "imitation fit" in kinds:
            warm = dataclasses.replace(config, imitation_steps=RECORD_DECISIONS, imitation_epochs=1)
            with _timed(rates, "recording", RECORD_DECISIONS):
                data = imitation.record(warm, seed=config.seed)
            if "imitation fit" in kinds and "recording" in rates:
                with _timed(rates, "imitation fit", len(data.actions)):
                    imitation.fit(copy.deepcopy(policy), data, warm, seed=config.seed)
        if "labelling" in kinds or "fit" in kinds:
            with _timed(rates, "labelling", LABELS, workers):
                _label(config, start, labels)
            if "fit" in kinds and "labelling" in rates:
                with _timed(rates, "fit", FIT_ROWS):
                    _fit(config, policy, labels)
        for kind in kinds:
            if kind.startswith("evaluation against "):
                with _timed(rates, kind, 1, workers):  # a board pair
                    evaluate(str(start), kind.removeprefix("evaluation against "), boards=1, rules=config.rules)
        if "PPO" in kinds:  # a new model on tables of its own, its league ready
            small = dataclasses.replace(config, n_steps=PPO_STEPS_PER_TABLE, output_dir=folder)
            with contextlib.suppress(Exception):  # (its building is not PPO's work)
                model = new_model(small, env := make_vec_env(small))
                env.unwrapped.league.update(weights_from_policy(model.policy))
                steps = 2 * small.n_envs * small.n_steps
                with _timed(rates, "PPO", steps):
                    model.learn(total_timesteps=steps)
                if isinstance(model, OverlappedMaskablePPO):  # the rollout it collects ahead draws from torch's RNG
                    model.finish_collection()


@contextlib.contextmanager
def _timed(rates: dict[str, float], kind: str, units: int, workers: int = 1) -> Iterator[None]:
    """Time the block, ``units`` of ``kind`` done as each of the run's ``workers`` does them."""
    begun = time.monotonic()
    try:
        yield
    except Exception:  # noqa: BLE001 - a slice that fails leaves its kind untimed, never stops the run
        return
    rates[kind] = units * workers / max(time.monotonic() - begun, 1e-9)


def _label(config: TrainConfig, start: Path, folder: Path) -> None:
    """LABELS labels of round 1's first set (a student it names: the run's starting network)."""
    settings = ei.label_sets(config, 1)[0][1]
    student = str(ei.student_path(config.run_dir, 0))
    files = {name: str(start) for name in FILE_SETTINGS if getattr(settings, name) == student}
    settings = dataclasses.replace(settings, count=LABELS, shard_rows=LABELS, **files)
    make_labels(settings, folder, workers=1)


def _fit(config: TrainConfig, policy, folder: Path) -> None:
    """The fit of round 1 on the labels' rows repeated to FIT_ROWS rows, each an original decision."""
    labels = read_labels([folder], config.layout, config.distil_suit_copies, seed=config.seed)
    index = np.arange(FIT_ROWS) % len(labels.masks)
    inputs = SparseRows.room(FIT_ROWS, labels.inputs.width)
    inputs.put(0, labels.inputs.dense(index))
    labels = Labels(
        inputs, labels.masks[index], labels.values[index], labels.search_actions[index],
        labels.player_actions[index], np.arange(FIT_ROWS), np.zeros(FIT_ROWS, bool),
    )  # fmt: skip
    loss_kind, temperature = config.rounds[0].fit
    fit(
        Actor.from_weights(weights_from_policy(policy)), labels, temperature, 1, config.distil_learning_rate, 0.0,
        seed=config.seed, loss_kind=loss_kind, say=lambda _: None,
    )  # fmt: skip
