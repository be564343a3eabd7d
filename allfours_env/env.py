"""All Fours (Trinidad and Tobago) as a four-agent PettingZoo AEC environment.

The env translates; the rules live in :mod:`allfours_env.engine` (specification: docs/rules.md).

Agents
    ``player_0`` .. ``player_3``; seat ``s`` is ``player_s``. Play and deal go to the right
    (after seat ``s`` comes ``(s+1) % 4``); partners sit opposite: team 0 = seats 0, 2 and
    team 1 = seats 1, 3. Every decision is an agent turn, even when only one action is legal.

Actions: ``Discrete(56)``
    ======  ==========================================================
    id      meaning
    ======  ==========================================================
    0..51   play card ``suit*13 + rank`` (suits C D H S, ranks 2..A)
    52      STAND (beggar keeps the kick's suit as trump)
    53      BEG (beggar asks the dealer)
    54      GIVE_ONE (dealer gives the beggar's team a point)
    55      RUN (dealer runs the pack: 3 more cards each, new kick)
    ======  ==========================================================

    An illegal action raises ``ValueError`` naming the agent, the action and the legal
    actions, and changes nothing.

Observation: ``{"observation": float32[986], "action_mask": int8[56]}``
    Seats are relative to the observer (0 self, 1 next, 2 partner, 3 previous); teams are
    "own" then "other". The mask is all zero when the agent is not the one to act.

    =========  ====  ============ ========================================================
    index      size  name         meaning
    =========  ====  ============ ========================================================
    0..51      52    hand         cards in own hand
    52..103    52    kick         the live kick (turned-up card), if any
    104..155   52    kicks_aside  kicks of this deal set aside by runs
    156..363   208   table        current trick: card played by relative seat r at [r*52 + card]
    364..571   208   played       every card played this deal by relative seat r at [r*52 + card]
    572..623   52    led          cards played this deal that led their trick
    624..831   208   trick_number per card, the 1-based number of its trick in 4 bits at [4*card..4*card+3], low bit first
    832..935   104   won          cards captured this deal: own team [0..51], other team [52..103]
    936..939   4     trump        trump suit once fixed (C, D, H, S); all 0 before
    940..943   4     phase        stand_or_beg, give_or_run, play, over
    944..947   4     dealer       dealer as relative seat
    948..951   4     beggar       beggar (seat after the dealer) as relative seat
    952..955   4     leader       leader of the current trick as relative seat (play phase only)
    956..959   4     partner      partner as relative seat (always 2)
    960..963   4     decisions    this deal: stood, begged, gave one, ran the pack
    964..965   2     scores       own team, other team score / target_score, capped at 1
    966        1     target       1 / target_score
    967..968   2     game_points  game points won this deal, own team, other team / 80
    969..985   17    rules        the rule variant (docs/rules.md A0), constant for a match:
                                  [0..1] kick_points trinidad, tobago; [2] hang_jack_points
                                  / target_score; [3] game_points / target_score; [4..6]
                                  game_tie none, non_dealer, dealer; [7..9] undertrump
                                  allowed, forbidden_unless_all_trumps,
                                  forbidden_when_can_follow; [10..11]
                                  give_one_to_reach_target forbidden, allowed; [12]
                                  give_one_requires_trump; [13] stand_requires_trump; [14..15]
                                  exhausted_pack kick_remaining, redeal; [16]
                                  single_trump_counts_high_and_low. target_score is in
                                  ``target``; first_dealer and deal_batch change neither play
                                  nor scoring and are left out
    =========  ====  ============ ========================================================

    Every value lies in [0, 1], except hang_jack_points and game_points in ``rules`` when they
    exceed target_score (the observation space's upper bound follows the env's rules).
    :func:`allfours_env.decode` turns an observation back into a readable ``View``; its
    ``rules`` field is the variant (a ``Rules``).
    ``state()`` (``state_space``: float32[1250]) is the full state for centralized critics:
    all four hands by absolute seat, the undealt stock, the seat to act, seat 0's observation.

Rewards
    ``reward="match"`` (default): when the match ends each agent of the winning team gets +1,
    each of the other team -1; 0 on every other step. ``reward="points"``: every award of
    points (kick, give one, high, low, jack, hang jack, game) gives its points to both agents
    of the scoring team and minus its points to the other two, at the step where it happens,
    whoever's turn it was; PettingZoo accumulates it until each agent's next turn.
    ``reward="equity"``: the same steps pay the change the award makes in the team's chance to
    win the match (:mod:`allfours_env.match_model`; 1 or 0 once it is won), so a match pays its
    result less the chance at 0-0, as the match counts, while its points come (target_score at
    most 30).

Arguments
    ``render_mode``: None, "ansi" (``render()`` returns the table as text), "human" (prints it
    after every step) or "rgb_array" (``render()`` returns a picture of the table, a new
    uint8[720, 960, 3] RGB array drawn by :mod:`allfours_env.picture`; needs Pillow). Every mode
    shows what one seat may see: ``render_seat`` (default None: the seat to act, seat 0 once
    the deal or match is over; a seat 0..3: always that seat, at the bottom of the picture, so
    a recorded match does not turn with every decision).
    ``reward``: "match", "points" or "equity". ``episode``: "match" (default, a whole match) or "deal"
    (the episode ends after one deal is scored, or earlier if the match ends; with
    ``reward="match"`` a deal episode pays ±1 only if the match ends in it).
    Rule variants: the keys of docs/rules.md table A0 as keyword arguments, e.g.
    ``env(target_score=7, undertrump="forbidden_unless_all_trumps")``.

Reset options
    ``reset(seed, options={"decks": [deck, ...], "dealer": s, "scores": [team0, team1]})``:
    each deal takes the next given deck (a permutation of 0..51, dealt from index 0), then
    decks come from the seeded generator; ``dealer`` fixes the first dealer, ``scores`` the
    starting score. ``seed``: None or an int 0 or more. A bad seed or option, or a misspelt
    option (``"deck"``), raises a ValueError and changes nothing; other keys are ignored with a
    warning (generic tools such as PettingZoo's ``api_test`` pass their own). ``env.unwrapped.scores`` is ``(team0, team1)`` after every step and
    ``env.unwrapped.game`` the engine (its ``events`` list is the log of the match).
    A call out of order is a RuntimeError saying to call reset: in ``raw_env``, any method that
    needs the match before the first reset, and ``step`` or ``last`` once every agent is done
    and stepped out (``agents`` is empty). ``env()``'s PettingZoo wrapper reports a call before
    reset itself and only warns on such a ``step``; its ``last`` raises the same RuntimeError.

Version history
    v1: the observation ends with the ``rules`` block (986 floats, was 969); ``render_seat``.
    v0: first release.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from gymnasium import logger, spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .actions import RESET_OPTIONS, check_options
from .cards import N_SEATS
from .engine import DEAL_OVER, EPISODES, MATCH_OVER, N_ACTIONS, Game, check_seed
from .observation import OBS_SIZE, STATE_SIZE, decode, encode, encode_state, observation_high
from .render import render_text
from .rewards import REWARD_MODES, equity_for, table_gain
from .rules import Rules

AGENTS = tuple(f"player_{s}" for s in range(N_SEATS))
SEAT_OF = {a: s for s, a in enumerate(AGENTS)}


def env(**kwargs: Any) -> AECEnv:
    """The environment in PettingZoo's order-enforcing wrapper; arguments as :class:`raw_env`.

    Illegal or out-of-range actions are rejected by the env itself with a ValueError that lists
    the legal actions, so no TerminateIllegal or AssertOutOfBounds wrapper is added.
    """
    return _OrderEnforcing(raw_env(**kwargs))


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's wrapper, but a reset that raises (bad options) does not count as a reset."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        had_reset = self._has_reset
        try:
            super().reset(seed=seed, options=options)
        except BaseException:
            self._has_reset = had_reset
            raise

    def step(self, action: int | None) -> None:
        env = self.env
        if self._has_reset and env.agents:  # the usual case, without the wrappers' attribute lookups
            self._has_updated = True
            env.step(action)
        else:
            super().step(action)  # PettingZoo's error before reset, its warning once every agent is done

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict]:
        # PettingZoo's last() reads the wrapper's copies of the dicts (a KeyError once every agent
        # is stepped out); the env's own last() says what to do instead.
        if not self._has_reset:
            return super().last(observe)  # PettingZoo's "cannot be accessed before reset"
        return self.env.last(observe)


class raw_env(AECEnv):
    """All Fours as a PettingZoo AECEnv, without the order-enforcing wrapper that :func:`env` adds."""

    metadata = {
        "render_modes": ["human", "ansi", "rgb_array"],
        "name": "allfours_v1",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        reward: str = "match",
        episode: str = "match",
        render_seat: int | None = None,
        **rules: Any,
    ):
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if render_seat is not None:
            if isinstance(render_seat, bool) or not isinstance(render_seat, int | np.integer) or not 0 <= render_seat < N_SEATS:
                raise ValueError(f"render_seat must be None (the seat to act) or a seat 0..3, got {render_seat!r}")
            render_seat = int(render_seat)
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, got {reward!r}")
        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}, got {episode!r}")
        self.rules = Rules.from_kwargs(**rules)
        self._equity = equity_for(reward, self.rules)  # "equity": the chances it pays from
        self.render_mode = render_mode
        self.render_seat = render_seat
        self.reward_mode = reward
        self.episode_mode = episode
        self.possible_agents = list(AGENTS)
        high = observation_high(self.rules)
        obs_space = spaces.Dict({
            "observation": spaces.Box(0.0, high, (OBS_SIZE,), np.float32),
            "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
        })  # fmt: skip
        self.observation_spaces = {a: obs_space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in AGENTS}
        state_high = np.concatenate([np.ones(STATE_SIZE - OBS_SIZE, dtype=np.float32), high])  # obs comes last
        self.state_space = spaces.Box(0.0, state_high, (STATE_SIZE,), np.float32)
        self.np_random: np.random.Generator | None = None
        self.game: Game | None = None
        self.agents = []

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[_check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[_check_agent(agent)]

    @property
    def scores(self) -> tuple[int, int]:
        return tuple(self.game.scores) if self.game else (0, 0)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        seed = check_seed(seed)
        warn = lambda keys: logger.warn(f"reset ignores unknown option(s) {keys}; allfours options: {list(RESET_OPTIONS)}")
        decks, dealer, scores = check_options(self.rules, options, on_unknown=warn)
        rng = seeding.np_random(seed)[0] if seed is not None or self.np_random is None else self.np_random
        # The engine validates the options before using the generator: bad input changes nothing.
        game = Game(self.rules, rng, decks=decks, dealer=dealer, scores=scores, episode=self.episode_mode)
        self.np_random, self.game = rng, game
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos = {a: {} for a in AGENTS}
        self._rewards_given = False
        self._after_engine_step(AGENTS[0])

    def step(self, action: int | None) -> None:
        if self.game is None or not self.agents:
            self._check_agent_to_act("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.game.step(action)  # raises ValueError on an illegal action, changing nothing
        self._cumulative_rewards[agent] = 0
        self._after_engine_step(agent)
        if self.render_mode == "human":
            self.render()

    def _after_engine_step(self, agent: str) -> None:
        """Turn what the engine did into rewards, terminations and the next agent."""
        game = self.game
        gain = table_gain(game.points, game.winner, self.reward_mode, game.scores, self._equity)
        if gain:  # zero-sum: +gain to both agents of team 0, -gain to the other two
            for seat, a in enumerate(AGENTS):
                self.rewards[a] = -gain if seat % 2 else gain
        elif self._rewards_given:  # rewards are per step: clear the last step's
            for a in AGENTS:
                self.rewards[a] = 0
        self._rewards_given = bool(gain)
        current = game.current
        if current < 0:  # the match (or the deal episode) is over
            for a in AGENTS:
                self.terminations[a] = True
            self.agent_selection = agent
        else:
            self.agent_selection = AGENTS[current]
        if gain:
            self._accumulate_rewards()

    def last(self, observe: bool = True) -> tuple[dict[str, np.ndarray] | None, float, bool, bool, dict]:
        """AECEnv.last, with the agent to act known valid: observed without checking it again."""
        if self.game is None or not self.agents:
            self._check_agent_to_act("last")
        agent = self.agent_selection
        observation = self._observation(SEAT_OF[agent]) if observe else None
        return (
            observation, self._cumulative_rewards[agent], self.terminations[agent], self.truncations[agent],
            self.infos[agent],
        )  # fmt: skip

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = SEAT_OF[_check_agent(agent)]
        self._check_started("observe")
        return self._observation(seat)

    def _observation(self, seat: int) -> dict[str, np.ndarray]:
        observation, mask = self.game.observe(seat)
        return {"observation": observation, "action_mask": mask}

    def state(self) -> np.ndarray:
        self._check_started("state")
        return encode_state(self.game)

    def _check_started(self, method: str) -> None:
        """A clear error instead of an AttributeError on the missing game (the raw env has no
        order-enforcing wrapper)."""
        if self.game is None:
            raise RuntimeError(f"{method}() needs a match: call reset() first")

    def _check_agent_to_act(self, method: str) -> None:
        """A clear error instead of a KeyError once every agent has been stepped out."""
        self._check_started(method)
        if not self.agents:
            raise RuntimeError(
                f"{method}(): the match (or deal episode) is over and every agent is done; "
                "call reset() to start a new one"
            )

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            logger.warn("render() called without a render_mode; use render_mode='ansi', 'human' or 'rgb_array'")
            return None
        self._check_started("render")
        game = self.game
        seat = self.render_seat
        if seat is None:
            seat = max(game.current, 0)
        if game.phase == MATCH_OVER:
            status = f"Match over: team {game.winner} wins {game.scores[game.winner]}-{game.scores[1 - game.winner]}"
        elif game.phase == DEAL_OVER:
            status = f"Deal over: score {game.scores[0]}-{game.scores[1]}"
        else:
            status = f"player_{game.current} to act"
        view = decode(encode(game, seat))
        if self.render_mode == "rgb_array":
            from .picture import render_picture  # needs Pillow, only for this mode

            return render_picture(view, seat, status)
        text = render_text(view, seat, status)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text


def _check_agent(agent: object) -> str:
    """``agent`` if it is one of the env's agents, else a ValueError listing them."""
    if not isinstance(agent, str) or agent not in SEAT_OF:  # str first: a list is unhashable
        raise ValueError(f"unknown agent {agent!r}; the agents are {list(AGENTS)}")
    return agent


# help(env) and help(raw_env) show the whole documentation: each one's own summary, then the
# module docstring (one text, so the two cannot drift apart).
if __doc__:  # None under python -OO
    env.__doc__ = f"{inspect.cleandoc(env.__doc__)}\n\n{__doc__}"
    raw_env.__doc__ = f"{inspect.cleandoc(raw_env.__doc__)}\n\n{__doc__}"
