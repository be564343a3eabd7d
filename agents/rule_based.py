"""A deterministic bot that follows the beginner's advice of the rules page (seed 000, section 9).

Stand with a high trump, save the trump jack, collect tens, hang the opponents' jack with a
higher trump, keep the low trump out of the opponents' tricks, and give tens to the partner
when the trick is his. Every choice is made among the legal actions of the mask; ties are
broken by card index.
"""

from __future__ import annotations

from allfours_env import BEG, GIVE_ONE, RUN, STAND, View
from allfours_env.cards import CARD_GAME_VALUE, N_RANKS, RANK_ACE, SUIT_MASK, cards_of

from .hand_reading import (
    TENS,
    Trick,
    above,
    beats,
    game_value,
    highest,
    is_ours,
    lowest,
    PhaseBot,
    read_trick,
    trump_jack,
    unseen,
)

RANK_QUEEN, RANK_KING = RANK_ACE - 2, RANK_ACE - 1
STAND_RANK = RANK_QUEEN  # stand with the queen of the kick suit or better
GIVE_RANK = RANK_KING  # the dealer keeps the suit (gives one) with its king or better...
GIVE_COUNT = 3  # ...or with this many trumps


class RuleBasedBot(PhaseBot):
    name = "rule_based"

    # ------------------------------------------------------------ before play

    def stand_or_beg(self, view: View, legal: int) -> int:
        suit = view.kick // N_RANKS
        trumps = view.hand_bits & SUIT_MASK[suit]
        high = trumps and highest(trumps) % N_RANKS >= STAND_RANK
        covered_jack = trumps >> trump_jack(suit) & 1 and trumps.bit_count() >= 2
        want = STAND if high or covered_jack else BEG
        return want if legal >> want & 1 else STAND + BEG - want  # the other one

    def give_or_run(self, view: View, legal: int) -> int:
        suit = view.kick // N_RANKS
        trumps = view.hand_bits & SUIT_MASK[suit]
        strong = trumps and (highest(trumps) % N_RANKS >= GIVE_RANK or trumps.bit_count() >= GIVE_COUNT)
        if view.scores[1] + 1 >= view.target:  # the point would end the match (where the rules allow it)
            return RUN
        # A point that puts them one short of the target needs an even better hand.
        if strong and view.scores[1] + 2 >= view.target:
            strong = highest(trumps) % N_RANKS == RANK_ACE and trumps.bit_count() >= 2
        return GIVE_ONE if strong and legal >> GIVE_ONE & 1 else RUN

    # ------------------------------------------------------------ trick play

    def play(self, view: View, legal: int) -> int:
        if legal & (legal - 1) == 0:
            return lowest(legal)
        trump = view.trump
        trick = read_trick(view, trump)
        if not trick.order:
            return self._lead(view, legal, trump)
        return self._follow(view, legal, trump, trick)

    def _lead(self, view: View, legal: int, trump: int) -> int:
        trumps = legal & SUIT_MASK[trump]
        out = unseen(view)
        jack = trump_jack(trump)
        jack_safe = not above(jack) & out  # no higher trump left to catch it
        # Fish for the opponents' jack with a top trump while the jack is still out.
        top = highest(trumps) if trumps else None
        if top is not None and top % N_RANKS >= RANK_KING and out >> jack & 1:
            return top
        aces = [c for c in cards_of(legal & ~SUIT_MASK[trump]) if c % N_RANKS == RANK_ACE]
        if aces:
            return aces[0]
        plain = legal & ~SUIT_MASK[trump] & ~TENS
        if plain:
            return min(cards_of(plain), key=lambda c: (CARD_GAME_VALUE[c], c % N_RANKS, c))
        candidates = legal if jack_safe else legal & ~(1 << jack) or legal
        # Left with tens and trumps: a low trump before a ten that would fall to a higher card.
        return min(cards_of(candidates), key=lambda c: (TENS >> c & 1, CARD_GAME_VALUE[c], c % N_RANKS, c))

    def _follow(self, view: View, legal: int, trump: int, trick: Trick) -> int:
        jack = trump_jack(trump)
        table = trick.cards
        winners = [c for c in cards_of(legal) if beats(c, trick.best, trump)]
        last_to_play = not trick.after
        if not is_ours(trick.winner):
            # Hang the opponents' jack whenever a higher trump of ours can take it.
            if table >> jack & 1 and winners:
                return min(winners)
            safe = [c for c in winners if c != jack or last_to_play]
            cheap = [c for c in safe if c // N_RANKS != trump]
            if safe and table & TENS:  # win tens for Game, with a trump if need be
                return min(safe, key=lambda c: (c // N_RANKS == trump, c))
            if cheap and (last_to_play or game_value(table)):
                return min(cheap)
            return self._throw_away(legal, trump, jack)
        return self._feed_partner(legal, trump, jack, last_to_play)

    def _feed_partner(self, legal: int, trump: int, jack: int, last_to_play: bool) -> int:
        """The trick is my partner's: give him a ten, or the jack when nobody can take it back."""
        tens = legal & TENS & ~SUIT_MASK[trump]
        if tens:
            return lowest(tens)
        if last_to_play and legal >> jack & 1:
            return jack
        return self._throw_away(legal, trump, jack)

    @staticmethod
    def _throw_away(legal: int, trump: int, jack: int) -> int:
        """The cheapest card: no Game value, not a trump (the low trump stays home), never the jack."""
        candidates = legal & ~(1 << jack) or legal
        return min(
            cards_of(candidates),
            key=lambda c: (c // N_RANKS == trump, CARD_GAME_VALUE[c], c % N_RANKS, c),
        )
