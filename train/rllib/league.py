"""Self-play with a league: who plays which seat, and the frozen snapshots.

Modules: ``main`` (trained) and ``league_0 .. league_{n-1}`` (frozen: not in
``policies_to_train``). Seats share a module per team (seats 0 and 2 one, 1 and 3 the other).
In each match :class:`SeatPlan` draws which team ``main`` plays (so seats are swapped between
matches) and who plays the other team: ``main`` itself with probability ``self_play``, else a
league snapshot drawn uniformly. The league starts as copies of the initial ``main``; every
``snapshot_every`` environment steps :class:`LeagueCallback` copies ``main`` over the oldest
snapshot, on the learner and on every env runner.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

from .env import team_of

MAIN = "main"
PLANS_KEPT = 4096  # plans of recent matches kept per process (far more than run at once)
N_TEAMS = 2


def league_ids(size: int) -> list[str]:
    return [f"league_{i}" for i in range(size)]


class SeatPlan:
    """RLlib's ``policy_mapping_fn``: one plan per match (episode), drawn from a seeded generator."""

    def __init__(self, seed: int, self_play: float, league_size: int):
        self.rng = np.random.default_rng(seed)
        self.self_play = self_play
        self.league = league_ids(league_size)
        self._plans: OrderedDict[str, tuple[int, str]] = OrderedDict()

    def plan(self, episode_id: str) -> tuple[int, str]:
        """(the team ``main`` plays, the module of the other team) for one match."""
        if episode_id not in self._plans:
            main_team = int(self.rng.integers(N_TEAMS))
            opponent = MAIN if self.rng.random() < self.self_play else self.league[self.rng.integers(len(self.league))]
            self._plans[episode_id] = (main_team, opponent)
            if len(self._plans) > PLANS_KEPT:
                self._plans.popitem(last=False)
        return self._plans[episode_id]

    def __call__(self, agent_id: int, episode: Any, **kwargs: Any) -> str:
        main_team, opponent = self.plan(episode.id_)
        return MAIN if team_of(agent_id) == main_team else opponent


def copy_main_to(algorithm: Any, slots: list[str]) -> None:
    """Overwrite the modules ``slots`` with ``main``'s weights, on the learner and the env runners."""
    main = algorithm.learner_group.get_weights(module_ids=[MAIN])[MAIN]
    algorithm.learner_group.set_weights({slot: main for slot in slots})
    algorithm.env_runner_group.sync_weights(
        policies=slots, from_worker_or_learner_group=algorithm.learner_group, inference_only=True, timeout_seconds=None
    )


class LeagueCallback(RLlibCallback):
    """Fills the league at the start and refreshes one snapshot every ``snapshot_every`` steps.

    RLlib builds callbacks without arguments: :func:`league_callback` binds the settings.
    """

    snapshot_every = 1
    league_size = 1

    def on_algorithm_init(self, *, algorithm: Any, **kwargs: Any) -> None:
        copy_main_to(algorithm, league_ids(self.league_size))

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        steps = int(result[NUM_ENV_STEPS_SAMPLED_LIFETIME])
        before = steps - int(result["env_runners"]["num_env_steps_sampled"])
        taken = steps // self.snapshot_every  # snapshots due so far; stateless, so resume needs nothing
        if taken > before // self.snapshot_every:
            slot = league_ids(self.league_size)[(taken - 1) % self.league_size]
            copy_main_to(algorithm, [slot])
            result["league_snapshot"] = slot


def league_callback(snapshot_every: int, league_size: int) -> type[LeagueCallback]:
    settings = {"snapshot_every": snapshot_every, "league_size": league_size}
    return type("BoundLeagueCallback", (LeagueCallback,), settings)
