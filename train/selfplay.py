"""Batched self-play: hundreds of tables of :class:`allfours_env.vector.VectorGame` as one SB3 ``VecEnv``.

Each of the ``n`` tables is one "env" for MaskablePPO. At every table the learner plays both
seats of one team (drawn when the table starts a match) and an opponent from the pool
(:mod:`train.opponents`, drawn at the same time) plays the other team.

``step_wait`` applies the learner's actions at every table at once, then lets the opponents
answer, tick by tick, until every table waits for a learner seat again: at each tick, every table
whose opponent is the same network moves through one batched forward pass (bots such as
``expert`` act table by table), and only the opponents' tables move (``VectorGame.step(tables=)``).
A table whose match ends records it (``dones``, and ``info`` with ``scores``, ``team``, ``winner``,
``deals`` and ``terminal_observation``) and starts the next match at once, as SB3's vec envs auto-reset.

With ``horizon="deal"`` every deal is an episode for the learner's returns: the step after which
a new deal begins is ``done`` (with no ``info``: the match goes on, and only a match's end
reports its scores), so the critic predicts the points of the deal in play and PPO's advantages
stop at the deal's end; with ``horizon="match"`` only the end of a match is.

Rewards, for the learner's team, are the single-agent env's (:mod:`allfours_env.single`): with
``reward="points"`` every award's points, plus for the learner's team and minus for the other,
divided by the target score, at the step in which it happens, opponents' turns included; the
first kick of a match (dealt before the learner's first decision) is paid in its first step; with
``reward="match"``, +1 / -1 when the match ends. Observations are the policy input of the
learner's seat to act in the input layout ``layout`` (:func:`agents.policy.batch_inputs`: the
advised input by default), followed with ``critic_sees_hands`` by the other three seats' hands
(:func:`hidden_hands`), which only a critic apart from the actor reads (:mod:`train.network`);
the action masks come from ``env_method("action_masks")`` as sb3-contrib expects.

Opponents: a network's tables move in one forward pass; a bot with ``act_batch`` (the expert,
which has no memory) answers for all its tables in one call, exactly as its ``act`` would one by
one; any other bot acts table by table.

All randomness comes from one generator seeded by ``seed`` (teams, opponents, bot seeds, the
opponents' samples, the tables' streams), and :meth:`get_state` / :meth:`set_state` carry
everything, so a resumed run continues exactly.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvObs, VecEnvStepReturn

import agents
from agents.policy import ADVISED_LAYOUT, Weights, batch_inputs, input_size
from allfours_env import N_ACTIONS
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.vector import VectorGame

from .config import HIDDEN_HANDS_SIZE as HIDDEN_SIZE
from .config import HORIZONS, SELF, SNAPSHOT
from .opponents import Opponent, OpponentPool
from .state_checks import MAX_REWARD, brief, generator_state, in_range, keys, like

MASK_METHOD = "action_masks"
SEED_RANGE = 2**63
STATE_PARTS = ("game", "rng", "team", "opponents", "bots", "pending", "deal_seen", "pool")  # of get_state()


def hidden_hands(game: VectorGame, seats: np.ndarray) -> np.ndarray:
    """float32 (n, HIDDEN_SIZE): at each table the hands of the three seats after ``seats[t]``
    (next, partner, previous; 52 card flags each): what a critic may see and a policy may not."""
    hands = game.hands
    rows = np.arange(game.n)[:, None]
    others = hands[rows, (seats[:, None] + np.arange(1, N_SEATS)) % N_SEATS]  # (n, 3) uint64
    bits = np.unpackbits(others[..., None].view(np.uint8), axis=-1, bitorder="little")  # (n, 3, 64)
    return bits[..., :N_CARDS].reshape(game.n, HIDDEN_SIZE).astype(np.float32)


class SelfPlayVecEnv(VecEnv):
    """See the module docstring. ``rules``: rule variants (docs/rules.md A0)."""

    def __init__(
        self, n: int, pool: OpponentPool, rules: dict[str, Any] | None = None, reward: str = "points", seed: int = 0,
        layout: int = ADVISED_LAYOUT, critic_sees_hands: bool = False, horizon: str = "match",
    ):
        if horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {HORIZONS}, got {horizon!r}")
        self.game = VectorGame(n, **dict(rules or {}))
        self._built = self.game.get_state()  # the tables before their first reset
        self.layout, self.critic_sees_hands = layout, critic_sees_hands
        size = input_size(layout) + (HIDDEN_SIZE if critic_sees_hands else 0)
        super().__init__(n, gym.spaces.Box(-1.0, 1.0, (size,), np.float32), gym.spaces.Discrete(N_ACTIONS))
        self.pool, self.reward_mode, self.horizon = pool, reward, horizon
        self.scale = 1.0 / self.game.rules.target_score if reward == "points" else 1.0
        self.rng = np.random.default_rng(seed)
        self.team = np.zeros(n, dtype=np.int64)
        self.opponents: list[Opponent] = [Opponent(SELF)] * n
        self.bots: list[Any] = [None] * n  # the bot instance where the opponent is a bot
        self.pending = np.zeros(n, dtype=np.float64)  # reward gathered before a match's first learner step
        self.deal_seen = np.zeros(n, dtype=np.int64)  # the deal of each table's latest learner decision
        self._actions = np.zeros(n, dtype=np.int64)
        self._masks = np.zeros((n, N_ACTIONS), dtype=bool)

    # ---------------------------------------------------------------- VecEnv API

    def reset(self) -> VecEnvObs:
        n = self.num_envs
        first_kicks = self.game.reset(seed=int(self.rng.integers(SEED_RANGE)))
        everywhere = np.ones(n, dtype=bool)
        self._draw_opponents(everywhere)
        self.pending = np.zeros(n, dtype=np.float64)
        self._pay(first_kicks, self.pending)
        self._play_opponents(np.zeros(n), np.zeros(n, dtype=bool), [{} for _ in range(n)], started=everywhere)
        self.deal_seen = self.game.deal_number
        return self._observe()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64)

    def step_wait(self) -> VecEnvStepReturn:
        n = self.num_envs
        reward, self.pending = self.pending, np.zeros(n, dtype=np.float64)
        points = self.game.step(self._actions)
        self._pay(points, reward)
        dones = np.zeros(n, dtype=bool)
        infos: list[dict] = [{} for _ in range(n)]
        started = np.zeros(n, dtype=bool)
        self._finish(self.game.is_over, reward, dones, infos, started)
        self._play_opponents(reward, dones, infos, started)
        deals = self.game.deal_number
        if self.horizon == "deal":
            dones |= deals != self.deal_seen  # a new deal (a new match's first deal: done already)
        self.deal_seen = deals
        return self._observe(), reward.astype(np.float32), dones, infos

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == MASK_METHOD:
            return [self.action_masks] * len(self._indices(indices))
        if attr_name == "render_mode":  # SB3 asks at construction; tables are not rendered
            return [None] * len(self._indices(indices))
        raise AttributeError(f"SelfPlayVecEnv has no per-env attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"SelfPlayVecEnv has no per-env attribute {attr_name!r} to set")

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        if method_name == MASK_METHOD:
            return list(self._masks[self._indices(indices)])
        raise AttributeError(f"SelfPlayVecEnv has no per-env method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def action_masks(self) -> np.ndarray:
        """bool (n, 56): the legal actions of the learner's seat to act at every table."""
        return self._masks

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """Everything that decides what happens next (plain data), for checkpoints."""
        return {
            "game": self.game.get_state(),
            "rng": self.rng.bit_generator.state,
            "team": self.team.copy(),
            "opponents": [tuple(o) for o in self.opponents],
            "bots": [getattr(bot, "get_state", dict)() if bot is not None else None for bot in self.bots],
            "pending": self.pending.copy(),
            "deal_seen": self.deal_seen.copy(),
            "pool": self.pool.get_state(),
        }

    def set_state(self, state: dict[str, Any], actor: Weights) -> np.ndarray:
        """Continue from a :meth:`get_state`; the learner's inputs at every table (what the last
        step returned). Every part is checked first: the game's arrays (by VectorGame.set_state),
        the generators' states, the opponents (in the pool, one per table, with their bots'
        states), the pool's networks (shaped as ``actor``, the learner's weights); a ValueError
        (or KeyError, TypeError) names what does not fit, and nothing changes then."""
        keys("the self-play state", state, STATE_PARTS)
        previous = self.game.get_state()
        self.game.set_state(state["game"])
        try:
            return self._set_state(state, actor)
        except BaseException:
            self.game.set_state(previous)
            raise

    def _set_state(self, state: dict[str, Any], actor: Weights) -> np.ndarray:
        """:meth:`set_state` once the game is set."""
        rng = np.random.default_rng()
        rng.bit_generator.state = generator_state("the tables' generator", state["rng"])
        team, pending, deal_seen = (like(k, state[k], getattr(self, k)) for k in ("team", "pending", "deal_seen"))
        in_range("team", team, 0, 1)
        in_range("pending", pending, -MAX_REWARD, MAX_REWARD)
        pool = copy.copy(self.pool)
        pool.set_state(state["pool"], actor)
        opponents = [self._opponent(pool, item) for item in self._per_table("opponents", state["opponents"])]
        bot_states = self._per_table("bots", state["bots"])
        bots = [self._restored_bot(o, s) for o, s in zip(opponents, bot_states, strict=True)]
        if len(pool.retired) > self.num_envs + 1:  # those played, and the one an update has just pushed out
            raise ValueError(f"the pool holds {len(pool.retired)} retired snapshots, more than its tables can play")
        self._check_tables(team, pending, deal_seen, opponents)
        self.rng, self.pool, self.opponents, self.bots = rng, pool, opponents, bots
        self.team, self.pending, self.deal_seen = team.copy(), pending.copy(), deal_seen.copy()
        return self._observe()

    @property
    def started(self) -> bool:
        """Whether the tables have been reset (PPO has begun): before, they are as built."""
        return not all(np.array_equal(a, b) for a, b in zip(self.game.get_state().values(), self._built.values()))

    def _check_tables(self, team: np.ndarray, pending: np.ndarray, deal_seen: np.ndarray, opponents: list) -> None:
        """A ValueError unless the game just set and the rest agree: every table waits for a seat of
        the learner's team, with a legal action, in the deal it has seen; or (a state before PPO)
        the tables are as built, with nothing drawn yet."""
        if not self.started:
            if team.any() or pending.any() or deal_seen.any() or any(o != Opponent(SELF) for o in opponents):
                raise ValueError("tables not yet started must have no team, reward, deal or opponent drawn")
            return
        current = self.game.current
        if not ((current >= 0) & (current % 2 == team)).all() or not self.game.legal_mask().any(axis=1).all():
            raise ValueError("every table must wait for a seat of the learner's team, with a legal action")
        if not np.array_equal(deal_seen, self.game.deal_number):
            raise ValueError("deal_seen must be the deal each table is in")

    def _per_table(self, name: str, value: Any) -> list:
        if not isinstance(value, list) or len(value) != self.num_envs:
            raise ValueError(f"{name} must be a list of one item per table ({self.num_envs})")
        return value

    @staticmethod
    def _opponent(pool: OpponentPool, item: Any) -> Opponent:
        """The opponent a checkpoint names, if ``pool`` can play it."""
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"an opponent must be (kind, snapshot id), got {brief(item)}")
        kind, snapshot = like("an opponent's kind", item[0], ""), like("an opponent's snapshot id", item[1], 0)
        drawn_as = {SELF: (SELF, SNAPSHOT), SNAPSHOT: (SNAPSHOT,)}.get(kind, (kind,))  # the pool names that draw it
        if not set(drawn_as) & set(pool.names):
            raise ValueError(f"opponent {brief(kind)} is not drawn from the pool {pool.names}")
        if kind == SNAPSHOT and snapshot not in pool.snapshots and snapshot not in pool.retired:
            raise ValueError(f"snapshot {snapshot} is not in the pool")
        if kind != SNAPSHOT and snapshot != -1:
            raise ValueError(f"opponent {kind!r} names snapshot {snapshot}, which only a snapshot opponent does")
        return Opponent(kind, int(snapshot))

    @classmethod
    def _restored_bot(cls, opponent: Opponent, state: Any) -> Any:
        """The bot of ``opponent`` continuing from ``state`` (:meth:`get_state`'s, checked); None for a network."""
        if opponent.kind in (SELF, SNAPSHOT):
            if state is not None:
                raise ValueError(f"a {opponent.kind} opponent has no bot state, got {brief(state)}")
            return None
        bot = cls._bot(opponent)
        reference = getattr(bot, "get_state", dict)()
        keys(f"the state of bot {opponent.kind!r}", state, reference)
        for key, value in reference.items():
            if isinstance(value, dict) and "bit_generator" in value:
                generator_state(f"bot {opponent.kind!r} {key}", state[key])
            else:
                like(f"bot {opponent.kind!r} {key}", state[key], value)
        if state:
            bot.set_state(state)
        return bot

    # ---------------------------------------------------------------- the pieces

    def _indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)

    def _pay(self, points: np.ndarray, into: np.ndarray, where: np.ndarray | None = None) -> None:
        """Add the learner's share of ``points`` (n, 2) to ``into`` (only ``where``, if given)."""
        if self.reward_mode != "points":
            return
        own = np.where(self.team == 0, points[:, 0] - points[:, 1], points[:, 1] - points[:, 0]) * self.scale
        into += own if where is None else np.where(where, own, 0.0)

    def _draw_opponents(self, tables: np.ndarray) -> None:
        """A team and an opponent for every table in ``tables`` (a new match there)."""
        for t in np.flatnonzero(tables):
            self.team[t] = self.rng.integers(2)
            opponent = self.pool.draw(self.rng)
            self.opponents[t] = opponent
            bot = self._bot(opponent)
            if bot is not None:
                bot.reset(int(self.rng.integers(SEED_RANGE)))
            self.bots[t] = bot
        in_use = {o.snapshot for o in self.opponents if o.kind == SNAPSHOT}
        self.pool.forget_retired(in_use)

    @staticmethod
    def _bot(opponent: Opponent) -> Any:
        """A new bot for ``opponent`` (None for a network)."""
        if opponent.kind in (SELF, SNAPSHOT):
            return None
        return agents.make(opponent.kind)

    def _finish(
        self, over: np.ndarray, reward: np.ndarray, dones: np.ndarray, infos: list[dict], started: np.ndarray
    ) -> None:
        """Close the episodes of the tables in ``over``, and start their next match."""
        if not over.any():
            return
        game = self.game
        scores, deals, winner = game.scores, game.deal_number, game.winner
        seats = np.where(game.current >= 0, game.current, self.team)  # a seat of the learner's team
        final = self._inputs(game.observe(seats=seats), np.zeros((self.num_envs, N_ACTIONS), dtype=bool), seats)
        for t in np.flatnonzero(over):
            if self.reward_mode == "match":
                reward[t] += 1.0 if winner[t] == self.team[t] else -1.0
            dones[t] = True
            infos[t] = {
                "scores": (int(scores[t, 0]), int(scores[t, 1])),
                "team": int(self.team[t]),
                "winner": int(winner[t]),
                "deals": int(deals[t]),
                "terminal_observation": final[t],
            }
        self._draw_opponents(over)
        self._pay(game.restart(over), self.pending, over)
        started |= over

    def _play_opponents(self, reward: np.ndarray, dones: np.ndarray, infos: list[dict], started: np.ndarray) -> None:
        """Let the opponents move until every table waits for a learner seat."""
        game = self.game
        while True:
            current = game.current
            waiting = (current >= 0) & (current % 2 != self.team)
            if not waiting.any():
                return
            observations, masks = game.observe(), game.legal_mask()
            actions = np.zeros(self.num_envs, dtype=np.int64)
            uniforms = self.rng.random(self.num_envs)
            groups: dict[Opponent, list[int]] = {}
            for t in np.flatnonzero(waiting):
                bot = self.bots[t]
                if bot is not None and not hasattr(bot, "act_batch"):
                    actions[t] = bot.act({"observation": observations[t], "action_mask": masks[t].astype(np.int8)})
                else:
                    groups.setdefault(self.opponents[t], []).append(t)
            for opponent, tables in groups.items():
                rows = np.array(tables)
                bot = self.bots[tables[0]]
                if bot is not None:  # memoryless: one call for every table it plays
                    actions[rows] = bot.act_batch(observations[rows], masks[rows])
                else:
                    actions[rows] = self.pool.act(opponent, observations[rows], masks[rows], uniforms[rows])
            points = game.step(actions, tables=waiting)
            self._pay(points, reward, ~started)
            self._pay(points, self.pending, started)
            self._finish(game.is_over & waiting, reward, dones, infos, started)

    def _observe(self) -> np.ndarray:
        """The learner's inputs and masks at every table (each waits for a learner seat)."""
        observations, self._masks = self.game.observe(), self.game.legal_mask()
        return self._inputs(observations, self._masks, self.game.current)

    def _inputs(self, observations: np.ndarray, masks: np.ndarray, seats: np.ndarray) -> np.ndarray:
        inputs = batch_inputs(self.layout, observations, masks)
        if not self.critic_sees_hands:
            return inputs
        return np.concatenate([inputs, hidden_hands(self.game, seats)], axis=1)

