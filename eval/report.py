"""Show and save a :class:`TournamentResult`: terminal tables, JSON, CSV and a cross-table PNG.

The files are written all or nothing: first, each into a temporary folder inside the output
folder; only when every one is complete are they renamed onto their names (a rename needs no
space), and a ``ratings.csv`` left by an earlier run that this one does not write is removed. A
write that fails (a full disk) leaves the output folder as it was, so a reader never sees a
half-written file nor a mix of two runs' files.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from agents.shared.regular_file import check_target
from allfours_env.engine import AWARD_KINDS

from .boards import EVAL_NAMESPACE
from .results import BotStats, PairResult, TournamentResult

JSON_NAME = "results.json"
PAIRS_CSV_NAME = "pairs.csv"
BOTS_CSV_NAME = "bots.csv"
RATINGS_CSV_NAME = "ratings.csv"
PLOT_NAME = "crosstable.png"
RESULT_NAMES = (JSON_NAME, PAIRS_CSV_NAME, BOTS_CSV_NAME, RATINGS_CSV_NAME, PLOT_NAME)
FILE_MODE = 0o644
ALL_OPPONENTS = "all"  # opponent column of a bot's totals over all its pairs in bots.csv
AWARD_HEADERS = {
    "kick": "kick",
    "give_one": "give1",
    "high": "high",
    "low": "low",
    "jack": "jack",
    "hang_jack": "hang",
    "game": "game",
}
PLOT_CELL_INCHES = 1.1
PLOT_MARGIN_INCHES = 2.5
PLOT_DPI = 120
COLUMN_GAP = "  "


# ---------------------------------------------------------------- terminal


def _num(x: float, fmt: str) -> str:
    return "-" if math.isnan(x) else format(x, fmt)


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def _interval(ci: tuple[float, float], fmt: str) -> str:
    return f"[{_num(ci[0], fmt)}, {_num(ci[1], fmt)}]"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Columns padded to their widest cell; the first ``left`` columns left-aligned, others right."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return COLUMN_GAP.join(
            str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


def _bot_row(name: str, stats: BotStats) -> list[str]:
    shares = stats.award_shares
    return [
        name,
        *(_pct(shares[k]) for k in AWARD_KINDS),
        _pct(stats.beg_rate),
        _pct(stats.give_one_rate),
        _pct(stats.run_rate),
        _num(stats.ms_per_decision, ".2f"),
    ]


def format_report(result: TournamentResult) -> str:
    """The readable terminal report: pairs, per-bot stats, and with 3+ bots cross-table and ratings."""
    first = result.pairs[0]
    unit = "deals" if first.episode == "deal" else "matches"
    tie = ", a tied deal 0.5" if first.episode == "deal" else ""
    rules = ", ".join(f"{k}={v}" for k, v in result.rules.items()) or "defaults"
    last_board = first.first_board + first.boards - 1
    boards = f"boards {first.first_board}..{last_board} ({first.boards} board pairs, {first.matches} {unit} per pair)"
    if result.partial:
        played = ", ".join(f"{p.bot_a}-{p.bot_b} {p.boards}" for p in result.pairs)
        boards = f"PARTIAL (interrupted): board pairs played of {result.boards_planned} per pair: {played}"
    out = [
        f"Duplicate evaluation of {unit}: {boards}; rules: {rules}",
        f"win rate: mean board-pair score of A (1 = A won both {unit}, 0.5 = split, 0 = B won both{tie}),"
        " 95% interval over board pairs; pts/deal: A's points minus B's per deal, 95% interval over board pairs",
        "",
        format_table(
            ["A", "B", "win rate", "95% CI", "won/split/lost", "pts/deal", "95% CI"],
            [
                [
                    p.bot_a,
                    p.bot_b,
                    f"{p.win_rate:.3f}",
                    _interval(p.win_rate_ci, ".3f"),
                    f"{p.wins}/{p.splits}/{p.losses}",
                    _num(p.point_diff_per_deal, "+.3f"),
                    _interval(p.point_diff_ci, "+.3f"),
                ]
                for p in result.pairs
            ],
            left=2,
        ),
        "",
        "Per bot over all its pairs: share of each award's points won by its team (kick .. game);"
        " how often it begged (as beggar), gave one and ran (as dealer, when begged); ms a decision (time in act)",
        format_table(
            ["bot", *AWARD_HEADERS.values(), "begged", "gave", "ran", "ms"],
            [_bot_row(name, stats) for name, stats in result.bot_stats().items()],
        ),
    ]
    if result.ratings is not None:
        table = result.cross_table
        out += [
            "",
            "Cross-table: win rate of the row bot against the column bot",
            format_table(
                ["", *result.bots],
                [[name, *(_num(x, ".3f") for x in row)] for name, row in zip(result.bots, table)],
            ),
            "",
            "Bradley-Terry ratings (Elo scale, mean 0) with 95% bootstrap intervals",
            format_table(
                ["bot", "Elo", "95% CI"],
                [
                    [r.bot, f"{r.elo:+.0f}", _interval(r.ci, "+.0f")]
                    for r in sorted(result.ratings, key=lambda r: -r.elo)
                ],
            ),
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- files


def _write(path: Path, write: Callable[[IO[Any]], None], binary: bool = False) -> None:
    """Write through ``write(file)`` to ``path``."""
    with open(path, "wb" if binary else "w", **({} if binary else {"newline": "", "encoding": "utf-8"})) as f:
        write(f)
    os.chmod(path, FILE_MODE)


def _json_ready(value: Any) -> Any:
    """NaN (undefined rates and intervals) becomes null; tuples become lists."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def to_json(result: TournamentResult) -> dict[str, Any]:
    """The whole result as a JSON-ready dict (per-board scores left out)."""
    first = result.pairs[0]
    return _json_ready(
        {
            "partial": result.partial,  # an interrupted evaluation: each pair's "boards" says how many it played
            "config": {
                "bots": list(result.bots),
                "boards": result.boards_planned if result.partial else first.boards,
                "first_board": first.first_board,
                "episode": first.episode,
                "rules": result.rules,
                "eval_namespace": EVAL_NAMESPACE,
            },
            "pairs": [p.to_dict() for p in result.pairs],
            "bots": {name: stats.to_dict() for name, stats in result.bot_stats().items()},
            "cross_table": {"bots": list(result.bots), "win_rate": result.cross_table},
            "ratings": None
            if result.ratings is None
            else [{"bot": r.bot, "elo": r.elo, "ci": list(r.ci)} for r in result.ratings],
        }
    )


