"""Fuzzing the policy-file loader: random damage to a shipped ``.npz`` policy and to an SB3 ``.zip``
(every array's values, dtypes and shapes, missing and extra members, the metadata, truncated and
bit-flipped archives), each loaded as ``agents.make(path)`` loads it. Every case is a
CheckpointError with a message, or a bot that plays legal moves: never another exception, never
a hang. Seeded, so a failure reproduces: the case's seed is in the test's id."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import agents
from agents import policy
from agents.policy import CheckpointError
from allfours_env import env
from tests.fuzz import damage_archive, hang_fails, new_dtype, new_shape, new_values

SHIPPED = sorted((Path(agents.__file__).parent / "pretrained").glob("*.npz"))
NPZ_CASES_PER_FILE = 36  # (a share of a fixed total left a file too few cases to reach both outcomes)
ZIP_CASES = 90
HANG_SECONDS = 20  # all the cases of one test


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    with hang_fails(HANG_SECONDS, "a policy file took too long to load"):
        yield


@pytest.fixture(scope="module")
def observations() -> list[dict]:
    """A few observations of a game, from the deal to the play."""
    e = env()
    e.reset(seed=1)
    seen = []
    while len(seen) < 30 and e.agents:
        observation = e.observe(e.agent_selection)
        seen.append(observation)
        e.step(int(np.flatnonzero(observation["action_mask"])[-1]))
    return seen[::6]


def loads_or_refuses(path: Path, observations: list[dict]) -> str:
    """``agents.make(path)``: "refused" with a CheckpointError, or "plays" legal moves."""
    policy._CACHE.clear()  # a mutated file may have the size and time of the last one
    try:
        bot = agents.make(str(path))
    except CheckpointError as err:
        assert str(path) in str(err) and len(str(err)) < 2000, err
        return "refused"
    for observation in observations:
        assert observation["action_mask"][bot.act(observation)]
    return "plays"


# ---------------------------------------------------------------- mutations of arrays


def mutate_arrays(arrays: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One to three random changes: an array's values, dtype or shape, a missing or extra array,
    or other metadata (activation, layout)."""
    arrays = dict(arrays)
    for _ in range(rng.integers(1, 4)):
        name = str(rng.choice(sorted(arrays))) if arrays else "w0"
        kind = rng.integers(7)
        if kind == 0 and name in arrays:
            arrays[name] = new_values(arrays[name], rng)
        elif kind == 1 and name in arrays:
            arrays[name] = new_dtype(arrays[name], rng)
        elif kind == 2 and name in arrays:
            arrays[name] = new_shape(arrays[name], rng)
        elif kind == 3:
            arrays.pop(name, None)
        elif kind == 4:
            extra = str(rng.choice(["w2", "b2", "w9", "b_out2", "x", "obs_layout_", "w-1"]))
            arrays[extra] = rng.normal(size=tuple(rng.integers(1, 64, size=rng.integers(0, 3)))).astype(np.float32)
        elif kind == 5:
            arrays["activation"] = np.array(rng.choice(["relu", "tanh", "sigmoid", "", "relu ", "RELU", "5"]))
        else:
            options = [0, 1, 2, 3, 4, -1, 2**63 - 1, -(2**63)]
            value = options[rng.integers(len(options))]
            arrays["obs_layout"] = np.array(value).astype(rng.choice(["<i8", "<i1", "<f8", "<u8"]))  # (wraps)
    return arrays


def npz_bytes(arrays: dict[str, np.ndarray], compressed: bool) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)  # object arrays: pickled, to be refused
    return buffer.getvalue()


def damaged_npz(original: dict[str, np.ndarray], rng: np.random.Generator, path: Path) -> Path:
    """``original``'s arrays mutated (:func:`mutate_arrays`), saved, the archive sometimes damaged too, at ``path``."""
    data = npz_bytes(mutate_arrays(original, rng), compressed=bool(rng.integers(2)))
    if rng.random() < 0.35:
        data = damage_archive(data, rng)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("source", SHIPPED, ids=lambda p: p.stem)
def test_damaged_npz_policies_are_refused_or_play(source: Path, tmp_path: Path, observations) -> None:
    original = dict(np.load(source))
    outcomes = {"refused": 0, "plays": 0}
    for case in range(NPZ_CASES_PER_FILE):
        rng = np.random.default_rng([40, SHIPPED.index(source), case])
        path = damaged_npz(original, rng, tmp_path / f"case_{case}.npz")
        try:
            outcomes[loads_or_refuses(path, observations)] += 1
        except Exception as err:
            raise AssertionError(f"case {case} of {source.name}: {type(err).__name__}: {err}") from err
    assert outcomes["refused"] and outcomes["plays"], outcomes  # both kinds of case were reached


