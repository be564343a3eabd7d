"""docs/rules.md Part C: every Given/When/Then scenario (1..56) as a test of the engine.

Each ``test_cNN_*`` function checks scenario NN (its docstring quotes it briefly). Positions are
built with :func:`tests.deck_builder.build_deck`: the cards a scenario names are dealt to the
named seats and the kicks put at the kick indices; everything else is filled deterministically.
Seats 0..3, team A = {0, 2} = team 0, team B = {1, 3} = team 1; scores are [team A, team B].
Unless a test says otherwise the dealer is seat 0, so seat 1 is the beggar and leads trick 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from allfours_env.cards import SUIT_MASK, cards_of, parse_card
from allfours_env.engine import (
    BEG,
    BEGGED,
    DEAL,
    DEAL_END,
    DEAL_OVER,
    GAME,
    GAVE_ONE,
    GIVE_ONE,
    GIVE_OR_RUN,
    HANG_JACK,
    HIGH,
    JACK,
    KICK,
    LOW,
    MATCH_END,
    MATCH_OVER,
    PLAY,
    PLAYED,
    REDEAL,
    RUN,
    STAND,
    STAND_OR_BEG,
    STOOD,
    TRICK,
    TRUMP,
    Game,
    IllegalActionError,
)
from allfours_env.rules import Rules
from tests.deck_builder import build_deck

CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
DEFAULT = Rules()
UNDERTRUMP_BANS = ("forbidden_unless_all_trumps", "forbidden_when_can_follow")
END_KINDS = (HIGH, LOW, JACK, HANG_JACK, GAME)


# ---------------------------------------------------------------- helpers


def C(text: str) -> int:
    return parse_card(text)


def cset(text: str) -> set[int]:
    """``"KH 3C"`` -> {KH, 3C}."""
    return {C(t) for t in text.split()}


def new_game(*decks, dealer=0, rules=DEFAULT, scores=(0, 0), episode="deal") -> Game:
    """A game over the given decks; later deals (if any) come from a seeded generator."""
    rng = np.random.default_rng(0)
    return Game(rules, rng, decks=list(decks), dealer=dealer, scores=scores, episode=episode)


def play(game: Game, *cards: str | None) -> None:
    """Step the given cards in turn; ``None`` plays the current seat's first legal card."""
    for card in cards:
        game.step(game.legal_actions()[0] if card is None else C(card))


def finish(game: Game) -> None:
    """Play the rest of the deal with the first legal card each turn."""
    while game.phase == PLAY:
        game.step(game.legal_actions()[0])


def legal(game: Game) -> set[int]:
    return set(game.legal_actions())


def events(game: Game, *kinds: str) -> list:
    return [e for e in game.events if e.kind in kinds]


def end_awards(game: Game) -> list[tuple[str, int, int]]:
    """(kind, team, points) of the awards made after the last trick of the deal."""
    last_trick = max(i for i, e in enumerate(game.events) if e.kind == TRICK)
    return [(e.kind, e.team, e.points) for e in game.events[last_trick + 1 :] if e.kind in END_KINDS]


def trick_winner(game: Game) -> int:
    return events(game, TRICK)[-1].seat


def standing_game(deck_kwargs: dict, rules=DEFAULT, **kw) -> Game:
    """Deal ``build_deck(**deck_kwargs)`` (dealer 0 unless given) and let the beggar stand."""
    dealer = deck_kwargs.setdefault("dealer", 0)
    game = new_game(build_deck(**deck_kwargs), dealer=dealer, rules=rules, **kw)
    game.step(STAND)
    return game


def game_value_of(cards) -> int:
    return sum((0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3, 4)[c % 13] for c in cards)


def test_deck_builder_places_requested_cards():
    deck = build_deck(dealer=2, hands={3: ["AH", "KH"]}, kicks=["4H", "KS", "6C"], runs=[{1: ["2S"]}], stock=["JS"])
    assert sorted(deck) == list(range(52))
    assert deck[0] == C("AH") and deck[4] == C("KH")  # seat 3 is the first seat dealt by dealer 2
    assert (deck[24], deck[37], deck[50]) == (C("4H"), C("KS"), C("6C"))
    assert deck[25 + 2] == C("2S") and deck[51] == C("JS")
    assert build_deck() == build_deck()  # deterministic fill


# ---------------------------------------------------------------- seating, deal, rotation


def test_c01_deal_order_beggar_leader_and_next_dealer():
    """1. Dealer 0: cards go to seats 1,2,3,0 in order, beggar 1, seat 1 leads, next dealer 1."""
    deck = [int(c) for c in np.random.default_rng(7).permutation(52)]
    game = new_game(deck, build_deck(kicks=["2C"]), dealer=0, episode="match")
    for k in range(24):
        assert deck[k] in game.hand((1 + k) % 4)
    assert game.beggar == 1 and game.current == 1 and game.phase == STAND_OR_BEG
    game.step(STAND)
    assert game.leader == 1 and game.current == 1
    finish(game)
    assert events(game, PLAYED)[0].seat == 1
    assert events(game, DEAL)[-1].seat == 1
    assert game.dealer == 1 and game.beggar == 2 and game.current == 2


def test_c02_six_cards_each_kick_is_25th_card_stock_27():
    """2. After a fresh shuffle: 6 cards each, the kick is deck[24], the stock has 27 cards."""
    for seed in range(5):
        game = Game(DEFAULT, np.random.default_rng(seed))
        assert [len(game.hand(s)) for s in range(4)] == [6, 6, 6, 6]
        assert game.kick == game.deck[24]
        assert 52 - game.next_card == 27
        dealt = game.hands[0] | game.hands[1] | game.hands[2] | game.hands[3]
        assert dealt.bit_count() == 24 and not dealt >> game.kick & 1