def _csv_writer(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Callable[[IO[str]], None]:
    def write(f: IO[str]) -> None:
        w = csv.writer(f)
        w.writerow(headers)
        w.writerows([["" if isinstance(x, float) and math.isnan(x) else x for x in row] for row in rows])

    return write


def _pair_row(p: PairResult) -> list[Any]:
    return [
        p.bot_a, p.bot_b, p.boards, p.first_board, p.episode, p.wins, p.splits, p.losses,
        p.win_rate, *p.win_rate_ci, p.point_diff_per_deal, *p.point_diff_ci, p.matches, p.deals,
    ]  # fmt: skip


PAIR_HEADERS = [
    "bot_a", "bot_b", "boards", "first_board", "episode", "wins", "splits", "losses",
    "win_rate", "win_rate_low", "win_rate_high", "point_diff_per_deal", "point_diff_low", "point_diff_high",
    "matches", "deals",
]  # fmt: skip
BOT_HEADERS = [
    "bot", "opponent", *(f"share_{k}" for k in AWARD_KINDS), "beg_rate", "give_one_rate", "run_rate",
    *(f"points_{k}" for k in AWARD_KINDS), *(f"total_{k}" for k in AWARD_KINDS),
    "stands", "begs", "give_ones", "runs", "ms_per_decision",
]  # fmt: skip


def _stats_row(name: str, opponent: str, s: BotStats) -> list[Any]:
    shares = s.award_shares
    return [
        name, opponent, *(shares[k] for k in AWARD_KINDS), s.beg_rate, s.give_one_rate, s.run_rate,
        *(s.award_points[k] for k in AWARD_KINDS), *(s.award_totals[k] for k in AWARD_KINDS),
        *s.decisions.values(), s.ms_per_decision,
    ]  # fmt: skip


def _plot_writer(result: TournamentResult) -> Callable[[IO[bytes]], None]:
    def write(f: IO[bytes]) -> None:
        import numpy as np
        from matplotlib.figure import Figure  # no pyplot, no backend: a notebook's stays as it was

        table = np.array(result.cross_table, dtype=float)
        k = len(result.bots)
        size = PLOT_MARGIN_INCHES + PLOT_CELL_INCHES * k
        fig = Figure(figsize=(size, size * 0.85))
        ax = fig.subplots()
        image = ax.imshow(np.ma.masked_invalid(table), cmap="RdBu", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(k), result.bots, rotation=30, ha="right")
        ax.set_yticks(range(k), result.bots)
        ax.set_xlabel("opponent")
        for i in range(k):
            for j in range(k):
                text = "—" if i == j else f"{table[i, j]:.3f}"
                ax.text(j, i, text, ha="center", va="center", color="black")
        first = result.pairs[0]
        ax.set_title(f"Win rate of row bot vs column bot\n{first.boards} duplicate board pairs per pair")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        # "tight": the picture grows to hold every label, however long a bot's spec is
        fig.savefig(f, format="png", dpi=PLOT_DPI, bbox_inches="tight")

    return write


def write_outputs(result: TournamentResult, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write results.json, pairs.csv, bots.csv, ratings.csv (3+ bots) and crosstable.png to
    ``out_dir``, all or nothing (module docstring); an OSError leaves ``out_dir`` as it was."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stats = result.bot_stats()
    bot_rows = [
        row
        for p in result.pairs
        for row in (_stats_row(p.bot_a, p.bot_b, p.stats_a), _stats_row(p.bot_b, p.bot_a, p.stats_b))
    ] + [_stats_row(name, ALL_OPPONENTS, s) for name, s in stats.items()]
    files: dict[str, Callable[[IO[Any]], None]] = {
        JSON_NAME: lambda f: f.write(json.dumps(to_json(result), indent=2, allow_nan=False) + "\n"),
        PAIRS_CSV_NAME: _csv_writer(PAIR_HEADERS, [_pair_row(p) for p in result.pairs]),
        BOTS_CSV_NAME: _csv_writer(BOT_HEADERS, bot_rows),
        PLOT_NAME: _plot_writer(result),
    }
    if result.ratings is not None:
        rating_rows = [[r.bot, r.elo, *r.ci] for r in result.ratings]
        files[RATINGS_CSV_NAME] = _csv_writer(["bot", "elo", "elo_low", "elo_high"], rating_rows)
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=".eval-"))
    try:
        for name, write in files.items():
            _write(staging / name, write, binary=name == PLOT_NAME)
        for name in RESULT_NAMES:  # a link, FIFO or device there is refused, not replaced
            check_target(folder / name)
        for stale in set(RESULT_NAMES) - set(files):  # another run's file would mix with these
            (folder / stale).unlink(missing_ok=True)
        for name in files:
            os.replace(staging / name, folder / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [folder / name for name in files]
