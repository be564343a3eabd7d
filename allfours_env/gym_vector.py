"""All Fours as a Gymnasium vector env: ``num_envs`` tables of the vector engine, one team against bots.

>>> import gymnasium as gym, agents
>>> envs = agents.vector_env(256, opponents="expert", reward="points")      # bots by name
>>> envs = gym.make_vec("AllFours-v1", num_envs=256, opponents="expert")   # the same, registered
>>> obs, info = envs.reset(seed=0)
>>> obs, reward, terminated, truncated, info = envs.step(policy(obs, info["action_mask"]))

Each env index is one table of :class:`allfours_env.vector.VectorGame`; the single-agent env
(:class:`allfours_env.single.SingleAgentEnv`) is this env's one-table view. The learner plays
team ``team`` (0: seats 0 and 2, 1: seats 1 and 3; None: drawn at every episode from the table's
generator), or only seat ``team`` when a ``partner`` bot plays the other; ``opponents`` play the
other team. A step applies the learner's action at every table at once, then the bots
answer, tick by tick, until every table waits for a learner seat again: at each tick every bot
with ``act_batch`` answers for all its tables in one call (a network: one forward pass), any
other bot table by table. A batch bot that also offers ``play_vector(game, seats)`` (the
expert) first plays its seats of every table in compiled code, as far as it can without
another player, the moves ``act_batch`` would make. ``reset(seed=s)`` seeds table i with
``s + i``, as ``gymnasium.vector.SyncVectorEnv`` seeds its envs: a table's episodes depend on its
seed alone, so table i of a reset with seed s replays ``single_agent_env(...).reset(seed=s + i)``
action for action (tested). Episode k of a table seeded s draws its team, its bots (and their
seeds) and the seed of the game's own random stream, from which the first dealer and every deck
are drawn in compiled code, from a hash of s's key and k.

Opponents and partner: a bot name (with ``make_bot``, as ``agents.vector_env`` passes it; a bot
with ``act_batch`` is memoryless and deterministic, so one instance serves every seat of every
table, others get an instance per table and seat; every bot is reset with a seed drawn from the
table's generator at every episode), a bot instance with ``act_batch`` (it plays every table), a function ``rng -> bot`` called with the table's generator when its episode starts (an
opponent pool; bots it returns that offer ``act_batch`` are asked once a tick for all the tables
that drew them), or, for ``opponents``, a pair of these: the lower opponent seat first. With
one table, any bot instance is welcome (the single-agent env).

Spaces, batched over the tables: observation ``Box(0, observation_high(rules), (OBS_SIZE,))``,
the seat to act's observation (the learner's first seat once the episode is over), or the
policy input of a layout (``policy_input=(size, function)``; ``agents.vector_env(layout=...)``
fills it in), or with ``dict_observation=True`` a dict ``{"observation", "action_mask"}`` as
PettingZoo's classic envs give. Action: ``MultiDiscrete([56] * num_envs)``. The legal actions:
``info["action_mask"]`` (int8, every step and reset) and :meth:`action_masks` (what sb3-contrib
reads); all zero at a table whose episode is over.

Rewards (:func:`allfours_env.rewards.team_gain`, as the AEC env's for the learner's team):
``reward="match"``, +1 / -1 when the match ends; ``"equity"``, each award's change in the team's
chance to win the match; ``"points"``, every award's points, plus for
the learner's team and minus for the other, paid at the learner's next step (awards of the
opponents' turns and the first kick included); each multiplied by ``reward_scale``, a number
or ``"target"``: in the match's units, points over the rules' target score and the others as they
are (:func:`allfours_env.rewards.points_scale`; what training takes).
``episode``: "match" or "deal". ``terminated`` marks an episode's end (``truncated`` is never
set); its ``info`` carries ``scores`` (n, 2), ``team`` and ``deals``, each with Gymnasium's
``_key`` mask of the tables that ended. Autoreset (``metadata["autoreset_mode"]``, Gymnasium's
``AutoresetMode``): NEXT_STEP by default (the step after an end resets that table, ignores its
action and returns reward 0), or SAME_STEP (the table resets at once; ``info["final_obs"]`` and
``info["final_info"]`` hold what the end returned, as ``SyncVectorEnv`` gathers them: an object
array, and a dict of arrays). An illegal action raises a ValueError naming the table and its
legal actions, and changes nothing. An episode over before the learner's first decision (with a
small ``target_score`` the first kick, a give-one or a run may end the match) is passed over: the
table begins its next episode at once, and what that one paid is dropped, so that every episode
the learner sees asks it to decide. ``options`` of :meth:`reset`: the AEC env's reset options
(``decks``, ``dealer``, ``scores``; played as given: a score the first kick completes gives an
episode over at once), for every table. Rule variants: ``rules``, a
:class:`~allfours_env.rules.Rules`, or the A0 keys of docs/rules.md as keyword arguments.
``info["new_deal"]``: where a new deal has begun since the learner's last decision (a learner
whose returns end with each deal, as ``python -m train``'s ``horizon: deal``, reads it).

For training: ``critic_sees_hands=True`` appends to every observation the other three seats'
hands (:meth:`VectorGame.other_hands`, 156 card flags), which only a critic apart from the actor
may read; :meth:`get_state` / :meth:`set_state` carry every table's game, seed, team, pending
reward and seated bots as plain data, so a training run resumes exactly (opponents drawn
by a league name theirs through its ``key(bot)`` / ``bot(key)``).

The bots play through :class:`allfours_env.arena.Arena`, the loop every consumer of many tables
uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .actions import check_options, check_seed
from .arena import Arena, owner_code
from .cards import N_SEATS
from .checks import in_range, like
from .engine import N_ACTIONS
from .match import Bot
from .observation import observation_high
from .rewards import REWARD_MODES, equity_for, points_scale, team_gain
from .rules import Rules
from .vector import MAX_TABLES, OTHER_HANDS_SIZE, VectorGame

TARGET_SCALE = "target"  # reward_scale: rewards in the match's units (points over the target score)

AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
OBS_KEY, MASK_KEY, NEW_DEAL_KEY = "observation", "action_mask", "new_deal"
PolicyInput = tuple[int, Callable[[np.ndarray, np.ndarray], np.ndarray]]  # (size, (observations, masks) -> inputs)
BotsDraw = Callable[[np.random.Generator | None], list[Any]]  # a table's generator -> the bots of an episode
N_TEAMS = 2
SEED_RANGE = 2**63  # bot seeds are drawn from 0 .. SEED_RANGE-1
KEY_WORDS = 2  # a table's seed, as the words of its SeedSequence state
STATE_ARRAYS = ("key", "episodes", "team", "pending")  # of get_state(), beside the game
MAX_PENDING = 10**6  # a table's reward gathered between two learner steps is far below this


def vector_env(num_envs: int, opponents: Any, **kwargs: Any) -> AllFoursVectorEnv:
    """An :class:`AllFoursVectorEnv` of ``num_envs`` tables against ``opponents``; full documentation:
    ``help(allfours_env.gym_vector)``. Bots by name: ``agents.vector_env``."""
    return AllFoursVectorEnv(num_envs, opponents, **kwargs)


def _table_draws(source: Any, seats: int, what: str, n: int, make_bot: Callable[[str], Bot] | None) -> list[BotsDraw]:
    """Each table's function ``rng -> bots`` of ``seats`` seats for ``source`` (see the module
    docstring); bad sources raise now."""
    if isinstance(source, type):
        raise TypeError(f"{what}: give a bot name, a bot instance or a function rng -> bot, not the class {source!r}")
    if isinstance(source, str):
        if make_bot is None:  # allfours_env knows the bot protocol, not the bots
            raise TypeError(
                f"{what}: the bot name {source!r} needs the bots package: agents.single_agent_env and "
                "agents.vector_env take names, or pass a bot instance (agents.make(name))"
            )
        first = make_bot(source)  # an unknown name raises ValueError here
        if hasattr(first, "act_batch"):  # memoryless and deterministic: one instance serves every seat of every table
            return [lambda rng: [first] * seats] * n
        tables = [[first] + [make_bot(source) for _ in range(seats - 1)]]
        tables += [[make_bot(source) for _ in range(seats)] for _ in range(n - 1)]
        return [lambda rng, bots=bots: bots for bots in tables]
    if callable(getattr(source, "act", None)):
        if n > 1 and not hasattr(source, "act_batch"):
            raise ValueError(
                f"{what}: a bot instance plays every table here, so it must answer many at once (act_batch); "
                f"give {type(source).__name__}'s name, or a function rng -> bot that makes one per table"
            )
        return [lambda rng: [source] * seats] * n
    if callable(source):
        return [lambda rng: [source(rng)] * seats] * n
    raise TypeError(f"{what}: expected a bot name, a bot instance or a function rng -> bot, got {source!r}")


class AllFoursVectorEnv(VectorEnv):
    """One team of All Fours against bots at ``num_envs`` tables at once; see the module docstring."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponents: Any,
        *,
        partner: Any = None,
        team: int | None = None,
        reward: str = "match",
        reward_scale: float | str = 1.0,
        episode: str = "match",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        policy_input: PolicyInput | None = None,
        dict_observation: bool = False,
        critic_sees_hands: bool = False,
        make_bot: Callable[[str], Bot] | None = None,
        rules: Rules | None = None,
        **rule_kwargs: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or not 1 <= num_envs <= MAX_TABLES:
            raise ValueError(f"num_envs must be a positive integer up to {MAX_TABLES:,}, got {num_envs!r}")
        if reward not in REWARD_MODES:  # (episode: VectorGame refuses a bad one)
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        number = not isinstance(reward_scale, bool) and isinstance(reward_scale, int | float)
        if not (reward_scale == TARGET_SCALE or number and 0 < reward_scale <= 1e6):
            raise ValueError(
                f"reward_scale must be a number above 0 (at most 1e6) or {TARGET_SCALE!r}, got {reward_scale!r}"
            )
        try:
            autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            autoreset_mode = None
        if autoreset_mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]}")
        self.num_envs = n = int(num_envs)
        is_int = isinstance(team, int | np.integer) and not isinstance(team, bool)  # not 0.0, not True
        if not (team is None or is_int and team in (0, 1)):
            raise ValueError(f"team must be 0 (seats 0, 2), 1 (seats 1, 3) or None (drawn at each reset), got {team!r}")
        self.fixed_team = None if team is None else int(team)  # a numpy integer counts as an int
        self.opponents, self.partner = opponents, partner  # as given (e.g. a league the trainer updates)
        self.game = VectorGame(n, episode=episode, rules=rules, **rule_kwargs)  # bad rules raise here
        self.rules = self.game.rules
        if reward_scale == TARGET_SCALE:
            reward_scale = points_scale(reward, self.rules.target_score)
        self.reward_mode, self.reward_scale, self.episode = reward, float(reward_scale), episode
        self._equity = equity_for(reward, self.rules)  # "equity": the chances it pays from
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.autoreset_mode = autoreset_mode
        if isinstance(opponents, Sequence) and not isinstance(opponents, str):
            if len(opponents) != N_TEAMS:
                raise ValueError(f"opponents: one bot source, or a pair (one per opponent seat), got {len(opponents)}")
            pair = [_table_draws(source, 1, f"opponents[{i}]", n, make_bot) for i, source in enumerate(opponents)]
            self._draw_opponents = [lambda rng, a=a, b=b: [a(rng)[0], b(rng)[0]] for a, b in zip(*pair, strict=True)]
        else:
            self._draw_opponents = _table_draws(opponents, N_TEAMS, "opponents", n, make_bot)
        self._draw_partner = (
            [lambda rng: []] * n if partner is None else _table_draws(partner, 1, "partner", n, make_bot)
        )
        self.policy_input, self.critic_sees_hands = policy_input, bool(critic_sees_hands)
        hands = OTHER_HANDS_SIZE if critic_sees_hands else 0
        if policy_input is None:
            high = np.concatenate([observation_high(self.rules), np.ones(hands, np.float32)])
            observation = gym.spaces.Box(0.0, high, dtype=np.float32)
        else:
            observation = gym.spaces.Box(-1.0, 1.0, (int(policy_input[0]) + hands,), np.float32)
        if dict_observation:
            observation = gym.spaces.Dict({OBS_KEY: observation, MASK_KEY: gym.spaces.Box(0, 1, (N_ACTIONS,), np.int8)})
        self.dict_observation = dict_observation
        self.single_observation_space = observation
        self.single_action_space = gym.spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(observation, n)
        self.action_space = batch_space(self.single_action_space, n)

        self.team = np.zeros(n, dtype=np.int64)
        self.key = np.zeros((n, KEY_WORDS), dtype=np.uint64)  # each table's seed, as a SeedSequence's words
        self.episodes = np.zeros(n, dtype=np.int64)  # episodes each table has started since it was seeded
        self.arena = Arena(self.game, on_step=self._pay, compiled=True)  # (the learner is paid as bots move)
        self.pending = np.zeros(n)  # reward gathered since the learner's last step at each table
        self._masks = np.zeros((n, N_ACTIONS), dtype=np.int8)
        self.started = False
        self._fixed = self._fixed_owners()

    def _fixed_owners(self) -> np.ndarray | None:
        """When every bot is a name's or an instance's and answers in batches (memoryless: the same
        bots at every table, drawn from nothing), the seats' owners for each learner team (2, 4)
        (and in ``_fixed_seats`` the seats' bots); else None."""
        if not all(isinstance(s, str) or callable(getattr(s, "act", None)) for s in self._sources()):
            return None
        bots = self._draw_opponents[0](None) + self._draw_partner[0](None)
        if not all(hasattr(bot, "act_batch") for bot in bots):
            return None
        self.arena.batch.update((id(bot), bot) for bot in bots)
        self._fixed_seats = [self._seat_bots(team, bots[:N_TEAMS], bots[N_TEAMS:]) for team in range(N_TEAMS)]
        return np.array([[owner_code(bot) for bot in seats] for seats in self._fixed_seats])

    def _seat_bots(self, team: int, opponents: list[Bot], partners: list[Bot]) -> list[Bot | None]:
        """The bot of each seat (None: the learner's)."""
        seats: list[Bot | None] = [None] * N_SEATS
        seats[1 - team], seats[3 - team] = opponents
        if partners:
            seats[team + 2] = partners[0]
        return seats

    # ---------------------------------------------------------------- Gymnasium API

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """New episodes at every table. ``seed``: None, an int (table i: ``seed + i``) or one per
        table; ``options``: the AEC env's reset options, for every table. Bad ones raise
        a ValueError before anything changes."""
        n = self.num_envs
        if seed is None or isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [None] * n if seed is None else [check_seed(seed) + i for i in range(n)]
        elif isinstance(seed, Sequence) and not isinstance(seed, str) and len(seed) == n:
            seeds = [None if s is None else check_seed(s) for s in seed]
        else:
            raise ValueError(f"seed must be None, an int, or a list of {n} ints or Nones (one per table), got {seed!r}")
        check_options(self.rules, options)
        options = dict(options or {})
        for t, table_seed in enumerate(seeds):
            if table_seed is not None or not self.started:
                self.key[t] = np.random.SeedSequence(table_seed).generate_state(KEY_WORDS, np.uint64)
                self.episodes[t] = 0
        everywhere = np.ones(n, dtype=bool)
        self.pending[:] = 0.0
        self._begin(everywhere, options)
        self.arena.run()
        if not options:  # (given decks and scores are played as given, even over at once)
            self._pass_over(everywhere)
        self.started = True
        return self._observe(), self._mask_info({})

    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self.started:
            raise RuntimeError("call reset() before step()")
        game = self.game
        over, deals = game.is_over, game.deal_number  # (a given score may end a match at its first kick)
        resetting = over & (self.autoreset_mode == AutoresetMode.NEXT_STEP)
        playing = ~resetting
        points = game.step(actions, tables=playing)  # a bad array or an illegal action raises, changing nothing
        self._pay(playing & ~over, points)  # (a table over since its reset was paid then)
        if resetting.any():
            self.pending[resetting] = 0.0
            self._begin(resetting, {})
        self.arena.run()
        self._pass_over(resetting)
        info: dict[str, Any] = {}
        ended = game.is_over & playing
        reward = np.where(playing, self.pending, 0.0)
        self.pending[playing] = 0.0
        if ended.any():  # the end's scores, team and deals, with Gymnasium's _key masks
            for key, values in (("scores", game.scores), ("team", self.team.copy()), ("deals", game.deal_number)):
                info[key], info[f"_{key}"] = values, ended.copy()
        observations = self._observe()
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            finals = np.empty(self.num_envs, dtype=object)  # as SyncVectorEnv gathers them
            for t in np.flatnonzero(ended):
                finals[t] = _row(observations, t)
            info = {"final_obs": finals, "_final_obs": ended.copy(), "final_info": info, "_final_info": ended}
            self._begin(ended, {})
            self.arena.run()
            self._pass_over(ended)
            observations = self._observe()
        info[NEW_DEAL_KEY], info[f"_{NEW_DEAL_KEY}"] = (game.deal_number != deals) & playing, playing
        return observations, reward, ended, np.zeros(self.num_envs, dtype=bool), self._mask_info(info)

    def action_masks(self) -> np.ndarray:
        """int8 (num_envs, 56): the legal actions of the learner's seat to act at every table (as
        the single-agent env's ``action_masks``; all zero where the episode is over)."""
        return self._masks.copy()

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """Everything that decides what happens next, as plain data (arrays, lists, numbers,
        strings), for checkpoints: the game, each table's seed, episodes, team, pending reward and
        deal, and the bots each table drew (opponents, then partner): [the key its source gives it
        (None: a bot the env made), its ``get_state()``], or the index of an earlier one it also is."""
        state: dict[str, Any] = {name: getattr(self, name).copy() for name in STATE_ARRAYS}
        state.update(game=self.game.get_state(), started=self.started)
        state["bots"] = [self._drawn_state(t) for t in range(self.num_envs)]
        return state

    def set_state(self, state: dict[str, Any]) -> Any:
        """Continue from a :meth:`get_state` of an env built alike; returns the observation the
        last step returned. Every part is checked first (the game by ``VectorGame.set_state``,
        each array's shape and range, each seat's bot against its source); a ValueError (or
        TypeError) names what does not fit, and nothing changes then."""
        expected = {*STATE_ARRAYS, "game", "started", "bots"}
        if not isinstance(state, dict) or set(state) != expected:
            raise ValueError(f"state must be a dict with the keys {sorted(expected)}, as get_state() returns it")
        arrays = {name: like(f"state[{name!r}]", state[name], getattr(self, name)).copy() for name in STATE_ARRAYS}
        in_range("state['team']", arrays["team"], *((0, 1) if self.fixed_team is None else (self.fixed_team,) * 2))
        in_range("state['pending']", arrays["pending"], -MAX_PENDING, MAX_PENDING)
        in_range("state['episodes']", arrays["episodes"], 0)
        if not isinstance(state["started"], bool):
            raise TypeError(f"state['started'] must be True or False, got {state['started']!r}")
        if not isinstance(state["bots"], list) or len(state["bots"]) != self.num_envs:
            raise ValueError(f"state['bots'] must be a list of {self.num_envs} tables' bots")
        team = arrays["team"]
        drawn = [self._restored(t, items, state["started"]) for t, items in enumerate(state["bots"])]
        seats = [self._seat_bots(team[t], bots[:N_TEAMS], bots[N_TEAMS:]) if bots else [None] * N_SEATS
                 for t, bots in enumerate(drawn)]  # fmt: skip
        previous = self.game.get_state()
        self.game.set_state(state["game"])  # checked: raises before changing anything
        try:  # (a refusal from here on puts the game back)
            current, playing = self.game.current, np.flatnonzero(~self.game.is_over)
            if state["started"] and any(seats[t][current[t]] is not None for t in playing):
                raise ValueError("every table in play must wait for a learner seat")
            for bots, items in zip(drawn, state["bots"], strict=True):
                for bot, item in zip(bots, items, strict=True):
                    if isinstance(item, list) and item[1] is not None:
                        bot.set_state(item[1])
        except (ValueError, TypeError, KeyError):
            self.game.set_state(previous)
            raise
        for name, value in arrays.items():
            setattr(self, name, value)
        self.started = state["started"]
        for t, table in enumerate(seats):
            self.arena.seat(t, table)
        self.arena.forget_unseated()
        return self._observe()

    def _sources(self) -> list[Any]:
        """Where each bot a table draws comes from: the two opponents (lower seat first), the partner."""
        pair = isinstance(self.opponents, Sequence) and not isinstance(self.opponents, str)
        return [*(self.opponents if pair else [self.opponents] * 2), *([] if self.partner is None else [self.partner])]

    def _drawn_state(self, t: int) -> list[Any]:
        """Table ``t``'s drawn bots as :meth:`get_state` holds them."""
        if not self.started:
            return []
        team, seated = self.team[t], self.arena.bots[t]
        drawn = [seated[1 - team], seated[3 - team]] + ([] if self.partner is None else [seated[team + 2]])
        out: list[Any] = []
        for i, (bot, source) in enumerate(zip(drawn, self._sources(), strict=True)):
            first = next(j for j, other in enumerate(drawn) if other is bot)
            if first < i:  # one bot in two seats
                out.append(first)
                continue
            if not (hasattr(source, "key") or isinstance(source, str) or callable(getattr(source, "act", None))):
                raise TypeError("get_state needs bots by name or instance, or a source that names its bots: key(bot)")
            key = source.key(bot) if hasattr(source, "key") else None
            out.append([key, bot.get_state() if hasattr(bot, "get_state") else None])
        return out

    def _restored(self, t: int, items: Any, started: bool) -> list[Bot]:
        """The bots table ``t`` drew, from :meth:`_drawn_state`'s ``items`` (their states not yet set)."""
        sources = self._sources() if started else []
        if not isinstance(items, list) or len(items) != len(sources):
            raise ValueError(f"state['bots'][{t}] must list the {len(sources)} bots the table drew")
        own = self._draw_opponents[t], self._draw_partner[t]
        drawn: list[Bot] = []
        for i, (item, source) in enumerate(zip(items, sources, strict=True)):
            if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < i:
                drawn.append(drawn[item])
                continue
            if not isinstance(item, list) or len(item) != 2:
                raise ValueError(f"bot {i} of table {t} must be [key, bot state] or the index of an earlier one")
            if hasattr(source, "bot"):
                bot = source.bot(item[0])  # the source checks its keys
            elif item[0] is None and (isinstance(source, str) or callable(getattr(source, "act", None))):
                bot = (own[0](None) + own[1](None))[i]  # a name's or an instance's bots: no draw
            else:
                raise ValueError(f"bot {i} of table {t}: its source cannot play key {item[0]!r}")
            if item[1] is not None and not hasattr(bot, "set_state"):
                raise ValueError(f"bot {i} of table {t} keeps no state, got one")
            drawn.append(bot)
        return drawn

    # ---------------------------------------------------------------- the pieces

    def _begin(self, tables: np.ndarray, options: dict[str, Any]) -> None:
        """Start an episode at every table in ``tables`` (the reset options were checked in
        reset()). Episode k of a table hashes its key and k into a word (:func:`_mix`, every
        starting table at once): the team is the word's low bit, the game's random stream is
        seeded with a hash of it, and where bots are drawn or keep a state, a generator seeded
        with it draws them and a seed for each, table by table."""
        starting = np.flatnonzero(tables)
        words = _mix(self.key[starting, 0] ^ _mix(self.key[starting, 1] ^ self.episodes[starting].astype(np.uint64)))
        self.episodes[starting] += 1
        self.team[starting] = (words & np.uint64(1)).astype(np.int64) if self.fixed_team is None else self.fixed_team
        if self._fixed is not None:  # the same memoryless batch bots everywhere: the seats follow the team
            self.arena.owner[starting] = self._fixed[self.team[starting]]
            for t in starting.tolist():
                self.arena.bots[t] = self._fixed_seats[self.team[t]]
        else:
            for t, word in zip(starting.tolist(), words.tolist()):
                rng = np.random.default_rng(word)
                opponents, partners = self._draw_opponents[t](rng), self._draw_partner[t](rng)
                for bot in {id(bot): bot for bot in opponents + partners}.values():  # each bot once, in seat order
                    bot.reset(int(rng.integers(SEED_RANGE)))
                self.arena.seat(t, self._seat_bots(int(self.team[t]), opponents, partners))
            self.arena.forget_unseated()
        streams = np.zeros(self.num_envs, dtype=np.uint64)
        streams[starting] = _mix(~words)
        self._pay(tables, self.game.restart(tables, [options] * self.num_envs if options else None, streams))

    def _pass_over(self, started: np.ndarray) -> None:
        """Begin the next episode, as often as it takes, at each of the tables that just ``started``
        one that is over before the learner's first decision (a small ``target_score``: the first
        kick, a give-one or a run may end the match); what it paid goes with it."""
        over = started & self.game.is_over
        while over.any():
            self.pending[over] = 0.0
            self._begin(over, {})
            self.arena.run()
            over &= self.game.is_over

    def _pay(self, tables: np.ndarray, points: np.ndarray) -> None:
        """Add what the learner's team gained at ``tables`` (points (n, 2) of one step or start,
        zero at the tables that did not move); also the arena's hook after each step of the bots."""
        sign = np.where(self.team == 0, self.reward_scale, -self.reward_scale)
        gain = team_gain(points, self.game.winner, tables, self.reward_mode, self.game.scores, self._equity)
        self.pending += gain * sign

    def _observe(self) -> Any:
        """Each table's observation for its learner seat to act (its team's first seat once over)."""
        game = self.game
        current = game.current
        seats = np.where(current >= 0, current, self.team)
        observations = game.observe(seats=seats)
        legal = game.legal_mask()
        self._masks = legal.astype(np.int8)
        if self.policy_input is not None:
            observations = self.policy_input[1](observations, legal)
        if self.critic_sees_hands:
            observations = np.concatenate([observations, game.other_hands(seats)], axis=1)
        if self.dict_observation:
            return {OBS_KEY: observations, MASK_KEY: self._masks.copy()}
        return observations

    def _mask_info(self, info: dict[str, Any]) -> dict[str, Any]:
        info[MASK_KEY] = self._masks.copy()
        info[f"_{MASK_KEY}"] = np.ones(self.num_envs, dtype=bool)
        return info


def _mix(words: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer over uint64 words: every bit of each result depends on every bit of its word."""
    words = (words ^ (words >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    words = (words ^ (words >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return words ^ (words >> np.uint64(31))


def _row(observations: Any, t: int) -> Any:
    if isinstance(observations, dict):
        return {key: value[t] for key, value in observations.items()}
    return observations[t]
