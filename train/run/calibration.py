"""A short calibration at a run's start: each kind of work no rate is known for, timed on a tiny slice.

A config's first run on a machine has no earlier rates (:mod:`train.run.rates`), so the whole run's
time left would wait for every stage to be timed. Before the warm start, each kind of work the
plan holds that neither this run nor an earlier one has timed is done a little by the code that
does it in the run, on throwaway copies (nothing the run keeps or draws from changes): a few
recorded decisions and an imitation fit of them, a few labels and a distillation fit of those, an
evaluation board pair, a few PPO updates of a fresh model on tables of its own. A slice's rate
carries its start-up costs and its slice's luck, so an estimate from it is rough
(:data:`train.run.plan.BANDS`); a kind's rate from the run itself replaces it as soon as it is
measured. A kind whose slice fails stays untimed (named, not guessed).

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
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from agents.policy import save_weights, weights_from_policy
from eval import evaluate

from train import imitation
from train.config import TrainConfig
from train.ppo.overlap import OverlappedMaskablePPO
from train.rounds import expert_iteration as ei
from train.rounds.distil import Actor, Labels, SparseRows, fit, read_labels
from train.rounds.label_set import FILE_SETTINGS
from train.rounds.labels import make_labels

RECORD_DECISIONS = 4096  # four of the imitation fit's batches (batch_size 1024)
LABELS = 8  # a label takes tens of ms with the default search
FIT_ROWS = 4096  # the labels' rows repeated to fill four of the fit's batches: small batches cost more a row
PPO_STEPS_PER_TABLE = 8  # a rollout of n_envs x this, n_epochs updates of it

Timed = dict[str, tuple[float, float]]  # kind -> units, seconds


def calibrate(
    config: TrainConfig, policy, kinds: list[str], workers: int, build_ppo: Callable | None
) -> dict[str, float]:
    """Time a slice of each of ``kinds`` for ``config`` (``policy``: the run's new model's, copied,
    never changed; ``workers``: the processes labelling and evaluation use in the run;
    ``build_ppo(config)``: a fresh model on tables of its own): each timed kind's rate, units a second."""
    timed: Timed = {}
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()  # the run's draws stay the run's
    try:
        _calibrate(config, policy, kinds, build_ppo, timed)
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
    for kind, (units, seconds) in list(timed.items()):  # the run labels and evaluates with its workers
        if kind == "labelling" or kind.startswith("evaluation against "):
            timed[kind] = (units * workers, seconds)
    return {kind: units / seconds for kind, (units, seconds) in timed.items() if kind in kinds and seconds > 0}


def _calibrate(config: TrainConfig, policy, kinds: list[str], build_ppo: Callable | None, timed: Timed) -> None:
    with tempfile.TemporaryDirectory(prefix="calibration-") as folder:
        start = Path(folder) / "start.npz"
        save_weights(weights_from_policy(policy), start)
        recorded: list[imitation.Demonstrations] = []
        if "recording" in kinds or "imitation fit" in kinds:
            _timed(timed, "recording", lambda: _record(config, recorded))
        if "imitation fit" in kinds and recorded:
            _timed(timed, "imitation fit", lambda: _imitate(config, policy, recorded[0]))
        labels = Path(folder) / "labels"
        if "labelling" in kinds or "fit" in kinds:
            if _timed(timed, "labelling", lambda: _label(config, start, labels)) and "fit" in kinds:
                _timed(timed, "fit", lambda: _fit(config, policy, labels))
        for kind in kinds:
            if kind.startswith("evaluation against "):
                bot = kind.removeprefix("evaluation against ")
                _timed(timed, kind, lambda: _evaluate(start, bot, config))
        if "PPO" in kinds and build_ppo:
            small = dataclasses.replace(config, n_steps=PPO_STEPS_PER_TABLE, output_dir=folder)
            with contextlib.suppress(Exception):  # (its building is not PPO's work)
                model = build_ppo(small)
                _timed(timed, "PPO", lambda: _learn(model, 2 * small.n_envs * small.n_steps))
                if isinstance(model, OverlappedMaskablePPO):  # the rollout it collects ahead draws from torch's RNG
                    model.finish_collection()


def _timed(timed: Timed, kind: str, work: Callable[[], int]) -> bool:
    """Run ``work`` (it returns the units it did) and keep its units and seconds; False if it failed."""
    begun = time.monotonic()
    try:
        units = work()
    except Exception:  # noqa: BLE001 - a slice that fails leaves its kind untimed, never stops the run
        return False
    timed[kind] = (units, time.monotonic() - begun)
    return True


def _record(config: TrainConfig, recorded: list[imitation.Demonstrations]) -> int:
    recorded.append(imitation.record(dataclasses.replace(config, imitation_steps=RECORD_DECISIONS), seed=config.seed))
    return len(recorded[0].actions)


def _imitate(config: TrainConfig, policy, data: imitation.Demonstrations) -> int:
    imitation.fit(copy.deepcopy(policy), data, dataclasses.replace(config, imitation_epochs=1), seed=config.seed)
    return len(data.actions)


def _evaluate(start: Path, bot: str, config: TrainConfig) -> int:
    evaluate(str(start), bot, boards=1, rules=config.rules)
    return 1  # board pair


def _learn(model, steps: int) -> int:
    model.learn(total_timesteps=steps)
    return steps


def _label(config: TrainConfig, start: Path, folder: Path) -> int:
    """LABELS labels of round 1's first set (a student it names: the run's starting network)."""
    settings = ei.label_sets(config, 1)[0][1]
    student = str(ei.student_path(config.run_dir, 0))
    files = {name: str(start) for name in FILE_SETTINGS if getattr(settings, name) == student}
    settings = dataclasses.replace(settings, count=LABELS, shard_rows=LABELS, **files)
    make_labels(settings, folder, workers=1)
    return LABELS


def _fit(config: TrainConfig, policy, folder: Path) -> int:
    labels = _repeated(read_labels([folder], config.layout, config.distil_suit_copies, seed=config.seed), FIT_ROWS)
    loss_kind, temperature = config.rounds[0].fit
    fit(
        Actor.from_weights(weights_from_policy(policy)), labels, temperature, 1, config.distil_learning_rate, 0.0,
        seed=config.seed, loss_kind=loss_kind, say=lambda _: None,
    )  # fmt: skip
    return len(labels.masks)


def _repeated(labels: Labels, rows: int) -> Labels:
    """``labels``' rows repeated to ``rows`` rows, each an original decision."""
    index = np.arange(rows) % len(labels.masks)
    inputs = SparseRows.room(rows, labels.inputs.width)
    inputs.put(0, labels.inputs.dense(index))
    return Labels(
        inputs, labels.masks[index], labels.values[index], labels.search_actions[index],
        labels.player_actions[index], np.arange(rows), np.zeros(rows, bool),
    )  # fmt: skip
