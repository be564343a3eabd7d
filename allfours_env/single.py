"""All Fours as a single-agent Gymnasium env: one seat, or one team, against bots.

>>> import agents
>>> env = agents.single_agent_env(opponents="rule_based", reward="points", target_score=7)
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step(int(env.action_masks().nonzero()[0][0]))

The learner plays team ``team`` (0: seats 0 and 2, 1: seats 1 and 3; None: drawn at every reset
from the env's seeded generator), both seats with one policy, or only seat ``team`` when a
``partner`` bot plays the other. ``opponents`` play the other team. Each ``step`` applies the
learner's action, then the bots play (through the shared match loop, :mod:`allfours_env.match`)
until a learner seat must decide or the episode is over.

Opponents and partner: a bot instance (it plays both opponent seats), a bot name (``"random"``,
``"rule_based"``, ``"expert"``, ``"pretrained"``, a policy ``.zip``/``.npz``: each seat gets its
own instance; names are the bots package's, so name them through ``agents.single_agent_env``,
which passes ``make_bot=agents.make``), a function ``rng -> bot`` called with the env's
generator at every reset (e.g. an opponent pool; the bot plays both opponent seats), or, for
``opponents``, a pair of any of these: the lower opponent seat first. Every bot is reset with a
seed drawn from the env's generator at every reset, so ``reset(seed=...)`` replays an episode.

Spaces: observation ``Box(0, observation_high(rules), (OBS_SIZE,), float32)``, what the seat to
act sees (the same vector as the AEC env's ``observe(agent)["observation"]``; the learner's first
seat once the episode is over); action ``Discrete(56)``; :meth:`SingleAgentEnv.action_masks`
gives the legal actions (sb3-contrib's MaskablePPO reads it; all zero once the episode is over).

Rewards (``reward``, as in the AEC env, for the learner's team): "match", +1 / -1 when the
match ends; "points", every award's points, plus for the learner's team and minus for the other,
at the step in which it happens. Every award counts once, awards during the opponents' turns
(and the kick of the first deal, dealt at reset) are included in the learner's next reward, and
the last one reaches the learner whoever moved last. ``episode``: "match" or "deal" (deal
episodes end when one deal is scored). Rule variants: the A0 keys as keyword arguments.
``reset(seed, options={"decks": ..., "dealer": ..., "scores": ...})`` takes the AEC env's reset
options (bad ones raise ValueError before anything changes; a score that the first kick
completes gives an episode that is already over, with an all-zero mask).

Illegal actions (``illegal``): "raise" (default) raises the AEC env's ``ValueError``, naming
the seat, the action and the legal actions, and changes nothing. "lose" (for tools that step
unmasked actions, such as Gymnasium's ``check_env``): the action is not played, the episode
ends at once (``terminated``) with reward ``ILLEGAL_REWARD`` and ``info["illegal_action"]``,
as PettingZoo's ``TerminateIllegalWrapper`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from .cards import N_SEATS
from .engine import EPISODES, N_ACTIONS, Event, Game, check_seed, check_start
from .env import RESET_OPTIONS
from .match import Bot, Match
from .observation import observation_high
from .rewards import REWARD_MODES, event_reward
from .rules import Rules

ILLEGAL_MODES = ("raise", "lose")
ILLEGAL_REWARD = -1.0
N_TEAMS = 2
SEED_RANGE = 2**31  # bot and deck seeds are drawn from 0 .. SEED_RANGE-1
STATE_FIELDS = ("team", "_pending", "_mask", "_over")

BotsDraw = Callable[[np.random.Generator], list[Any]]  # the env's generator -> the bots of an episode


def single_agent_env(opponents: Any, **kwargs: Any) -> SingleAgentEnv:
    """A :class:`SingleAgentEnv` against ``opponents``; the keyword arguments are the class's.

    Full documentation: ``help(allfours_env.single)``.
    """
    return SingleAgentEnv(opponents, **kwargs)


def check_team(team: Any) -> int | None:
    """``team`` as the envs take it (0, 1 or None); a ValueError for anything else."""
    is_int = isinstance(team, int | np.integer) and not isinstance(team, bool)  # not 0.0, not True
    if not (team is None or is_int and team in (0, 1)):
        raise ValueError(f"team must be 0 (seats 0, 2), 1 (seats 1, 3) or None (drawn at each reset), got {team!r}")
    return None if team is None else int(team)  # a numpy integer counts as an int


def checked_options(rules: Rules, options: Any) -> dict[str, Any]:
    """The reset options of a single-agent env (one dict, the AEC env's keys), checked: a
    ValueError saying what is allowed for anything else."""
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"options must be None or a dict with keys {list(RESET_OPTIONS)}, got {type(options).__name__}")
    options = dict(options or {})
    unknown = sorted(set(options) - set(RESET_OPTIONS), key=repr)  # keys of any type, not only str
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; options: {list(RESET_OPTIONS)}")
    check_start(rules, options.get("decks"), options.get("dealer"), options.get("scores"))
    return options


def seat_bots(source: Any, seats: int, what: str, make_bot: Callable[[str], Bot] | None) -> BotsDraw:
    """The bots of ``seats`` seats for one ``source`` (see the module docstring); bad sources raise now."""
    if isinstance(source, str):
        if make_bot is None:  # allfours_env knows the bot protocol, not the bots
            raise TypeError(
                f"{what}: the bot name {source!r} needs the bots package: agents.single_agent_env and "
                "agents.vector_env take names, "
                "or pass a bot instance (agents.make(name))"
            )
        bots = [make_bot(source) for _ in range(seats)]  # an unknown name raises ValueError here
        return lambda rng: bots
    if isinstance(source, type):
        raise TypeError(f"{what}: give a bot name, a bot instance or a function rng -> bot, not the class {source!r}")
    if callable(getattr(source, "act", None)):
        return lambda rng: [source] * seats
    if callable(source):
        return lambda rng: [source(rng)] * seats
    raise TypeError(f"{what}: expected a bot name, a bot instance or a function rng -> bot, got {source!r}")


class SingleAgentEnv(gym.Env):
    """One seat or one team of All Fours against bots; see the module docstring."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        opponents: Any,
        *,
        partner: Any = None,
        team: int | None = None,
        reward: str = "match",
        episode: str = "match",
        illegal: str = "raise",
        make_bot: Callable[[str], Bot] | None = None,
        **rules: Any,
    ) -> None:
        for name, value, allowed in (("reward", reward, REWARD_MODES), ("episode", episode, EPISODES),
                                     ("illegal", illegal, ILLEGAL_MODES)):  # fmt: skip
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        team = check_team(team)
        self.rules = Rules.from_kwargs(**rules)
        self.reward_mode, self.episode, self.illegal, self.fixed_team = reward, episode, illegal, team
        if isinstance(opponents, Sequence) and not isinstance(opponents, str):
            if len(opponents) != N_TEAMS:
                raise ValueError(f"opponents: one bot source, or a pair (one per opponent seat), got {len(opponents)}")
            draws = [seat_bots(source, 1, f"opponents[{i}]", make_bot) for i, source in enumerate(opponents)]
            self._draw_opponents: BotsDraw = lambda rng: [draw(rng)[0] for draw in draws]
        else:
            self._draw_opponents = seat_bots(opponents, N_TEAMS, "opponents", make_bot)
        self._draw_partner: BotsDraw = (lambda rng: []) if partner is None else seat_bots(partner, 1, "partner", make_bot)
        self.observation_space = gym.spaces.Box(0.0, observation_high(self.rules), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(N_ACTIONS)
        self.team = 0
        self.match: Match | None = None  # once reset
        self._pending = 0  # reward gathered since the learner's last step (points, or +-1)
        self._mask = np.zeros(N_ACTIONS, dtype=np.int8)
        self._over = True

    # ---------------------------------------------------------------- Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """A new episode; ``options``: the AEC env's reset options (``decks``, ``dealer``, ``scores``).
        A bad seed or option raises a ValueError before any generator is drawn from or reseeded."""
        seed = check_seed(seed)
        options = checked_options(self.rules, options)  # before reseeding or drawing: a failed reset changes nothing
        super().reset(seed=seed)

        rng = self.np_random
        team = int(rng.integers(N_TEAMS)) if self.fixed_team is None else self.fixed_team
        opponents = self._draw_opponents(rng)
        partners = self._draw_partner(rng)
        to_reset = {id(bot): bot for bot in opponents + partners}.values()  # each bot once, in seat order
        bot_seeds = [int(rng.integers(SEED_RANGE)) for _ in to_reset]
        game = Game(self.rules, np.random.default_rng(int(rng.integers(SEED_RANGE))), episode=self.episode, **options)
        for bot, bot_seed in zip(to_reset, bot_seeds):
            bot.reset(bot_seed)
        bots: list[Any] = [None] * N_SEATS
        bots[1 - team], bots[3 - team] = opponents
        if partners:
            bots[team + 2] = partners[0]
        self.team = team
        self._pending = 0
        self._over = False
        self.match = Match(game, bots, on_event=self._on_event)
        self.match.run()
        self._over = self.match.over  # a given score may end the match at the first kick
        return self._observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.match is None or self._over:
            raise RuntimeError("the episode is over (or was never started): call reset() first")
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        info: dict[str, Any] = {}
        if self.illegal == "lose" and not self._is_legal(action):
            self._over = True
            self._mask = np.zeros_like(self._mask)
            reward = self._take_reward() + ILLEGAL_REWARD
            return self._observe(), reward, True, False, {"illegal_action": action}
        self.match.step(action)  # an illegal action raises ValueError here, changing nothing
        self.match.run()
        self._over = self.match.over
        if self._over:
            game = self.match.game
            info = {"scores": tuple(game.scores), "team": self.team, "deals": game.deal_number}
        return self._observe(), self._take_reward(), self._over, False, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of the learner's seat to act, int8[56] (all zero once the episode is over)."""
        return self._mask

    def observation_of(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """What the learner is given for the seat's observation; subclasses may add to it."""
        return observation

    # ---------------------------------------------------------------- checkpoints

    def get_state(self) -> dict[str, Any]:
        """Everything that decides what happens next (picklable), for checkpoints."""
        if self.match is None:
            raise RuntimeError("get_state() needs an episode: call reset() first")
        state = {name: getattr(self, name) for name in STATE_FIELDS}
        state.update(game=self.match.game, bots=self.match.bots, np_random=self.np_random.bit_generator.state)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`get_state` of an env with the same rules and episode: a
        ValueError if it is not one (its game one the engine cannot go on from included), and
        nothing changes."""
        keys = {*STATE_FIELDS, "game", "bots", "np_random"}
        if not isinstance(state, dict) or set(state) != keys:
            raise ValueError(f"state must be a dict with the keys {sorted(keys)}, as get_state() returns it")
        game = state["game"]
        if not isinstance(game, Game) or game.rules != self.rules or game.episode != self.episode:
            raise ValueError("state['game'] must be a Game of this env's rules and episode")
        game.check()
        mask, bots = state["_mask"], state["bots"]
        if not (isinstance(mask, np.ndarray) and mask.shape == self._mask.shape and mask.dtype == self._mask.dtype):
            raise ValueError(f"state['_mask'] must be an int8 array of {N_ACTIONS}")
        if check_team(state["team"]) is None or not isinstance(bots, Sequence) or len(bots) != N_SEATS:
            raise ValueError("state['team'] must be 0 or 1 and state['bots'] the four seats' bots")
        try:
            np.random.default_rng().bit_generator.state = state["np_random"]  # on a scratch generator first
        except (TypeError, ValueError, KeyError) as err:
            raise ValueError(f"state['np_random'] is not a PCG64 generator's state: {err}") from None
        for name in STATE_FIELDS:
            setattr(self, name, state[name])
        self.match = Match(state["game"], state["bots"])  # the log so far was already rewarded
        self.match.on_event = self._on_event
        self.np_random.bit_generator.state = state["np_random"]

    # ---------------------------------------------------------------- internals

    def _on_event(self, event: Event) -> None:
        points = event_reward(event, self.reward_mode)
        if points:
            self._pending += points if event.team == self.team else -points

    def _take_reward(self) -> float:
        reward, self._pending = self._pending, 0
        return float(reward)

    def _is_legal(self, action: Any) -> bool:
        is_int = isinstance(action, int | np.integer) and not isinstance(action, bool)
        return is_int and 0 <= action < N_ACTIONS and bool(self._mask[action])

    def _observe(self) -> np.ndarray:
        game = self.match.game
        if self._over:
            self._mask = np.zeros_like(self._mask)
            observation = self.match.observe(self.team)["observation"]
        else:
            seen = self.match.observe(game.current)
            self._mask = seen["action_mask"]
            observation = seen["observation"]
        return self.observation_of(observation, self._mask)
