"""All Fours as a Gymnasium vector env: ``num_envs`` tables of the vector engine, one team against bots.

>>> import gymnasium as gym, agents
>>> envs = agents.vector_env(256, opponents="expert", reward="points")      # bots by name
>>> envs = gym.make_vec("AllFours-v1", num_envs=256, opponents="expert")   # the same, registered
>>> obs, info = envs.reset(seed=0)
>>> obs, reward, terminated, truncated, info = envs.step(policy(obs, info["action_mask"]))

Each env index is one table of :class:`allfours_env.vector.VectorGame` and plays exactly what
:class:`allfours_env.single.SingleAgentEnv` plays with the same arguments and seed: the learner
plays team ``team`` (0: seats 0 and 2, 1: seats 1 and 3; None: drawn at every episode from the
table's generator), or only seat ``team`` when a ``partner`` bot plays the other; ``opponents``
play the other team. A step applies the learner's action at every table at once, then the bots
answer, tick by tick, until every table waits for a learner seat again: at each tick every bot
with ``act_batch`` answers for all its tables in one call (a network: one forward pass), any
other bot table by table. A batch bot that also offers ``play_vector(game, seats)`` (the
expert) first plays its seats of every table in compiled code, as far as it can without
another player or a new deck, the moves ``act_batch`` would make. ``reset(seed=s)`` seeds
table i with ``s + i``, as ``gymnasium.vector.SyncVectorEnv`` seeds its envs, so table i of a
reset with seed s replays ``single_agent_env(...).reset(seed=s + i)`` action for action (tested).

Opponents and partner: a bot name (with ``make_bot``, as ``agents.vector_env`` passes it; a bot
with ``act_batch`` is memoryless and deterministic, so one instance per seat serves every table,
others get an instance per table and seat), a bot instance with ``act_batch`` (it plays every
table), a function ``rng -> bot`` called with the table's generator when its episode starts (an
opponent pool; bots it returns that offer ``act_batch`` are asked once a tick for all the tables
that drew them), or, for ``opponents``, a pair of these: the lower opponent seat first. Where
every seat's bot is a name or an instance with ``act_batch``, episode starts draw the bots'
seeds as the single-agent env does, in compiled code, and reset no bot.

Spaces, batched over the tables: observation ``Box(0, observation_high(rules), (OBS_SIZE,))``,
the seat to act's observation (the learner's first seat once the episode is over), or the
policy input of a layout (``policy_input=(size, function)``; ``agents.vector_env(layout=...)``
fills it in), or with ``dict_observation=True`` a dict ``{"observation", "action_mask"}`` as
PettingZoo's classic envs give. Action: ``MultiDiscrete([56] * num_envs)``. The legal actions:
``info["action_mask"]`` (int8, every step and reset) and :meth:`action_masks` (what sb3-contrib
reads); all zero at a table whose episode is over.

Rewards and ends are the single-agent env's: ``reward="match"``, +1 / -1 when the match ends;
``"points"``, every award's points, plus for the learner's team and minus for the other, paid
at the learner's next step (awards of the opponents' turns and the first kick included).
``episode``: "match" or "deal". ``terminated`` marks an episode's end (``truncated`` is never
set); its ``info`` carries ``scores`` (n, 2), ``team`` and ``deals``, each with Gymnasium's
``_key`` mask of the tables that ended. Autoreset (``metadata["autoreset_mode"]``, Gymnasium's
``AutoresetMode``): NEXT_STEP by default (the step after an end resets that table, ignores its
action and returns reward 0), or SAME_STEP (the table resets at once; ``info["final_obs"]`` and
``info["final_info"]`` hold what the end returned, as ``SyncVectorEnv`` gathers them: an object
array, and a dict of arrays). An illegal action raises a ValueError naming the table and its
legal actions, and changes nothing. Rule variants: the A0 keys of docs/rules.md as keyword
arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numba import njit

from . import actions, numpy_random
from .actions import ALL_SEATS, FIRST_DEALER_DRAWS, dealer_draw
from .cards import N_CARDS, N_SEATS
from .engine import EPISODES, N_ACTIONS, check_seed
from .match import Bot
from .numba_ints import cache_depends_on, kernels_of
from .observation import observation_high
from .rewards import REWARD_MODES
from .single import N_TEAMS, SEED_RANGE, BotsDraw, check_team, checked_options, seat_bots
from .vector import MAX_TABLES, VectorGame

AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
OBS_KEY, MASK_KEY = "observation", "action_mask"
PolicyInput = tuple[int, Callable[[np.ndarray, np.ndarray], np.ndarray]]  # (size, (observations, masks) -> inputs)
LEARNER, OWN_BOT = -2, -1  # owner codes of a seat: the learner, a bot of the table's own (else a batch bot's id)
DECKS_AHEAD = 2  # decks queued at a table before its deals need them: bots play on without stopping


@njit(cache=True, nogil=True)
def _draw_starts(table_rng, deck_rng, tables, draw_team, n_seeds, teams):
    """What ``SingleAgentEnv.reset`` draws from the generator of each table in ``tables`` when
    its bots are fixed: the team (if ``draw_team``, into ``teams``), a seed per bot (unused: such
    bots are memoryless), and the seed of the episode's deck generator, ``deck_rng[t]``."""
    for t in tables:
        if draw_team:
            teams[t] = numpy_random.integers(table_rng, t, N_TEAMS)
        for _ in range(n_seeds):
            numpy_random.integers(table_rng, t, SEED_RANGE)
        numpy_random.seed(deck_rng, t, numpy_random.integers(table_rng, t, SEED_RANGE))


