"""benchmarks/deep_monte_carlo.py: each decision's target is the rest of its deal's rewards, and a
short run writes a curve a resumed leg goes on from."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent / "benchmarks" / "deep_monte_carlo.py"
spec = importlib.util.spec_from_file_location("deep_monte_carlo", HERE)
dmc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dmc)


def test_a_decision_is_paid_the_rest_of_its_deal_and_nothing_of_the_next():
    deals = dmc.DealReturns(2)
    rows = np.arange(4, dtype=np.float32).reshape(2, 2)
    deals.decided(rows, np.array([5, 6]))  # table 0: decision a; table 1: decision b
    deals.paid_out(np.array([0.1, -0.2]), ended=np.array([False, False]))
    deals.decided(rows + 10, np.array([7, 8]))  # table 0: decision c; table 1: decision d
    deals.paid_out(np.array([0.3, 0.5]), ended=np.array([True, False]))  # table 0's deal ends
    assert deals.actions == [5, 7] and np.allclose(deals.returns, [0.4, 0.3])
    deals.decided(rows + 20, np.array([9, 1]))  # table 0: the next deal's first decision
    deals.paid_out(np.array([1.0, 0.25]), ended=np.array([False, True]))  # table 1's deal ends
    inputs, actions, returns = deals.take()
    assert actions.tolist() == [5, 7, 6, 8, 1]
    assert np.allclose(returns.numpy(), [0.4, 0.3, 0.55, 0.75, 0.25])
    assert inputs[:, 0].tolist() == [0, 10, 2, 12, 22]
    assert deals.returns == [] and len(deals.pending[0]) == 1  # the next deal's decision waits for its end


def test_a_short_run_writes_its_curve_and_a_resumed_leg_goes_on(tmp_path, monkeypatch):
    small = ["--out", str(tmp_path), "--tables", "16", "--batch", "512", "--eval-every", "2000", "--eval-boards", "2"]
    monkeypatch.setattr(sys, "argv", ["x", *small, "--steps", "2000"])
    dmc.main()
    monkeypatch.setattr(sys, "argv", ["x", *small, "--steps", "4000", "--resume"])
    dmc.main()
    with open(tmp_path / "curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["steps"]) for r in rows] == [0] * 3 + [2000] * 3 + [4000] * 3
    assert [r["opponent"] for r in rows[:3]] == list(dmc.CURVE_BOTS)
    assert float(rows[-1]["minutes"]) > float(rows[3]["minutes"]) and float(rows[-1]["cpu_seconds"]) > 0
    assert (tmp_path / "policy.npz").exists() and (tmp_path / "q.npz").exists()
