"""Fuzzing the checkpoint loader: a tampered checkpoint is refused with a clear message, never a crash or a hang.

One tiny real checkpoint is made once (2 tables, overlapped updates, snapshots and a bot among the
opponents: every part of a checkpoint's state is there). Then seeded random mutations of its files
(every JSON node: other types, huge or negative numbers, NaN, deep nesting, keys removed or added;
every array: random values, NaN, extremes, negatives, other dtypes and shapes, removed; model.zip's
tensors and Adam's state; whole files cut, replaced by garbage, a FIFO, a folder, a link to
/dev/zero or /dev/urandom, removed) go through the function that reads and restores a checkpoint
(``train.ppo.trainer.restore``), in this process, each under a deadline. Each case must be a ResumeError
naming the checkpoint, or a restore after which a rollout of training runs.

The vector engine's own arrays (``env_state.learner.tables.game``) are checked by
``VectorGame.set_state``; their cases run in a forked child, so that a crash there fails a test
instead of ending this one.
"""

from __future__ import annotations

import copy
import io
import json
import os
import random
import re
import shutil
import signal
import struct
import time
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("sb3_contrib")

import torch  # noqa: E402

from train.__main__ import main as train_main  # noqa: E402
from train.run_folder.checkpoints import ResumeError  # noqa: E402
from train.config import TrainConfig, load_config  # noqa: E402
from train.run_folder.progress import Progress  # noqa: E402
from train.ppo.trainer import restore as _restore  # noqa: E402

CONFIG = {
    "run_name": "fuzz", "n_envs": 2, "n_steps": 16, "batch_size": 32, "n_epochs": 1, "net_arch": [8],
    "critic_arch": [8], "critic_sees_hands": True, "overlap_updates": True, "imitate": "", "distil_labels": [],
    "opponents": {"self": 1.0, "snapshot": 1.0, "random": 1.0}, "snapshot_every": 32, "max_snapshots": 1,
    "eval_every": 1_000_000, "eval_boards": 1, "start_eval_boards": 1, "eval_opponents": ["random"], "checkpoint_every": 32, "total_steps": 96,
}  # fmt: skip
CASES = 110  # in this process (about 0.1 s each)
GAME_CASES = 24  # the engine's arrays, in a child process
DEADLINE = 20.0  # seconds a case may take: far more than any does, far less than a hang
GAME_PATH = ("dict", "env_state", "dict", "learner", "dict", "tables", "dict", "game")
FILES = ("state.json", "state.npz", "model.zip")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> tuple[TrainConfig, Path]:
    """The run's config and its last checkpoint (a rollout collected ahead, a snapshot, a bot's generator)."""
    out = tmp_path_factory.mktemp("fuzz")
    (out / "fuzz.yaml").write_text(yaml.safe_dump(CONFIG))
    assert train_main(["--config", str(out / "fuzz.yaml"), "--output-dir", str(out), "--quiet"]) == 0
    config = load_config(out / "fuzz" / "config.yaml")
    return config, max((out / "fuzz" / "checkpoints").glob("step_*"))


@pytest.fixture
def global_generators():
    """A successful restore sets the global generators: put them back for the other tests."""
    saved = torch.get_rng_state(), np.random.get_state(), random.getstate()
    yield
    torch.set_rng_state(saved[0])
    np.random.set_state(saved[1])
    random.setstate(saved[2])


class Hang(BaseException):
    """A case that did not answer within DEADLINE (a BaseException, so no loader's ``except`` takes it)."""


