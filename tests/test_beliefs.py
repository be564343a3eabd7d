"""Beliefs about the hidden cards (agents/beliefs.py) and their fit (train/beliefs.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.beliefs import (
    INPUT_SIZE,
    N_HOLDERS,
    BeliefError,
    BeliefNet,
    SampledBeliefs,
    holder_mask,
    inputs,
    quality,
    trump_cards,
)
from allfours_env.cards import N_CARDS
from train.beliefs import main, record


@pytest.fixture(scope="module")
def played():
    return record(600, seed=3)


def test_the_true_holder_is_always_one_the_observation_allows(played):
    observations, positions, truth = played
    masks = np.stack([holder_mask(p) for p in positions])
    hidden = truth >= 0
    assert hidden.sum() > 10_000
    assert np.take_along_axis(masks, np.maximum(truth, 0)[..., None], axis=2)[..., 0][hidden].all()
    assert not masks[~hidden].any()  # a card the seat has seen has no holder to guess


def test_sampled_beliefs_are_distributions_over_the_allowed_holders(played):
    observations, positions, truth = played
    probs = SampledBeliefs(worlds=64, seed=0).probs(observations, positions)
    hidden = truth >= 0
    np.testing.assert_allclose(probs.sum(axis=2)[hidden], 1.0, atol=1e-9)
    assert (probs[~hidden] == 0).all()
    assert (probs[~np.stack([holder_mask(p) for p in positions])] == 0).all()


def test_a_network_that_corrects_nothing_gives_the_prior_exactly(played, tmp_path):
    observations, positions, truth = played
    prior = SampledBeliefs(worlds=64, seed=1).probs(observations, positions)
    rng = np.random.default_rng(0)
    weights = {
        "w0": rng.normal(size=(INPUT_SIZE, 16)).astype(np.float32), "b0": np.zeros(16, np.float32),
        "w1": np.zeros((16, N_CARDS * N_HOLDERS), np.float32), "b1": np.zeros(N_CARDS * N_HOLDERS, np.float32),
    }  # fmt: skip
    BeliefNet(weights).save(tmp_path / "b.npz")
    net = BeliefNet.from_file(tmp_path / "b.npz")
    np.testing.assert_allclose(net.probs(observations, positions, prior), prior, rtol=1e-6, atol=1e-12)
    assert inputs(observations, positions, prior).shape == (len(positions), INPUT_SIZE)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w.pop("b1"), "holds w0, b0, w1, b1"),
        (lambda w: w.update(w0=w["w0"][:5]), "its input is"),
        (lambda w: w["w1"].__setitem__((0, 0), np.nan), "not finite"),
        (lambda w: w.update(w1=w["w1"][:, :7], b1=w["b1"][:7]), "not 208"),
    ],
)
def test_a_damaged_belief_file_is_refused(change, message, tmp_path):
    weights = {
        "w0": np.zeros((INPUT_SIZE, 4), np.float32), "b0": np.zeros(4, np.float32),
        "w1": np.zeros((4, N_CARDS * N_HOLDERS), np.float32), "b1": np.zeros(N_CARDS * N_HOLDERS, np.float32),
    }  # fmt: skip
    change(weights)
    np.savez(tmp_path / "bad.npz", **weights)
    with pytest.raises(BeliefError, match=message):
        BeliefNet.from_file(tmp_path / "bad.npz")


def test_quality_scores_a_sure_and_a_wrong_guess(played):
    observations, positions, truth = played
    sure = np.zeros((len(truth), N_CARDS, N_HOLDERS))
    np.put_along_axis(sure, np.maximum(truth, 0)[..., None], 1.0, axis=2)
    trumps = trump_cards(positions, observations)
    assert quality(sure, truth, trumps)["log_likelihood"] == 0.0 and quality(sure, truth, trumps)["top1"] == 1.0
    wrong = np.roll(sure, 1, axis=2)
    assert quality(wrong, truth, trumps)["top1"] == 0.0
    no_trumps = quality(sure, truth, np.zeros_like(trumps))  # none hidden: no figure, and JSON that reads back
    assert no_trumps["top1_trumps"] is None and json.loads(json.dumps(no_trumps, allow_nan=False)) == no_trumps


def test_the_fit_runs_end_to_end(tmp_path, capsys):
    assert main(["--train", "3000", "--test", "300", "--epochs", "1", "--hidden", "32", "--worlds", "16",
                 "--out", str(tmp_path / "b.npz")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert '"sampled"' in out and '"network"' in out
    assert BeliefNet.from_file(tmp_path / "b.npz").layers == 2


@pytest.mark.parametrize("command", ["train.beliefs"])
def test_the_fit_commands_check_out_first_and_end_on_a_stop_with_one_line(tmp_path, capsys, monkeypatch, command):
    import importlib

    module = importlib.import_module(command)
    for out, message in ((tmp_path / "no" / "b.npz", "does not exist"), (tmp_path / "b.txt", "an .npz file")):
        with pytest.raises(SystemExit) as exit_info:
            module.main(["--out", str(out)])  # refused before any play is recorded
        assert exit_info.value.code == 2 and message in capsys.readouterr().err

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "record", stopped)
    assert module.main(["--out", str(tmp_path / "b.npz")]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [f"python -m {command}: interrupted; nothing was written"]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "command, argv, message",
    [
        ("train.beliefs", ["--train", "0"], "--train: must be in 10.."),
        ("train.beliefs", ["--test", "0"], "--test: must be in 1.."),
        ("train.beliefs", ["--hidden", "512", "-3"], "--hidden: must be in 1.."),
        ("train.beliefs", ["--worlds", "0"], "--worlds: must be in 1.."),
    ],
)
def test_the_fit_commands_refuse_counts_out_of_range_before_any_work(tmp_path, capsys, command, argv, message):
    import importlib

    with pytest.raises(SystemExit) as exit_info:
        importlib.import_module(command).main([*argv, "--out", str(tmp_path / "b.npz")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["train.beliefs"])
def test_the_fit_commands_check_the_networks_memory_before_any_work(tmp_path, capsys, monkeypatch, command):
    """Issue 57, item 10: ``--hidden 65536 65536`` was accepted, and failed with a traceback once
    the play was recorded; now it is refused first, as ``train`` refuses a network it cannot hold."""
    import importlib
    import os

    module = importlib.import_module(command)

    def recorded(*args, **kwargs):
        raise AssertionError("the play was recorded before the network's size was checked")

    monkeypatch.setattr(module, "record", recorded)
    monkeypatch.setattr(os, "sysconf", lambda name: 4096 if name == "SC_PAGE_SIZE" else 2**22)  # a 16 GB machine
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--hidden", "65536", "65536", "--out", str(tmp_path / "b.npz")])
    lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith(("usage:", " "))]
    assert exit_info.value.code == 2 and len(lines) == 1, lines
    assert "--hidden needs about" in lines[0] and "of memory and the machine has 16.0 GB" in lines[0], lines
    assert "(the network (--hidden 65536 65536) with its gradients and Adam's moments: 65." in lines[0], lines
    assert not list(tmp_path.iterdir())
