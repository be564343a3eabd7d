"""Search-labelled decisions on disk: the data set that expert iteration fits its student to.

A label set is a folder::

    labels.json        what was labelled and how: the format, the search settings, the player
                       whose play reached the positions, the rules, the seed, the shard size
    shard_00000.npz    SHARD_ROWS decisions each (the last one may hold fewer), numbered from 0
    shard_00001.npz    ...

Every shard is a plain ``.npz`` (read with :func:`agents.npz_file.read_npz`: no pickle) of the
columns in :data:`COLUMNS`, one row per decision:

============== ================ ===========================================================
column         dtype, shape     meaning
============== ================ ===========================================================
observation    float32 (n, 986) what the seat to act observed (``env.observe``; the layout of
                                ``allfours_env.observation.LAYOUT``)
action_mask    bool (n, 56)     its legal actions (at least two: decisions without a choice
                                are not labelled)
values         float32 (n, 56)  the searched value of each legal action: the mean over the
                                worlds of the chance to win the match after it (0..1); NaN
                                where the action is illegal (over ``worlds`` worlds, or
                                ``confirm`` where those left the expert's choice)
search_action  int16 (n,)       what ``search`` played there (the best value, but the
                                expert's choice kept unless the best beats it by the margin)
player_action  int16 (n,)       what the player whose play reached the position chose
search_seed    uint64 (n,)      the seed the search bot was reset with for this decision:
                                ``SearchBot(worlds, ms=0, margin, confirm)`` reset with it and shown the
                                observation chooses ``search_action`` with exactly ``values``
============== ================ ===========================================================

Any policy input of the project is a function of ``observation`` and ``action_mask``
(:func:`agents.policy.batch_inputs`), so a label set serves every input layout. A shard is
written whole (a temporary file renamed into place), so a stopped labelling run keeps its
finished shards and goes on from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from agents.atomic_file import atomic_path, write_text
from agents.npz_file import read_npz
from allfours_env import N_ACTIONS
from allfours_env.observation import OBS_SIZE

FORMAT = "allfours-search-labels"
VERSION = 1
META_FILE = "labels.json"
SHARD_FILE = "shard_{:05d}.npz"
COLUMNS = {  # name -> (dtype, shape of one row)
    "observation": (np.float32, (OBS_SIZE,)),
    "action_mask": (np.bool_, (N_ACTIONS,)),
    "values": (np.float32, (N_ACTIONS,)),
    "search_action": (np.int16, ()),
    "player_action": (np.int16, ()),
    "search_seed": (np.uint64, ()),
}
MAX_SHARD_BYTES = 1 << 30  # a shard of 10,000 rows holds about 42 MB


class LabelSetError(ValueError):
    """A label set whose files do not hold what this format says."""


@dataclass(frozen=True)
class LabelSettings:
    """How a label set is made; two runs with equal settings make equal label sets."""

    count: int  # decisions labelled in all
    worlds: int  # worlds searched per decision (search's ``worlds``, with ``ms=0``: all of them)
    margin: float  # search's margin
    rollout: str  # search's rollout policy
    player: str  # the bot (agents.make name or policy file) whose play reaches the positions
    seed: int
    shard_rows: int
    tables: int  # tables of the vector engine the player's matches are played on, per shard
    rules: dict
    confirm: int = 0  # search's confirm: worlds in all before a label leaves the expert's choice (0: off)
    opponents: str = ""  # the bot the player plays against ("": itself at every seat)

    def shards(self) -> int:
        return -(-self.count // self.shard_rows)

    def rows_of(self, shard: int) -> int:
        return min(self.shard_rows, self.count - shard * self.shard_rows)


def write_meta(folder: Path, settings: LabelSettings) -> None:
    """Create ``folder`` with its ``labels.json``, or check that the one there has these settings."""
    path = folder / META_FILE
    if path.exists():
        found = read_meta(folder)
        if found != settings:
            differ = [k for k, v in asdict(settings).items() if asdict(found).get(k) != v]
            raise LabelSetError(
                f"{folder} holds labels made with other settings ({', '.join(differ)} differ): "
                "give another folder, or the same settings to go on with it"
            )
        return
    folder.mkdir(parents=True, exist_ok=True)
    _write_settings(folder, settings)


def move_player(folder: Path, player: str) -> None:
    """Name the player's policy file at its new place (a run folder moved with the file in it)."""
    _write_settings(folder, replace(read_meta(folder), player=player))


