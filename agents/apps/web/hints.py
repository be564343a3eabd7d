"""Hints: what ``expert`` and ``search`` would play, and the searched value of each legal action.

Everything comes from one seat's observation (what that seat may know): the expert's choice is
its ``act``; the values are :meth:`agents.search.SearchBot.search`'s, the estimator the review
(:mod:`agents.apps.review`) uses too: over worlds sampled from :meth:`agents.search.Position.from_view`,
averaged per action, the chance to win the match after that action, the rest of the deal played
by the expert in every world. Search's own choice is the
best of those values, but the expert's choice unless another beats it by more than the bot's
``margin``, as :class:`~agents.search.SearchBot` decides.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...base import Observation, legal_actions
from ...expert import ExpertBot
from ...search import DEFAULT_WORLDS, SearchBot
from .views import action_label


class Hinter:
    """An expert and a search bot of one match (seeded, so a hint is repeatable for that match)."""

    def __init__(self, seed: int) -> None:
        self.expert = ExpertBot()
        self.search = SearchBot(worlds=DEFAULT_WORLDS, ms=0, seed=seed)

    def hint(self, observation: Observation) -> dict[str, Any]:
        """The hint for the seat whose observation this is (it must be the seat to act)."""
        start = time.perf_counter()
        legal = legal_actions(observation)
        expert = int(self.expert.act(observation))
        if len(legal) == 1:
            values = np.ones(1)  # no choice: nothing to search (sent as null)
            search, worlds = expert, 0
        else:
            values = self.search.search(observation).values
            best, kept = int(np.argmax(values)), int(np.flatnonzero(legal == expert)[0])
            search = int(legal[best]) if values[best] - values[kept] > self.search.margin else expert
            worlds = self.search.worlds
        return {
            "expert": {"action": expert, "label": action_label(expert)},
            "search": {"action": search, "label": action_label(search)},
            "values": [
                {"action": int(a), "label": action_label(int(a)), "value": round(float(v), 4) if worlds else None}
                for a, v in sorted(zip(legal, values), key=lambda item: -item[1])
            ],
            "worlds": worlds,
            "margin": self.search.margin,
            "ms": round(1000 * (time.perf_counter() - start), 1),
        }
