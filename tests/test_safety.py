"""Policy files are data: loading one never runs code, and every array is checked before use."""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import agents
from agents.builtin import PRETRAINED
from agents.policy import (
    ADVISED_LAYOUT, LAYOUT_KEY, OBS_LAYOUT, CheckpointError, PolicyBot, input_size, load_weights, save_weights,
)  # fmt: skip
from allfours_env import N_ACTIONS, env

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from tests.tiny_policy import save_tiny_checkpoint  # noqa: E402

INPUTS = input_size(OBS_LAYOUT)


class CreatesFile:
    """Unpickling this creates ``path``: the proof that a loader ran code from a file."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


@pytest.fixture(scope="module")
def tiny_zip(tmp_path_factory) -> Path:
    return save_tiny_checkpoint(tmp_path_factory.mktemp("policy") / "tiny.zip")


def rewrite_zip(source: Path, target: Path, replace: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, replace.get(name, src.read(name)))
    return target


def small_weights(layout: int = OBS_LAYOUT) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "w0": rng.normal(size=(input_size(layout), 4)).astype(np.float32),
        "b0": np.zeros(4, np.float32),
        "w_out": rng.normal(size=(4, N_ACTIONS)).astype(np.float32),
        "b_out": np.zeros(N_ACTIONS, np.float32),
        "activation": np.array("relu"),
        LAYOUT_KEY: np.array(layout),
    }


def first_observation():
    e = env()
    e.reset(seed=3)
    return e.observe(e.agent_selection)


def test_zip_weights_are_the_ones_sb3_loads(tiny_zip):
    from sb3_contrib import MaskablePPO

    from agents.policy import weights_from_policy

    ours = load_weights(tiny_zip)
    theirs = weights_from_policy(MaskablePPO.load(tiny_zip, device="cpu").policy)  # our own file: safe to unpickle
    assert set(ours) == set(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    assert agents.make(str(tiny_zip)).act(first_observation()) in range(N_ACTIONS)


def test_pickled_code_in_zip_metadata_is_never_run(tiny_zip, tmp_path):
    marker = tmp_path / "pwned"
    data = json.loads(zipfile.ZipFile(tiny_zip).read("data"))
    evil = base64.b64encode(pickle.dumps(CreatesFile(marker))).decode()
    for key in ("policy_kwargs", "observation_space", "lr_schedule"):
        data[key][":serialized:"] = evil
    path = rewrite_zip(tiny_zip, tmp_path / "evil_data.zip", {"data": json.dumps(data).encode()})
    bot = agents.make(str(path))  # the weights are plain: the policy loads, the pickles stay unread
    assert bot.act(first_observation()) in range(N_ACTIONS)
    assert not marker.exists()


def test_pickled_code_in_zip_weights_is_refused(tiny_zip, tmp_path):
    marker = tmp_path / "pwned"
    buffer = io.BytesIO()
    torch.save({"mlp_extractor.policy_net.0.weight": CreatesFile(marker)}, buffer)
    path = rewrite_zip(tiny_zip, tmp_path / "evil_weights.zip", {"policy.pth": buffer.getvalue()})
    with pytest.raises(CheckpointError, match="refused.*npz"):
        agents.make(str(path))
    assert not marker.exists()


def test_pickled_object_in_npz_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    weights = small_weights()
    path = tmp_path / "evil.npz"
    np.savez(path, **weights, extra=np.array([CreatesFile(marker)], dtype=object))
    with pytest.raises(CheckpointError, match="not a readable policy export"):
        agents.make(str(path))
    assert not marker.exists()


def test_zip_without_sb3_members_is_refused(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="not an SB3 checkpoint"):
        agents.make(str(path))


def save_npz(path: Path, weights: dict[str, np.ndarray]) -> Path:
    np.savez(path, **weights)
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w.update(w0=w["w0"][0]), r"w0 must be a matrix of %d rows" % INPUTS),
        (lambda w: w.update(b0=np.zeros((4, 1), np.float32)), r"b0 has shape \(4, 1\), expected \(4,\)"),
        (lambda w: w.update(b0=np.full(4, np.nan, np.float32)), "b0 holds NaN"),
        (lambda w: w.update(w_out=np.full((4, N_ACTIONS), np.inf, np.float32)), "w_out holds NaN or infinite"),
        (lambda w: w.update(b_out=np.zeros(N_ACTIONS, np.int64)), "dtype int64"),
        (lambda w: w.update(w0=w["w0"][:-1]), r"w0 has shape \(%d, 4\), expected \(%d, 4\)" % (INPUTS - 1, INPUTS)),
        (lambda w: w.pop("b_out"), r"missing \['b_out'\]"),
        (lambda w: w.update(bias=np.zeros(3)), r"unexpected \['bias'\]"),
        (lambda w: w.update(activation=np.array("gelu")), "must be one of"),
        (lambda w: w.update({LAYOUT_KEY: np.array(99)}), "layout 99; this version reads layouts"),
        (lambda w: w.update({LAYOUT_KEY: np.array(1.5)}), "must be one integer"),
    ],
)
def test_bad_arrays_are_named_in_the_error(tmp_path, change, message):
    weights = small_weights()
    change(weights)
    with pytest.raises(CheckpointError, match=message):
        agents.make(str(save_npz(tmp_path / "bad.npz", weights)))


def test_empty_or_truncated_files_are_clear_errors(tmp_path, tiny_zip):
    for name, content in [("empty.npz", b""), ("empty.zip", b""), ("cut.zip", tiny_zip.read_bytes()[:2000])]:
        (tmp_path / name).write_bytes(content)
        with pytest.raises(CheckpointError, match="not a readable"):
            agents.make(str(tmp_path / name))


def test_exports_record_the_layout_and_files_without_one_are_refused(tmp_path):
    path = tmp_path / "policy.npz"
    save_weights(small_weights(), path)
    assert int(np.load(path)[LAYOUT_KEY]) == OBS_LAYOUT
    assert [p.name for p in tmp_path.iterdir()] == ["policy.npz"]  # no temporary file left
    version_less = {k: v for k, v in small_weights().items() if k != LAYOUT_KEY}
    np.savez(tmp_path / "old.npz", **version_less)  # as policies were exported before layouts were recorded
    with pytest.raises(CheckpointError, match=r"old.npz: no 'obs_layout'.*reads layouts \[1, 2, 3, 4\]"):
        load_weights(tmp_path / "old.npz")
    assert int(load_weights(PRETRAINED)[LAYOUT_KEY]) == ADVISED_LAYOUT  # the shipped policy reads the advice


def test_a_policy_reads_its_layouts_input():
    obs = first_observation()
    whole = PolicyBot(small_weights(OBS_LAYOUT)).policy_input(obs["observation"], obs["action_mask"])
    assert whole.shape == (input_size(OBS_LAYOUT),)
    np.testing.assert_array_equal(whole[: len(obs["observation"])], obs["observation"])  # layout 1: the observation first
    advised = PolicyBot(small_weights(ADVISED_LAYOUT)).policy_input(obs["observation"], obs["action_mask"])
    assert advised.shape == (input_size(ADVISED_LAYOUT),)
    assert agents.make("pretrained").act(obs) in np.flatnonzero(obs["action_mask"])


def test_loaded_weights_are_read_only_and_shared(tiny_zip):
    a, b = load_weights(tiny_zip), load_weights(tiny_zip)
    assert a is b
    with pytest.raises(ValueError):
        a["w0"][0, 0] = 1.0


# ---------------------------------------------------------------- the env refuses bad input clearly


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scores": 5}, "scores must be two integers"),
        ({"scores": {0: 1, 1: 2}}, "scores must be two integers"),
        ({"decks": [[str(c) for c in range(52)]]}, r"decks\[0\] must hold card indices as ints 0..51, got '0' \(str\)"),
        ({"decks": [[float(c) for c in range(52)]]}, r"decks\[0\] must hold card indices as ints 0..51, got 0.0"),
        ({"decks": [[True] * 52]}, "must hold card indices as ints"),
        ({"decks": [7]}, "must be a list of decks"),
    ],
)
def test_bad_reset_options_are_clear_errors_that_change_nothing(options, message):
    e = env()
    with pytest.raises(ValueError, match=message):
        e.reset(seed=1, options=options)
    with pytest.raises(Exception, match="reset"):  # a failed first reset is not a reset
        e.step(0)
    e.reset(seed=1)
    before = e.observe(e.agent_selection)["observation"].copy()
    with pytest.raises(ValueError, match=message):
        e.reset(seed=2, options=options)
    np.testing.assert_array_equal(e.observe(e.agent_selection)["observation"], before)


def test_numpy_decks_are_accepted():
    e = env()
    e.reset(seed=1, options={"decks": [np.arange(52)]})
    assert e.unwrapped.game.deal_number == 1


def test_unknown_agent_names_the_agents():
    e = env()
    e.reset(seed=1)
    with pytest.raises(ValueError, match=r"unknown agent 'player_9'; the agents are \['player_0'"):
        e.observe("player_9")


NUMPY_RULES = [("target_score", np.int64(7)), ("deal_batch", np.int32(3)), ("first_dealer", np.int8(2)),
               ("stand_requires_trump", np.bool_(True))]  # fmt: skip


@pytest.mark.parametrize("key, value", NUMPY_RULES)
def test_numpy_scalars_are_read_as_python_values(key, value):
    read = getattr(env(**{key: value}).unwrapped.rules, key)
    assert read == value.item() and type(read) is type(value.item())


@pytest.mark.parametrize(
    "key, value", [("deal_batch", 3.0), ("deal_batch", True), ("target_score", 7.0), ("first_dealer", 1.0)],
)
def test_rules_refuse_floats_and_bools_for_integers(key, value):
    with pytest.raises(ValueError, match=f"rule '{key}' must be"):
        env(**{key: value})


def test_deferred_interrupts_wait_for_the_block_and_work_off_the_main_thread():
    import signal
    import threading

    from agents.shared.processes import interrupts_deferred

    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            done.append("block")
    assert done == ["block"]
    with interrupts_deferred(reraise=False) as caught:  # the caller decides: the work was done
        signal.raise_signal(signal.SIGINT)
    assert caught == [signal.SIGINT]
    thread = threading.Thread(target=lambda: done.append(interrupts_deferred().__enter__()))
    thread.start()
    thread.join()
    assert done == ["block", []]


def test_odd_zip_contents_are_clear_errors(tiny_zip, tmp_path):
    data = json.loads(zipfile.ZipFile(tiny_zip).read("data"))
    data["policy_kwargs"]["activation_fn"] = ["not", "a", "name"]
    odd_activation = rewrite_zip(tiny_zip, tmp_path / "a.zip", {"data": json.dumps(data).encode()})
    buffer = io.BytesIO()
    torch.save({"mlp_extractor.policy_net.0.weight": torch.zeros(2, 2, dtype=torch.bfloat16)}, buffer)
    odd_dtype = rewrite_zip(tiny_zip, tmp_path / "b.zip", {"policy.pth": buffer.getvalue()})
    not_json = rewrite_zip(tiny_zip, tmp_path / "c.zip", {"data": b"\xff\xfe not json"})
    for path in (odd_activation, odd_dtype, not_json):
        with pytest.raises(CheckpointError):
            agents.make(str(path))


# ---------------------------------------------------------------- policy files that pass naive checks


def npy_bytes(header: dict, data: bytes) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


def npz_with(path: Path, weights: dict[str, np.ndarray], extra: dict[str, bytes]) -> Path:
    """An .npz of ``weights`` plus raw members ``extra`` (name -> bytes), stored as given."""
    save_npz(path, weights)
    with zipfile.ZipFile(path, "a") as archive:
        for name, content in extra.items():
            archive.writestr(name, content)
    return path


def test_a_member_that_is_not_an_array_is_refused(tmp_path):
    weights = small_weights()
    del weights["b0"]
    path = npz_with(tmp_path / "odd.npz", weights, {"b0": b"not an array"})
    with pytest.raises(CheckpointError, match="member 'b0' is not an .npy array"):
        agents.make(str(path))


def test_a_declared_shape_larger_than_the_file_is_refused_before_allocation(tmp_path):
    weights = small_weights()
    del weights["b0"]
    huge = npy_bytes({"descr": "<f4", "fortran_order": False, "shape": (2**40,)}, b"\0" * 16)  # 4 TiB declared
    path = npz_with(tmp_path / "huge.npz", weights, {"b0.npy": huge})
    with pytest.raises(CheckpointError, match=r"array 'b0' declares shape \(1099511627776,\) of float32 \(4,398,"):
        agents.make(str(path))


def test_the_arrays_of_a_file_are_capped_in_bytes(tmp_path):
    from agents.shared.npz_file import NpzError, read_npz

    path = save_npz(tmp_path / "zeros.npz", {"a": np.zeros(1000), "b": np.zeros(1000)})
    assert set(read_npz(path, 16_000)) == {"a", "b"}
    with pytest.raises(NpzError, match="the arrays take more than 15,999 bytes"):
        read_npz(path, 15_999)


@pytest.mark.parametrize(
    "value, dtype, message",
    [
        (1e300, np.float64, "beyond float32's range"),  # finite in float64, infinite in float32
        (3e38, np.float32, "may overflow float32"),  # finite, but a forward pass reaches infinity
    ],
)
def test_weights_that_overflow_in_float32_are_refused_at_load(tmp_path, value, dtype, message):
    weights = small_weights()
    weights["w0"] = np.full(weights["w0"].shape, value, dtype=dtype)
    with pytest.raises(CheckpointError, match=f"w0.*{message}"):
        agents.make(str(save_npz(tmp_path / "big.npz", weights)))


def test_real_policies_pass_the_overflow_bound():
    assert agents.make("pretrained").act(first_observation()) in range(N_ACTIONS)


def test_non_finite_logits_are_named_as_such():
    from agents.policy import choose

    masks = np.zeros((1, N_ACTIONS), dtype=np.int8)
    masks[0, 3] = 1
    with pytest.raises(ValueError, match="logits of legal actions are NaN or infinite"):
        choose(np.full((1, N_ACTIONS), np.inf), masks, None)
    with pytest.raises(ValueError, match="no legal action in the mask"):
        choose(np.zeros((1, N_ACTIONS)), np.zeros((1, N_ACTIONS), dtype=np.int8), None)