def test_c03_deal_passes_from_seat_3_to_seat_0():
    """3. Dealer 3 and a completed hand: the next dealer is seat 0 and the beggar seat 1."""
    game = new_game(build_deck(dealer=3, kicks=["2C"]), build_deck(dealer=0, kicks=["3C"]), dealer=3, episode="match")
    assert game.beggar == 0
    game.step(STAND)
    finish(game)
    assert game.deal_number == 2 and game.dealer == 0 and game.beggar == 1
    assert game.phase == STAND_OR_BEG and game.current == 1


# ---------------------------------------------------------------- kick


def test_c04_kicked_ace_scores_one():
    """4. Dealer 0, 0-0, kick A♣: score 1-0 at once, proposed trump ♣."""
    game = new_game(build_deck(kicks=["AC"]))
    assert game.scores == [1, 0]
    assert game.kick == C("AC") and game.kick // 13 == CLUBS and game.trump == -1
    assert events(game, KICK)[-1][:4] == (KICK, 0, 0, 1)
    game.step(STAND)
    assert game.trump == CLUBS


def test_c05_kicked_six_scores_two_for_dealers_team():
    """5. Dealer 1, 0-0, kick 6♦: score 0-2."""
    game = new_game(build_deck(dealer=1, kicks=["6D"]), dealer=1)
    assert game.scores == [0, 2]


def test_c06_kicked_jack_wins_the_match_at_once():
    """6. Dealer 2, 11-5, kick J♠: 14-5, team A wins at once, the beggar gets no decision."""
    game = new_game(build_deck(dealer=2, kicks=["JS"]), dealer=2, scores=(11, 5))
    assert game.scores == [14, 5]
    assert game.phase == MATCH_OVER and game.winner == 0 and game.current == -1
    assert game.legal_actions() == []
    assert events(game, MATCH_END)[-1].team == 0
    with pytest.raises(IllegalActionError):
        game.step(STAND)


def test_c07_kicked_two_scores_only_in_tobago():
    """7. Kick 2♥: 0 points; with Tobago kick_points the dealer's team gets 2."""
    deck = build_deck(kicks=["2H"])
    assert new_game(deck).scores == [0, 0]
    assert new_game(deck, rules=Rules(kick_points="tobago")).scores == [2, 0]
    # and in Tobago a kicked six is worth nothing
    assert new_game(build_deck(kicks=["6H"]), rules=Rules(kick_points="tobago")).scores == [0, 0]


@pytest.mark.parametrize("kick", ["TH", "KH"])
def test_c08_kicked_ten_or_king_scores_nothing(kick):
    """8. Kick 10♥ or K♥: 0 points."""
    game = new_game(build_deck(kicks=[kick]))
    assert game.scores == [0, 0] and game.kick == C(kick)
    assert [e.points for e in events(game, KICK)] == [0]


def test_c09_kicked_trump_jack_is_out_of_play():
    """9. Kick J♠ (+3) and the beggar stands: no Jack/hang jack, J♠ counts for nobody's Game."""
    game = new_game(build_deck(hands={1: ["AS"], 2: ["2S"]}, kicks=["JS"]))
    assert game.scores == [3, 0]
    dealt = [c for s in range(4) for c in game.hand(s)]
    game.step(STAND)
    assert game.trump == SPADES and game.jack_holder == -1
    finish(game)
    assert not events(game, JACK, HANG_JACK)
    assert [k for k, _, _ in end_awards(game)][:2] == [HIGH, LOW]
    assert not (game.won[0] | game.won[1]) >> C("JS") & 1
    assert sum(game.game_totals) == game_value_of(dealt)


# ---------------------------------------------------------------- stand / beg / give / run


def test_c10_stand_makes_the_kick_suit_trump():
    """10. Dealer 0, kick 4♥, seat 1 stands: trump ♥, no points, seat 1 leads."""
    game = new_game(build_deck(kicks=["4H"]))
    assert game.legal_actions() == [STAND, BEG]
    game.step(STAND)
    assert game.trump == HEARTS and game.scores == [0, 0]
    assert game.phase == PLAY and game.current == 1 and game.leader == 1


def test_c11_give_one_scores_for_the_beggars_team():
    """11. Dealer 0, 5-7, kick 4♥, beg and give one: 5-8, trump ♥, seat 1 leads."""
    game = new_game(build_deck(kicks=["4H"]), scores=(5, 7))
    game.step(BEG)
    assert game.phase == GIVE_OR_RUN and game.current == 0
    assert game.legal_actions() == [GIVE_ONE, RUN]
    game.step(GIVE_ONE)
    assert game.scores == [5, 8] and game.trump == HEARTS
    assert events(game, GAVE_ONE)[-1][:4] == (GAVE_ONE, 0, 1, 1)
    assert game.phase == PLAY and game.current == 1


def test_c12_give_one_that_would_reach_the_target():
    """12. Dealer 0, 9-13, beg: GIVE_ONE illegal, dealer must run; "allowed": 9-14, B wins; at 9-12 legal."""
    deck = build_deck(kicks=["4H", "KS"])
    game = new_game(deck, scores=(9, 13))
    game.step(BEG)
    assert game.legal_actions() == [RUN]
    with pytest.raises(IllegalActionError):
        game.step(GIVE_ONE)
    assert game.scores == [9, 13] and game.phase == GIVE_OR_RUN
    game.step(RUN)
    assert game.phase == PLAY and game.trump == SPADES

    allowed = new_game(deck, scores=(9, 13), rules=Rules(give_one_to_reach_target="allowed"))
    allowed.step(BEG)
    assert allowed.legal_actions() == [GIVE_ONE, RUN]
    allowed.step(GIVE_ONE)
    assert allowed.scores == [9, 14] and allowed.phase == MATCH_OVER and allowed.winner == 1

    at_12 = new_game(deck, scores=(9, 12))
    at_12.step(BEG)
    assert at_12.legal_actions() == [GIVE_ONE, RUN]


