"""Input layout 4: the advised input followed by the deal's public history, read back from the
observation; a layout-3 network widened to it plays the same; policy files and configs take it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agents
from agents.features import (
    ADVISED_SIZE, COMPACT_SIZE, HISTORY_PIECES, HISTORY_SIZE, MOST_TRICK_NUMBER, batch_advised_input, batch_history_input,
    history_input,
)
from agents.policy import (
    ADVISED_LAYOUT, COMPACT_LAYOUT, HISTORY_LAYOUT, POLICY_INPUTS, PolicyBot, batch_inputs, load_weights,
    save_weights, widen,
)
from allfours_env import decode
from allfours_env.cards import N_CARDS, N_SEATS, cards_of
from train.config import ConfigError, init_weights

from .test_features import positions

STUDENT = Path(agents.__file__).parent / "pretrained" / "student_v3.npz"


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    """Every seat's view of random matches (all phases, rule variants); the rows with a choice to make."""
    observations, masks = positions(6, seed=60)
    acting = masks.any(axis=1)
    return observations[acting], masks[acting]


def expected_history(observation: np.ndarray) -> dict[str, np.ndarray]:
    """The history pieces of one observation, from its decoded view."""
    view = decode(observation)
    out = {name: np.zeros(size, np.float32) for name, size in HISTORY_PIECES}
    for seat, bits in enumerate(view.played_bits):
        for card in cards_of(bits):
            out["played"][seat * N_CARDS + card] = 1.0
            out["trick_of_card"][card] = np.float32(view.trick_numbers >> 4 * card & 0xF) / np.float32(MOST_TRICK_NUMBER)
    out["led"][cards_of(view.led_bits)] = 1.0
    for seat, card in view.table.items():
        out["table_by_seat"][seat * N_CARDS + card] = 1.0
    out["kicks_aside"][view.kicks_aside] = 1.0
    return out


def test_the_history_input_is_the_advised_input_then_the_decks_public_history(sample) -> None:
    observations, masks = sample
    got = batch_history_input(observations, masks)
    assert got.shape == (len(observations), HISTORY_SIZE) and got.dtype == np.float32
    np.testing.assert_array_equal(got[:, :ADVISED_SIZE], batch_advised_input(observations, masks))
    assert 0.0 <= got[:, ADVISED_SIZE:].min() and got[:, ADVISED_SIZE:].max() <= 1.0  # (policy inputs lie in [-1, 1])
    for i in range(len(observations)):
        start = ADVISED_SIZE
        for name, want in expected_history(observations[i]).items():
            np.testing.assert_array_equal(got[i, start : start + len(want)], want, err_msg=f"row {i}: {name}")
            start += len(want)
    for i in range(0, len(observations), 53):  # one row as a batch of many
        np.testing.assert_array_equal(history_input(observations[i], masks[i]), got[i])
    # the sample reaches what the pieces describe: later tricks, a trick under way, kicks set aside
    views = [decode(o) for o in observations]
    assert max(max(v.trick_numbers >> 4 * c & 0xF for c in range(N_CARDS)) for v in views) >= 6
    assert any(len(v.table) == N_SEATS - 1 for v in views) and any(v.kicks_aside_bits for v in views)


def test_a_widened_network_gives_the_same_logits_and_actions(sample) -> None:
    observations, masks = sample
    original = PolicyBot(load_weights(STUDENT))
    assert original.layout == ADVISED_LAYOUT
    widened = PolicyBot(widen(original.weights(), HISTORY_LAYOUT))
    assert widened.layout == HISTORY_LAYOUT and widened.weights()["w0"].shape == (HISTORY_SIZE, 256)
    before = original.logits(batch_inputs(ADVISED_LAYOUT, observations, masks))
    after = widened.logits(batch_inputs(HISTORY_LAYOUT, observations, masks))
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-4)  # (only the sums' order differs)
    np.testing.assert_array_equal(widened.act_batch(observations, masks), original.act_batch(observations, masks))
    assert widen(widened.weights(), HISTORY_LAYOUT) is not None  # a network of the layout already: itself


def test_only_a_layout_the_new_one_begins_with_widens() -> None:
    weights = load_weights(STUDENT)
    with pytest.raises(ValueError, match="input layout 3 cannot be made one of layout 2"):
        widen(weights, COMPACT_LAYOUT)
    compact = {**weights, "w0": weights["w0"][:COMPACT_SIZE], "obs_layout": np.array(COMPACT_LAYOUT)}  # (a layout-2 shape)
    with pytest.raises(ValueError, match=r"input layout 2 cannot be made one of layout 4 \(it can be widened to no layout"):
        widen(compact, HISTORY_LAYOUT)


def test_a_policy_file_of_the_history_layout_plays_through_agents_make(sample, tmp_path: Path) -> None:
    observations, masks = sample
    path = tmp_path / "history.npz"
    save_weights(widen(load_weights(STUDENT), HISTORY_LAYOUT), path)
    bot = agents.make(str(path))
    assert isinstance(bot, PolicyBot) and bot.layout == HISTORY_LAYOUT
    one = [bot.act({"observation": o, "action_mask": m}) for o, m in zip(observations[:40], masks[:40])]
    assert one == list(agents.make(str(STUDENT)).act_batch(observations[:40], masks[:40]))


def test_a_config_names_the_history_input_and_widens_its_init_policy() -> None:
    assert POLICY_INPUTS["history"] == HISTORY_LAYOUT
    weights = init_weights(str(STUDENT), HISTORY_LAYOUT, [256, 256])
    assert int(weights["obs_layout"]) == HISTORY_LAYOUT and not weights["w0"][ADVISED_SIZE:].any()
    with pytest.raises(ConfigError, match="has input layout 3, layers"):
        init_weights(str(STUDENT), COMPACT_LAYOUT, [256, 256])
