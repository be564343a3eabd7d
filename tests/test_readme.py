"""Every Python block of the README runs as written, each alone in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
BLOCK_SECONDS = 300  # the longest, a MaskablePPO rollout and update, takes about 15 s (90 s on busy cores)


def test_the_readme_has_its_blocks():
    assert len(BLOCKS) >= 6


def test_a_block_that_trains_pins_torch_to_one_thread():
    """On busy cores torch's default threads made the MaskablePPO block take 132 s instead of 8 s."""
    training = [code for code in BLOCKS if "MaskablePPO(" in code]
    assert training and all("torch.set_num_threads(1)" in code for code in training)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_readme_block_runs_as_written(code, tmp_path):
    if "sb3_contrib" in code:
        pytest.importorskip("sb3_contrib")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BLOCK_SECONDS
    )
    assert done.returncode == 0, f"this README block fails:\n{code}\n{done.stderr[-3000:]}"