def run_game(kicks, dealer=0, **kw) -> Game:
    """Dealer 0 kicks ``kicks[0]``, seat 1 begs and the dealer runs."""
    game = new_game(build_deck(dealer=dealer, kicks=kicks), dealer=dealer, **kw)
    game.step(BEG)
    game.step(RUN)
    return game


def test_c13_running_the_pack():
    """13. Kick 4♥, beg, run: 3 more cards each (9), 4♥ set aside, deck[37] is the new kick, stock 14."""
    game = new_game(build_deck(kicks=["4H", "KS"]))
    before = [set(game.hand(s)) for s in range(4)]
    game.step(BEG)
    game.step(RUN)
    deck = game.deck
    assert [len(game.hand(s)) for s in range(4)] == [9, 9, 9, 9]
    for j in range(12):
        seat = (1 + j) % 4
        assert deck[25 + j] in game.hand(seat) and deck[25 + j] not in before[seat]
    assert cards_of(game.kicks_aside) == [C("4H")]
    assert game.kick == deck[37] == C("KS")
    assert 52 - game.next_card == 14


def test_c14_run_to_a_new_suit_starts_play():
    """14. The new kick is K♠: trump ♠, no points, no stand/beg decision, seat 1 leads."""
    game = run_game(["4H", "KS"])
    assert game.trump == SPADES and game.scores == [0, 0]
    assert game.phase == PLAY and game.current == 1 and game.leader == 1
    assert max(game.legal_actions()) < 52


def test_c15_new_kick_ace_scores():
    """15. The new kick is A♦: dealer's team +1, trump ♦."""
    game = run_game(["4H", "AD"])
    assert game.scores == [1, 0] and game.trump == DIAMONDS
    assert [(e.card, e.points) for e in events(game, KICK)] == [(C("4H"), 0), (C("AD"), 1)]


def test_c16_same_suit_kick_runs_again_automatically():
    """16. New kick 6♥ (same suit): +2, a second run (12 cards), next kick deck[50]; 9♣ -> trump ♣, stock 1."""
    game = run_game(["4H", "6H", "9C"])
    assert game.scores == [2, 0]
    assert [len(game.hand(s)) for s in range(4)] == [12] * 4
    assert game.kick == game.deck[50] == C("9C") and game.trump == CLUBS
    assert set(cards_of(game.kicks_aside)) == cset("4H 6H")
    assert 52 - game.next_card == 1
    assert game.phase == PLAY and game.current == 1


def test_c17_pack_exhausted_kicks_the_last_card_then_redeals():
    """17. Kicks A♥, 6♥, J♥, then deck[51] is kicked: 3♥ -> +6 and a redeal by dealer 0; Q♠ -> trump ♠."""
    second = build_deck(kicks=["AS"])
    game = new_game(build_deck(kicks=["AH", "6H", "JH", "3H"]), second)
    game.step(BEG)
    game.step(RUN)
    kicks = [(e.card, e.points) for e in events(game, KICK)]
    assert kicks[:4] == [(C("AH"), 1), (C("6H"), 2), (C("JH"), 3), (C("3H"), 0)]
    assert game.events[game.events.index(events(game, REDEAL)[0]) - 1].card == C("3H")
    # the redeal: same dealer, a new six-card hand and kick (the A♠ scores), a new stand/beg decision
    assert game.deal_number == 2 and game.dealer == 0 and game.deck == second
    assert game.scores == [1 + 2 + 3 + 0 + 1, 0]
    assert [len(game.hand(s)) for s in range(4)] == [6] * 4
    assert game.kick == C("AS") and game.kicks_aside == 0 and game.next_card == 25
    assert game.phase == STAND_OR_BEG and game.current == 1 and game.legal_actions() == [STAND, BEG]

    other = run_game(["AH", "6H", "JH", "QS"])
    assert other.scores == [6, 0] and other.trump == SPADES and other.kick == C("QS")
    assert [len(other.hand(s)) for s in range(4)] == [12] * 4
    assert other.next_card == 52 and not events(other, REDEAL)


def test_c18_run_kick_can_win_the_match():
    """18. Dealer's team on 12, kick 7♥, beg, run, new kick 6♥: 14, it wins before any further run or play."""
    game = run_game(["7H", "6H", "9C"], scores=(12, 0))
    assert game.scores == [14, 0] and game.winner == 0 and game.phase == MATCH_OVER
    assert game.next_card == 38 and game.trump == -1 and game.legal_actions() == []
    assert not events(game, TRUMP, PLAYED)


def test_c19_redeal_variant_stops_after_three_kicks():
    """19. exhausted_pack="redeal", kicks A♥, 6♥, J♥: exhausted after J♥ (6 kept), deck[51] never turned."""
    first = build_deck(kicks=["AH", "6H", "JH", "QS"])
    game = new_game(first, build_deck(kicks=["2C"]), rules=Rules(exhausted_pack="redeal"))
    game.step(BEG)
    game.step(RUN)
    assert [e.card for e in events(game, KICK)] == [C("AH"), C("6H"), C("JH"), C("2C")]
    assert events(game, REDEAL) and game.scores == [6, 0]
    assert game.dealer == 0 and game.deal_number == 2 and game.current == 1 and game.phase == STAND_OR_BEG


