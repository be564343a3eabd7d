"""A ``Game`` (a one-table view) that steps a separate one-table ``VectorGame`` beside it and checks they agree.

After construction and after every step, :class:`MirroredGame` compares what a player or trainer
can see of both engines: the seat to act, the legal actions, every seat's observation, the
scores, the end of the match and the points each team gained in the step. An action the scalar
engine refuses must be refused by the vector engine too, leaving it unchanged. Dropped in for
``Game`` (the scenario tests run through it), it checks the vector engine on every position
they build.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.engine import AWARD_KINDS, DEAL_OVER, N_ACTIONS, Game, IllegalActionError, first_dealer
from allfours_env.observation import encode
from allfours_env.rules import DEFAULT_RULES
from allfours_env.vector import VectorGame

EXTRA_DECKS = 40  # decks drawn ahead from the scalar game's generator for the later deals


def scalar_mask(game: Game) -> np.ndarray:
    bits = game.legal_bits()
    return np.array([bits >> a & 1 for a in range(N_ACTIONS)], dtype=bool)


def award_points(game: Game, since: int) -> np.ndarray:
    points = np.zeros(2, dtype=np.int64)
    for event in game.events[since:]:
        if event.points and event.kind in AWARD_KINDS:
            points[event.team] += event.points
    return points


class MirroredGame(Game):
    def __init__(self, rules=DEFAULT_RULES, rng=None, *, decks=None, dealer=None, scores=None, episode="match"):
        ahead = copy.deepcopy(rng)
        super().__init__(rules, rng, decks=decks, dealer=dealer, scores=scores, episode=episode)
        # The decks the scalar game will deal: the given ones, then its generator's, drawn ahead
        # from a copy (after the draw of the first dealer, as the engine does).
        given = [list(d) for d in (decks or [])]
        if ahead is not None:
            if dealer is None and not isinstance(rules.first_dealer, int):
                first_dealer(rules.first_dealer, lambda: ahead.permutation(N_CARDS))
            given += [ahead.permutation(N_CARDS).tolist() for _ in range(EXTRA_DECKS)]
        self.vector = VectorGame(1, episode=episode, **dataclasses.asdict(rules))
        self.vector.reset(options=[{"decks": given, "dealer": self.dealer, "scores": scores}])
        self._seen = 0
        self.compare(self.vector._points[0])

    def step(self, action) -> None:
        if self.phase >= DEAL_OVER:
            super().step(action)  # raises: nothing to mirror
        try:
            super().step(action)
        except IllegalActionError:
            before = self.vector._st.copy(), self.vector._bs.copy()
            try:
                self.vector.step(np.array([action]))
            except ValueError:
                pass
            else:
                raise AssertionError(f"the vector engine accepted the illegal action {action!r}") from None
            assert (self.vector._st == before[0]).all() and (self.vector._bs == before[1]).all()
            raise
        self.compare(self.vector.step(np.array([action], dtype=np.int64))[0])

    def compare(self, points: np.ndarray) -> None:
        vg = self.vector
        assert vg.current[0] == self.current, (vg.current[0], self.current)
        assert vg.is_over[0] == self.is_over
        assert vg.scores[0].tolist() == self.scores
        assert (points == award_points(self, self._seen)).all(), (points, award_points(self, self._seen))
        self._seen = len(self.events)
        assert (vg.legal_mask()[0] == scalar_mask(self)).all()
        for seat in range(N_SEATS):
            assert (vg.observe(np.array([seat]))[0] == encode(self, seat)).all(), f"observation of seat {seat}"
