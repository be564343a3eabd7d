"""Boards: a board id fixes the decks and the first dealer of a duplicate pair of matches.

A board is a non-negative int. Everything random about it is derived from
``numpy.random.SeedSequence([EVAL_NAMESPACE, board])`` and from nothing else:

* the decks: the match's engine gets a generator seeded from the board and a fixed first
  dealer, so its k-th deal is always the k-th permutation of that generator (the engine uses
  its generator only for shuffles once the dealer is given). Both matches of a board therefore
  see the same sequence of decks, whatever the bots do;
* the first dealer (a seat 0..3), unless the ``first_dealer`` rule names a seat;
* the seed passed to ``bot.reset(seed)`` for each seat, the same in both matches: the bot
  holding a given hand uses the same seed in both, so two copies of a randomized bot mirror
  each other exactly and their board pairs always split.

Evaluation boards must never be seeds that training also uses. Training code must therefore
derive its randomness from another namespace, e.g. ``SeedSequence([TRAIN_NAMESPACE, i])`` with
its own constant, or from plain integer seeds below 2**32 (their entropy words can never equal
those of ``[EVAL_NAMESPACE, board]``, whose second word is non-zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allfours_env.cards import N_SEATS
from allfours_env.rules import Rules

# The eval namespace: first entropy word(s) of every board's SeedSequence. Never use it in training.
EVAL_NAMESPACE = 0xA11F_0025_E7A1_0001

# Each board is played twice: match 0 with bot A on team 0 (seats 0, 2), match 1 with A on team 1.
MATCHES_PER_BOARD = 2


@dataclass(frozen=True)
class Board:
    """The randomness of one board: decks, first dealer and bot seeds."""

    board: int
    dealer: int
    deck_seed: np.random.SeedSequence
    bot_seeds: tuple[int, ...]  # bot_seeds[seat], for both matches

    def deck_rng(self) -> np.random.Generator:
        """A fresh generator for the decks; each match of the board gets an identical one."""
        return np.random.default_rng(self.deck_seed)


def make_board(board: int, rules: Rules) -> Board:
    """The :class:`Board` of id ``board`` (>= 0). A ``first_dealer`` rule naming a seat wins."""
    if isinstance(board, bool) or not isinstance(board, int | np.integer) or board < 0:
        raise ValueError(f"a board id is a non-negative integer, got {board!r}")
    deck_seed, other = np.random.SeedSequence([EVAL_NAMESPACE, int(board)]).spawn(2)
    words = other.generate_state(1 + N_SEATS, dtype=np.uint64)
    dealer = rules.first_dealer if isinstance(rules.first_dealer, int) else int(words[0] % N_SEATS)
    return Board(int(board), dealer, deck_seed, tuple(int(w) for w in words[1:]))
