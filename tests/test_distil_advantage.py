"""The advantage loss of train.rounds.distil (the start's policy tilted by exp(value / tau)) and fitting a
widened network from ``--init`` (issue 60)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

import agents
from agents.averaged import RELABELLINGS, AveragedPolicy
from agents.features import ADVISED_SIZE
from agents.policy import ADVISED_LAYOUT, HISTORY_LAYOUT, PolicyBot, batch_inputs, load_weights
from allfours_env.rules import DEFAULT_RULES
from train.rounds import distil, label_set, labels

from .test_features import positions

STUDENT = Path(agents.__file__).parent / "pretrained" / "student_v3.npz"
SETTINGS = label_set.LabelSettings(
    count=24, worlds=4, margin=0.01, rollout="expert", player="expert", seed=60, shard_rows=12, tables=4,
    rules=DEFAULT_RULES, confirm=8,
)  # fmt: skip


def random_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks of 2..6 legal actions, searched values on them (NaN elsewhere) and log-priors."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, 56), bool)
    for row in masks:
        row[rng.choice(56, size=rng.integers(2, 7), replace=False)] = True
    values = np.where(masks, rng.random((n, 56)), np.nan).astype(np.float32)
    logits = np.where(masks, 3 * rng.standard_normal((n, 56)), -np.inf)
    log_prior = (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)
    return values, masks, log_prior


def test_the_target_is_the_prior_tilted_by_exp_of_the_advantage() -> None:
    values, masks, log_prior = random_rows(200, seed=1)
    prior = np.exp(log_prior.astype(np.float64))
    advantage = np.nan_to_num(values, nan=0.0) - (prior * np.nan_to_num(values, nan=0.0)).sum(axis=1, keepdims=True)
    for tau in (0.003, 0.01, 0.1):
        expected = prior * np.exp(advantage / tau)
        expected /= expected.sum(axis=1, keepdims=True)
        got = distil.advantage_targets(values, masks, log_prior, tau)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
        assert (got[~masks] == 0).all()
        np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-6)


def test_a_large_tau_keeps_the_prior_and_a_small_one_takes_the_best_value() -> None:
    values, masks, log_prior = random_rows(200, seed=2)
    kept = distil.advantage_targets(values, masks, log_prior, 1e9)
    np.testing.assert_allclose(kept, np.exp(log_prior), rtol=1e-4, atol=1e-7)
    best = distil.advantage_targets(values, masks, log_prior, 1e-7)
    argmax = np.nanargmax(values, axis=1)
    np.testing.assert_allclose(best, np.eye(56)[argmax], atol=1e-6)


def synthetic_labels(n_rows: int) -> distil.Labels:
    """Decisions of random matches with one legal action (at random) worth 0.6, the others 0.5."""
    observations, masks = positions(4, seed=61)
    acting = masks.sum(axis=1) >= 2
    observations, masks = observations[acting][:n_rows], masks[acting][:n_rows] > 0
    rng = np.random.default_rng(3)
    best = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
    values = np.where(masks, 0.5, np.nan).astype(np.float32)
    values[np.arange(len(best)), best] = 0.6
    inputs = distil.SparseRows.room(len(masks), ADVISED_SIZE)
    inputs.put(0, batch_inputs(ADVISED_LAYOUT, observations, masks))
    n = len(masks)
    return distil.Labels(inputs, masks, values, best, best, np.arange(n), np.zeros(n, bool))


def plays(actor: distil.Actor, labels: distil.Labels) -> np.ndarray:
    with torch.no_grad():
        logits = actor(torch.from_numpy(labels.inputs.dense(np.arange(len(labels.masks))))).numpy()
    return np.where(labels.masks, logits, -np.inf).argmax(axis=1)


def test_an_advantage_fit_keeps_the_start_at_a_large_tau_and_follows_the_values_at_a_small_one() -> None:
    labels = synthetic_labels(300)
    best = labels.search_actions
    start = plays(distil.Actor.from_weights(load_weights(STUDENT)), labels)
    assert (start == best).mean() < 0.5  # (the best action is drawn at random)
    after = {}
    for tau in (100.0, 1e-4):
        actor = distil.Actor.from_weights(load_weights(STUDENT))
        torch.manual_seed(0)
        distil.fit(actor, labels, tau, 20, 1e-3, 0.0, seed=0, loss_kind="advantage", say=lambda _: None)
        after[tau] = plays(actor, labels)
    assert (after[100.0] == start).mean() > 0.95  # the target is the start's own policy: it stays
    assert (after[1e-4] == best).mean() > 0.9  # the target is the best-valued action


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labels")
    labels.make_labels(SETTINGS, folder, workers=1)
    return folder


def first_shard(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """The observations and masks of a label set's first shard."""
    shard = next(label_set.iter_shards(folder))
    return shard["observation"], shard["action_mask"]


