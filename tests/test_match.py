"""The shared match loop (allfours_env/match.py): hooks, seats played from outside, illegal bot actions."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make
from allfours_env.match import Decision, Match
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules


class Illegal:
    name = "cheat"

    def reset(self, seed=None):
        pass

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"] == 0)[0])


def test_hooks_see_every_decision_before_it_and_every_event_once():
    game = Game(Rules(target_score=7), np.random.default_rng(4))
    events, decisions = [], []

    def on_decision(decision: Decision) -> None:
        observation, mask = encode_with_mask(decision.game, decision.seat)  # the game before the step
        np.testing.assert_array_equal(decision.observation["observation"], observation)
        assert decision.seat == decision.game.current and mask[decision.action] == 1
        decisions.append(decision.action)

    bots = [make("rule_based") for _ in range(4)]
    match = Match(game, bots, on_decision=on_decision, on_event=events.append)
    assert events == game.events  # the first deal, dealt when the game was made
    match.run()
    assert match.over and events == game.events
    assert len(decisions) == sum(e.kind in ("play", "stand", "beg", "give_one", "run") for e in game.events)


def test_run_stops_at_seats_played_from_outside():
    game = Game(Rules(), np.random.default_rng(1))
    match = Match(game, [make("random"), None, make("random"), None])
    steps = 0
    while True:
        match.run()
        if match.over:
            break
        assert game.current in (1, 3)
        match.step(int(np.flatnonzero(match.observe(game.current)["action_mask"])[-1]))
        steps += 1
    assert steps > 10 and game.winner in (0, 1)


def test_an_illegal_bot_action_names_the_bot_and_changes_nothing():
    game = Game(Rules(), np.random.default_rng(2))
    events = list(game.events)
    with pytest.raises(ValueError, match="cannot take action") as raised:
        Match(game, [Illegal()] * 4).run()
    assert f"bot 'cheat' at seat {game.current}" in raised.value.__notes__
    assert game.events == events
    with pytest.raises(ValueError, match="one bot \\(or None\\) per seat"):
        Match(game, [Illegal()] * 3)
