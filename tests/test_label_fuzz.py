"""Fuzzing the label-shard reader (train/rounds/label_set.py): random damage to every column of a real
shard (values, dtypes, shapes, missing and extra columns, observations' flags and pieces, truncated
and bit-flipped archives). Every case is a LabelSetError naming the shard, or a shard that
train.rounds.distil turns into finite policy inputs and targets: never another exception (the compiled
feature and expert kernels read the observations), never a hang. Seeded: the case is in the message."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agents.policy import ADVISED_LAYOUT, COMPACT_LAYOUT, OBS_LAYOUT, legal_softmax
from allfours_env.observation import LAYOUT, N_FLAGS
from allfours_env.rules import DEFAULT_RULES
from tests.fuzz import SPECIAL, damage_archive, hang_fails, new_dtype, new_shape
from train.rounds import distil, label_set, labels

CASES = 300
HANG_SECONDS = 30
SETTINGS = label_set.LabelSettings(
    count=24, worlds=2, margin=0.01, rollout="expert", player="expert", seed=3, shard_rows=24, tables=4,
    rules=DEFAULT_RULES,
)  # fmt: skip
PIECES = [piece for piece in LAYOUT.values() if piece.name != "rules"]


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    with hang_fails(HANG_SECONDS, "a label shard took too long to read"):
        yield


@pytest.fixture(scope="module")
def shard(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    folder = tmp_path_factory.mktemp("labels")
    labels.make_labels(SETTINGS, folder, workers=1)
    return label_set.read_shard(folder, 0, SETTINGS)


def mutate_observations(observations: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A few rows' pieces changed: flags flipped or redrawn, scalars redrawn, or special values."""
    out = observations.copy()
    rows = rng.choice(len(out), size=rng.integers(1, 4), replace=False)
    for _ in range(rng.integers(1, 4)):
        piece = PIECES[rng.integers(len(PIECES))]
        kind = rng.integers(4)
        if kind == 0:  # a few flags (or values) flipped, as a single bad bit would
            at = piece.offset + rng.integers(piece.size, size=rng.integers(1, 4))
            out[np.ix_(rows, at)] = 1 - out[np.ix_(rows, at)]
        elif kind == 1 and piece.offset < N_FLAGS:
            out[rows, piece.slice] = rng.random((len(rows), piece.size)) < rng.random() * 0.3
        elif kind == 2:
            out[rows, piece.slice] = rng.random((len(rows), piece.size)).astype(np.float32)
        else:
            with np.errstate(over="ignore"):
                out[rows, piece.offset + rng.integers(piece.size)] = rng.choice(SPECIAL)
    return out


def mutate_columns(columns: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    columns = dict(columns)
    name = str(rng.choice(sorted(label_set.COLUMNS)))
    column = columns[name]
    kind = rng.integers(8)
    if kind == 0 and name == "observation":
        columns[name] = mutate_observations(column, rng)
    elif kind == 1 and name == "values":
        values = column.copy()
        at = tuple(rng.integers(n) for n in values.shape)
        with np.errstate(over="ignore"):
            values[at] = rng.choice([*SPECIAL, -0.5, 1.5, 0.5])  # a legal action's value, or an illegal one's
        columns[name] = values
    elif kind == 2 and name in ("search_action", "player_action"):
        actions = column.copy()
        actions[rng.integers(len(actions))] = rng.choice([-1, 56, 32767, -32768, int(rng.integers(56))])
        columns[name] = actions
    elif kind == 3 and name == "action_mask":
        masks = column.copy().view(np.uint8)
        masks[rng.integers(len(masks)), rng.integers(masks.shape[1])] = rng.choice([0, 1, 2, 255])
        columns[name] = masks.view(np.bool_)
    elif kind == 4:
        columns[name] = new_dtype(column, rng)
    elif kind == 5:
        columns[name] = new_shape(column, rng)
    elif kind == 6:
        columns.pop(name)
    else:
        columns[str(rng.choice(["extra", "values2", "seed"]))] = np.zeros(len(column))
    if name == "search_seed" and kind < 4:  # any seed is a seed: a case that must read
        columns[name] = rng.integers(2**63, size=len(column), dtype=np.uint64)
    return columns


def shard_bytes(columns: dict[str, np.ndarray], rng: np.random.Generator) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if rng.integers(2) else np.savez)(buffer, **columns)
    data = buffer.getvalue()
    return damage_archive(data, rng) if rng.random() < 0.25 else data


def reads_or_refuses(folder: Path) -> str:
    """The outcome: "refused" (a LabelSetError naming the shard), or "reads" (finite inputs and targets)."""
    try:
        columns = label_set.read_shard(folder, 0, SETTINGS)
    except label_set.LabelSetError as err:
        assert "shard_00000.npz" in str(err) and len(str(err)) < 2000, err
        return "refused"
    for layout in (ADVISED_LAYOUT, COMPACT_LAYOUT, OBS_LAYOUT):
        read = distil.read_labels([folder], layout, suit_copies=1)
        assert np.isfinite(read.inputs.dense(np.arange(len(read.source)))).all()
    assert np.isfinite(legal_softmax(columns["values"], columns["action_mask"], 0.01)).all()
    return "reads"


def test_damaged_label_shards_are_refused_or_read(shard: dict[str, np.ndarray], tmp_path: Path) -> None:
    label_set.write_meta(tmp_path, SETTINGS)
    outcomes = {"refused": 0, "reads": 0}
    for case in range(CASES):
        rng = np.random.default_rng([42, case])
        label_set.shard_path(tmp_path, 0).write_bytes(shard_bytes(mutate_columns(shard, rng), rng))
        try:
            outcomes[reads_or_refuses(tmp_path)] += 1
        except Exception as err:
            raise AssertionError(f"case {case}: {type(err).__name__}: {err}") from err
    assert outcomes["refused"] and outcomes["reads"], outcomes


def test_a_damaged_shard_is_named_by_resume_and_distil(shard: dict[str, np.ndarray], tmp_path: Path) -> None:
    label_set.write_meta(tmp_path, SETTINGS)
    columns = dict(shard, observation=shard["observation"].copy())
    columns["observation"][5, LAYOUT["table"].offset] = np.nan
    np.savez(label_set.shard_path(tmp_path, 0), **columns)
    assert label_set.shards_done(tmp_path, SETTINGS) == ([], {0: f"{label_set.shard_path(tmp_path, 0)}: row 5: "
                                                              "observation holds NaN or infinite values"})  # fmt: skip
    with pytest.raises(label_set.LabelSetError, match="shard_00000.npz: row 5: observation holds NaN"):
        distil.read_labels([tmp_path], ADVISED_LAYOUT)
