"""The text view of a seat's observation: complete (read back into the same View), leak-free, and its moves parsed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import allfours_env
import agents
from allfours_env import BEG, RUN, STAND, decode, parse_card
from allfours_env.cards import cards_of
from allfours_env.match import Match
from allfours_env.engine import Game
from allfours_env.text_view import observation_text, parse_move, read_observation_text

CARD_NAME = re.compile(r"\b[2-9TJQKA][CDHS]\b")
VARIANTS = ({}, {"target_score": 7, "undertrump": "forbidden_unless_all_trumps", "kick_points": "tobago"},
            {"exhausted_pack": "redeal", "hang_jack_points": 20, "game_tie": "dealer"})  # fmt: skip


def every_seat_at_every_step(rules: dict, seed: int):
    """(game, seat, observation) for every seat after every step of a match of random moves."""
    env = allfours_env.env(**rules)
    env.reset(seed=seed)
    picker = np.random.default_rng(seed)
    for agent in env.agent_iter():
        observation, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        for seat, other in enumerate(env.possible_agents):
            yield env.unwrapped.game, seat, env.observe(other)
        env.step(int(picker.choice(np.flatnonzero(observation["action_mask"]))))


@pytest.mark.parametrize("rules", VARIANTS)
def test_the_text_reads_back_into_the_observation(rules):
    """Everything the observation holds is in the text: it reads back into decode's View and the mask's moves."""
    checked = 0
    for _, _, observation in every_seat_at_every_step(rules, seed=len(rules)):
        view, legal = read_observation_text(observation_text(observation))
        assert view == decode(observation)
        assert legal == np.flatnonzero(observation["action_mask"]).tolist()
        checked += 1
    assert checked > 150


def seat_knows(game: Game, seat: int) -> set[int]:
    """The cards ``seat`` has seen this deal, from the engine: its hand, the kicks turned, every card played."""
    start = max(i for i, event in enumerate(game.events) if event.kind == "deal")
    seen = {e.card for e in game.events[start:] if e.kind in ("kick", "play")}
    return seen | set(cards_of(game.hands[seat]))


@pytest.mark.parametrize("seed", range(3))
def test_the_text_names_no_hidden_card(seed):
    named_any = 0
    for game, seat, observation in every_seat_at_every_step(VARIANTS[seed % len(VARIANTS)], seed=100 + seed):
        named = {parse_card(name) for name in CARD_NAME.findall(observation_text(observation))}
        hidden = named - seat_knows(game, seat)
        assert not hidden, f"seat {seat}'s text names {sorted(hidden)}, which it has not seen"
        named_any += bool(named)
    assert named_any > 100


def observation_at(phase: str, seed: int = 0):
    game = Game(rng=np.random.default_rng(seed))
    match = Match(game, [None] * 4)
    while decode(match.observe(game.current)).phase != phase:
        game.step(int(np.flatnonzero(match.observe(game.current)["action_mask"])[0]))
    return match.observe(game.current)


def test_the_legal_moves_are_named_and_explained():
    text = observation_text(observation_at("stand_or_beg"))
    assert text.splitlines()[-1].startswith("Your legal moves: STAND BEG. (STAND keeps the kick's suit as trump")
    observation = observation_at("play")
    legal = np.flatnonzero(observation["action_mask"])
    assert observation_text(observation).splitlines()[-1] == "Your legal moves: " + " ".join(
        allfours_env.card_text(int(c)) for c in legal) + "."  # fmt: skip


def test_parse_move_reads_the_spellings_of_a_legal_move():
    assert parse_move("stand", [STAND, BEG]) == STAND
    assert parse_move(" Beg. ", [STAND, BEG]) == BEG
    assert parse_move("run the pack", [54, RUN]) == RUN
    assert parse_move("10s", [parse_card("TS")]) == parse_card("TS")
    assert parse_move("jh", [parse_card("JH"), 0]) == parse_card("JH")


@pytest.mark.parametrize(("move", "says"), [
    ("QH", "QH is not a legal move here; the legal moves are 2C JH"),
    ("STAND", "STAND is not a legal move here; the legal moves are 2C JH"),
    ("play the jack", "cannot read the move 'play the jack'; the legal moves are 2C JH"),
    ("", "cannot read the move ''; the legal moves are 2C JH"),
])  # fmt: skip
def test_parse_move_refuses_anything_else_naming_the_legal_moves(move, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_move(move, [0, parse_card("JH")])


def test_the_text_bot_reads_only_the_text_and_plays_as_rule_based():
    text_bot, rule_based = agents.make("rule_based_text"), agents.make("rule_based")
    compared = 0
    for _, seat, observation in every_seat_at_every_step(VARIANTS[0], seed=7):
        if observation["action_mask"].any():
            text = observation_text(observation)
            assert text_bot.reply(text) == allfours_env.action_text(rule_based.act(observation))
            assert text_bot.act(observation) == rule_based.act(observation)
            compared += 1
    assert compared > 100


@pytest.mark.parametrize("damage", [
    lambda text: "", lambda text: text.replace("Trump: ", "Trumps: "), lambda text: text.replace("you", "me"),
    lambda text: re.sub(r"Your hand: \S+", "Your hand: XX", text), lambda text: text.replace("Phase: ", "Phase: ("),
])  # fmt: skip
def test_a_text_that_is_not_a_text_view_is_refused(damage):
    from allfours_env.text_view import TextFormatError

    with pytest.raises(TextFormatError):
        read_observation_text(damage(observation_text(observation_at("play"))))