@njit(cache=True, nogil=True)
def _first_dealers(deck_rng, tables, code, dealers):
    """dealers[t] = the first dealer of each table in ``tables`` by the rule
    ``FIRST_DEALER_DRAWS[code]``, drawn as ``Game`` draws it: permutations of its deck generator."""
    deck = np.empty(N_CARDS, dtype=np.int64)
    for t in tables:
        dealer, seats = -1, ALL_SEATS
        while dealer < 0:
            numpy_random.permutation(deck_rng, t, deck)
            dealer, seats = dealer_draw(code, deck, seats)
        dealers[t] = dealer


# The kernels compile in the first dealer's rule and numpy's generator: a change there recompiles them.
cache_depends_on(kernels_of(__name__), (actions, numpy_random))


def vector_env(num_envs: int, opponents: Any, **kwargs: Any) -> AllFoursVectorEnv:
    """An :class:`AllFoursVectorEnv` of ``num_envs`` tables against ``opponents``; full documentation:
    ``help(allfours_env.gym_vector)``. Bots by name: ``agents.vector_env``."""
    return AllFoursVectorEnv(num_envs, opponents, **kwargs)


def _table_draws(
    source: Any, seats: int, what: str, n: int, make_bot: Callable[[str], Bot] | None, alias: dict[int, Bot]
) -> list[BotsDraw]:
    """Each table's function ``rng -> bots`` for ``source`` (see the module docstring). Bots that
    answer exactly alike (instances of one memoryless name) go into ``alias``, by id, as one of them."""
    if isinstance(source, str) and make_bot is not None:
        first = [make_bot(source) for _ in range(seats)]  # an unknown name raises ValueError here
        if all(hasattr(bot, "act_batch") for bot in first):
            # Memoryless and deterministic: one instance per seat serves every table (the seats keep
            # an instance each, as the single-agent env's do, for its seed draws) and asking one
            # of them for every seat's tables gives the same answers in one call.
            alias.update((id(bot), first[0]) for bot in first)
            return [lambda rng: first] * n
        return [lambda rng: first] + [seat_bots(source, seats, what, make_bot) for _ in range(n - 1)]
    if callable(getattr(source, "act", None)) and not isinstance(source, type) and not hasattr(source, "act_batch"):
        raise ValueError(
            f"{what}: a bot instance plays every table here, so it must answer many at once (act_batch); "
            f"give {type(source).__name__}'s name, or a function rng -> bot that makes one per table"
        )
    return [seat_bots(source, seats, what, make_bot)] * n


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
        episode: str = "match",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        policy_input: PolicyInput | None = None,
        dict_observation: bool = False,
        make_bot: Callable[[str], Bot] | None = None,
        **rules: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or not 1 <= num_envs <= MAX_TABLES:
            raise ValueError(f"num_envs must be a positive integer up to {MAX_TABLES:,}, got {num_envs!r}")
        for name, value, allowed in (("reward", reward, REWARD_MODES), ("episode", episode, EPISODES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        try:
            autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            autoreset_mode = None
        if autoreset_mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]}")
        self.num_envs = n = int(num_envs)
        self.fixed_team = check_team(team)
        self.opponents, self.partner = opponents, partner  # as given (e.g. a pool the trainer updates)
        self._alias: dict[int, Bot] = {}  # bots that answer as another one does, by id
        self.reward_mode, self.episode = reward, episode
        self.game = VectorGame(n, episode=episode, **rules)  # bad rule keys or values raise here
        self.rules = self.game.rules
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.autoreset_mode = autoreset_mode
        if isinstance(opponents, Sequence) and not isinstance(opponents, str):
            if len(opponents) != N_TEAMS:
                raise ValueError(f"opponents: one bot source, or a pair (one per opponent seat), got {len(opponents)}")
            pair = [
                _table_draws(source, 1, f"opponents[{i}]", n, make_bot, self._alias)
                for i, source in enumerate(opponents)
            ]
            self._draw_opponents = [lambda rng, a=a, b=b: [a(rng)[0], b(rng)[0]] for a, b in zip(*pair, strict=True)]
        else:
            self._draw_opponents = _table_draws(opponents, N_TEAMS, "opponents", n, make_bot, self._alias)
        self._draw_partner = (
            [lambda rng: []] * n if partner is None else _table_draws(partner, 1, "partner", n, make_bot, self._alias)
        )
        self.policy_input = policy_input
        if policy_input is None:
            observation = gym.spaces.Box(0.0, observation_high(self.rules), dtype=np.float32)
        else:
            observation = gym.spaces.Box(-1.0, 1.0, (int(policy_input[0]),), np.float32)
        if dict_observation:
            observation = gym.spaces.Dict({OBS_KEY: observation, MASK_KEY: gym.spaces.Box(0, 1, (N_ACTIONS,), np.int8)})
        self.dict_observation = dict_observation
        self.single_observation_space = observation
        self.single_action_space = gym.spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(observation, n)
        self.action_space = batch_space(self.single_action_space, n)

        self.team = np.zeros(n, dtype=np.int64)
        self._sign = np.ones(n)  # +1 where the learner plays team 0, -1 where team 1
        # Each table's generator (gym.Env's np_random) and its episode's deck generator (Game's), as
        # numpy_random rows: their draws are numpy's, made in compiled code for many tables at once.
        self._table_rng = np.zeros((n, numpy_random.STATE_WORDS), dtype=np.uint64)
        self._deck_rng = np.zeros((n, numpy_random.STATE_WORDS), dtype=np.uint64)
        self._seeded = np.zeros(n, dtype=bool)
        self._generator = np.random.Generator(np.random.PCG64(0))  # a table's generator, for Python draws
        self._owner = np.full((n, N_SEATS), LEARNER, dtype=np.int64)
        self._bots: list[list[Bot | None]] = [[None] * N_SEATS for _ in range(n)]
        self._batch: dict[int, Bot] = {}  # the batch bots in play, by id
        self._pending = np.zeros(n)  # reward gathered since the learner's last step at each table
        self._over = np.ones(n, dtype=bool)  # episode over: the next step resets the table
        self._masks = np.zeros((n, N_ACTIONS), dtype=np.int8)
        self._started = False
        self._fixed = self._fixed_bots(opponents, partner)

    def _fixed_bots(self, opponents: Any, partner: Any) -> tuple[int, np.ndarray] | None:
        """When every seat's bot is a name or an instance and has ``act_batch`` (memoryless:
        its reset seeds go unused), every table plays table 0's bots (``_table_draws`` gives
        such sources one instance per seat) whatever the table's generator draws: the number of
        bot seeds an episode start draws, and the seats' owners for each learner team (2, 4).
        Else None: the bots are drawn and reset table by table, in Python."""
        pair = isinstance(opponents, Sequence) and not isinstance(opponents, str)
        sources = [*(opponents if pair else [opponents]), *([] if partner is None else [partner])]
        if not all(isinstance(s, str) or callable(getattr(s, "act", None)) for s in sources):
            return None  # a function rng -> bot draws from the generator
        bots = self._draw_opponents[0](None) + self._draw_partner[0](None)
        if not all(hasattr(bot, "act_batch") for bot in bots):
            return None
        owners = np.empty((N_TEAMS, N_SEATS), dtype=np.int64)
        for team in range(N_TEAMS):
            seats = self._seat_bots(team, bots[:N_TEAMS], bots[N_TEAMS:])
            owners[team] = [LEARNER if b is None else id(b) for b in seats]
            self._batch.update((id(b), b) for b in seats if b is not None)
        return len({id(bot) for bot in bots}), owners

    def _seat_bots(self, team: int, opponents: list[Bot], partners: list[Bot]) -> list[Bot | None]:
        """The bot of each seat (None: the learner's), each as the bot that answers for it."""
        seats: list[Bot | None] = [None] * N_SEATS
        seats[1 - team], seats[3 - team] = opponents
        if partners:
            seats[team + 2] = partners[0]
        return [self._alias.get(id(bot), bot) for bot in seats]

    # ---------------------------------------------------------------- Gymnasium API

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """New episodes at every table. ``seed``: None, an int (table i: ``seed + i``) or one per
        table; ``options``: the single-agent env's reset options, for every table. Bad ones raise
        a ValueError before anything changes."""
        n = self.num_envs
        if seed is None or isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [None] * n if seed is None else [check_seed(seed) + i for i in range(n)]
        elif isinstance(seed, Sequence) and not isinstance(seed, str) and len(seed) == n:
            seeds = [None if s is None else check_seed(s) for s in seed]
        else:
            raise ValueError(f"seed must be None, an int, or a list of {n} ints or Nones (one per table), got {seed!r}")
        options = checked_options(self.rules, options)
        for t, table_seed in enumerate(seeds):
            if table_seed is not None or not self._seeded[t]:
                self._table_rng[t] = numpy_random.packed(seeding.np_random(table_seed)[0].bit_generator.state)
                self._seeded[t] = True
        everywhere = np.ones(n, dtype=bool)
        self._pending[:] = 0.0
        self._begin(everywhere, options)
        self._play_bots()
        self._over = self.game.is_over  # a given score may end a match at its first kick
        self._started = True
        return self._observe(), self._mask_info({})

    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an int array of shape ({self.num_envs},), one action id 0..55 per table; "
                f"got {actions.dtype} {actions.shape}"
            )
        game = self.game
        resetting = self._over & (self.autoreset_mode == AutoresetMode.NEXT_STEP)
        playing = ~resetting
        points = game.step(actions.astype(np.int64), tables=playing)  # an illegal action raises, changing nothing
        self._pay(points, playing & ~self._over)  # (a table over since its reset was paid then)
        self._give_decks(playing)
        if resetting.any():
            self._pending[resetting] = 0.0
            self._begin(resetting, {})
        self._play_bots()
        info: dict[str, Any] = {}
        ended = game.is_over & playing
        reward = np.where(playing, self._pending, 0.0)
        self._pending[playing] = 0.0
        if ended.any():
            self._end_info(info, ended)
        observations = self._observe()
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            finals = np.empty(self.num_envs, dtype=object)  # as SyncVectorEnv gathers them
            for t in np.flatnonzero(ended):
                finals[t] = _row(observations, t)
            info = {"final_obs": finals, "_final_obs": ended.copy(), "final_info": info, "_final_info": ended}
            self._begin(ended, {})
            self._play_bots()
            observations = self._observe()
        self._over = game.is_over
        terminated = ended.copy()
        return observations, reward, terminated, np.zeros(self.num_envs, dtype=bool), self._mask_info(info)

    def action_masks(self) -> np.ndarray:
        """int8 (num_envs, 56): the legal actions of the learner's seat to act at every table (as
        the single-agent env's ``action_masks``; all zero where the episode is over)."""
        return self._masks.copy()

    def close_extras(self, **kwargs: Any) -> None:
        pass

    # ---------------------------------------------------------------- the pieces

    def _begin(self, tables: np.ndarray, options: dict[str, Any]) -> None:
        """Start an episode at every table in ``tables``, drawing from each table's generator
        exactly what ``SingleAgentEnv.reset`` draws, in its order (the reset options were
        checked in reset())."""
        n, starting = self.num_envs, np.flatnonzero(tables)
        if self._fixed is not None:  # the draws alone, compiled, for every starting table at once
            n_seeds, owners = self._fixed
            if self.fixed_team is not None:
                self.team[starting] = self.fixed_team
            _draw_starts(self._table_rng, self._deck_rng, starting, self.fixed_team is None, n_seeds, self.team)
            self._owner[starting] = owners[self.team[starting]]
        else:
            self._draw_bots(starting)
        self._sign[starting] = 1 - 2 * self.team[starting]
        dealers, scores = np.full(n, -1, dtype=np.int64), np.zeros((n, 2), dtype=np.int64)
        scores[starting] = options.get("scores", (0, 0))
        given_dealer, given_decks = options.get("dealer"), options.get("decks")
        rule = self.rules.first_dealer
        if given_dealer is not None or isinstance(rule, int):
            dealers[starting] = rule if given_dealer is None else given_dealer
        else:  # drawn first, then the first deck, as Game draws them
            _first_dealers(self._deck_rng, starting, FIRST_DEALER_DRAWS.index(rule), dealers)
        game = self.game
        game._queue_given(tables, {t: given_decks for t in starting.tolist()} if given_decks else None)
        game._queue_drawn(self._deck_rng, tables, DECKS_AHEAD)
        self._pay(game._deal_first(tables, dealers, scores), tables)

    def _draw_bots(self, starting: np.ndarray) -> None:
        """``_begin``'s draws, table by table, where bots are drawn or reset: SingleAgentEnv's code."""
        owners_before = self._owner[starting]
        rng = self._generator
        for t in starting.tolist():
            rng.bit_generator.state = numpy_random.unpacked(self._table_rng[t])
            team = int(rng.integers(N_TEAMS)) if self.fixed_team is None else self.fixed_team
            opponents = self._draw_opponents[t](rng)
            partners = self._draw_partner[t](rng)
            to_reset = {id(bot): bot for bot in opponents + partners}.values()  # each bot once, in seat order
            bot_seeds = [int(rng.integers(SEED_RANGE)) for _ in to_reset]
            numpy_random.seed(self._deck_rng, t, int(rng.integers(SEED_RANGE)))
            self._table_rng[t] = numpy_random.packed(rng.bit_generator.state)
            for bot, bot_seed in zip(to_reset, bot_seeds):
                bot.reset(bot_seed)
            self.team[t] = team
            self._bots[t] = seats = self._seat_bots(team, opponents, partners)
            self._owner[t] = [LEARNER if b is None else id(b) if hasattr(b, "act_batch") else OWN_BOT for b in seats]
            self._batch.update((id(b), b) for b in seats if hasattr(b, "act_batch"))  # the new batch bots in
        if set(owners_before.ravel().tolist()) - set(self._owner[starting].ravel().tolist()):
            # a bot left these tables: out with the bots no table plays any more
            in_play = set(np.unique(self._owner).tolist())
            self._batch = {key: bot for key, bot in self._batch.items() if key in in_play}

    def _play_bots(self) -> None:
        """Let the bots move until every table waits for a learner seat or is over: the bots that
        step tables in compiled code (``play_vector``) as far as they can, then a tick of the
        others (or of tables a compiled bot left for a deck), and again."""
        game, rows = self.game, np.arange(self.num_envs)
        while True:
            compiled_moved = False
            for key, bot in self._batch.items():
                if hasattr(bot, "play_vector"):
                    points, moved = bot.play_vector(game, self._owner == key)
                    if moved.any():
                        compiled_moved = True
                        self._pay(points, moved)
                        self._give_decks(moved)
            current = game.current
            owners = np.where(current >= 0, self._owner[rows, np.maximum(current, 0)], LEARNER)
            waiting = owners != LEARNER
            if not waiting.any():
                return
            if compiled_moved:
                continue  # the tables it left for a deck have one now
            moving = np.flatnonzero(waiting)  # observed and asked: only the tables where a bot is to act
            observations, masks, owners = game.observe(tables=moving), game.legal_mask()[moving], owners[moving]
            actions = np.zeros(self.num_envs, dtype=np.int64)
            for key, bot in self._batch.items():
                mine = owners == key
                if mine.all():  # one bot at every moving table (the usual case): no copies
                    actions[moving] = bot.act_batch(observations, masks)
                elif mine.any():
                    actions[moving[mine]] = bot.act_batch(observations[mine], masks[mine])
            for i in np.flatnonzero(owners == OWN_BOT):
                t = moving[i]
                bot = self._bots[t][current[t]]
                actions[t] = bot.act({"observation": observations[i], "action_mask": masks[i].view(np.int8)})
            self._pay(game.step(actions, tables=waiting), waiting)
            self._give_decks(waiting)

    def _pay(self, points: np.ndarray, tables: np.ndarray) -> None:
        """Add what the learner's team gained at ``tables`` (points (n, 2) of one step or start,
        zero at the tables that did not move)."""
        if self.reward_mode == "points":
            self._pending += (points[:, 0] - points[:, 1]) * self._sign
            return
        winner = self.game.winner
        won = tables & (winner >= 0)
        if won.any():
            self._pending += np.where(won, np.where(winner == self.team, 1.0, -1.0), 0.0)

    def _give_decks(self, tables: np.ndarray) -> None:
        """Keep ``DECKS_AHEAD`` decks queued at each live table in ``tables``, drawn from its
        episode's deck generator: one permutation per deal, the draws ``Game`` makes (drawing
        ahead changes nothing dealt: the generator is the episode's alone)."""
        self.game._queue_drawn(self._deck_rng, tables, DECKS_AHEAD)

    def _end_info(self, info: dict[str, Any], ended: np.ndarray) -> None:
        game = self.game
        for key, values in (("scores", game.scores), ("team", self.team.copy()), ("deals", game.deal_number)):
            info[key] = values
            info[f"_{key}"] = ended.copy()

    def _observe(self) -> Any:
        """Each table's observation for its learner seat to act (its team's first seat once over)."""
        game = self.game
        current = game.current
        observations = game.observe(seats=np.where(current >= 0, current, self.team))
        legal = game.legal_mask()
        self._masks = legal.astype(np.int8)
        if self.policy_input is not None:
            observations = self.policy_input[1](observations, legal)
        if self.dict_observation:
            return {OBS_KEY: observations, MASK_KEY: self._masks.copy()}
        return observations

    def _mask_info(self, info: dict[str, Any]) -> dict[str, Any]:
        info[MASK_KEY] = self._masks.copy()
        info[f"_{MASK_KEY}"] = np.ones(self.num_envs, dtype=bool)
        return info


def _row(observations: Any, t: int) -> Any:
    if isinstance(observations, dict):
        return {key: value[t] for key, value in observations.items()}
    return observations[t]
