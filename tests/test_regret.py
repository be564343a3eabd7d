"""python -m eval.regret: regrets on searched decision sets, the shipped sets, and refusals of bad sets."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import agents
from agents.base import SeededBot, legal_actions, register
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from allfours_env import N_ACTIONS, STAND
from eval import regret
from eval.regret import SHIPPED_SETS, DecisionSet, bot_actions, load_set, main, report, write_set


class Lowest(SeededBot):
    name = "lowest"

    def act(self, observation) -> int:
        return int(legal_actions(observation)[0])


register("test_lowest", Lowest)


def synthetic_set(tmp_path, n: int = 40):
    """Decisions with a choice from random play, the lowest legal action valued best."""
    rng = np.random.default_rng(0)
    observations, masks = [], []
    while len(masks) < n:
        game = Game(rng=rng)
        while not game.is_over and len(masks) < n:
            observation, mask = encode_with_mask(game, game.current)
            if mask.sum() > 1:
                observations.append(observation)
                masks.append(mask.astype(bool))
            game.step(int(rng.choice(np.flatnonzero(mask))))
    masks = np.array(masks)
    values = np.where(masks, rng.uniform(0.2, 0.6, masks.shape), np.nan)
    values[np.arange(n), masks.argmax(axis=1)] = 0.9  # the lowest legal action
    path = tmp_path / "set.npz"
    write_set(path, np.array(observations), masks, values, {"made": "by the test"})
    return path, values


def test_regret_is_zero_for_the_best_action_and_the_gap_otherwise(tmp_path):
    path, values = synthetic_set(tmp_path)
    decisions = load_set(str(path))
    actions, _ = bot_actions("test_lowest", decisions, seed=0)
    assert np.all(decisions.regrets(actions) == 0)
    highest = decisions.masks.shape[1] - 1 - decisions.masks[:, ::-1].argmax(axis=1)
    assert np.allclose(decisions.regrets(highest), 0.9 - values[np.arange(len(highest)), highest], atol=1e-6)
    text = report(["test_lowest", "random"], [decisions], seed=0)
    assert "test_lowest" in text and "random" in text and "next better" in text


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.pop("values"), "a decision set holds"),
        (lambda a: a["action_mask"].__setitem__((0, slice(None)), False), "fewer than two legal"),
        (lambda a: a["values"].__setitem__((0, np.flatnonzero(a["action_mask"][0])[0]), 1.5), "not a chance"),
        (lambda a: a["values"].__setitem__((0, np.flatnonzero(~a["action_mask"][0])[0]), 0.5), "NaN expected"),
        (lambda a: a.__setitem__("observation", a["observation"].astype(np.float64)), "observation must be float32"),
    ],
)
def test_bad_sets_are_refused_in_one_line(tmp_path, capsys, change, message):
    path, _ = synthetic_set(tmp_path, n=8)
    with np.load(path) as data:
        arrays = {key: data[key].copy() for key in data.files}
    change(arrays)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match=message):
        load_set(str(bad))
    with pytest.raises(SystemExit) as stop:
        main(["random", "--set", str(bad)])
    error = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(error) == 2 and message in error[1]  # (usage, then the one line)


def test_the_command_runs_and_refuses_the_oracle_and_missing_sets(tmp_path, capsys):
    path, _ = synthetic_set(tmp_path, n=8)
    run = subprocess.run([sys.executable, "-m", "eval.regret", "random", "expert", "--set", str(path)],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0 and "set.npz" not in run.stderr and "expert" in run.stdout, run.stderr
    with pytest.raises(SystemExit):
        main(["oracle", "--set", str(path)])
    assert "sees every hand" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["random", "--set", str(tmp_path / "none.npz")])
    assert "none.npz" in capsys.readouterr().err


@pytest.mark.parametrize("name", SHIPPED_SETS)
def test_shipped_sets_load_and_hold_bids_and_cards(name):
    decisions = load_set(name)
    assert isinstance(decisions, DecisionSet) and len(decisions.masks) == 1000
    assert 0 < decisions.bids.sum() < len(decisions.bids)
    assert decisions.settings["margin"] == 0 and decisions.settings["worlds"] == 512


def test_shipped_sets_rank_the_hand_written_bots_and_decide_rule_based_against_expert():
    sets = [load_set(name) for name in SHIPPED_SETS]
    regret = {
        spec: np.concatenate([decisions.regrets(bot_actions(spec, decisions, seed=0)[0]) for decisions in sets])
        for spec in ("random", "rule_based", "expert")
    }
    assert regret["random"].mean() > regret["rule_based"].mean() > regret["expert"].mean()
    difference = regret["rule_based"] - regret["expert"]  # paired: the same 2,000 decisions
    assert difference.mean() - 1.96 * difference.std(ddof=1) / np.sqrt(len(difference)) > 0


def test_the_written_out_action_constants_are_the_envs():
    assert (regret.N_ACTIONS, regret.FIRST_BID) == (N_ACTIONS, STAND)