def test_c20_no_second_beg_after_a_run():
    """20. A run produced a new trump: no BEG/STAND action is offered to anyone."""
    game = run_game(["4H", "KS"])
    assert game.phase == PLAY
    while game.phase == PLAY:
        acts = game.legal_actions()
        assert acts and max(acts) < 52
        for decision in (STAND, BEG):
            with pytest.raises(IllegalActionError):
                game.step(decision)
        game.step(acts[0])
    assert not events(game, STOOD) and len(events(game, BEGGED)) == 1 and game.phase == DEAL_OVER


def test_c21_stand_requires_trump_variant():
    """21. Seat 1 holds no ♥, kick 4♥: STAND legal by default; with stand_requires_trump only BEG."""
    deck = build_deck(hands={1: "2C 3C 4C 2D 3D 4D".split()}, kicks=["4H"])
    game = new_game(deck)
    assert not game.hands[1] & SUIT_MASK[HEARTS]
    assert game.legal_actions() == [STAND, BEG]
    strict = new_game(deck, rules=Rules(stand_requires_trump=True))
    assert strict.legal_actions() == [BEG]
    with pytest.raises(IllegalActionError):
        strict.step(STAND)
    # holding a heart, standing stays legal under the variant
    with_trump = new_game(build_deck(hands={1: ["5H"]}, kicks=["4H"]), rules=Rules(stand_requires_trump=True))
    assert with_trump.legal_actions() == [STAND, BEG]


def test_c22_give_one_requires_trump_variant():
    """22. 0-0, seat 1 begs, dealer 0 holds no ♥ (kick 4♥): GIVE_ONE legal; with give_one_requires_trump only RUN."""
    deck = build_deck(hands={0: "2C 3C 4C 2D 3D 4D".split()}, kicks=["4H", "KS"])
    game = new_game(deck)
    assert not game.hands[0] & SUIT_MASK[HEARTS]
    game.step(BEG)
    assert game.legal_actions() == [GIVE_ONE, RUN]
    strict = new_game(deck, rules=Rules(give_one_requires_trump=True))
    strict.step(BEG)
    assert strict.legal_actions() == [RUN]
    with_trump = new_game(build_deck(hands={0: ["5H"]}, kicks=["4H"]), rules=Rules(give_one_requires_trump=True))
    with_trump.step(BEG)
    assert with_trump.legal_actions() == [GIVE_ONE, RUN]


# ---------------------------------------------------------------- legal plays (trump ♥ by a kicked 7♥)


def hearts_game(hands: dict, rules=DEFAULT) -> Game:
    """Dealer 0, kick 7♥, seat 1 stands: trump ♥ and seat 1 to lead."""
    hands = {seat: cards.split() for seat, cards in hands.items()}
    return standing_game({"hands": hands, "kicks": ["7H"]}, rules=rules)


def test_c23_follower_may_follow_suit_or_trump():
    """23. Trump ♥, ♣ led, seat holds {K♥, 3♣}: legal = {3♣, K♥}."""
    game = hearts_game({1: "5C 2S 3S 4S 5S 6S", 2: "KH 3C 7S 8S 9S TS"})
    play(game, "5C")
    assert game.current == 2 and legal(game) == cset("3C KH")


def test_c24_other_suit_illegal_while_holding_led_suit():
    """24. Trump ♥, ♣ led, seat holds {K♥, 3♣, Q♦}: legal = {3♣, K♥}, Q♦ illegal."""
    game = hearts_game({1: "5C 2S 3S 4S 5S 6S", 2: "KH 3C QD 2D 3D 4D"})
    play(game, "5C")
    assert legal(game) == cset("3C KH")
    with pytest.raises(IllegalActionError):
        play(game, "QD")
    assert C("QD") in game.hand(2) and game.trick == [C("5C")]


def test_c25_void_in_led_suit_may_play_anything():
    """25. Trump ♥, ♣ led, seat holds {K♥, Q♦} (void in ♣): legal = {K♥, Q♦} (all its cards)."""
    game = hearts_game({1: "5C 6C 8C 9C 2S 3S", 2: "KH QD 2D 3D 4S 5S"})
    play(game, "5C")
    assert legal(game) == set(game.hand(2)) == cset("KH QD 2D 3D 4S 5S")


def test_c26_must_follow_a_trump_lead():
    """26. Trump ♥, ♥ led, seat holds {2♥, A♠}: legal = {2♥}."""
    game = hearts_game({1: "9H 2C 3C 4C 5C 6C", 2: "2H AS 2D 3D 4D 5D"})
    play(game, "9H")
    assert legal(game) == cset("2H")


def test_c27_no_trump_on_a_trump_lead_may_play_anything():
    """27. Trump ♥, ♥ led, seat holds {A♠, K♣} (no trump): legal = {A♠, K♣} (all its cards)."""
    game = hearts_game({1: "9H 2C 3C 4C 5C 6C", 2: "AS KC 2D 3D 4S 5S"})
    play(game, "9H")
    assert legal(game) == set(game.hand(2)) == cset("AS KC 2D 3D 4S 5S")


def test_c28_any_card_may_be_led():
    """28. Seat to lead holds {J♥, 5♠}, trump ♥: both are legal leads."""
    game = hearts_game({1: "JH 5S 2C 3D 8C 9D"})
    assert game.current == 1 and legal(game) == set(game.hand(1)) >= cset("JH 5S")
    play(game, "JH")
    assert game.trick == [C("JH")]


