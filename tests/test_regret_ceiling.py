"""benchmarks/regret_ceiling.py: regrets are what each choice loses against the precise search's best."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent / "benchmarks" / "regret_ceiling.py"
spec = importlib.util.spec_from_file_location("regret_ceiling", HERE)
regret_ceiling = importlib.util.module_from_spec(spec)
spec.loader.exec_module(regret_ceiling)


def test_random_play_gives_away_more_than_expert_play_and_no_regret_is_negative():
    found = regret_ceiling.match_regrets("random", ["expert"], 32, "expert", seed=3)
    assert set(found) == {"random", "expert", regret_ceiling.PRECISE}
    phases = {name: [phase for phase, _ in rows] for name, rows in found.items()}
    assert phases["random"] == phases["expert"] == phases[regret_ceiling.PRECISE]  # one row each, same decisions
    assert set(phases["random"]) == {0, 1} and len(phases["random"]) > 20  # bids and cards, team 0's decisions
    regrets = {name: np.array([r for _, r in rows]) for name, rows in found.items()}
    assert all((r >= 0).all() for r in regrets.values())
    assert regrets["random"].sum() > 2 * regrets["expert"].sum() > 0  # (0.75 and 0.28 here)
