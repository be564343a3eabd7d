"""The learning curve of a run: its evaluations as ``evaluations.csv`` and ``learning_curve.png``.

Every evaluation of the trainer (win rate of the learner against each of ``eval_opponents``, with
its 95% interval over board pairs) is one row: PPO steps, minutes since the run began (warm start
included), bot, win rate, low, high. The
picture has two panels, the win rate against steps and against minutes, one line per bot with
its interval shaded, and the 0.5 line. Both files are written atomically, next to the run's
tensorboard logs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from agents.shared.atomic_file import write_bytes

CSV_NAME = "evaluations.csv"
PNG_NAME = "learning_curve.png"
COLUMNS = ("steps", "minutes", "bot", "win_rate", "low", "high")

Evaluation = tuple[int, float, str, float, float, float]


def write(run_dir: Path, evaluations: Sequence[Evaluation]) -> None:
    write_csv(run_dir / CSV_NAME, COLUMNS, evaluations)
    write_bytes(run_dir / PNG_NAME, picture(evaluations, f"{run_dir.name}: duplicate evaluation during training"))


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A header and the rows, written whole or not at all."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(columns)
    writer.writerows(rows)
    write_bytes(path, text.getvalue().encode())


def picture(evaluations: Sequence[Evaluation], title: str, first_axis: str = "PPO steps") -> bytes:
    """Two panels, win rate against ``first_axis`` (each row's first item) and against minutes (its second)."""
    from matplotlib.figure import Figure  # a Figure draws to a file with no backend: a notebook's stays as it was

    figure = Figure(figsize=(10, 4), dpi=100)
    axes = figure.subplots(1, 2, sharey=True)
    bots = sorted({row[2] for row in evaluations})
    for ax, column, label in ((axes[0], 0, first_axis), (axes[1], 1, "minutes since the run began")):
        for bot in bots:
            rows = [row for row in evaluations if row[2] == bot]
            x = [row[column] for row in rows]
            line = ax.plot(x, [row[3] for row in rows], marker="o", markersize=3, label=f"vs {bot}")[0]
            ax.fill_between(x, [row[4] for row in rows], [row[5] for row in rows], alpha=0.2, color=line.get_color())
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("match win rate (95% interval)")
    axes[0].set_ylim(0, 1)
    axes[0].legend(loc="lower right")
    figure.suptitle(title)
    out = io.BytesIO()
    figure.savefig(out, format="png", bbox_inches="tight")
    return out.getvalue()