@pytest.mark.parametrize("undertrump", ["allowed", *UNDERTRUMP_BANS])
def test_c29_undertrump_while_holding_led_suit(undertrump):
    """29. Trump ♥, ♣ led, Q♥ in the trick, seat holds {3♣, 4♥}: {3♣, 4♥} by default, {3♣} under either ban."""
    hands = {1: "5C 2S 3S 4S 5S 6S", 2: "QH 7S 8S 9S TS JS", 3: "3C 4H 2D 3D 4D 5D"}
    game = hearts_game(hands, Rules(undertrump=undertrump))
    play(game, "5C", "QH")
    assert game.current == 3
    assert legal(game) == (cset("3C 4H") if undertrump == "allowed" else cset("3C"))


@pytest.mark.parametrize("undertrump", ["allowed", *UNDERTRUMP_BANS])
def test_c30_undertrump_when_void_in_led_suit(undertrump):
    """30. ♣ led, Q♥ in trick, void {4♥, 8♦}: unless_all_trumps -> {8♦}, else both; {4♥, K♥, 8♦}: -> {K♥, 8♦}."""
    rules = Rules(undertrump=undertrump)
    game = hearts_game({1: "5C 2S 3S 4S 5S 6S", 2: "QH 7S 8S 9S TS JS", 3: "4H 8D 2D 3D 4D 5D"}, rules)
    play(game, "5C", "QH")
    hand = set(game.hand(3))
    if undertrump == "forbidden_unless_all_trumps":
        assert legal(game) == hand - cset("4H") and C("8D") in legal(game)
    else:
        assert legal(game) == hand >= cset("4H 8D")

    game = hearts_game({1: "5C 2S 3S 4S 5S 6S", 2: "QH 7S 8S 9S TS JS", 3: "4H KH 8D 2D 3D 4D"}, rules)
    play(game, "5C", "QH")
    hand = set(game.hand(3))
    if undertrump == "forbidden_unless_all_trumps":
        assert legal(game) == hand - cset("4H") and cset("KH 8D") <= legal(game)
    else:
        assert legal(game) == hand >= cset("4H KH 8D")


def test_c31_undertrump_allowed_when_down_to_trumps():
    """31. forbidden_unless_all_trumps, ♣ led, Q♥ in trick, seat holds {4♥, 5♥} (only trumps): legal = all."""
    rules = Rules(undertrump="forbidden_unless_all_trumps")
    game = hearts_game({1: "5C 2S 3S 4S 5S 6S", 2: "QH 7S 8S 9S TS JS", 3: "4H 5H 2H 3H 6H 8H"}, rules)
    play(game, "5C", "QH")
    assert legal(game) == set(game.hand(3)) == cset("4H 5H 2H 3H 6H 8H")


@pytest.mark.parametrize("undertrump", UNDERTRUMP_BANS)
def test_c32_bans_do_not_apply_to_trump_leads(undertrump):
    """32. Either ban, ♥ led with Q♥, seat holds {4♥, 8♦}: legal = {4♥}."""
    game = hearts_game({1: "QH 2S 3S 4S 5S 6S", 2: "4H 8D 2D 3D 4D 5D"}, Rules(undertrump=undertrump))
    play(game, "QH")
    assert legal(game) == cset("4H")


@pytest.mark.parametrize("undertrump", UNDERTRUMP_BANS)
def test_c33_bans_need_a_trump_in_the_trick(undertrump):
    """33. Either ban, ♣ led, no trump yet in the trick, seat holds {3♣, 4♥}: legal = {3♣, 4♥}."""
    hands = {1: "5C 2S 3S 4S 5S 6S", 2: "6C 7S 8S 9S TS JS", 3: "3C 4H 2D 3D 4D 5D"}
    game = hearts_game(hands, Rules(undertrump=undertrump))
    play(game, "5C", "6C")
    assert legal(game) == cset("3C 4H")


# ---------------------------------------------------------------- trick winner


def test_c34_lowest_trump_beats_the_led_suit():
    """34. Trump ♥, ♣ led: 5♣, K♣, 2♥, A♣: 2♥ wins."""
    game = hearts_game({1: "5C", 2: "KC", 3: "2H", 0: "AC"})
    play(game, "5C", "KC", "2H", "AC")
    assert events(game, TRICK)[-1][:3] == (TRICK, 3, 1) and events(game, TRICK)[-1].card == C("2H")
    assert game.won[1] == sum(1 << c for c in cset("5C KC 2H AC"))
    assert game.leader == game.current == 3


def test_c35_highest_of_led_suit_wins_without_trump():
    """35. Trump ♥, ♣ led: 5♣, K♦, A♣, 9♣: A♣ wins."""
    game = hearts_game({1: "5C", 2: "KD 2D 3D 4D 5D 6D", 3: "AC", 0: "9C"})
    play(game, "5C", "KD", "AC", "9C")
    assert trick_winner(game) == 3 and events(game, TRICK)[-1].card == C("AC")
    assert game.current == 3


def test_c36_highest_trump_wins_a_trump_lead_and_leads_next():
    """36. Trump ♥, ♥ led: 5♥, 9♣, 3♥, 2♦: 5♥ wins, and its player leads the next trick."""
    game = hearts_game({1: "5H", 2: "9C 2C 3C 4C 5C 6C", 3: "3H", 0: "2D 3D 4D 5D 6D 7D"})
    play(game, "5H", "9C", "3H", "2D")
    assert trick_winner(game) == 1 and game.leader == game.current == 1 and game.trick == []


