"""``oracle``: the search of :mod:`agents.search` seeing the other three hands, a ceiling for evaluation.

It is not a player. Every bot of the ladder decides from its own observation; the oracle also
reads the four hands (``observation["hands"]``, which only evaluation gives, to a bot whose
``sees_hands`` is true: :func:`allfours_env.match.with_hands`), so its worlds are the true deal:
every seat holds what it really holds, and only the stock (the cards a run would deal, the next
kicks) is drawn at random. Each legal action is then played out as search plays it out, every
seat of the rollouts by the expert from what that seat knows, and the action with the best mean
chance to win the match is taken (no margin: it keeps no one's choice). In the play of the cards
the stock cannot matter to the rest of the deal, and the expert's rollouts are deterministic, so
one world is searched; at a bid (stand / beg, give one / run), where a run deals from the stock,
``worlds`` are (default 32).

What the oracle measures is how much of the game a player loses by not seeing the cards: its
margin over a bot is an upper reference for what any player reading the table could take, not
a bound (the rollouts are the expert's, so a player better than the expert in the rest of the
deal could, in principle, still beat it somewhere). It cannot be seated where a person plays
(the terminal and the web page refuse it) and it is no opponent model for search.
"""

from __future__ import annotations

import numpy as np

from allfours_env.actions import STAND
from allfours_env.match import Observation

from .search import DEFAULT_ROLLOUT, Position, SearchBot, world_deck

DEFAULT_ORACLE_WORLDS = 32


class OracleBot(SearchBot):
    """The search that sees every hand (see the module docstring); for evaluation only."""

    name = "oracle"
    sees_hands = True

    def __init__(self, worlds: int = DEFAULT_ORACLE_WORLDS, rollout: str = DEFAULT_ROLLOUT, seed: int | None = None):
        super().__init__(worlds=worlds, ms=0, rollout=rollout, margin=0.0, seed=seed)
        self._hands: tuple[int, ...] = ()

    def act(self, observation: Observation) -> int:
        hands = observation.get("hands")
        if hands is None:
            raise ValueError(
                "bot 'oracle' sees every hand, and only evaluation shows them to it (python -m eval, "
                "eval.evaluate): it is a ceiling to measure players against, not a player"
            )
        self._hands = tuple(int(h) for h in hands)
        return super().act(observation)

    def evaluate(self, position: Position, actions: np.ndarray, n_worlds: int) -> np.ndarray:
        bidding = actions.max() >= STAND  # a run may deal from the stock; in the play it cannot matter
        return super().evaluate(position, actions, n_worlds if bidding else 1)

    def sample_decks(self, position: Position, n_worlds: int, runs_drawn: bool = False) -> list[list[int]]:
        """The true deal ``n_worlds`` times, each with the stock shuffled anew."""
        return [world_deck(position, self._hands, self._rng, runs_drawn) for _ in range(n_worlds)]
