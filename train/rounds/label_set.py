"""Search-labelled decisions on disk: the data set that expert iteration fits its student to.

A label set is a folder::

    labels.json        what was labelled and how: the format, the search settings, the player
                       whose play reached the positions, the rules, the seed, the shard size
    shard_00000.npz    SHARD_ROWS decisions each (the last one may hold fewer), numbered from 0
    shard_00001.npz    ...
    shard_00002.part1.npz   while a shard is being made: each finished part of it (rows
                       ``part_rows`` x 1 ..., the same columns, uncompressed), written whole;
                       when its last part is done the shard is written and its parts removed

Every shard is a plain ``.npz`` (read with :func:`agents.shared.npz_file.read_npz`: no pickle) of the
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
                                ``confirm`` where those left the kept choice)
search_action  int16 (n,)       what ``search`` played there (the best value, but the kept
                                choice, ``keep``'s, unless the best beats it by the margin)
player_action  int16 (n,)       what the player whose play reached the position chose
search_seed    uint64 (n,)      the seed the search bot was reset with for this decision:
                                the settings' search (:func:`train.rounds.labels.teacher`) reset
                                with it and shown the observation chooses ``search_action``
                                with exactly ``values``
============== ================ ===========================================================

Any policy input of the project is a function of ``observation`` and ``action_mask``
(:func:`agents.policy.batch_inputs`), so a label set serves every input layout. A shard, and
a part of one, is written whole (a temporary file renamed into place), so a stopped labelling
run keeps its finished shards and parts and goes on from them. Part files are transient: a
complete label set holds none, and a part's size is the labelling's choice, not a setting (a
part file of another size reads as damaged and its rows are labelled again).

A label set may come from someone else, so everything read is checked before use
(:class:`LabelSetError` naming the file and what is wrong): ``labels.json``'s settings have
their types and ranges (:class:`LabelSettings`), and every column of a shard (or part) its dtype,
its shape and the values its meaning above allows (:func:`check_columns`), the observations as the
encoder could have written them under the set's rules, since the compiled feature and expert
kernels read them (:func:`observation_problems`). A folder that holds other files and no
``labels.json`` is never written into.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from agents.search import MAX_WORLDS, POLICY_SUFFIXES, ROLLOUTS
from agents.shared.atomic_file import atomic_path, write_text
from agents.shared.npz_file import read_npz
from agents.shared.regular_file import open_regular
from allfours_env import N_ACTIONS
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.observation import LAYOUT, N_FLAGS, OBS_SIZE, rules_block
from allfours_env.rules import Rules
from eval.run_lock import LOCK_FILE

from train.config import MAX_LABELS, MAX_SEED, ConfigError, check_range, check_type
from train.run_folder.state_file import read_json

FORMAT = "allfours-search-labels"
VERSION = 1
META_FILE = "labels.json"
SHARD_FILE = "shard_{:05d}.npz"
PART_FILE = "shard_{:05d}.part{}.npz"  # shard, part (numbered from 0)
COLUMNS = {  # name -> (dtype, shape of one row)
    "observation": (np.float32, (OBS_SIZE,)),
    "action_mask": (np.bool_, (N_ACTIONS,)),
    "values": (np.float32, (N_ACTIONS,)),
    "search_action": (np.int16, ()),
    "player_action": (np.int16, ()),
    "search_seed": (np.uint64, ()),
}
MAX_SHARD_BYTES = 1 << 30  # a shard of 10,000 rows holds about 42 MB
MAX_META_BYTES = 1 << 20  # labels.json: a few hundred bytes
MAX_SHARD_ROWS = 20_000  # a shard's positions are drawn from 4x as many recorded (330 MB of observations)
MAX_TABLES = 1024  # matches a shard's player plays at once (16 give about 2,500 decisions)
SETTING_RANGES = {  # LabelSettings' integers: (lowest, highest)
    "count": (1, MAX_LABELS), "worlds": (1, MAX_WORLDS), "confirm": (0, MAX_WORLDS), "seed": (0, MAX_SEED),
    "shard_rows": (1, MAX_SHARD_ROWS), "tables": (1, MAX_TABLES),
}  # fmt: skip
REMOVED_SETTINGS = {"cut": 0, "infer": ""}  # search options removed in issue 63: older labels.json name them, off


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
    rules: Rules
    confirm: int = 0  # search's confirm: worlds in all before a label leaves the kept choice (0: off)
    opponents: str = ""  # the bot the player plays against ("": itself at every seat)
    keep: str = "expert"  # search's keep: whose choice stands unless beaten by the margin (expert or a policy file)

    def __post_init__(self) -> None:
        """Each setting's type and range (those of search's options too): a LabelSetError naming it."""
        try:
            hints = typing.get_type_hints(LabelSettings)
            for f in fields(self):
                check_type(f.name, getattr(self, f.name), hints[f.name])
            for name, (low, high) in SETTING_RANGES.items():
                check_range(name, getattr(self, name), low, high)
            check_range("margin", self.margin, 0.0, 1.0)
        except ConfigError as err:
            raise LabelSetError(str(err)) from None
        if self.confirm and self.confirm <= self.worlds:
            raise LabelSetError(f"confirm must be 0 (off) or more than worlds ({self.worlds}), got {self.confirm}")
        for name, names in (("rollout", ROLLOUTS), ("keep", ("expert",))):
            value = getattr(self, name)
            if value not in names and not value.endswith(POLICY_SUFFIXES):
                raise LabelSetError(f"{name} must be one of {names} or a policy file (.npz or .zip), got {value!r}")

    def search_options(self) -> dict[str, int | float | str | None]:
        """The labelling search's options (SearchBot's keywords; ``ms=0``, no time budget: each label
        depends on its seed only)."""
        return {
            "worlds": self.worlds, "ms": 0, "margin": self.margin, "confirm": self.confirm, "keep": self.keep,
            "rollout": self.rollout,
        }  # fmt: skip

    def shards(self) -> int:
        return -(-self.count // self.shard_rows)

    def rows_of(self, shard: int) -> int:
        return min(self.shard_rows, self.count - shard * self.shard_rows)


def write_meta(folder: Path, settings: LabelSettings) -> None:
    """Create ``folder`` with its ``labels.json``, or check that the one there has these settings.
    A LabelSetError for a path that is not a folder, or a folder of other files (never written
    into); an OSError if the folder cannot be made or written."""
    folder = Path(folder)
    path = folder / META_FILE
    if folder.exists() and not folder.is_dir():
        raise LabelSetError(f"{folder} is not a folder: give a new folder, or a label set's to go on with it")
    if path.exists() or path.is_symlink():
        found = read_meta(folder)
        if found != settings:
            differ = [k for k, v in asdict(settings).items() if asdict(found).get(k) != v]
            raise LabelSetError(
                f"{folder} holds labels made with other settings ({', '.join(differ)} differ): "
                "give another folder, or the same settings to go on with it"
            )
        return
    if folder.is_dir() and any(p.name != LOCK_FILE for p in folder.iterdir()):  # (train.rounds.labels' lock)
        raise LabelSetError(
            f"{folder} holds other files and no {META_FILE}: it is not a label set, and nothing is written into it; "
            "give a new or empty folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    write_settings(folder, settings)


FILE_SETTINGS = ("player", "keep", "rollout")  # settings that may name a policy file


def write_settings(folder: Path, settings: LabelSettings) -> None:
    """Write ``labels.json``: :func:`write_meta`'s, or over it the same settings but policy files
    (:data:`FILE_SETTINGS`) named at their new places (a run folder moved with the files in it)."""
    meta = {"format": FORMAT, "version": VERSION, "settings": asdict(settings)}
    write_text(folder / META_FILE, json.dumps(meta, indent=2))


def read_meta(folder: Path) -> LabelSettings:
    """The settings of the label set in ``folder``, checked; a LabelSetError naming the file."""
    path = Path(folder) / META_FILE
    try:
        with open_regular(path) as file:
            meta = read_json(file, MAX_META_BYTES)
    except FileNotFoundError:
        raise LabelSetError(f"{folder} is not a label set: it has no {META_FILE}") from None
    except (OSError, ValueError, RecursionError) as err:
        raise LabelSetError(f"{path} cannot be read: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise LabelSetError(f"{path} is not a version {VERSION} {FORMAT} file")
    try:
        settings = dict(meta["settings"])
        for name, off in REMOVED_SETTINGS.items():
            if settings.pop(name, off) != off:
                raise LabelSetError(f"labelled with search's {name} option, which was removed (issue 63)")
        return LabelSettings(**{**settings, "rules": Rules.from_kwargs(**settings["rules"])})
    except (KeyError, TypeError, ValueError) as err:
        raise LabelSetError(f"{path}: bad settings: {err}") from None


def shard_path(folder: Path, shard: int) -> Path:
    return Path(folder) / SHARD_FILE.format(shard)


def write_shard(folder: Path, shard: int, columns: dict[str, np.ndarray], rules: Rules) -> None:
    """Write one shard whole: it appears complete under its name, or not at all (an OSError naming
    the shard if the disk refuses it, the temporary file removed)."""
    check_columns(columns, len(columns["observation"]), rules, f"shard {shard}")
    _write_npz(shard_path(folder, shard), columns, np.savez_compressed)


def _write_npz(path: Path, columns: dict[str, np.ndarray], save: typing.Callable[..., None]) -> None:
    """``save`` the columns to ``path`` whole (an OSError naming the file if the disk refuses it,
    the temporary file removed)."""
    try:
        with atomic_path(path) as tmp:
            save(tmp, **columns)
    except OSError as err:
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None


def read_shard(folder: Path, shard: int, settings: LabelSettings) -> dict[str, np.ndarray]:
    """Shard ``shard`` of the set of ``settings`` in ``folder``, every column checked; a
    LabelSetError naming the file and what is wrong."""
    return _read_columns(shard_path(folder, shard), settings.rows_of(shard), settings)


def _read_columns(path: Path, rows: int, settings: LabelSettings) -> dict[str, np.ndarray]:
    try:
        columns = read_npz(path, MAX_SHARD_BYTES)
    except (OSError, ValueError) as err:
        raise LabelSetError(f"{path}: {err}") from None
    check_columns(columns, rows, settings.rules, str(path))
    return columns


def part_path(folder: Path, shard: int, part: int) -> Path:
    return Path(folder) / PART_FILE.format(shard, part)


def part_rows(settings: LabelSettings, shard: int, part: int, rows: int) -> range:
    """The rows of the shard that its part ``part`` holds, in parts of ``rows`` rows."""
    return range(part * rows, min((part + 1) * rows, settings.rows_of(shard)))


def parts_of(settings: LabelSettings, shard: int, rows: int) -> int:
    """How many parts of ``rows`` rows the shard is made in."""
    return -(-settings.rows_of(shard) // rows)


def write_part(folder: Path, shard: int, part: int, columns: dict[str, np.ndarray], rules: Rules) -> None:
    """Write one part of a shard whole (uncompressed: it lives until the shard is written)."""
    check_columns(columns, len(columns["observation"]), rules, f"shard {shard} part {part}")
    _write_npz(part_path(folder, shard, part), columns, np.savez)


def read_part(folder: Path, shard: int, part: int, rows: int, settings: LabelSettings) -> dict[str, np.ndarray]:
    """Part ``part`` (of ``rows`` rows each) of the shard, every column checked; a LabelSetError
    naming the file and what is wrong."""
    path = part_path(folder, shard, part)
    return _read_columns(path, len(part_rows(settings, shard, part, rows)), settings)


def write_shard_of_parts(
    folder: Path, shard: int, settings: LabelSettings, rows: int, fresh: dict[int, dict[str, np.ndarray]]
) -> None:
    """Write the shard from its parts (``fresh``: those not on disk, by number; the others are
    read from their files), then remove its part files."""
    parts = [
        fresh[p] if p in fresh else read_part(folder, shard, p, rows, settings)
        for p in range(parts_of(settings, shard, rows))
    ]
    columns = {name: np.concatenate([part[name] for part in parts]) for name in COLUMNS}
    write_shard(folder, shard, columns, settings.rules)
    remove_parts(folder, shard)


def remove_parts(folder: Path, shard: int) -> None:
    for path in Path(folder).glob(PART_FILE.format(shard, "*")):
        path.unlink(missing_ok=True)


def parts_done(folder: Path, shard: int, rows: int, settings: LabelSettings) -> tuple[list[int], dict[int, str]]:
    """The parts (of ``rows`` rows each) of an unfinished shard already written: :func:`_intact`."""
    paths = {part: part_path(folder, shard, part) for part in range(parts_of(settings, shard, rows))}
    return _intact(paths, lambda part: read_part(folder, shard, part, rows, settings))


def rows_on_disk(folder: Path, settings: LabelSettings, rows: int) -> int:
    """The labels the folder's shards and parts (of ``rows`` rows each) hold, counted by their
    files (each written whole; not read)."""
    total = 0
    for shard in range(settings.shards()):
        if shard_path(folder, shard).exists():
            total += settings.rows_of(shard)
        else:
            parts = range(parts_of(settings, shard, rows))
            total += sum(len(part_rows(settings, shard, p, rows)) for p in parts if part_path(folder, shard, p).exists())
    return total


def shards_done(folder: Path, settings: LabelSettings) -> tuple[list[int], dict[int, str]]:
    """The shards already written: :func:`_intact` (a shard appears whole, being renamed into place,
    but may have been changed since)."""
    paths = {shard: shard_path(folder, shard) for shard in range(settings.shards())}
    return _intact(paths, lambda shard: read_shard(folder, shard, settings))


def _intact(paths: dict[int, Path], read: typing.Callable[[int], object]) -> tuple[list[int], dict[int, str]]:
    """Of the numbered files ``paths``, those there, each read and checked by ``read``: those
    intact, and why each damaged one is not."""
    done, damaged = [], {}
    for k, path in paths.items():
        if path.exists() or path.is_symlink():
            try:
                read(k)
                done.append(k)
            except LabelSetError as err:
                damaged[k] = str(err)
    return done, damaged


def iter_shards(folder: Path) -> Iterator[dict[str, np.ndarray]]:
    """Every shard of a complete label set, in order, each checked."""
    settings = read_meta(folder)
    check_complete(folder, settings)
    for k in range(settings.shards()):
        yield read_shard(folder, k, settings)


def check_complete(folder: Path, settings: LabelSettings) -> None:
    """A LabelSetError unless every shard of the set is there (each is checked when read)."""
    missing = [k for k in range(settings.shards()) if not shard_path(folder, k).exists()]
    if missing:
        raise LabelSetError(f"{folder} is not complete: {len(missing)} of {settings.shards()} shards missing")


def check_columns(columns: dict[str, np.ndarray], rows: int, rules: Rules, where: str) -> None:
    """The columns are exactly :data:`COLUMNS`, ``rows`` long, with values their meaning allows
    (see the module docstring); a LabelSetError naming the first bad row otherwise."""
    if set(columns) != set(COLUMNS):
        raise LabelSetError(f"{where}: columns {sorted(columns)}, expected {sorted(COLUMNS)}")
    for name, (dtype, shape) in COLUMNS.items():
        column = columns[name]
        if column.dtype != dtype or column.shape != (rows, *shape):
            raise LabelSetError(
                f"{where}: column {name} is {column.dtype} {column.shape}, expected {np.dtype(dtype)} {(rows, *shape)}"
            )
    if (columns["action_mask"].view(np.uint8) > 1).any():  # a bool's byte read from a file may be anything
        raise LabelSetError(f"{where}: action_mask holds bytes other than 0 and 1")
    for problem, bad in _row_problems(columns, rules):
        if bad.any():
            raise LabelSetError(f"{where}: row {int(np.argmax(bad))}: {problem}")


def _row_problems(columns: dict[str, np.ndarray], rules: Rules) -> Iterator[tuple[str, np.ndarray]]:
    """(what is wrong, the rows where it is) for each check of the columns' values, in order."""
    mask, values = columns["action_mask"], columns["values"]
    yield "fewer than two legal actions in action_mask", mask.sum(axis=1) < 2
    yield "values must be NaN on illegal actions", ~np.isnan(values).all(axis=1, where=~mask)
    legal = np.where(mask, values, 0.5)
    yield "values of legal actions must be chances in 0..1", ~((legal >= 0) & (legal <= 1)).all(axis=1)
    for name in ("search_action", "player_action"):
        action = columns[name].astype(np.int64)
        in_range = (action >= 0) & (action < N_ACTIONS)
        legal_action = mask[np.arange(len(action)), action.clip(0, N_ACTIONS - 1)]
        yield f"{name} must be a legal action of the row's action_mask", ~(in_range & legal_action)
    yield from observation_problems(columns["observation"], rules)