def test_c37_s0_example_hang_jack():
    """37. S0: P1 K♥, P2 J♥, P4 A♥, P3 4♥ (teams {P1,P4} v {P2,P3}): P4 wins; {P1,P4} get 3 (hang jack)."""
    # Play order P1, P2, P4, P3 = seats 1, 2, 3, 0; {P1, P4} = {1, 3} = team B, {P2, P3} = {2, 0} = team A.
    P1, P2, P4, P3 = 1, 2, 3, 0
    game = hearts_game({P1: "KH", P2: "JH", P4: "AH", P3: "4H"})
    assert game.jack_holder == P2
    play(game, "KH", "JH", "AH", "4H")
    assert trick_winner(game) == P4
    finish(game)
    jack_awards = [a for a in end_awards(game) if a[0] in (JACK, HANG_JACK)]
    assert jack_awards == [(HANG_JACK, P4 % 2, 3)] and P1 % 2 == P4 % 2


# ---------------------------------------------------------------- end-of-hand scoring


def spades_stock(*except_cards: str) -> list[str]:
    """All spades except the given ones (to keep them out of the hands)."""
    return [r + "S" for r in "23456789TJQKA" if r + "S" not in except_cards]


def test_c38_high_and_low_by_holder_kick_excluded():
    """38. Trump ♠, kick 2♠; seat 0 K♠, seat 1 3♠ 9♠, seat 2 5♠; A♠ in stock: High A (K♠), Low B (3♠)."""
    held = ("KS", "3S", "9S", "5S", "2S")
    hands = {0: ["KS"], 1: ["3S", "9S"], 2: ["5S"]}
    game = standing_game({"hands": hands, "kicks": ["2S"], "stock": spades_stock(*held)})
    assert game.trump == SPADES
    assert (game.high_holder, game.low_holder, game.jack_holder) == (0, 1, -1)
    finish(game)
    got = {e.kind: (e.team, e.card) for e in events(game, HIGH, LOW)}
    assert got == {HIGH: (0, C("KS")), LOW: (1, C("3S"))}
    assert not events(game, JACK, HANG_JACK)


def test_c39_low_goes_to_the_holder_not_the_capturer():
    """39. Trump ♥; seat 3 was dealt 2♥ and loses it to team A in a trick: Low -> team B."""
    game = hearts_game({1: "3H", 2: "AH", 3: "2H"})
    play(game, "3H", "AH", "2H", None)
    assert trick_winner(game) == 2 and game.won[0] >> C("2H") & 1
    finish(game)
    low = events(game, LOW)
    assert [(e.seat, e.team, e.card) for e in low] == [(3, 1, C("2H"))]


def test_c40_trump_received_in_a_run_counts():
    """40. Trump ♥; seat 3 received A♥ during a run: A♥ is High for team B."""
    game = new_game(build_deck(kicks=["4C", "7H"], runs=[{3: ["AH"]}]))
    assert C("AH") not in game.hand(3)
    game.step(BEG)
    game.step(RUN)
    assert game.trump == HEARTS and C("AH") in game.hand(3) and game.high_holder == 3
    finish(game)
    assert [(e.seat, e.team, e.card) for e in events(game, HIGH)] == [(3, 1, C("AH"))]


def spades_game(hands: dict, dealer=0, rules=DEFAULT, scores=(0, 0), kick="8S") -> Game:
    """Trump ♠ by a kicked 8♠, the beggar stands; spades not named in ``hands`` are kept in the stock."""
    hands = {seat: cards.split() for seat, cards in hands.items()}
    named = [c for cards in hands.values() for c in cards] + [kick]
    deck = {"dealer": dealer, "hands": hands, "kicks": [kick], "stock": spades_stock(*named)}
    return standing_game(deck, rules=rules, scores=scores)


def test_c41_hang_jack_scores_three_for_the_capturers():
    """41. Trump ♠, seat 1 J♠, seat 2 Q♠, seat 3 4♦, seat 0 7♠: seat 2 wins, team A +3 (hang jack), B no Jack."""
    game = spades_game({1: "JS", 2: "QS", 3: "4D", 0: "7S"})
    play(game, "JS", "QS", "4D", "7S")
    assert trick_winner(game) == 2
    finish(game)
    kinds = [k for k, _, _ in end_awards(game)]
    assert [a for a in end_awards(game) if a[0] in (JACK, HANG_JACK)] == [(HANG_JACK, 0, 3)]
    assert kinds.index(HANG_JACK) == 2 and kinds[:2] == [HIGH, LOW]  # scored at the Jack step


def test_c42_jack_won_by_partner_scores_one():
    """42. Trump ♠, J♠ held by seat 1; seat 1 J♠, seat 2 7♠, seat 3 A♠, seat 0 3♠: seat 3 wins, team B +1."""
    game = spades_game({1: "JS", 2: "7S", 3: "AS", 0: "3S"})
    play(game, "JS", "7S", "AS", "3S")
    assert trick_winner(game) == 3
    finish(game)
    assert [a for a in end_awards(game) if a[0] in (JACK, HANG_JACK)] == [(JACK, 1, 1)]


def test_c43_jack_winning_its_own_trick_scores_one():
    """43. Trump ♠, ♦ led by seat 0, seat 1 plays J♠, seats 2 and 3 play ♦: J♠ wins, team B +1."""
    game = spades_game({0: "5D", 1: "JS 2D", 2: "6D", 3: "7D"}, dealer=3)
    assert game.current == 0
    play(game, "5D", "JS", "6D", "7D")
    assert trick_winner(game) == 1
    finish(game)
    assert [a for a in end_awards(game) if a[0] in (JACK, HANG_JACK)] == [(JACK, 1, 1)]


