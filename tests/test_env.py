"""The PettingZoo env: API conformance, seeding, options, errors, rewards, observation and rendering."""

from __future__ import annotations

import copy
import importlib
import pydoc
import re

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

import allfours_env
from allfours_env import decode, parse_card
from allfours_env.cards import cards_of, cards_text, team_of
from allfours_env.engine import AWARD_KINDS, PLAY, Game
from allfours_env.observation import LAYOUT, OBS_SIZE, STATE_SIZE, encode, layout_table
from tests.deck_builder import build_deck
from tests.hidden_hands import hidden_swaps, mid_play_game


def play_random(env, seed: int, max_steps: int = 100_000) -> list[int]:
    """Play with a seeded uniform policy; return the actions taken."""
    picker = np.random.default_rng(seed)
    actions = []
    for _ in env.agent_iter(max_steps):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        actions.append(int(legal[picker.integers(len(legal))]))
        env.step(actions[-1])
    return actions


def test_pettingzoo_api_test():
    api_test(allfours_env.env(), num_cycles=300)


def test_pettingzoo_seed_test():
    seed_test(allfours_env.env, num_cycles=300)


def test_same_seed_and_actions_give_the_same_match():
    a, b = allfours_env.env(), allfours_env.env()
    a.reset(seed=5)
    b.reset(seed=5)
    assert play_random(a, 1) == play_random(b, 1)
    assert a.unwrapped.game.events == b.unwrapped.game.events
    assert a.unwrapped.scores == b.unwrapped.scores


def test_agents_and_spaces_follow_the_conventions():
    env = allfours_env.env()
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    assert env.action_space("player_0").n == 56
    assert env.observation_space("player_3")["observation"].shape == (OBS_SIZE,)
    assert env.unwrapped.state().shape == (STATE_SIZE,) == env.unwrapped.state_space.shape
    # The first decision is the beggar's, the seat after the dealer.
    game = env.unwrapped.game
    assert env.agent_selection == f"player_{(game.dealer + 1) % 4}"


def test_decks_dealer_and_scores_options_are_used():
    deck = build_deck(dealer=2, hands={3: ["AH", "KH"]}, kicks=["JS"])
    env = allfours_env.env()
    env.reset(seed=0, options={"decks": [deck], "dealer": 2, "scores": [4, 6]})
    game = env.unwrapped.game
    assert game.dealer == 2 and game.deck == deck
    assert {parse_card("AH"), parse_card("KH")} <= set(game.hand(3))
    assert env.unwrapped.scores == (7, 6)  # the kicked jack scored 3 for the dealer's team (team 0)
    assert env.agent_selection == "player_3"


def test_reset_without_seed_continues_the_generator():
    env = allfours_env.env()
    env.reset(seed=3)
    first = list(env.unwrapped.game.deck)
    env.reset()
    assert env.unwrapped.game.deck != first
    env.reset(seed=3)
    assert env.unwrapped.game.deck == first


@pytest.mark.parametrize(
    "options,message",
    [
        ({"decks": [list(range(51))]}, "51 cards"),
        ({"decks": [[0] * 52]}, "not a permutation"),
        ({"decks": [list(range(1, 53))]}, "not a permutation"),
        ({"decks": "abc"}, "list of decks"),
        ({"dealer": 4}, "dealer must be a seat 0..3"),
        ({"dealer": -1}, "dealer must be a seat 0..3"),
        ({"scores": [-1, 0]}, "scores must be in 0..13"),
        ({"scores": [0, 14]}, "scores must be in 0..13"),
        ({"scores": [1]}, "two integers"),
    ],
)
def test_malformed_reset_options_raise_and_change_nothing(options, message):
    env = allfours_env.env()
    env.reset(seed=1)
    env.step(env.last()[0]["action_mask"].nonzero()[0][0].item())
    game = env.unwrapped.game
    before = (list(game.events), game.hands, game.scores, game.current, game.legal_bits())
    rng_state = copy.deepcopy(env.unwrapped.np_random.bit_generator.state)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=9, options=options)
    assert env.unwrapped.game is game
    assert (list(game.events), game.hands, game.scores, game.current, game.legal_bits()) == before
    assert env.unwrapped.np_random.bit_generator.state == rng_state


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"target": 14}, "unknown rule 'target'; known rules: target_score"),
        ({"target_score": 0}, "positive integer"),
        ({"undertrump": "never"}, "undertrump"),
        ({"kick_points": "barbados"}, "trinidad"),
        ({"first_dealer": 7}, "seat 0..3"),
        ({"deal_batch": 2}, r"\(1, 3\)"),
        ({"stand_requires_trump": "yes"}, "True or False"),
        ({"reward": "score"}, "reward must be one of"),
        ({"episode": "trick"}, "episode must be one of"),
        ({"render_mode": "rgb"}, "render_mode"),
    ],
)
def test_unknown_or_bad_rules_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        allfours_env.env(**kwargs)