@contextmanager
def deadline(seconds: float):
    def expired(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- mutations


def nodes(tree: Any, path: tuple = ()) -> list[tuple]:
    """The path of every node of a JSON tree (the root excluded)."""
    found = []
    children = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else []
    for key, child in children:
        found.append((*path, key))
        found += nodes(child, (*path, key))
    return found


def array_names(tree: Any, under: tuple = ()) -> list[str]:
    """The .npz members of the arrays referred to below the node at ``under``."""
    node = tree
    for key in under:
        node = node[key]
    found = [get(node, p) for p in nodes(node)]
    return [n["array"] for n in found if isinstance(n, dict) and set(n) == {"array"}]


def get(tree: Any, path: tuple) -> Any:
    for key in path:
        tree = tree[key]
    return tree


DEEP = "@DEEP@"
HUGE_INT = "@HUGE@"
WEIRD = [
    None, True, False, 0, -1, 1, 7, 2**31, 2**63, 2**64 + 1, 10**30, -(10**30), 0.5, -0.0, 1e308, float("nan"),
    float("inf"), float("-inf"), "", "x", "random", [], [0], [[[]]], {}, {"tuple": []}, {"tuple": [1, 2]},
    {"array": "a0"}, {"array": "nope"}, {"numpy": "float32", "value": 1e39}, {"numpy": "int8", "value": 300},
    {"numpy": "(3,)f8", "value": 1}, {"numpy": "V8", "value": 1}, {"deque": [], "maxlen": 10**30},
    {"deque": [1], "maxlen": -1}, {"dict": {}}, {"items": [[[1], 2]]}, {"items": [[{"tuple": [[1]]}, 2]]},
    {"items": [[1, 2], ["a", 3]]}, {"tuple": [3, {"tuple": [0] * 625}, None]}, DEEP, HUGE_INT,
]  # fmt: skip


def write_json(path: Path, tree: Any) -> None:
    text = json.dumps(tree)
    text = text.replace(f'"{DEEP}"', "[" * 50_000 + "]" * 50_000).replace(f'"{HUGE_INT}"', "1" + "0" * 5000)
    path.write_text(text)


def mutate_json(folder: Path, rng: np.random.Generator) -> str:
    path = folder / "state.json"
    tree = json.loads(path.read_text())
    groups: dict[tuple, list[tuple]] = {}  # by field: the nodes above the first list index (a table, a row, a word)
    for p in nodes(tree):
        if p[: len(GAME_PATH)] != GAME_PATH:
            groups.setdefault(next((p[:i] for i, k in enumerate(p) if isinstance(k, int)), p[:6]), []).append(p)
    group = list(groups.values())[rng.integers(len(groups))]
    target = group[rng.integers(len(group))]
    parent, key = get(tree, target[:-1]), target[-1]
    kind = rng.integers(4)
    if kind == 0 or not isinstance(parent, dict):
        parent[key] = copy.deepcopy(WEIRD[rng.integers(len(WEIRD))])
        what = f"{target} = {str(parent[key])[:40]}"
    elif kind == 1:
        del parent[key]
        what = f"{target} removed"
    elif kind == 2:
        parent["extra"] = 1
        what = f"{target[:-1]} + key 'extra'"
    else:
        value = parent[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = [value + 1, value - 1, -value - 1, value * 2**40, value * 1e300][rng.integers(5)]
        else:
            parent[key] = {"dict": {"nested": value}}
        what = f"{target} changed to {str(parent[key])[:40]}"
    write_json(path, tree)
    return f"state.json: {what}"


DTYPES = [np.int8, np.int32, np.int64, np.uint64, np.float32, np.float64, np.bool_, "<U3"]


def mutated_array(a: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray | None, str]:
    kind = rng.integers(9)
    if kind == 0 and a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        return rng.integers(info.min, info.max, size=a.shape, dtype=a.dtype, endpoint=True), "random values"
    if kind == 0 and a.dtype.kind == "f":
        return (rng.normal(size=a.shape) * 10.0 ** rng.integers(0, 40)).astype(a.dtype), "random values"
    if kind == 1 and a.dtype.kind == "f" and a.size:
        b = a.copy()
        b.flat[rng.integers(a.size)] = [np.nan, np.inf, -np.inf][rng.integers(3)]
        return b, "a NaN or infinity"
    if kind == 2 and a.dtype.kind in "iuf" and a.size:
        b = a.copy()
        limit = np.iinfo(a.dtype) if a.dtype.kind in "iu" else np.finfo(a.dtype)
        b.flat[rng.integers(a.size)] = [limit.max, limit.min][rng.integers(2)]
        return b, "an extreme value"
    if kind == 3 and a.dtype.kind in "if":
        return -a - 1, "negated"
    if kind == 4:
        dtype = np.dtype(DTYPES[rng.integers(len(DTYPES))])
        try:
            return a.astype(dtype) if dtype.kind != "U" else a.astype(str).astype(dtype), f"as {dtype}"
        except ValueError:  # text as numbers
            return np.zeros(a.shape, dtype), f"zeros of {dtype}"
    if kind == 5:
        return a[None], "another shape (an axis added)"
    if kind == 6 and a.ndim:
        return a[:-1], "another shape (cut)"
    if kind == 7:
        return None, "removed"
    if a.dtype.kind in "iu" and a.size:
        b = a.copy()
        b.flat[rng.integers(a.size)] += 1
        return b, "one value + 1"
    return np.zeros((), a.dtype), "a scalar"


def mutate_arrays(folder: Path, rng: np.random.Generator, names: list[str]) -> str:
    path = folder / "state.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    name = names[rng.integers(len(names))]
    new, what = mutated_array(arrays[name], rng)
    if new is None:
        del arrays[name]
    else:
        arrays[name] = new
    np.savez(path, **arrays)
    return f"state.npz {name}: {what}"


def mutate_model(folder: Path, rng: np.random.Generator) -> str:
    path = folder / "model.zip"
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    policy = torch.load(io.BytesIO(members["policy.pth"]), weights_only=True)
    optimizer = torch.load(io.BytesIO(members["policy.optimizer.pth"]), weights_only=True)
    kind = rng.integers(6)
    if kind < 2:
        name = list(policy)[rng.integers(len(policy))]
        tensor = policy[name].clone()
        changes = {
            0: lambda t: t.index_fill_(0, torch.tensor([0]), float("nan")), 1: lambda t: t * 1e30 * float("inf"),
            2: lambda t: t[:-1] if t.ndim else t[None], 3: lambda t: t.double(), 4: lambda t: torch.randn_like(t) * 1e3,
        }  # fmt: skip
        change = int(rng.integers(len(changes)))
        policy[name] = changes[change](tensor)
        what = f"policy {name} change {change}"
    elif kind == 2:
        policy["evil"] = torch.zeros(3) if rng.integers(2) else policy.pop(list(policy)[rng.integers(len(policy))])
        what = "policy: a tensor added or renamed"
    elif kind == 3:
        i = list(optimizer["state"])[rng.integers(len(optimizer["state"]))]
        moment = ["step", "exp_avg", "exp_avg_sq"][rng.integers(3)]
        values = {"step": [-1.0, 0.5, np.nan], "exp_avg": [np.nan], "exp_avg_sq": [-1.0, np.inf]}[moment]
        moments = optimizer["state"][i]
        moments[moment] = torch.full_like(moments[moment], values[rng.integers(len(values))])
        what = f"Adam's {moment} of parameter {i}"
    elif kind == 4:
        group = optimizer["param_groups"][0]
        key = ["lr", "betas", "eps", "params", "weight_decay"][rng.integers(5)]
        group[key] = {"lr": float("nan"), "betas": (2.0, 0.0), "eps": 0.0, "params": [0], "weight_decay": -1.0}[key]
        what = f"Adam's {key}"
    else:
        optimizer["state"][99] = optimizer["state"][0]
        what = "Adam's state of a parameter that does not exist"
    for name, value in (("policy.pth", policy), ("policy.optimizer.pth", optimizer)):
        buffer = io.BytesIO()
        torch.save(value, buffer)
        members[name] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return f"model.zip: {what}"


def zeros_member(path: Path, name: str, size: int) -> None:
    """Write ``path`` as a zip whose member ``name`` inflates to ``size`` zero bytes (a few MB on
    disk): its deflate stream is built from one compressed 16 MB block, repeated."""
    block = bytes(2**24)
    assert size % len(block) == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    data = first + again * (size // len(block) - 1) + compressor.flush()
    crc = 0
    for _ in range(size // len(block)):
        crc = zlib.crc32(block, crc)
    encoded = name.encode()
    fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x21, crc, len(data), size)
    local = b"PK\x03\x04" + fields + struct.pack("<HH", len(encoded), 0) + encoded
    central = b"PK\x01\x02" + struct.pack("<H", 20) + fields
    central += struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0, 0) + encoded
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    path.write_bytes(local + data + central + end)


def damage_file(folder: Path, rng: np.random.Generator) -> str:
    name = FILES[rng.integers(len(FILES))]
    path = folder / name
    kind = int(rng.integers(9))
    size = path.stat().st_size
    if kind == 0:
        path.unlink()
    elif kind == 1:
        path.write_bytes(path.read_bytes()[: rng.integers(size)])
    elif kind == 2:
        path.write_bytes(rng.bytes(int(rng.integers(1, 4096))))
    elif kind == 3:
        path.unlink()
        os.mkfifo(path)
    elif kind in (4, 5):
        path.unlink()
        path.symlink_to("/dev/zero" if kind == 4 else "/dev/urandom")
    elif kind == 6:
        path.unlink()
        path.mkdir()
    elif kind == 7 and name == "model.zip":
        with zipfile.ZipFile(path) as archive:
            others = {i.filename: archive.read(i) for i in archive.infolist() if i.filename != "policy.pth"}
        zeros_member(path, "policy.pth", 64 * 2**20)
        with zipfile.ZipFile(path, "a") as archive:
            for member, data in others.items():
                archive.writestr(member, data)
        return "model.zip: policy.pth inflating to 64 MB"
    elif kind == 7 and name == "state.npz":
        np.savez_compressed(path, a0=np.zeros(2**24))  # 128 MB of zeros in a few hundred KB
        return "state.npz: one array of 128 MB"
    else:
        path.write_bytes(b"")
    return f"{name}: damage {kind}"


def mutate(folder: Path, seed: int, game: bool = False) -> str:
    """Apply mutation ``seed`` to the checkpoint ``folder``; what was done. ``game``: the engine's arrays only."""
    rng = np.random.default_rng(seed)
    tree = json.loads((folder / "state.json").read_text())
    if game:
        return mutate_arrays(folder, rng, array_names(tree, GAME_PATH))
    kind = rng.integers(8)
    if kind < 3:
        return mutate_json(folder, rng)
    if kind < 5:
        others = sorted(set(array_names(tree)) - set(array_names(tree, GAME_PATH)))
        return mutate_arrays(folder, rng, others)
    if kind < 7:
        return mutate_model(folder, rng)
    return damage_file(folder, rng)


# ---------------------------------------------------------------- the cases


def check_case(config: TrainConfig, original: Path, where: Path, seed: int, game: bool = False) -> str:
    """One mutated copy of ``original`` restored; "refused" or "restored" (then a rollout trained on).
    An AssertionError for anything else."""
    folder = where / original.name
    shutil.copytree(original, folder)
    what = mutate(folder, seed, game)
    try:
        with deadline(DEADLINE):
            try:
                env, trainer, model = _restore(config, folder, Progress(False))
            except ResumeError as err:
                message = str(err)
                assert str(folder) in message and "Traceback" not in message and len(message) < 2000, (what, message)
                return "refused"
            model.learn(model.n_steps * model.n_envs, reset_num_timesteps=False)  # a rollout trained on
            model.finish_collection()
            assert all(torch.isfinite(p).all() for p in model.policy.parameters()), f"{what}: trained into NaN"
            return "restored"
    except Hang as hang:
        raise AssertionError(f"case {seed} ({what}) hung: {hang}") from None
    except Exception as err:
        raise AssertionError(f"case {seed} ({what}): {type(err).__name__}: {err}") from err


def test_the_unchanged_checkpoint_restores_and_trains(checkpoint, tmp_path, global_generators):
    config, folder = checkpoint
    shutil.copytree(folder, tmp_path / folder.name)
    env, trainer, model = _restore(config, tmp_path / folder.name, Progress(False))
    assert model.uncounted_steps == model.n_steps * model.n_envs  # the rollout collected ahead
    model.learn(model.n_steps * model.n_envs, reset_num_timesteps=False)
    model.finish_collection()


def test_fuzzed_checkpoints_are_refused_clearly_or_restored(checkpoint, tmp_path, global_generators):
    config, folder = checkpoint
    started = time.monotonic()
    outcomes = [check_case(config, folder, tmp_path / str(seed), seed) for seed in range(CASES)]
    assert outcomes.count("refused") > CASES // 2  # most mutations are caught...
    assert "restored" in outcomes  # ...and some are harmless (a reward changed, a generator's state drawn anew)
    assert time.monotonic() - started < 60


def test_fuzzed_game_arrays_are_refused_clearly_or_restored(checkpoint, tmp_path):
    """The engine's arrays (checked by VectorGame.set_state before the kernels read them), in a
    forked child: should a check ever be missed, a kernel reading out of bounds fails this test
    instead of ending the test run."""
    config, folder = checkpoint
    code, report = in_child(
        lambda: [check_case(config, folder, tmp_path / str(seed), seed, game=True) for seed in range(GAME_CASES)]
    )
    assert code == 0, f"the child ended with {code}: {report}"
    assert report.split().count("refused") > GAME_CASES // 2, report


def in_child(work: Any) -> tuple[int, str]:
    """Run ``work()`` (a list of words) in a forked child; its exit code (negative: killed by that
    signal, as by a segmentation fault) and its words, or what it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        code = 1
        try:
            text, code = " ".join(work()), 0
        except BaseException as err:  # noqa: BLE001 (reported to the parent)
            text = f"{type(err).__name__}: {err}"
        os.write(write, text.encode()[:60_000])
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read().decode(errors="replace")
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), report


def test_a_model_zip_holding_a_1_gib_tensor_is_refused_unread(checkpoint, tmp_path):
    config, original = checkpoint
    folder = tmp_path / original.name
    shutil.copytree(original, folder)
    zeros_member(folder / "model.zip", "policy.pth", 2**30)
    assert (folder / "model.zip").stat().st_size < 8 * 2**20
    started = time.monotonic()
    with pytest.raises(ResumeError, match=r"policy.pth holds 1,073,741,824 bytes, more than this run's networks take"):
        _restore(config, folder, Progress(False))
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: (p.unlink(), os.mkfifo(p)), "state.npz is a FIFO, not a regular file: refused unopened"),
        (lambda p: (p.unlink(), p.symlink_to("/dev/zero")), "state.npz is a device or socket, not a regular file"),
        (lambda p: (p.unlink(), p.symlink_to("/dev/urandom")), "state.npz is a device or socket, not a regular file"),
    ],
    ids=["fifo", "dev-zero", "dev-urandom"],
)
def test_a_state_file_that_is_no_regular_file_is_refused_unopened(checkpoint, tmp_path, damage, message):
    config, original = checkpoint
    folder = tmp_path / original.name
    shutil.copytree(original, folder)
    damage(folder / "state.npz")
    with deadline(DEADLINE), pytest.raises(ResumeError, match=message):
        _restore(config, folder, Progress(False))


def set_json(path: tuple, value: Any):
    """A damage: the node at ``path`` of state.json set to ``value``."""

    def damage(folder: Path) -> None:
        tree = json.loads((folder / "state.json").read_text())
        get(tree, path[:-1])[path[-1]] = value
        write_json(folder / "state.json", tree)

    return damage


def nan_weight(folder: Path) -> None:
    with zipfile.ZipFile(folder / "model.zip") as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    policy = torch.load(io.BytesIO(members["policy.pth"]), weights_only=True)
    policy["action_net.weight"][0, 0] = float("nan")
    buffer = io.BytesIO()
    torch.save(policy, buffer)
    members["policy.pth"] = buffer.getvalue()
    with zipfile.ZipFile(folder / "model.zip", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


SB3 = ("dict", "sb3", "dict")
ISSUE_CASES = {  # issue 40, item 7, and what else crashed the same way
    "nan_weights": (nan_weight, "policy action_net.weight holds NaN or infinite values"),
    "nested_json": (lambda f: (f / "state.json").write_text('{"dict": ' * 10**5 + "1" + "}" * 10**5), "nests deeper"),
    "python_rng_huge": (set_json(("dict", "python_rng", "tuple", 1, "tuple", 5), 10**30), "python_rng word must be in"),
    "num_timesteps_negative": (set_json((*SB3, "num_timesteps"), -1), "sb3 num_timesteps must be in 128 .. 128"),
    "num_timesteps_huge": (set_json((*SB3, "num_timesteps"), 10**30), "sb3 num_timesteps must be in 128 .. 128"),
    "numpy_position": (  # accepted by numpy, then a read outside its key: a segmentation fault
        set_json(("dict", "numpy_global_rng", "tuple", 2), 10**6), "numpy_global_rng position must be in 0 .. 624"
    ),
    "pcg64_huge": (
        set_json(("dict", "env_state", "dict", "learner", "dict", "league", "dict", "rng", "dict", "state", "dict", "state"), 2**200),
        "the league's generator state must be in 0 ..",
    ),
    "deque_maxlen": (set_json((*SB3, "ep_info_buffer", "maxlen"), 10**30), "is not a state node"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_the_issues_tampered_checkpoints_are_refused_clearly(checkpoint, tmp_path, case):
    config, original = checkpoint
    folder = tmp_path / original.name
    shutil.copytree(original, folder)
    damage, message = ISSUE_CASES[case]
    damage(folder)
    with deadline(DEADLINE), pytest.raises(ResumeError, match=re.escape(message)):
        _restore(config, folder, Progress(False))
