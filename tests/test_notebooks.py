"""The notebooks in notebooks/ run top to bottom with small budgets, and are stored without outputs.

Each notebook is executed by a Jupyter kernel running this very Python (so it sees the packages
of the environment pytest runs in), with the working directory set to notebooks/ as Jupyter
does, ``ALLFOURS_NOTEBOOK_SMALL=1`` (the notebooks' budget knobs shrink) and
``ALLFOURS_NOTEBOOK_RUNS`` pointing at a temporary folder (training writes there, not into the repo).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds per cell; the slowest cell with small budgets (training) takes ~15 s
KERNEL_NAME = "allfours-test-python"
NEEDS_TRAINING = {"02_train_and_evaluate.ipynb"}


def test_the_three_notebooks_are_there():
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_train_and_evaluate.ipynb",
        "03_bot_analysis.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    stale = [
        i for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not stale, f"{path.name}: code cells {stale} carry outputs; clear them before committing"


def test_notebook_02_describes_the_config_it_runs():
    """Its text names the bots the quick config imitates and plays against, and its sizes (it once named others)."""
    from agents import known_bots
    from train.config import CONFIG_DIR, load_config

    config = load_config(CONFIG_DIR / "quick.yaml")
    nb = nbformat.read(NOTEBOOK_DIR / "02_train_and_evaluate.ipynb", as_version=4)
    text = next(cell.source for cell in nb.cells if cell.source.startswith("## The config"))
    named = set(re.findall(r"`(\w+)`", text)) & set(known_bots())
    assert named == ({config.imitate} | set(config.opponents)) & set(known_bots())
    sizes = [config.imitation_steps, *config.distil_labels, config.step_labels, config.student_pull_steps]
    assert all(f"{size:,}" in text for size in sizes), sizes


def kernel_manager(tmp_path: Path) -> KernelManager:
    """A kernel started with ``sys.executable``, whatever kernelspecs the user has installed."""
    spec_dir = tmp_path / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "allfours tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_with_small_budgets(path, tmp_path, monkeypatch):
    if path.name in NEEDS_TRAINING:
        pytest.importorskip("sb3_contrib")
    monkeypatch.setenv("ALLFOURS_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("ALLFOURS_NOTEBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # The kernel imports this checkout's packages, not another copy installed in the environment.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(NOTEBOOK_DIR.parent), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        km=kernel_manager(tmp_path),
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    # Raises CellExecutionError, with the cell and its traceback, if a cell fails; then stops the kernel.
    client.execute(cleanup_kc=True)
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert not errors
    # Every plot is shown: nothing the notebook runs (training, evaluation) switched its backend.
    plots = [cell for cell in nb.cells if cell.cell_type == "code" and "plt.show()" in cell.source]
    blank = [i for i, cell in enumerate(plots) if not any("image/png" in o.get("data", {}) for o in cell.outputs)]
    assert plots and not blank, f"{path.name}: plot cells {blank} (of {len(plots)}) show no image"