def test_illegal_action_raises_names_agent_action_and_legal_actions_and_changes_nothing():
    env = allfours_env.env()
    env.reset(seed=2)
    agent = env.agent_selection
    game = env.unwrapped.game
    before = (list(game.hands), list(game.scores), len(game.events), game.phase, game.current)
    with pytest.raises(ValueError) as err:
        env.step(parse_card("2C") if game.phase != PLAY else 52)
    text = str(err.value)
    assert agent in text and "STAND" in text and "BEG" in text and "2C" in text
    assert (list(game.hands), list(game.scores), len(game.events), game.phase, game.current) == before
    with pytest.raises(ValueError, match="ints 0..55"):
        env.step(99)
    # The env still works afterwards.
    play_random(env, 0)
    assert max(env.unwrapped.scores) >= 14


def test_illegal_card_message_uses_card_text():
    deck = build_deck(dealer=0, hands={1: ["KH", "3C", "QD"], 2: ["5C", "9S"]}, kicks=["4H"])
    env = allfours_env.env()
    env.reset(options={"decks": [deck], "dealer": 0})
    env.step(allfours_env.STAND)
    env.step(parse_card("3C"))  # seat 1 leads
    with pytest.raises(ValueError, match=r"player_2 cannot take action 9S"):
        env.step(parse_card("9S"))  # seat 2 holds 5C: must follow clubs or trump


def test_points_rewards_follow_every_award_and_sum_to_zero():
    env = allfours_env.env(reward="points")
    env.reset(seed=4)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    picker = np.random.default_rng(4)
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[picker.integers(len(legal))]))
    game = env.unwrapped.game
    awarded = [0, 0]
    for ev in game.events:
        if ev.kind in AWARD_KINDS:
            awarded[ev.team] += ev.points
    assert tuple(awarded) == tuple(game.scores)
    diff = game.scores[0] - game.scores[1]
    assert totals == {"player_0": diff, "player_2": diff, "player_1": -diff, "player_3": -diff}


def test_match_reward_goes_to_all_four_agents_at_the_end():
    env = allfours_env.env()
    env.reset(seed=8)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    picker = np.random.default_rng(8)
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        if not term:
            assert reward == 0
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[picker.integers(len(legal))]))
    winner = env.unwrapped.game.winner
    assert totals == {f"player_{s}": (1 if team_of(s) == winner else -1) for s in range(4)}


def test_match_can_end_at_the_first_kick_of_reset():
    deck = build_deck(dealer=0, kicks=["JS"])
    env = allfours_env.env()
    env.reset(options={"decks": [deck], "dealer": 0, "scores": [11, 5]})
    assert env.unwrapped.scores == (14, 5)
    assert all(env.terminations.values())
    obs, reward, term, _, _ = env.last()
    assert term and reward == 1 and not obs["action_mask"].any()


def test_deal_episodes_end_after_one_scored_deal():
    env = allfours_env.env(episode="deal", reward="points")
    env.reset(seed=6)
    play_random(env, 6)
    game = env.unwrapped.game
    assert [e.kind for e in game.events].count("deal_end") == 1 or game.winner >= 0
    assert not env.agents


