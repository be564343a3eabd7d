"""The league: who plays the other team against the learner, for the SB3 and RLlib backends alike.

A :class:`League` is the vector env's opponent source (a function ``rng -> bot``,
:mod:`allfours_env.gym_vector`): when a table starts a match it draws, from the table's
generator, an opponent with the configured weights: ``self``, the current policy; ``snapshot``,
one of the newest ``max_snapshots`` frozen copies of it, uniformly (the current policy before
the first); or any other key, a bot name for ``agents.make``. Networks are batch bots: every
table that drew the same network moves in one forward pass a tick
(:class:`agents.policy.PolicyBot`'s, in numpy), sampling its action from the masked softmax with
the league's own generator.

The trainer sends the current weights after every update (:meth:`League.update`) and, every
``snapshot_every`` steps, with ``snapshot=True``: the copy takes the place of the oldest
snapshot (a table that drew that one plays the newer copy from its next decision on). The
league names the bots it hands out (:meth:`League.key`, :meth:`League.bot`) for the env's
checkpoints, and keeps its networks and generator in :meth:`League.get_state`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import agents
from agents.policy import POLICY_INPUTS, PolicyBot, Weights, batch_inputs, choose
from allfours_env.checks import count, keys

from train.config import SELF, SNAPSHOT
from train.run_folder.state_checks import generator_state, weights_like

STATE_KEYS = ("current", "snapshots", "taken", "rng")  # of get_state()
MAX_TAKEN = 2**62  # snapshots taken in a run (at most one per update)


class NetworkBot:
    """One of the league's networks: a batch bot sampling from its masked softmax (``act_batch``)."""

    def __init__(self, league: League, key: str):
        self.league, self.key, self.name = league, key, f"league {key}"
        self.weights: Weights | None = None
        self.policy: PolicyBot | None = None

    def set_weights(self, weights: Weights) -> None:
        policy = PolicyBot(weights, name=self.name)
        if policy.layout not in POLICY_INPUTS.values():
            raise ValueError(f"the league plays policies of the input layouts a config names: {POLICY_INPUTS}")
        self.weights, self.policy = weights, policy

    def reset(self, seed: int | None = None) -> None:
        """Shared by every table that drew it: its draws come from the league's generator."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.policy is None:
            raise RuntimeError("the league has no weights yet: call update() with the learner's weights first")
        logits = self.policy.logits(batch_inputs(self.policy.layout, observations, masks))
        return choose(logits, masks, self.league.rng.random(len(observations)))


class League:
    """See the module docstring. ``weights``: draw weights by opponent key; ``seed``: the networks' samples."""

    def __init__(self, weights: dict[str, float], max_snapshots: int, seed: int):
        self.names = list(weights)
        total = sum(weights.values())
        self.probs = np.array([weights[name] / total for name in self.names])
        self.rng = np.random.default_rng(seed)
        self.current = NetworkBot(self, SELF)
        self.snapshots = [NetworkBot(self, f"{SNAPSHOT}:{slot}") for slot in range(max_snapshots)]
        self.taken = 0  # snapshots taken so far; the newest is in slot (taken - 1) % max_snapshots
        self._bots = {name: self._fresh(name) for name in self.names if name not in (SELF, SNAPSHOT)}  # fail now

    def update(self, weights: Weights, snapshot: bool = False) -> None:
        """The learner's current weights; with ``snapshot``, also kept as the newest snapshot."""
        self.current.set_weights(weights)
        if snapshot:
            self.snapshots[self.taken % len(self.snapshots)].set_weights(weights)
            self.taken += 1

    def __call__(self, rng: np.random.Generator) -> agents.Bot:
        """An opponent for a new match, drawn from the table's generator ``rng``."""
        name = self.names[int(rng.choice(len(self.names), p=self.probs))]
        if name == SNAPSHOT and self.taken:
            return self.snapshots[int(rng.integers(min(self.taken, len(self.snapshots))))]
        if name in (SELF, SNAPSHOT):
            return self.current
        return self._bots[name] if hasattr(self._bots[name], "act_batch") else self._fresh(name)

    def key(self, bot: Any) -> str:
        """The name of a bot this league handed out (its checkpoints hold it)."""
        return bot.key if isinstance(bot, NetworkBot) else bot.league_key

    def bot(self, key: Any) -> agents.Bot:
        """The bot a :meth:`key` names (a new instance for a bot with a state of its own)."""
        networks = {bot.key: bot for bot in (self.current, *self.snapshots[: self.taken])}
        if key in networks:
            return networks[key]
        if key in self._bots:
            return self._bots[key] if hasattr(self._bots[key], "act_batch") else self._fresh(key)
        raise ValueError(f"the league plays no opponent {key!r}: it has {sorted(networks) + sorted(self._bots)}")

    def _fresh(self, name: str) -> agents.Bot:
        bot = agents.make(name)
        bot.league_key = name
        return bot

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """The networks (numpy weights), the snapshots taken and the generator, for checkpoints."""
        return {
            "current": self.current.weights,
            "snapshots": [bot.weights for bot in self.snapshots[: self.taken]],
            "taken": self.taken,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: Any, actor: Weights) -> None:
        """Continue from a :meth:`get_state`; each network must be shaped as ``actor`` (the
        learner's weights). A ValueError (or KeyError, TypeError) names what does not fit, and
        nothing changes then."""
        keys("the league's state", state, STATE_KEYS)
        taken = count("the league's snapshots taken", state["taken"], 0, MAX_TAKEN)
        kept = min(taken, len(self.snapshots))
        if not isinstance(state["snapshots"], list) or len(state["snapshots"]) != kept:
            raise ValueError(f"the league's snapshots must be a list of its {kept} networks")
        current = weights_like("the league's current policy", state["current"], actor)
        snapshots = [weights_like(f"snapshot {i}", w, actor) for i, w in enumerate(state["snapshots"])]
        rng = np.random.default_rng()
        rng.bit_generator.state = generator_state("the league's generator", state["rng"])
        bots = [NetworkBot(self, bot.key) for bot in (self.current, *self.snapshots)]
        for bot, weights in zip(bots, [current, *snapshots]):
            bot.set_weights(weights)  # a policy file's checks
        for bot, checked in zip((self.current, *self.snapshots), bots):  # (every slot: those not taken get None)
            bot.weights, bot.policy = checked.weights, checked.policy
        self.taken, self.rng = taken, rng
