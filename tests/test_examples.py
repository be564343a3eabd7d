"""The bring-your-own-algorithm examples run end to end in a tiny setting: the CleanRL-style
masked PPO (its policy file loads and plays) and MaskablePPO through the thin SB3 adapter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import agents
from allfours_env import Game
from allfours_env.match import Match

ROOT = Path(__file__).resolve().parent.parent


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args], cwd=ROOT, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_cleanrl_style_masked_ppo_trains_exports_and_evaluates(tmp_path):
    out = tmp_path / "policy.npz"
    text = run("ppo_masked.py", "--total-steps", "4096", "--n-envs", "16", "--n-steps", "32",
               "--eval-boards", "4", "--out", str(out))  # fmt: skip
    assert re.search(r"step 4,096  [\d,]+ steps/s  episodes against rule_based: ", text), text
    for opponent in ("random", "rule_based"):
        assert re.search(rf"against {opponent}: match win rate [01]\.\d{{3}} \[", text), text
    bots = [agents.make(str(out)), agents.make("random")] * 2
    match = Match(Game(rng=np.random.default_rng(0)), bots)
    match.run()  # an illegal move would raise
    assert match.over


def test_maskable_ppo_through_the_sb3_adapter(tmp_path):
    out = tmp_path / "maskable.npz"
    text = run("sb3_maskable_ppo.py", "--total-steps", "2048", "--num-envs", "16", "--eval-boards", "4", "--out", str(out))
    assert re.search(r"against rule_based: match win rate [01]\.\d{3} \[", text), text
    game = Game(rng=np.random.default_rng(0))
    observation = Match(game, [None] * 4).observe(game.current)
    assert observation["action_mask"][agents.make(str(out)).act(observation)]  # the written policy plays