def test_observation_decodes_to_the_game_state():
    env = allfours_env.env()
    env.reset(seed=12)
    game = env.unwrapped.game
    picker = np.random.default_rng(0)
    for _ in range(120):
        if game.phase >= 3:
            break
        seat = game.current
        obs = env.observe(f"player_{seat}")
        view = decode(obs)
        assert view.hand == game.hand(seat)
        assert view.kick == (game.kick if game.kick >= 0 else None)
        assert view.kicks_aside == cards_of(game.kicks_aside)
        assert view.dealer == (game.dealer - seat) % 4 and view.beggar == (game.dealer + 1 - seat) % 4
        assert view.partner == 2
        assert view.scores == (game.scores[seat % 2], game.scores[1 - seat % 2]) and view.target == 14
        assert view.trump == (game.trump if game.trump >= 0 else None)
        assert [((seat + r) % 4, c) for r, c in view.trick_order] == game.table()
        for r in range(4):
            assert view.played[r] == cards_of(game.played[(seat + r) % 4])
        assert view.game_points == (game.game_totals[seat % 2], game.game_totals[1 - seat % 2])
        assert obs["action_mask"].nonzero()[0].tolist() == game.legal_actions()
        assert [[((seat + r) % 4, c) for r, c in trick] for trick in view.tricks] == tricks_of_deal(game)
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[picker.integers(len(legal))]))


def test_a_printed_view_names_the_cards():
    env = allfours_env.env(target_score=7)
    env.reset(seed=3)
    for _ in range(9):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    seat = env.unwrapped.game.current
    text = str(decode(env.observe(f"player_{seat}")))
    assert f"hand {cards_text(env.unwrapped.game.hands[seat])}\n" in text
    assert "bits" not in text and "rules: {'target_score': 7}" in text


def tricks_of_deal(game: Game) -> list[list[tuple[int, int]]]:
    """The tricks of the current deal as (seat, card) in play order, from the engine's event log."""
    start = max(i for i, e in enumerate(game.events) if e.kind == "deal")
    plays = [(e.seat, e.card) for e in game.events[start:] if e.kind == "play"]
    return [plays[i : i + 4] for i in range(0, len(plays), 4)]


def test_observation_hides_other_hands():
    """Swapping two unplayed cards between two other players' hands leaves the observation unchanged."""
    game = mid_play_game()
    observer = game.current
    for swapped in hidden_swaps(game, observer):
        np.testing.assert_array_equal(encode(swapped, observer), encode(game, observer))


def test_the_env_docstring_table_matches_the_layout():
    doc = importlib.import_module("allfours_env.env").__doc__
    for piece in LAYOUT.values():
        last = piece.offset + piece.size - 1
        index = f"{piece.offset}..{last}" if piece.size > 1 else f"{piece.offset}"
        assert re.search(rf"^\s+{re.escape(index)}\s+{piece.size}\s+{piece.name}\s", doc, re.M), piece
    assert f"float32[{OBS_SIZE}]" in doc and f"float32[{STATE_SIZE}]" in doc
    assert layout_table().count("\n") == len(LAYOUT) + 1


def test_render_ansi_and_human(capsys):
    env = allfours_env.env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    game = env.unwrapped.game
    assert "Score" in text and f"Dealer player_{game.dealer}" in text and f"player_{game.current} to act" in text
    assert allfours_env.card_text(game.kick) in text
    assert " ".join(allfours_env.card_text(c) for c in game.hand(game.current)) in text
    human = allfours_env.env(render_mode="human")
    human.reset(seed=0)
    human.step(allfours_env.BEG)
    assert "phase give_or_run" in capsys.readouterr().out


def test_render_seat_shows_that_seat_whoever_acts():
    env = allfours_env.env(render_mode="ansi", render_seat=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(12):
        game = env.unwrapped.game
        text = env.render()
        assert f"Hand of player_2: {' '.join(allfours_env.card_text(c) for c in game.hand(2))}" in text
        assert text.endswith(f"player_{game.current} to act")
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))


@pytest.mark.parametrize("render_seat", [4, -1, True, "0", 1.0])
def test_bad_render_seat_is_refused(render_seat):
    with pytest.raises(ValueError, match="render_seat must be None"):
        allfours_env.env(render_mode="ansi", render_seat=render_seat)


@pytest.mark.parametrize("documented", [allfours_env.env, allfours_env.raw_env])
def test_help_shows_the_full_documentation(documented):
    text = pydoc.render_doc(documented, renderer=pydoc.plaintext)
    for heading in ("Agents", "Actions: ``Discrete(56)``", "Observation:", "Rewards", "Arguments", "Reset options"):
        assert re.search(rf"^[ |]*{re.escape(heading)}", text, re.M), heading
    assert "render_seat" in text and f"float32[{OBS_SIZE}]" in text
    for piece in LAYOUT.values():
        assert re.search(rf"\s{piece.size}\s+{piece.name}\s", text), piece.name
