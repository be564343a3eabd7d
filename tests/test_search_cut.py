"""Search's value cut (``search:cut=N``, agents/search.py; the value network of agents/values.py):
a cut at or after the deal's last trick is the full rollout, an earlier one is the network's
value, and bad options are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agents
from agents.policy import CheckpointError
from agents.search import Position, SearchBot
from agents.values import INPUTS, VALUE_V1, load_value, save_value
from allfours_env import decode
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules


def play_positions(seed: int, rules: Rules | None = None):
    """(observation, cards in the hand of the seat to act) at every play decision of an expert match."""
    game = Game(rules or Rules(), np.random.default_rng(seed))
    expert = agents.make("expert")
    while not game.is_over:
        observation, mask = encode_with_mask(game, game.current)
        asked = {"observation": observation, "action_mask": mask}
        view = decode(observation)
        if view.phase == "play":
            yield asked, view.hand_bits.bit_count()
        game.step(expert.act(asked))


def constant_value(path: Path, chance_logit: float = 0.0) -> Path:
    """A value file whose network says the same chance everywhere (zero weights, a bias)."""
    hidden = {"w0": np.zeros((INPUTS, 4), np.float32), "b0": np.zeros(4, np.float32)}
    save_value({**hidden, "w_out": np.zeros((4, 1), np.float32), "b_out": np.full(1, chance_logit, np.float32)}, path)
    return path


def outcomes(bot: SearchBot, asked: dict, seed: int) -> np.ndarray:
    bot.reset(seed)
    legal = np.flatnonzero(asked["action_mask"])
    return bot.outcomes(Position.from_view(decode(asked["observation"])), legal, 8)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_value_cut_on_the_last_trick_equals_the_full_rollout(seed: int) -> None:
    """A cut after as many tricks as the seat holds cards falls at the end of the deal's last
    trick: the deal is over first, and every value and point is the full rollout's, exactly."""
    full, seen, earlier_differ = SearchBot(ms=0), 0, 0
    for k, (asked, in_hand) in enumerate(play_positions(seed)):
        if in_hand > 3:
            continue
        whole = outcomes(full, asked, k)
        assert np.array_equal(outcomes(SearchBot(ms=0, cut=in_hand), asked, k), whole)
        if in_hand > 1:  # a trick earlier the network values what is left
            earlier_differ += not np.array_equal(outcomes(SearchBot(ms=0, cut=in_hand - 1), asked, k)[0], whole[0])
        seen += 1
    assert seen >= 10 and earlier_differ >= 3


def test_an_earlier_cut_is_the_value_networks(tmp_path: Path) -> None:
    """Before the last trick the rollouts stop at the cut and take the network's value: with a
    network that says 0.5 everywhere, every action of an early trick is worth 0.5."""
    half = str(constant_value(tmp_path / "half.npz"))
    bot, checked = SearchBot(ms=0, cut=1, value=half), 0
    for k, (asked, in_hand) in enumerate(play_positions(3)):
        if in_hand < 4:
            continue
        assert np.all(outcomes(bot, asked, k)[0] == 0.5)
        checked += 1
    assert checked >= 5


def test_the_value_is_the_seats_team_turned_to_the_searchers(tmp_path: Path) -> None:
    """The network values the seat to act's team; a seat of the other team to act after the cut
    gives the searcher one minus it."""
    sure = str(constant_value(tmp_path / "sure.npz", chance_logit=50.0))  # "the seat to act's team wins"
    bot = SearchBot(ms=0, cut=1, value=sure)
    asked, _ = next((a, n) for a, n in play_positions(4) if n >= 4)
    values = outcomes(bot, asked, 0)[0]
    assert set(np.unique(values)) <= {0.0, 1.0} and 0.0 < values.mean() < 1.0  # trick winners of both teams


def test_the_shipped_value_network_loads_and_plays() -> None:
    net = load_value(VALUE_V1)
    assert VALUE_V1.stat().st_size < 2 * 2**20
    bot = agents.make("search:worlds=8,ms=0,cut=1")
    for k, (asked, _) in enumerate(play_positions(5)):
        if k >= 6:
            break
        bot.reset(k)
        assert asked["action_mask"][bot.act(asked)]
        assert 0.0 <= bot.last_search.values.min() <= bot.last_search.values.max() <= 1.0
    assert net is not None


@pytest.mark.parametrize(
    "options, message",
    [
        ({"cut": -1}, "cut must be the tricks after which a rollout is valued, 1..12, or 0"),
        ({"cut": 13}, "cut must be"),
        ({"cut": True}, "cut must be"),
        ({"value": "x.npz"}, "value needs cut"),
        ({"cut": 1, "value": "x.txt"}, r"value must be a value file \(.npz"),
        ({"cut": 1, "opponents": "expert"}, "cut and opponents are not taken together"),
    ],
)
def test_bad_cut_options_say_what_is_allowed(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SearchBot(ms=0, **options)


def test_a_file_that_is_not_a_value_network_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no value file"):
        SearchBot(ms=0, cut=1, value=str(tmp_path / "missing.npz"))
    policy = str(Path(agents.__file__).parent / "pretrained" / "student_v2.npz")
    with pytest.raises(CheckpointError, match="not a value network"):
        SearchBot(ms=0, cut=1, value=policy)
    np.savez(tmp_path / "nan.npz", format=np.array("allfours-value-v1"), w0=np.full((INPUTS, 2), np.nan, np.float32),
             b0=np.zeros(2, np.float32), w_out=np.zeros((2, 1), np.float32), b_out=np.zeros(1, np.float32))  # fmt: skip
    with pytest.raises(CheckpointError, match="w0 holds NaN or infinite values"):
        SearchBot(ms=0, cut=1, value=str(tmp_path / "nan.npz"))
