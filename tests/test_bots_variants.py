"""The heuristic bots read the rule variant from the observation and play its points."""

from __future__ import annotations

import pytest

from agents import make
from agents.expert import _p_dealer_may_give
from allfours_env import BEG, GIVE_ONE, RUN, STAND, decode, parse_card
from allfours_env.engine import Game
from allfours_env.observation import encode_with_mask
from allfours_env.rules import KICK_POINTS, Rules
from tests.deck_builder import build_deck

DEALER = 0  # seat 1 is the beggar and leads the first trick


def build_game(hands: dict[int, str], kick: str, scores: tuple[int, int] = (0, 0), **rules) -> Game:
    deck = build_deck(dealer=DEALER, hands={seat: text.split() for seat, text in hands.items()}, kicks=[kick])
    return Game(Rules(**rules), decks=[deck], dealer=DEALER, scores=scores)


def act(bot_name: str, game: Game) -> int:
    obs, mask = encode_with_mask(game, game.current)
    return make(bot_name).act({"observation": obs, "action_mask": mask})


def force_or_cash(**rules) -> int:
    """Seat 1 (the expert) has won four tricks and leads the fifth holding AH (top trump) and TS.

    Hearts are trump and the jack JH is still out (with seat 3, whose only trump it is; for the
    expert it may be anywhere unseen). Leading AH forces the jack out of a hand with no other
    trump and hangs it; leading TS first plays for the ten's 10 Game units, which the jack's
    holder may take by trumping it.
    """
    game = build_game(
        {1: "AC KC AD KD AH TS", 2: "2C 3C 2D 3D 5S 6S", 3: "4C 5C 4D 5D JH 7S", 0: "6C 7C 6D 7D 2S 8S"}, "4H", **rules
    )
    game.step(STAND)
    for card in ["AC", "2C", "4C", "6C", "KC", "3C", "5C", "7C", "AD", "2D", "4D", "6D", "KD", "3D", "5D", "7D"]:
        game.step(parse_card(card))
    assert game.current == 1 and decode(encode_with_mask(game, 1)[0]).rules == Rules(**rules)
    return act("expert", game)


def test_expert_hunts_the_jack_when_a_hang_is_worth_six():
    assert force_or_cash() == parse_card("TS")  # a hang worth 3: the ten first
    assert force_or_cash(hang_jack_points=6) == parse_card("AH")  # worth 6: force the jack out


def test_expert_plays_for_game_when_game_is_worth_two():
    # With a hang worth 6 the jack hunt wins; with Game worth 2 as well, the ten is worth more again.
    assert force_or_cash(hang_jack_points=6, game_points=1) == parse_card("AH")
    assert force_or_cash(hang_jack_points=6, game_points=2) == parse_card("TS")


def test_kick_point_variants_give_the_same_points_distribution():
    """The expert's chances of a run's kick points hold for both kick_points variants."""
    distributions = {tuple(sorted(points)) for points in KICK_POINTS.values()}
    assert len(distributions) == 1


def test_expert_expects_fewer_gifts_when_the_dealer_needs_a_trump():
    def beggar_sees(hand: str, **rules):
        return encode_with_mask(build_game({1: hand}, "4H", **rules), 1)[0]

    assert _p_dealer_may_give(beggar_sees("5C 7C 9D 8S QS KS")) == 1.0
    p = _p_dealer_may_give(beggar_sees("5C 7C 9D 8S QS KS", give_one_requires_trump=True))
    # The dealer's 6 cards come from the 45 unseen, 12 of them hearts: 1 - C(33, 6) / C(45, 6).
    assert p == 1 - 1107568 / 8145060
    assert _p_dealer_may_give(beggar_sees("5H 7H 9H 8H QH KH", give_one_requires_trump=True)) < p


@pytest.mark.parametrize("name", ["rule_based", "expert"])
def test_dealer_never_gives_the_match_away_where_the_rules_allow_it(name):
    hands = {0: "AH KH QH JH 5D 6S", 1: "2C 3C 4C 5C 6C 7C"}
    game = build_game(hands, "4H", scores=(0, 13), give_one_to_reach_target="allowed")
    game.step(BEG)
    assert game.legal_bits() >> GIVE_ONE & 1  # legal under this variant, and it would end the match
    assert act(name, game) == RUN
    game = build_game(hands, "4H", scores=(0, 5), give_one_to_reach_target="allowed")
    game.step(BEG)
    assert act(name, game) == GIVE_ONE  # far from the target the strong hand keeps its trump
