"""Positions for checking that a seat's view hides the other hands."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np

from allfours_env import Rules
from allfours_env.engine import Game
from allfours_env.vector_kernels import HAND


def mid_play_game() -> Game:
    """A seeded game a few decisions into the first trick."""
    game = Game(Rules(), np.random.default_rng(3))
    for _ in range(7):
        game.step(game.legal_actions()[0])
    return game


def swapped_cards(game: Game, a: int, b: int, card_a: int, card_b: int) -> Game:
    """A copy of ``game`` in which seat ``a``'s ``card_a`` and seat ``b``'s ``card_b`` changed hands
    (written into the engine's state: no rule deals such a position, the tests need it)."""
    swapped = copy.deepcopy(game)
    bits = np.uint64(1 << card_a | 1 << card_b)
    swapped._core._bs[0, HAND + a] ^= bits
    swapped._core._bs[0, HAND + b] ^= bits
    assert swapped.hands != game.hands
    return swapped


def hidden_swaps(game: Game, observer: int) -> Iterator[Game]:
    """Copies of ``game`` in which an unplayed card has swapped between two hands the observer cannot
    see: the two opponents, then an opponent and the partner."""
    for a, b in (((observer + 1) % 4, (observer + 3) % 4), ((observer + 1) % 4, (observer + 2) % 4)):
        yield swapped_cards(game, a, b, game.hand(a)[0], game.hand(b)[-1])
