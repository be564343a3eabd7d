"""The heuristic bots: legal play under every rule variant, determinism, and the rule_based advice."""

from __future__ import annotations

import numpy as np
import pytest

from agents import known_bots, make
from agents.hand_reading import game_value, read_trick, trick_winner, unseen, voids
from allfours_env.match import Decision, Match
from allfours_env import BEG, GIVE_ONE, RUN, STAND, decode, parse_card
from allfours_env.cards import FULL_DECK, SUIT_MASK, bits_of
from allfours_env.engine import PLAY, Game
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules
from tests.deck_builder import build_deck

BOTS = ("random", "rule_based", "expert", "pretrained", "student")
VARIANTS = (
    {},
    {"undertrump": "forbidden_unless_all_trumps", "stand_requires_trump": True, "give_one_requires_trump": True,
     "target_score": 7},
    {"undertrump": "forbidden_when_can_follow", "exhausted_pack": "redeal", "deal_batch": 3, "kick_points": "tobago",
     "give_one_to_reach_target": "allowed", "hang_jack_points": 6, "game_points": 2},
)


def play_match(bots: list, seed: int, **rules) -> tuple[list[int], tuple[int, int]]:
    """One match (the deals of ``env.reset(seed=seed)``), seat s played by ``bots[s]``; every
    action is checked against the mask."""
    game = Game(Rules(**rules), np.random.default_rng(seed))
    for bot in bots:
        bot.reset(seed)
    actions = []

    def check(decision: Decision) -> None:
        assert decision.observation["action_mask"][decision.action] == 1, (
            f"player_{decision.seat} chose illegal action {decision.action}"
        )
        actions.append(decision.action)

    Match(game, bots, on_decision=check).run()
    return actions, tuple(game.scores)


def cards(text: str) -> list[int]:
    return [parse_card(c) for c in text.split()]


DEALER = 0  # so seat 1 is the beggar and leads the first trick


def build_game(hands: dict[int, str], kick: str, scores: tuple[int, int] = (0, 0)) -> Game:
    """A deal with dealer 0: ``hands`` gives seats' cards as text, the rest is filled in."""
    deck = build_deck(dealer=DEALER, hands={seat: text.split() for seat, text in hands.items()}, kicks=[kick])
    return Game(Rules(), decks=[deck], dealer=DEALER, scores=scores)


def choice(bot_name: str, game: Game, plays: str | None = None) -> int:
    """Optionally stand and play ``plays`` (cards in turn order), then ask the bot to act."""
    if plays is not None:
        game.step(STAND)
        for card in plays.split():
            game.step(parse_card(card))
    obs, mask = encode_with_mask(game, game.current)
    return make(bot_name).act({"observation": obs, "action_mask": mask})


def test_bots_are_registered():
    assert set(BOTS) <= set(known_bots())
    for name in BOTS:
        assert make(name).name == name


@pytest.mark.parametrize("rules", VARIANTS)
@pytest.mark.parametrize(
    "pair", [("rule_based", "random"), ("expert", "rule_based"), ("expert", "expert"), ("pretrained", "rule_based")]
)
def test_bots_only_play_legal_actions(pair, rules):
    a, b = pair
    for seed in range(20):
        bots = [make(a), make(b), make(a), make(b)] if seed % 2 else [make(b), make(a), make(b), make(a)]
        _, scores = play_match(bots, seed, **rules)
        assert max(scores) >= rules.get("target_score", 14)


def test_one_bot_object_may_play_several_seats():
    for name in ("rule_based", "expert"):
        bot = make(name)
        play_match([bot, make("random"), bot, make("random")], seed=3)


@pytest.mark.parametrize("name", ["rule_based", "expert"])
def test_same_seed_same_match(name):
    bots = [make(name), make("random"), make(name), make("random")]
    first = play_match(bots, seed=21)
    assert play_match(bots, seed=21) == first  # the same objects, reset
    assert play_match([make(name), make("random"), make(name), make("random")], seed=21) == first


# ---------------------------------------------------------------- hand reading


@pytest.mark.parametrize(
    ("plays", "winner"),
    [("5C KC 2H AC", 2), ("5C KD AC 9C", 2), ("5H 9C 3H 2D", 0), ("5C JS 7D 6C", 3)],  # docs/rules.md C34-C36
)
def test_trick_winner_with_hearts_trump(plays, winner):
    order = list(enumerate(cards(plays)))
    assert trick_winner(order, trump=2) == order[winner]