def test_an_object_array_in_a_policy_is_refused_unread(tmp_path: Path, observations) -> None:
    arrays = dict(np.load(SHIPPED[0]))
    arrays["activation"] = np.array([print], dtype=object)
    path = tmp_path / "pickle.npz"
    path.write_bytes(npz_bytes(arrays, compressed=False))
    assert loads_or_refuses(path, observations) == "refused"


# ---------------------------------------------------------------- SB3 checkpoints (.zip)


@pytest.fixture(scope="module")
def tiny_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sb3_contrib")
    from tests.tiny_policy import save_tiny_checkpoint

    return save_tiny_checkpoint(tmp_path_factory.mktemp("sb3") / "tiny.zip")


def mutate_state(state: dict, rng: np.random.Generator) -> dict:
    import torch

    state = dict(state)
    name = str(rng.choice(sorted(state)))
    kind = rng.integers(6)
    tensor = state[name]
    if kind == 0:
        state[name] = torch.from_numpy(new_values(tensor.numpy(), rng))
    elif kind == 1:
        state[name] = tensor.to(rng.choice([torch.float16, torch.int32, torch.bool, torch.complex64, torch.uint8]))
    elif kind == 2:
        state[name] = torch.from_numpy(np.ascontiguousarray(new_shape(tensor.numpy(), rng)))
    elif kind == 3:
        state.pop(name)
    elif kind == 4:
        state[f"mlp_extractor.policy_net.{rng.integers(1, 9)}.weight"] = torch.zeros(int(rng.integers(1, 9)), 8)
    else:  # a tiny storage seen as a huge tensor (zero strides)
        state[name] = torch.zeros(1).expand(10**6, 10**6)
    return state


def zip_with(source: Path, replace: dict[str, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(buffer, "w") as dst:
        for name in src.namelist():
            if replace.get(name, b"") is not None:
                dst.writestr(name, replace.get(name) or src.read(name))
        for name, data in replace.items():
            if name not in src.namelist() and data is not None:
                dst.writestr(name, data)
    return buffer.getvalue()


def mutate_zip(source: Path, rng: np.random.Generator) -> bytes:
    import torch

    kind = rng.integers(5)
    with zipfile.ZipFile(source) as archive:
        weights, data = archive.read(policy.SB3_WEIGHTS), archive.read(policy.SB3_DATA)
    if kind == 0:
        buffer = io.BytesIO()
        torch.save(mutate_state(torch.load(io.BytesIO(weights), weights_only=True), rng), buffer)
        return zip_with(source, {policy.SB3_WEIGHTS: buffer.getvalue()})
    if kind == 1:
        kwargs = json.loads(data).get("policy_kwargs", {})
        choices = ["<class 'torch.nn.modules.activation.Sigmoid'>", 7, None, ["x"], "relu", {"a": 1}]
        new = {**json.loads(data), "policy_kwargs": {**kwargs, "activation_fn": choices[rng.integers(len(choices))]}}
        deep = "[" * 100_000 + "]" * 100_000
        texts = [json.dumps(new), "{", deep, "1e999999", '"text"', json.dumps({"policy_kwargs": 5})]
        return zip_with(source, {policy.SB3_DATA: texts[rng.integers(len(texts))].encode()})
    if kind == 2:
        return zip_with(source, {str(rng.choice([policy.SB3_WEIGHTS, policy.SB3_DATA])): None, "extra.bin": b"x"})
    if kind == 3:
        return zip_with(source, {policy.SB3_WEIGHTS: damage_archive(weights, rng)})
    return damage_archive(source.read_bytes(), rng)


def test_damaged_sb3_checkpoints_are_refused_or_play(tiny_zip: Path, tmp_path: Path, observations) -> None:
    outcomes = {"refused": 0, "plays": 0}
    for case in range(ZIP_CASES):
        rng = np.random.default_rng([41, case])
        path = tmp_path / f"case_{case}.zip"
        path.write_bytes(mutate_zip(tiny_zip, rng))
        try:
            outcomes[loads_or_refuses(path, observations)] += 1
        except Exception as err:
            raise AssertionError(f"case {case}: {type(err).__name__}: {err}") from err
    assert outcomes["refused"] and outcomes["plays"], outcomes


def test_a_huge_view_of_a_tiny_storage_is_refused_before_it_is_copied(tiny_zip: Path, tmp_path: Path) -> None:
    import torch

    with zipfile.ZipFile(tiny_zip) as archive:
        state = torch.load(io.BytesIO(archive.read(policy.SB3_WEIGHTS)), weights_only=True)
    state["action_net.weight"] = torch.zeros(1).expand(10**6, 10**6)  # 4 TB once copied, 4 bytes stored
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = tmp_path / "view.zip"
    path.write_bytes(zip_with(tiny_zip, {policy.SB3_WEIGHTS: buffer.getvalue()}))
    with pytest.raises(CheckpointError, match="claims 1,000,000,000,000 values"):
        agents.make(str(path))