def test_c44_jack_in_the_stock_scores_nothing():
    """44. Trump ♠ and J♠ lies in the stock: nobody scores Jack."""
    game = spades_game({0: "AS", 1: "2S"})
    assert C("JS") in game.deck[25:] and game.jack_holder == -1
    finish(game)
    assert not events(game, JACK, HANG_JACK)
    assert [k for k, _, _ in end_awards(game)][:2] == [HIGH, LOW]


def clubs_only_game(held: str, rules=DEFAULT) -> Game:
    """Trump ♣ by a kicked 2♣; the only clubs in the hands are ``held`` by seat 2."""
    stock = [r + "C" for r in "3456789TJQKA" if r + "C" not in held.split()]
    return standing_game({"hands": {2: held.split()}, "kicks": ["2C"], "stock": stock}, rules=rules)


def test_c45_single_trump_is_high_and_low():
    """45. Only trump in hands 7♣ (seat 2): team A +2 (High, Low). Only J♣: +3 (High, Low, Jack)."""
    game = clubs_only_game("7C")
    assert game.trump == CLUBS and game.hands[2] & SUIT_MASK[CLUBS] == 1 << C("7C")
    finish(game)
    assert [a for a in end_awards(game) if a[0] != GAME] == [(HIGH, 0, 1), (LOW, 0, 1)]

    game = clubs_only_game("JC")
    finish(game)
    assert game.jack_winner % 2 == 0  # the only trump wins its trick
    assert [a for a in end_awards(game) if a[0] != GAME] == [(HIGH, 0, 1), (LOW, 0, 1), (JACK, 0, 1)]

    game = clubs_only_game("7C", Rules(single_trump_counts_high_and_low=False))
    finish(game)
    assert [a for a in end_awards(game) if a[0] != GAME] == [(HIGH, 0, 1)]