def observation_problems(observations: np.ndarray, rules: Rules) -> Iterator[tuple[str, np.ndarray]]:
    """(what is wrong, the rows where it is) for each check of float32 observations (n, OBS_SIZE)
    of a seat to act under ``rules``: what the encoder writes, as far as the compiled kernels
    that read them rely on it (the current trick's seats index their tables)."""
    finite = np.isfinite(observations).all(axis=1)
    yield "observation holds NaN or infinite values", ~finite
    flags = observations[:, :N_FLAGS]
    yield "observation flags (the values before 'scores') must be 0 or 1", ~((flags == 0) | (flags == 1)).all(axis=1)
    for name in ("scores", "game_points"):
        part = observations[:, LAYOUT[name].slice]
        yield f"observation {name} must lie in 0..1", ~((part >= 0) & (part <= 1)).all(axis=1)
    target = observations[:, LAYOUT["target"].offset] == np.float32(1 / rules.target_score)
    block = (observations[:, LAYOUT["rules"].slice] == rules_block(rules)).all(axis=1)
    yield "observation target and rules block must be the label set's rules", ~(target & block)

    def piece(name: str) -> np.ndarray:
        return flags[:, LAYOUT[name].slice] > 0.5

    def count(name: str) -> np.ndarray:
        return piece(name).sum(axis=1)

    yield (
        "observation needs one phase, one dealer and one beggar",
        ((count("phase") != 1) | (count("dealer") != 1) | (count("beggar") != 1)),
    )
    dealer, beggar = piece("dealer").argmax(axis=1), piece("beggar").argmax(axis=1)
    yield "observation's beggar must be the seat after the dealer", beggar != (dealer + 1) % N_SEATS
    yield "observation's partner must be relative seat 2", ~(piece("partner") == (np.arange(N_SEATS) == 2)).all(axis=1)
    yield (
        "observation holds more than one trump, kick or leader",
        ((count("trump") > 1) | (count("kick") > 1) | (count("leader") > 1)),
    )
    table = piece("table").reshape(-1, N_SEATS, N_CARDS)
    played = piece("played").reshape(-1, N_SEATS, N_CARDS)
    yield (
        "observation's current trick has two cards of a seat, or a card not played",
        ((table.sum(axis=2) > 1).any(axis=1) | (table & ~played).any(axis=(1, 2))),
    )
    on_table = table.any(axis=2)
    yield "observation's current trick holds a card of the seat to act", on_table[:, 0]
    leader = piece("leader")
    seats_after = ((np.arange(N_SEATS) - leader.argmax(axis=1)[:, None]) % N_SEATS) < on_table.sum(axis=1)[:, None]
    yield (
        "observation's current trick must be played by its leader and the seats after",
        ~np.where(leader.any(axis=1)[:, None], on_table == seats_after, ~on_table).all(axis=1),
    )


def check_sets(folders: list[Path]) -> list[LabelSettings]:
    """The settings of label sets to be fitted together, each complete; a LabelSetError if one is
    not a label set, is incomplete, is named twice, or has other rules than the first (a student
    plays one rule set)."""
    seen: dict[Path, Path] = {}
    found = []
    for folder in folders:
        settings = read_meta(folder)
        check_complete(folder, settings)
        where = Path(folder).resolve()
        if where in seen:
            raise LabelSetError(f"{folder} is named twice (as {seen[where]}): its labels would count double")
        seen[where] = folder
        if found and settings.rules != found[0].rules:
            raise LabelSetError(
                f"{folder} was labelled under other rules than {folders[0]}: a student plays one rule set"
            )
        found.append(settings)
    return found
