"""The benchmark scripts refuse bad input in one line (exit 2) before any work, and end on a stop
with one line (agents/shared/options.run_script)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.shared.options import run_script

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize(
    "script, argv, message",
    [
        ("vector_speed.py", ["--seconds", "0"], "argument --seconds: must be in 0.01..86400, got 0"),  # (was 1/0)
        ("speed.py", ["--baseline", "/no/such/checkout"], "/no/such/checkout is not a checkout of this project"),
        ("search_speed.py", ["--matches", "0"], "argument --matches: must be in 1..10,000, got 0"),
        ("search_speed.py", ["--spec", "nobot"], "--spec 'nobot': unknown bot 'nobot'"),
        ("regret_ceiling.py", ["--rollout", "nosuch"], "search option rollout must be one of"),
        ("label_noise.py", ["/no/such/labels"], "/no/such/labels is not a label set"),
        ("review_bots.py", ["/no/such/review.json"], "No such file or directory"),
        ("deep_monte_carlo.py", ["--out", "/no/such/run", "--resume"], "--resume: /no/such/run holds no q.npz"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(script, argv, message):
    command = [sys.executable, str(BENCHMARKS / script), *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr.strip().splitlines()[-1], done.stderr
    assert "Traceback" not in done.stderr


def test_a_stop_ends_a_script_with_one_line(capsys):
    def stopped() -> None:
        raise KeyboardInterrupt

    assert run_script(stopped, "benchmarks/x.py") == 130
    assert capsys.readouterr().err.strip() == "benchmarks/x.py: interrupted"
    assert run_script(lambda: None, "benchmarks/x.py") == 0 and run_script(lambda: 3, "benchmarks/x.py") == 3