def test_c46_no_trump_in_any_hand_only_game_scores():
    """46. No card of the trump suit in any hand: no High, Low or Jack; Game is scored normally."""
    stock = [r + "C" for r in "3456789TJQKA"]
    game = standing_game({"kicks": ["2C"], "stock": stock})
    dealt = [c for s in range(4) for c in game.hand(s)]
    assert game.trump == CLUBS and not any(c // 13 == CLUBS for c in dealt)
    finish(game)
    g0, g1 = game.game_totals
    assert g0 + g1 == game_value_of(dealt) and g0 != g1
    assert end_awards(game) == [(GAME, 0 if g0 > g1 else 1, 1)]


# Valued cards (10, J, Q, K, A) kept out of the hands in the Game-point scenarios.
VALUED = [r + s for s in "CDHS" for r in "TJQKA"]


def valued_stock(*held: str) -> list[str]:
    return [c for c in VALUED if c not in held]


def scripted_deck(hands: dict[int, str], stock: list[str]) -> dict:
    """build_deck arguments: dealer 0, full hands, kick 8♠ (trump ♠), ``stock`` kept undealt."""
    return {"hands": {s: h.split() for s, h in hands.items()}, "kicks": ["8S"], "stock": stock}


def test_c47_game_point_to_the_higher_total():
    """47. Team A's tricks: 10♣ A♦ Q♠ 4♥ (16); team B's: K♥ J♣ 10♦ (14): team A +1 Game."""
    hands = {1: "TC JC 2C 3C 2H 3H", 2: "QS TD 2D 3D 4D 5D", 3: "4H 5S 6D 7D 5H 6H", 0: "AD KH 7H 8H 6S 7S"}
    held = " ".join(hands.values()).split()
    game = standing_game(scripted_deck(hands, valued_stock(*held)))
    play(game, "TC", "QS", "4H", "AD")  # Q♠ (seat 2) trumps: team A takes 10 + 2 + 0 + 4
    assert trick_winner(game) == 2
    play(game, "TD", "5S", "KH", "JC")  # 5♠ (seat 3) trumps: team B takes 10 + 0 + 3 + 1
    assert trick_winner(game) == 3
    finish(game)
    assert game.game_totals == [16, 14]
    assert [a for a in end_awards(game) if a[0] == GAME] == [(GAME, 0, 1)]


def tied_game(rules=DEFAULT) -> Game:
    hands = {1: "TC TS 4C 5C 2H 3H", 2: "2S TD 4D 5D 6D 7D", 3: "3C 3S 8D 9D 4H 5H", 0: "TH 2D 6H 7H 4S 5S"}
    held = " ".join(hands.values()).split()
    game = standing_game(scripted_deck(hands, valued_stock(*held)), rules=rules)
    play(game, "TC", "2S", "3C", "TH")  # team A (seat 2) takes 20
    play(game, "TD", "3S", "2D", "TS")  # team B (seat 1) takes 20
    finish(game)
    assert game.game_totals == [20, 20]
    return game


def test_c48_game_tie():
    """48. Game totals 20-20: nobody scores Game; game_tie="non_dealer": the non-dealer's team gets it."""
    assert not events(tied_game(), GAME)
    # dealer 0 (team A): the non-dealer's team is team B; "dealer" gives it to team A
    assert [(e.team, e.points) for e in events(tied_game(Rules(game_tie="non_dealer")), GAME)] == [(1, 1)]
    assert [(e.team, e.points) for e in events(tied_game(Rules(game_tie="dealer")), GAME)] == [(0, 1)]


def test_c49_tournament_point_values():
    """49. game_points=2, hang_jack_points=6, a hang jack by team A and Game to team B: A +6, B +2."""
    hands = {1: "JS 4D 2H 3H 4H 5H", 2: "QS 2D 6H 7H 8H 9H", 3: "2C TD 3C 4C 5C 6C", 0: "3S 3D 7C 8C 9C 5D"}
    held = " ".join(hands.values()).split()
    stock = sorted(set(valued_stock(*held) + spades_stock(*held, "8S")))
    game = standing_game(scripted_deck(hands, stock), rules=Rules(game_points=2, hang_jack_points=6))
    play(game, "JS", "QS", "2C", "3S")  # team A captures the jack held by seat 1
    play(game, "2D", "TD", "3D", "4D")  # team B takes the 10♦
    finish(game)
    assert game.game_totals == [3, 10]
    assert end_awards(game) == [(HIGH, 0, 1), (LOW, 0, 1), (HANG_JACK, 0, 6), (GAME, 1, 2)]
    assert game.scores == [8, 2]


# ---------------------------------------------------------------- end of match and scoring order


def test_c50_match_ends_at_high():
    """50. 13-13; High -> B, Low -> A, Jack -> A: 13-14 after High, B wins; Low, Jack, Game not scored."""
    game = spades_game({0: "JS 2S", 1: "AS", 2: "QS"}, scores=(13, 13))
    assert (game.high_holder, game.low_holder, game.jack_holder) == (1, 0, 0)
    finish(game)
    assert game.scores == [13, 14] and game.winner == 1 and game.phase == MATCH_OVER
    assert [(e.kind, e.team) for e in game.events[-2:]] == [(HIGH, 1), (MATCH_END, 1)]
    assert not events(game, LOW, JACK, HANG_JACK, GAME, DEAL_END)


def test_c51_s1_example_high_wins_first():
    """51. 13-13 (S1 example): High -> A, Low/Jack/Game -> B: team A wins 14-13."""
    game = spades_game({0: "AS", 1: "2S JS"}, scores=(13, 13))
    assert (game.high_holder, game.low_holder, game.jack_holder) == (0, 1, 1)
    finish(game)
    assert game.scores == [14, 13] and game.winner == 0
    assert end_awards(game) == [(HIGH, 0, 1)] and not events(game, LOW, JACK, GAME)


def test_c52_hang_jack_wins_before_game():
    """52. 12-11: High A (13-11), Low B (13-12), hang jack by B (13-15): B wins at the Jack step; no Game."""
    game = spades_game({0: "AS 4C", 1: "3C 2S", 2: "JS", 3: "QS"}, scores=(12, 11))
    play(game, "3C", "JS", "QS", "4C")  # seat 3 overtrumps the jack held by seat 2
    assert trick_winner(game) == 3
    finish(game)
    assert end_awards(game) == [(HIGH, 0, 1), (LOW, 1, 1), (HANG_JACK, 1, 3)]
    assert game.scores == [13, 15] and game.winner == 1 and not events(game, GAME)


def test_c53_short_game_target_seven():
    """53. target_score=7, 6-5, Low -> team A: team A wins (7-5 when High is A's too)."""
    short = Rules(target_score=7)
    # High -> B (6-6), Low -> A (7-6): the Low award ends the match
    game = spades_game({0: "2S", 1: "AS"}, rules=short, scores=(6, 5))
    finish(game)
    assert end_awards(game) == [(HIGH, 1, 1), (LOW, 0, 1)] and game.scores == [7, 6] and game.winner == 0
    # High and Low both team A: 7-5, the match already ends at High
    game = spades_game({0: "2S", 2: "AS"}, rules=short, scores=(6, 5))
    finish(game)
    assert game.scores == [7, 5] and game.winner == 0 and end_awards(game) == [(HIGH, 0, 1)]


def test_c54_kick_to_thirteen_does_not_win():
    """54. 13-10, dealer seat 1 (team B), kick J♥: 13-13, play continues."""
    game = new_game(build_deck(dealer=1, kicks=["JH"]), dealer=1, scores=(13, 10))
    assert game.scores == [13, 13] and game.winner == -1
    assert game.phase == STAND_OR_BEG and game.current == 2 and game.legal_actions() == [STAND, BEG]


def test_c55_redeal_does_not_rotate_the_deal():
    """55. Dealer 0; pack exhausted and redealt (test 17); that deal completes: the next dealer is seat 1."""
    game = new_game(build_deck(kicks=["AH", "6H", "JH", "3H"]), build_deck(kicks=["7C"]), episode="match")
    game.step(BEG)
    game.step(RUN)
    assert game.deal_number == 2 and game.dealer == 0 and game.scores == [6, 0]
    game.step(STAND)
    finish(game)
    assert events(game, DEAL_END)[-1].seat == 0
    assert game.deal_number == 3 and game.dealer == 1 and game.current == 2


def test_c56_nine_card_hand_plays_nine_tricks():
    """56. A hand with 9 cards each (one run): exactly 9 tricks are played, then end-of-hand scoring."""
    game = new_game(build_deck(hands={1: ["AS"], 2: ["2S"]}, kicks=["4H", "KS"]))
    game.step(BEG)
    game.step(RUN)
    assert game.n_tricks == 9 and [len(game.hand(s)) for s in range(4)] == [9] * 4
    while game.tricks_played < 8:
        game.step(game.legal_actions()[0])
    assert game.phase == PLAY and not events(game, HIGH, LOW, GAME, DEAL_END)
    finish(game)
    assert game.phase == DEAL_OVER and game.tricks_played == 9 and len(events(game, TRICK)) == 9
    assert all(h == 0 for h in game.hands)
    last_trick = game.events.index(events(game, TRICK)[-1])
    assert {e.kind for e in game.events[last_trick + 1 :]} >= {HIGH, LOW, DEAL_END}