def test_read_trick_from_the_observation():
    game = build_game({1: "5C 2S 3S 4S 6S 7S", 2: "KC 9S 8S TS JS QS", 3: "2H KD 3H 9D AS KS"}, kick="4H")
    game.step(STAND)
    for card in cards("5C KC 2H"):
        game.step(card)
    obs, _ = encode_with_mask(game, 0)
    trick = read_trick(decode(obs), trump=2)
    assert trick.order == ((1, parse_card("5C")), (2, parse_card("KC")), (3, parse_card("2H")))
    assert (trick.winner, trick.best, trick.led_suit, trick.after) == (3, parse_card("2H"), 0, ())


def test_game_value_and_unseen_cards():
    assert game_value(FULL_DECK) == 80
    assert game_value(bits_of(cards("TC AD QS 4H"))) == 16
    game = build_game({1: "5C 5H 2S 3S 4S 6S"}, kick="4H")
    obs, _ = encode_with_mask(game, 1)
    view = decode(obs)
    assert unseen(view) == FULL_DECK & ~view.hand_bits & ~(1 << parse_card("4H"))


def test_void_reading_matches_the_hands():
    bots = [make("expert") for _ in range(4)]
    flagged = 0

    def check_voids(decision: Decision) -> None:
        nonlocal flagged
        game, seat = decision.game, decision.seat
        if game.phase == PLAY:
            view = decode(decision.observation)
            shown = voids(view, view.trump)
            for rel in range(1, 4):
                for suit in range(4):
                    if shown[rel] >> suit & 1:
                        flagged += 1
                        assert not game.hands[(seat + rel) % 4] & SUIT_MASK[suit]

    for seed in range(30):
        Match(Game(Rules(), np.random.default_rng(seed), dealer=seed % 4), bots, on_decision=check_voids).run()
    assert flagged > 100


# ---------------------------------------------------------------- positions


@pytest.mark.parametrize("name", ["rule_based", "expert"])
def test_hangs_the_opponents_jack_with_the_ace(name):
    game = build_game(
        {1: "5C 2S 3S 4S KD QD", 2: "6C 8D 9D 2C 3C 4C", 3: "JH 2D 3D 8S 9S TS", 0: "AH 9C 4D 5D 6S 7S"}, kick="4H"
    )
    # Seat 1 leads clubs, seat 2 follows, seat 3 trumps with the jack; seat 0 can take it with the ace.
    assert choice(name, game, "5C 6C JH") == parse_card("AH")


@pytest.mark.parametrize("name", ["rule_based", "expert"])
def test_does_not_lead_an_unguarded_jack(name):
    # Seat 1 leads with the queen, king and ace of trumps unseen.
    game = build_game({1: "JH 3H TC TD TS 9H"}, kick="4H")
    assert choice(name, game, "") != parse_card("JH")


def test_rule_based_throws_a_ten_on_the_partners_trick():
    game = build_game(
        {1: "5C 2S 3S 4S KD QD", 2: "AC 2D 3D 8S 9S QS", 3: "7C 8D 9D 2C 3C 4C", 0: "TC 6C 4D 5D 6S 7S"}, kick="4H"
    )
    assert choice("rule_based", game, "5C AC 7C") == parse_card("TC")


def test_rule_based_keeps_the_low_trump_out_of_the_opponents_trick():
    game = build_game(
        {1: "AC 2S 3S 4S KD QD", 2: "5C 8D 9D 2C 3C 4C", 3: "7C 6D 7D 8C 9C JD", 0: "2H 3D 4D 5D 6S 7S"}, kick="4H"
    )
    # Seat 1's ace of clubs wins; seat 0 has no club and throws a diamond, not its 2H.
    assert choice("rule_based", game, "AC 5C 7C") == parse_card("3D")


def test_rule_based_stands_with_a_high_trump_and_begs_without():
    assert choice("rule_based", build_game({1: "KH 2C 3C 4D 5D 6S"}, kick="4H")) == STAND
    assert choice("rule_based", build_game({1: "2H 2C 3C 4D 5D 6S"}, kick="4H")) == BEG


@pytest.mark.parametrize("name", ["rule_based", "expert"])
def test_dealer_gives_one_when_strong_unless_it_ends_the_match(name):
    hands = {0: "AH KH QH JH 5D 6S", 1: "2C 3C 4C 5C 6C 7C"}
    game = build_game(hands, kick="4H")
    game.step(BEG)
    assert choice(name, game) == GIVE_ONE
    game = build_game(hands, kick="4H", scores=(0, 13))
    game.step(BEG)
    assert choice(name, game) == RUN


def test_rule_based_dealer_runs_when_weak():
    game = build_game({0: "2S 3S 5S 4D 5D 6S", 1: "2C 3C 4C 5C 6C 7C"}, kick="4H")
    game.step(BEG)
    assert choice("rule_based", game) == RUN
