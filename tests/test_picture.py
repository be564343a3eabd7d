"""The picture renderer (render_mode="rgb_array"): shape, what it shows, what it hides, recording a match."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import allfours_env
from allfours_env import decode
from allfours_env.engine import Game
from allfours_env.observation import encode
from allfours_env.picture import FRAME_SHAPE, hand_counts, render_picture
from tests.hidden_hands import hidden_swaps, mid_play_game, swapped_cards

SAMPLE_EVERY = 9  # render every Nth step of a match: enough to meet every phase, and fast


def picture(game: Game, seat: int) -> np.ndarray:
    return render_picture(decode(encode(game, seat)), seat)


def random_step(env, rng: np.random.Generator) -> None:
    obs, _, term, trunc, _ = env.last()
    env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_frame_shape_documented():
    assert FRAME_SHAPE == (720, 960, 3)
    doc = importlib.import_module("allfours_env.env").__doc__
    assert '"rgb_array"' in doc and "uint8[720, 960, 3]" in doc
    assert "rgb_array" in allfours_env.raw_env.metadata["render_modes"]


def test_rgb_array_at_every_sampled_step_of_a_match():
    env = allfours_env.env(render_mode="rgb_array", target_score=7)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    phases = set()
    for step, _ in enumerate(env.agent_iter()):
        if step % SAMPLE_EVERY == 0:
            frame = env.render()
            assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == FRAME_SHAPE
            game = env.unwrapped.game
            seat = max(game.current, 0)
            view = decode(encode(game, seat))
            phases.add(view.phase)
            assert hand_counts(view) == tuple(game.hands[(seat + r) % 4].bit_count() for r in range(4))
        random_step(env, rng)
    assert env.render().shape == FRAME_SHAPE  # the match is over
    assert {"stand_or_beg", "play"} <= phases


def test_picture_differs_when_the_hand_to_act_differs():
    game = Game(allfours_env.Rules(), np.random.default_rng(4))
    seat = game.current
    other = (seat + 1) % 4
    swapped = swapped_cards(game, seat, other, game.hand(seat)[0], game.hand(other)[0])
    assert not np.array_equal(picture(swapped, seat), picture(game, seat))


def test_picture_hides_other_hands():
    """Swapping two unplayed cards between two other players' hands leaves the picture unchanged."""
    game = mid_play_game()
    observer = game.current
    before = picture(game, observer)
    for swapped in hidden_swaps(game, observer):
        np.testing.assert_array_equal(picture(swapped, observer), before)


def test_a_whole_match_records_as_frames():
    env = allfours_env.env(render_mode="rgb_array", target_score=7)
    env.reset(seed=8)
    rng = np.random.default_rng(8)
    frames = []
    for _ in env.agent_iter():
        frames.append(env.render())
        random_step(env, rng)
    frames.append(env.render())
    video = np.stack(frames)
    assert video.shape == (len(frames), *FRAME_SHAPE) and video.dtype == np.uint8
    assert len({f.tobytes() for f in frames[::10]}) > 1


def test_missing_pillow_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.delitem(sys.modules, "allfours_env.picture")
    with pytest.raises(ImportError, match="pip install pillow"):
        importlib.import_module("allfours_env.picture")


@pytest.mark.parametrize("render_seat", [None, 0, 3])
def test_render_seat_fixes_the_viewpoint_or_follows_the_seat_to_act(render_seat):
    """A fixed render_seat draws that seat at every decision (a recording does not turn);
    the default draws the seat to act, as before."""
    env = allfours_env.env(render_mode="rgb_array", render_seat=render_seat, target_score=7)
    env.reset(seed=6)
    rng = np.random.default_rng(6)
    drawn_for = set()
    for step, _ in enumerate(env.agent_iter()):
        game = env.unwrapped.game
        if step % SAMPLE_EVERY == 0 and not game.is_over:
            seat = game.current if render_seat is None else render_seat
            expected = render_picture(decode(encode(game, seat)), seat, f"player_{game.current} to act")
            np.testing.assert_array_equal(env.render(), expected)
            drawn_for.add(seat)
        random_step(env, rng)
    assert len(drawn_for) > 1 if render_seat is None else drawn_for == {render_seat}
