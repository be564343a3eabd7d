"""Positions for checking that a seat's view hides the other hands."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np

from allfours_env import Rules
from allfours_env.engine import Game


def mid_play_game() -> Game:
    """A seeded game a few decisions into the first trick."""
    game = Game(Rules(), np.random.default_rng(3))
    for _ in range(7):
        game.step(game.legal_actions()[0])
    return game


def hidden_swaps(game: Game, observer: int) -> Iterator[Game]:
    """Copies of ``game`` in which an unplayed card has swapped between two hands the observer cannot
    see: the two opponents, then an opponent and the partner."""
    for a, b in (((observer + 1) % 4, (observer + 3) % 4), ((observer + 1) % 4, (observer + 2) % 4)):
        swapped = copy.deepcopy(game)
        ca, cb = game.hand(a)[0], game.hand(b)[-1]
        swapped.hands[a] ^= 1 << ca | 1 << cb
        swapped.hands[b] ^= 1 << ca | 1 << cb
        assert swapped.hands != game.hands
        yield swapped