def run_distil(capsys, *args: str) -> tuple[int, str]:
    try:
        code = distil.main(list(args))
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


def test_distil_widens_its_init_to_the_history_input_and_fits_by_advantage(made, tmp_path, capsys) -> None:
    out = tmp_path / "student.npz"
    code, err = run_distil(
        capsys, "--labels", str(made), "--out", str(out), "--init", str(STUDENT), "--input", "history",
        "--loss", "advantage", "--tau", "0.02", "--epochs", "1", "--lr", "1e-6", "--holdout", "0",
    )  # fmt: skip
    assert code == 0, err
    assert "input layout 4" in err
    student = agents.make(str(out))
    assert isinstance(student, PolicyBot) and student.layout == HISTORY_LAYOUT
    obs, masks = first_shard(made)
    np.testing.assert_array_equal(student.act_batch(obs, masks), agents.make(str(STUDENT)).act_batch(obs, masks))


def test_read_with_a_prior_each_row_holds_the_averaged_networks_log_policy(made) -> None:
    student = PolicyBot.from_file(STUDENT)
    prior = AveragedPolicy([student], RELABELLINGS[24])
    read = distil.read_labels([made], ADVISED_LAYOUT, suit_copies=1, seed=4, prior=prior)
    obs, masks = first_shard(made)
    row_of = np.flatnonzero(~read.is_copy)  # the row of each labelled decision
    np.testing.assert_allclose(read.log_prior[row_of[: len(obs)]], prior.log_probabilities(obs, masks), rtol=1e-5, atol=1e-5)
    # exactly suit-blind: a relabelled copy's prior is its original's, on the relabelled actions
    for copy in np.flatnonzero(read.is_copy):
        original = row_of[read.source[copy]]
        own, theirs = read.log_prior[copy][read.masks[copy]], read.log_prior[original][read.masks[original]]
        np.testing.assert_allclose(np.sort(own), np.sort(theirs), atol=1e-4)
    plain = distil.read_labels([made], ADVISED_LAYOUT, seed=4)
    assert plain.log_prior is None


def test_distil_with_the_averaged_prior_and_a_large_tau_fits_the_averaged_network(made, tmp_path, capsys) -> None:
    out = tmp_path / "student.npz"
    code, err = run_distil(
        capsys, "--labels", str(made), "--out", str(out), "--init", str(STUDENT), "--loss", "advantage",
        "--prior-suits", "24", "--tau", "100", "--epochs", "60", "--lr", "1e-3", "--holdout", "0",
    )  # fmt: skip
    assert code == 0, err
    obs, masks = first_shard(made)
    averaged = AveragedPolicy([PolicyBot.from_file(STUDENT)], RELABELLINGS[24])
    target = averaged.act_batch(obs, masks)
    before = PolicyBot.from_file(STUDENT).act_batch(obs, masks)
    after = agents.make(str(out)).act_batch(obs, masks)
    assert (after == target).mean() > (before == target).mean() or (before == target).all()
    assert (after == target).mean() > 0.9


@pytest.mark.parametrize(
    "more, message",
    [
        (["--tau", "0"], r"--tau must be a finite number in \[0.0001, 100\], got 0.0"),
        (["--tau", "-1"], r"--tau must be a finite number in \[0.0001, 100\], got -1.0"),
        (["--tau", "nan"], r"--tau must be a finite number in \[0.0001, 100\], got nan"),
        (["--tau", "inf"], r"--tau must be a finite number in \[0.0001, 100\], got inf"),
        (["--init", str(STUDENT), "--input", "compact"], "a network of input layout 3 cannot be made one of layout 2"),
    ],
)
def test_bad_advantage_options_are_one_line_exit_2(made, tmp_path, capsys, more, message) -> None:
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), "--loss", "advantage", *more)
    assert code == 2 and re.search(message, err), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_an_averaged_prior_without_the_advantage_loss_is_refused(made, tmp_path, capsys) -> None:
    out = tmp_path / "student.npz"
    code, err = run_distil(capsys, "--labels", str(made), "--out", str(out), "--prior-suits", "24")
    assert code == 2 and "--prior-suits 24 is the advantage loss's prior: give --loss advantage too" in err, err
    assert not out.exists()
