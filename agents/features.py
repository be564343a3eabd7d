"""Derived features for learned policies, computed from the observation alone.

A small network learns trick play much faster when it is told, for each card, what a card
player sees at a glance: is it legal, is it trump, would it take the trick now, can anything
still beat it; and, for the table, who is winning, what is on it, which trumps are still out and
who has shown a void. Everything here is a function of ``(observation, action_mask)``, so a
trained policy still acts from its own observation only. The policy input is the observation
followed by these features (:func:`policy_input`).
"""

from __future__ import annotations

import numpy as np

from allfours_env import OBS_SIZE, decode
from allfours_env.cards import (
    CARD_GAME_VALUE, FULL_DECK, N_CARDS, N_RANKS, N_SUITS, RANK_JACK, SUIT_MASK, cards_of,
)

from .hand_reading import beaters, beats, highest, lowest, voids

PER_CARD = ("legal", "trump", "takes_trick_now", "unbeatable_in_suit", "sure_winner", "game_value", "rank", "trump_jack")
GLOBAL = (
    "partner_winning", "opponent_winning", "position_0", "position_1", "position_2", "position_3",
    "table_game_value", "jack_on_table", "own_trumps", "unseen_trumps", "jack_in_hand", "jack_unseen",
    "ace_unseen", "king_unseen", "queen_unseen", "own_high_trump", "own_low_trump", "unseen_high_trump",
    "unseen_low_trump", "holds_high", "holds_low", "tricks_left",
    *(f"void_{seat}_{suit}" for seat in ("next", "partner", "previous") for suit in "CDHS"),
)
N_FEATURES = len(PER_CARD) * N_CARDS + len(GLOBAL)
INPUT_SIZE = OBS_SIZE + N_FEATURES
_CARD_VALUE = np.array(CARD_GAME_VALUE, dtype=np.float32) / 10.0
_CARD_RANK = np.array([c % N_RANKS for c in range(N_CARDS)], dtype=np.float32) / (N_RANKS - 1)


def _bits_to_array(bits: int) -> np.ndarray:
    raw = np.frombuffer(bits.to_bytes(7, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little", count=N_CARDS).astype(np.float32)


def features(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The derived features (float32[N_FEATURES]) of one observation and its action mask."""
    view = decode(observation)
    hand = view.hand_bits
    seen = hand | view.kicks_aside_bits | (1 << view.kick if view.kick is not None else 0)
    for bits in view.played_bits:
        seen |= bits
    unseen = FULL_DECK & ~seen
    trump = view.trump if view.trump is not None else (view.kick // N_RANKS if view.kick is not None else None)
    trump_mask = SUIT_MASK[trump] if trump is not None else 0

    order = view.trick_order
    t = trump if trump is not None else -1  # no suit is trump before the kick
    best = winner = None
    for seat, card in order:
        if best is None or beats(card, best, t):
            best, winner = card, seat
    takes = unbeatable = sure = 0
    t = trump if trump is not None else -1
    for card in cards_of(hand):
        free = not beaters(card, t) & unseen & SUIT_MASK[card // N_RANKS]
        wins_now = best is None or beats(card, best, t)
        if best is not None and wins_now:
            takes |= 1 << card
        if free:
            unbeatable |= 1 << card
        if wins_now and not beaters(card, t) & unseen:
            sure |= 1 << card

    per_card = np.empty((len(PER_CARD), N_CARDS), dtype=np.float32)
    per_card[0] = mask[:N_CARDS]
    per_card[1] = _bits_to_array(trump_mask)
    per_card[2] = _bits_to_array(takes)
    per_card[3] = _bits_to_array(unbeatable)
    per_card[4] = _bits_to_array(sure)
    per_card[5] = _CARD_VALUE
    per_card[6] = _CARD_RANK
    per_card[7] = 0.0
    if trump is not None:
        per_card[7, trump * N_RANKS + RANK_JACK] = 1.0
    hand_array = _bits_to_array(hand)
    per_card[1:] *= hand_array  # card facts only for cards in hand

    g = np.zeros(len(GLOBAL), dtype=np.float32)
    if winner is not None:
        g[0 if winner == 2 else 1] = 1.0  # the winner so far is partner or an opponent, never me
    g[2 + len(order)] = 1.0
    table = 0
    for _, card in order:
        table |= 1 << card
    g[6] = sum(CARD_GAME_VALUE[c] for c in cards_of(table)) / 40.0  # at most four tens
    if trump is not None:
        jack = trump * N_RANKS + RANK_JACK
        own_trumps, unseen_trumps = hand & trump_mask, unseen & trump_mask
        g[7] = table >> jack & 1
        g[8] = own_trumps.bit_count() / N_RANKS
        g[9] = unseen_trumps.bit_count() / N_RANKS
        g[10] = hand >> jack & 1
        g[11] = unseen >> jack & 1
        for i, rank in enumerate((12, 11, 10)):  # ace, king, queen
            g[12 + i] = unseen >> (trump * N_RANKS + rank) & 1
        if own_trumps:
            g[15] = (highest(own_trumps) % N_RANKS + 1) / N_RANKS
            g[16] = (lowest(own_trumps) % N_RANKS + 1) / N_RANKS
        if unseen_trumps:
            g[17] = (highest(unseen_trumps) % N_RANKS + 1) / N_RANKS
            g[18] = (lowest(unseen_trumps) % N_RANKS + 1) / N_RANKS
        live = own_trumps | unseen_trumps
        if own_trumps:
            g[19] = float(highest(live) == highest(own_trumps))
            g[20] = float(lowest(live) == lowest(own_trumps))
    g[21] = hand.bit_count() / 12.0
    v = voids(view, trump)
    for i, seat in enumerate((1, 2, 3)):
        for suit in range(N_SUITS):
            g[22 + 4 * i + suit] = v[seat] >> suit & 1
    return np.concatenate([per_card.ravel(), g])


def policy_input(observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """What a learned policy reads: the observation, then :func:`features`."""
    return np.concatenate([observation, features(observation, mask)])