def _write_settings(folder: Path, settings: LabelSettings) -> None:
    meta = {"format": FORMAT, "version": VERSION, "settings": asdict(settings)}
    write_text(folder / META_FILE, json.dumps(meta, indent=2))


def read_meta(folder: Path) -> LabelSettings:
    path = Path(folder) / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabelSetError(f"{folder} is not a label set: it has no {META_FILE}") from None
    except (OSError, ValueError) as err:
        raise LabelSetError(f"{path} cannot be read: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise LabelSetError(f"{path} is not a version {VERSION} {FORMAT} file")
    try:
        return LabelSettings(**meta["settings"])
    except (KeyError, TypeError) as err:
        raise LabelSetError(f"{path}: bad settings: {err}") from None


def shard_path(folder: Path, shard: int) -> Path:
    return Path(folder) / SHARD_FILE.format(shard)


def write_shard(folder: Path, shard: int, columns: dict[str, np.ndarray]) -> None:
    """Write one shard whole: it appears complete under its name, or not at all."""
    rows = len(columns["observation"])
    check_columns(columns, rows, f"shard {shard}")
    with atomic_path(shard_path(folder, shard)) as tmp:
        np.savez_compressed(tmp, **columns)


def read_shard(folder: Path, shard: int, rows: int) -> dict[str, np.ndarray]:
    path = shard_path(folder, shard)
    try:
        columns = read_npz(path, MAX_SHARD_BYTES)
    except (OSError, ValueError) as err:
        raise LabelSetError(f"{path}: {err}") from None
    check_columns(columns, rows, str(path))
    return columns


def shards_done(folder: Path, settings: LabelSettings) -> list[int]:
    """The shards already written (whole, since shards are renamed into place)."""
    return [k for k in range(settings.shards()) if shard_path(folder, k).exists()]


def iter_shards(folder: Path) -> Iterator[dict[str, np.ndarray]]:
    """Every shard of a complete label set, in order, each checked."""
    settings = read_meta(folder)
    missing = [k for k in range(settings.shards()) if not shard_path(folder, k).exists()]
    if missing:
        raise LabelSetError(f"{folder} is not complete: {len(missing)} of {settings.shards()} shards missing")
    for k in range(settings.shards()):
        yield read_shard(folder, k, settings.rows_of(k))


def check_columns(columns: dict[str, np.ndarray], rows: int, where: str) -> None:
    """The columns are exactly :data:`COLUMNS`, ``rows`` long, with consistent masks and values."""
    if set(columns) != set(COLUMNS):
        raise LabelSetError(f"{where}: columns {sorted(columns)}, expected {sorted(COLUMNS)}")
    for name, (dtype, shape) in COLUMNS.items():
        column = columns[name]
        if column.dtype != dtype or column.shape != (rows, *shape):
            raise LabelSetError(
                f"{where}: column {name} is {column.dtype} {column.shape}, expected {np.dtype(dtype)} {(rows, *shape)}"
            )
    mask, values = columns["action_mask"], columns["values"]
    legal_values = values[mask]
    if (mask.sum(axis=1) < 2).any() or np.isnan(legal_values).any() or not np.isnan(values[~mask]).all():
        raise LabelSetError(f"{where}: each row needs two legal actions or more, a value for each, NaN elsewhere")
    if ((legal_values < 0) | (legal_values > 1)).any():
        raise LabelSetError(f"{where}: values are chances, 0..1")
    for name in ("search_action", "player_action"):
        action = columns[name].astype(np.int64)
        if ((action < 0) | (action >= N_ACTIONS)).any() or not mask[
            np.arange(rows), action.clip(0, N_ACTIONS - 1)
        ].all():
            raise LabelSetError(f"{where}: {name} holds an action that was not legal")
