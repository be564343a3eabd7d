"""The derived policy features: the truth the engine knows, the frozen reference values, the batch.

The shipped pretrained policy reads these features, so their values must never change: the
reference below is the per-row code as it was when the policy was trained (kept here only, as
the yardstick), and every implementation is compared with it bit for bit.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from agents.features import (
    COMPACT_PIECES, COMPACT_SIZE, FEATURE_INDEX, GLOBAL, INPUT_SIZE, N_FEATURES, PER_CARD, batch_compact_input,
    batch_features, batch_policy_input, compact_input, features, policy_input,
)
from agents.hand_reading import beaters, trick_winner, unseen, voids
from allfours_env import OBS_SIZE, Rules, decode
import allfours_env.numba_ints  # noqa: F401  (beats, team_of, next_seat, int.bit_length in compiled code)
from allfours_env.cards import (
    CARD_GAME_VALUE, FULL_DECK, N_CARDS, N_RANKS, N_SUITS, RANK_JACK, SUIT_MASK, beats, cards_of, next_seat, team_of,
)
from allfours_env.engine import N_ACTIONS, PLAY, Game
from allfours_env.observation import LAYOUT, encode_with_mask

CARD = {name: i for i, name in enumerate(PER_CARD)}
G = {name: i for i, name in enumerate(GLOBAL)}

# ---------------------------------------------------------------- the frozen reference (do not edit)

_REF_VALUE = np.array(CARD_GAME_VALUE, dtype=np.float32) / 10.0
_REF_RANK = np.array([c % N_RANKS for c in range(N_CARDS)], dtype=np.float32) / (N_RANKS - 1)


def _ref_beats(card, best, trump):
    if card // N_RANKS == best // N_RANKS:
        return card > best
    return card // N_RANKS == trump


def _ref_beaters(best, trump):
    bits = SUIT_MASK[best // N_RANKS] & ~((2 << best) - 1)
    if best // N_RANKS != trump:
        bits |= SUIT_MASK[trump]
    return bits


def _ref_voids(view, trump):
    out = [0, 0, 0, 0]
    for trick in view.tricks:
        led = trick[0][1] // N_RANKS
        for seat, card in trick[1:]:
            suit = card // N_RANKS
            if suit != led and (led == trump or suit != trump):
                out[seat] |= 1 << led
    return out


def _ref_bits(bits):
    raw = np.frombuffer(bits.to_bytes(7, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little", count=N_CARDS).astype(np.float32)


def reference_features(observation, mask):
    """The features exactly as the pretrained policy was trained on them."""
    highest = lambda bits: bits.bit_length() - 1  # noqa: E731
    lowest = lambda bits: (bits & -bits).bit_length() - 1  # noqa: E731
    view = decode(observation)
    hand = view.hand_bits
    seen = hand | view.kicks_aside_bits | (1 << view.kick if view.kick is not None else 0)
    for bits in view.played_bits:
        seen |= bits
    unseen = FULL_DECK & ~seen
    trump = view.trump if view.trump is not None else (view.kick // N_RANKS if view.kick is not None else None)
    trump_mask = SUIT_MASK[trump] if trump is not None else 0
    order = view.trick_order
    t = trump if trump is not None else -1
    best = winner = None
    for seat, card in order:
        if best is None or _ref_beats(card, best, t):
            best, winner = card, seat
    takes = unbeatable = sure = 0
    for card in cards_of(hand):
        free = not _ref_beaters(card, t) & unseen & SUIT_MASK[card // N_RANKS]
        wins_now = best is None or _ref_beats(card, best, t)
        if best is not None and wins_now:
            takes |= 1 << card
        if free:
            unbeatable |= 1 << card
        if wins_now and not _ref_beaters(card, t) & unseen:
            sure |= 1 << card
    per_card = np.empty((8, N_CARDS), dtype=np.float32)
    per_card[0] = mask[:N_CARDS]
    per_card[1] = _ref_bits(trump_mask)
    per_card[2] = _ref_bits(takes)
    per_card[3] = _ref_bits(unbeatable)
    per_card[4] = _ref_bits(sure)
    per_card[5] = _REF_VALUE
    per_card[6] = _REF_RANK
    per_card[7] = 0.0
    if trump is not None:
        per_card[7, trump * N_RANKS + RANK_JACK] = 1.0
    per_card[1:] *= _ref_bits(hand)
    g = np.zeros(34, dtype=np.float32)
    if winner is not None:
        g[0 if winner == 2 else 1] = 1.0
    g[2 + len(order)] = 1.0
    table = 0
    for _, card in order:
        table |= 1 << card
    g[6] = sum(CARD_GAME_VALUE[c] for c in cards_of(table)) / 40.0
    if trump is not None:
        jack = trump * N_RANKS + RANK_JACK
        own_trumps, unseen_trumps = hand & trump_mask, unseen & trump_mask
        g[7] = table >> jack & 1
        g[8] = own_trumps.bit_count() / N_RANKS
        g[9] = unseen_trumps.bit_count() / N_RANKS
        g[10] = hand >> jack & 1
        g[11] = unseen >> jack & 1
        for i, rank in enumerate((12, 11, 10)):
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
    v = _ref_voids(view, trump)
    for i, seat in enumerate((1, 2, 3)):
        for suit in range(N_SUITS):
            g[22 + 4 * i + suit] = v[seat] >> suit & 1
    return np.concatenate([per_card.ravel(), g])


# ---------------------------------------------------------------- positions from random matches

VARIANTS = (
    {},
    {"undertrump": "forbidden_unless_all_trumps"},
    {"undertrump": "forbidden_when_can_follow", "exhausted_pack": "redeal"},
    {"exhausted_pack": "redeal", "deal_batch": 3},
    {"stand_requires_trump": True, "give_one_requires_trump": True, "target_score": 7},
    {"deal_batch": 3, "kick_points": "tobago", "game_tie": "dealer", "single_trump_counts_high_and_low": False},
)


def positions(n_matches: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's (observation, mask) at every decision of random matches, all phases and
    variants mixed; seats not to act see an all-zero mask."""
    observations, masks = [], []
    for m in range(n_matches):
        rng = np.random.default_rng([seed, m])
        game = Game(Rules(**VARIANTS[m % len(VARIANTS)]), rng)
        while True:
            for seat in range(4):
                obs, mask = encode_with_mask(game, seat)
                observations.append(obs)
                masks.append(mask if seat == game.current else np.zeros(N_ACTIONS, dtype=np.int8))
            if game.phase >= 3:
                break
            legal = game.legal_actions()
            game.step(legal[rng.integers(len(legal))])
    return np.array(observations), np.array(masks)


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    return positions(8, seed=8)


# ---------------------------------------------------------------- tests


def test_names_place_every_feature():
    assert len(FEATURE_INDEX) == N_FEATURES == len(PER_CARD) * N_CARDS + len(GLOBAL)
    assert sorted(FEATURE_INDEX.values()) == list(range(N_FEATURES))
    assert INPUT_SIZE == OBS_SIZE + N_FEATURES
    assert FEATURE_INDEX["legal_2C"] == 0 and FEATURE_INDEX["takes_trick_now_AS"] == 2 * N_CARDS + 51
    assert FEATURE_INDEX["partner_winning"] == len(PER_CARD) * N_CARDS
    assert FEATURE_INDEX["void_previous_S"] == N_FEATURES - 1


def test_batch_and_single_rows_equal_the_frozen_reference(sample):
    observations, masks = sample
    assert len(observations) > 3000  # every phase, mixed in one batch
    assert {decode(o).phase for o in observations} == {"stand_or_beg", "give_or_run", "play", "over"}
    expected = np.array([reference_features(o, m) for o, m in zip(observations, masks)])
    batch = batch_features(observations, masks)
    assert batch.dtype == np.float32 and batch.shape == (len(observations), N_FEATURES)
    np.testing.assert_array_equal(batch.view(np.uint32), expected.view(np.uint32))  # bit for bit
    inputs = batch_policy_input(observations, masks)
    assert inputs.dtype == np.float32 and inputs.shape == (len(observations), INPUT_SIZE)
    np.testing.assert_array_equal(inputs, np.concatenate([observations, expected], axis=1))
    for i in range(0, len(observations), 97):  # single rows, and a batch of one, give the same row
        np.testing.assert_array_equal(features(observations[i], masks[i]).view(np.uint32), expected[i].view(np.uint32))
        np.testing.assert_array_equal(policy_input(observations[i], masks[i]), inputs[i])
        np.testing.assert_array_equal(batch_features(observations[i : i + 1], masks[i : i + 1])[0], expected[i])


def test_the_compact_input_holds_its_named_pieces(sample):
    """compact_input: the observation's hand, kick and won pieces, the trick's cards whoever played
    them, the observation from trump on, then the named features; row by row as a batch."""
    observations, masks = sample
    compact = batch_compact_input(observations, masks)
    assert compact.shape == (len(observations), COMPACT_SIZE) and compact.dtype == np.float32
    feats = batch_features(observations, masks)
    expected = {
        "hand": observations[:, LAYOUT["hand"].offset : LAYOUT["hand"].offset + N_CARDS],
        "kick": observations[:, LAYOUT["kick"].offset : LAYOUT["kick"].offset + N_CARDS],
        "won": observations[:, LAYOUT["won"].offset : LAYOUT["won"].offset + 2 * N_CARDS],
        "table": observations[:, LAYOUT["table"].offset : LAYOUT["table"].offset + 4 * N_CARDS].reshape(-1, 4, N_CARDS).sum(1),
        "state": observations[:, LAYOUT["trump"].offset :],
        "globals": feats[:, [FEATURE_INDEX[g] for g in GLOBAL]],
    }
    for name in ("legal", "trump", "takes_trick_now", "unbeatable_in_suit", "sure_winner"):
        start = FEATURE_INDEX[f"{name}_2C"]
        expected[name] = feats[:, start : start + N_CARDS]
    start = 0
    for name, size in COMPACT_PIECES:
        np.testing.assert_array_equal(compact[:, start : start + size], expected[name], err_msg=name)
        start += size
    assert start == COMPACT_SIZE
    for i in range(0, len(observations), 97):
        np.testing.assert_array_equal(compact_input(observations[i], masks[i]), compact[i])


def test_the_bots_card_reasoning_is_the_features_one(sample):
    """hand_reading (what the bots call) reads voids, unseen cards and the trick as the reference."""
    observations, _ = sample
    for obs in observations[::7]:
        view = decode(obs)
        for trump in {view.trump, None, 0}:
            assert list(voids(view, trump)) == _ref_voids(view, trump)
        seen = view.hand_bits | view.kicks_aside_bits | (1 << view.kick if view.kick is not None else 0)
        for bits in view.played_bits:
            seen |= bits
        assert unseen(view) == FULL_DECK & ~seen
        order, t = view.trick_order, -1 if view.trump is None else view.trump
        expected = (None, None)
        for seat, card in order:
            if expected[1] is None or _ref_beats(card, expected[1], t):
                expected = (seat, card)
        assert trick_winner(order, t) == expected


@numba.njit(cache=True)
def _compiled_card_rules(cards: np.ndarray, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    wins = np.zeros((len(cards), len(cards), N_SUITS + 1), np.bool_)
    for i in range(len(cards)):
        for j in range(len(cards)):
            for trump in range(-1, N_SUITS):
                wins[i, j, trump + 1] = beats(cards[i], cards[j], trump)
    seats = np.zeros((4, 2), np.int64)
    for s in range(4):
        seats[s] = team_of(s), next_seat(s)
    counts = np.zeros((len(bits), 4), np.int64)
    for i in range(len(bits)):
        b, u = bits[i], np.uint64(bits[i])
        counts[i] = b.bit_length(), b.bit_count(), u.bit_length(), u.bit_count()
    return wins, seats, counts


def test_compiled_card_rules_are_the_python_ones():
    bits = np.array([0, 1, 5, 1 << 51, FULL_DECK, 0b1011 << 30], dtype=np.int64)
    wins, seats, counts = _compiled_card_rules(np.arange(N_CARDS), bits)
    expected = [[[beats(a, b, t) for t in range(-1, N_SUITS)] for b in range(N_CARDS)] for a in range(N_CARDS)]
    assert wins.tolist() == expected
    assert seats.tolist() == [[team_of(s), next_seat(s)] for s in range(4)]
    assert counts.tolist() == [[int(b).bit_length(), int(b).bit_count()] * 2 for b in bits]


def test_without_a_trump_only_higher_cards_of_the_suit_beat_a_card():
    """With no trump and no kick (no decision meets that: every one has a kick or a trump) no suit
    is trump; the frozen reference reads ``SUIT_MASK[-1]``, spades, and meets no such row."""
    for card in range(N_CARDS):
        higher = SUIT_MASK[card // N_RANKS] & ~((2 << card) - 1)
        assert beaters(card, -1) == higher
        assert beaters(card, (card // N_RANKS + 1) % N_SUITS) & ~higher  # a trump does beat it


def test_a_kernel_cache_goes_stale_with_the_sources_it_compiles_in(tmp_path):
    """numba alone would keep running a cached kernel after a register_jitable function it
    calls, in another file, changed; cache_depends_on makes the change recompile it."""
    rule = tmp_path / "rule.py"
    rule.write_text("from numba.extending import register_jitable\n\n@register_jitable\ndef f():\n    return 1\n")
    (tmp_path / "kernel.py").write_text(
        "import numba\nimport rule\nfrom allfours_env.numba_ints import cache_depends_on\n\n"
        "@numba.njit(cache=True)\ndef k():\n    return rule.f()\n\ncache_depends_on([k], [rule])\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).parents[1])])}

    def run() -> str:
        command = [sys.executable, "-c", "import kernel; print(kernel.k())"]
        return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()

    assert run() == "1"
    cached = {path: path.stat().st_mtime_ns for path in (tmp_path / "__pycache__").glob("kernel.k-*")}
    assert cached and run() == "1"  # loaded from the cache, not compiled again
    assert {path: path.stat().st_mtime_ns for path in cached} == cached
    rule.write_text(rule.read_text().replace("return 1", "return 2"))
    assert run() == "2"


def test_bool_masks_and_non_contiguous_batches(sample):
    observations, masks = sample
    expected = batch_features(observations[::3], masks[::3])
    np.testing.assert_array_equal(batch_features(observations[::3], masks[::3].astype(bool)), expected)
    np.testing.assert_array_equal(batch_features(np.asfortranarray(observations[::3]), masks[::3]), expected)
    assert batch_features(observations[:0], masks[:0]).shape == (0, N_FEATURES)


def test_bad_shapes_and_dtypes_are_refused(sample):
    observations, masks = sample[0][:4], sample[1][:4]
    with pytest.raises(ValueError, match="observations"):
        batch_features(observations[:, :-1], masks)
    with pytest.raises(ValueError, match="float32"):
        batch_features(observations.astype(np.float64), masks)
    with pytest.raises(ValueError, match="masks"):
        batch_features(observations, masks[:3])
    with pytest.raises(ValueError, match="masks"):
        batch_features(observations, masks[:, :52])
    with pytest.raises(ValueError, match="masks"):
        batch_features(observations, masks.astype(str))
    with pytest.raises(ValueError, match="observation"):
        features(observations, masks[0])
    with pytest.raises(ValueError, match="mask"):
        policy_input(observations[0], masks)


def test_features_match_what_the_engine_knows():
    checked_voids = checked_takes = 0
    for seed in range(12):
        game = Game(Rules(), np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        while game.phase < 3:
            seat = game.current
            obs, mask = encode_with_mask(game, seat)
            f = features(obs, mask)
            assert f.shape == (N_FEATURES,) and policy_input(obs, mask).shape == (INPUT_SIZE,)
            per_card = f[: len(PER_CARD) * N_CARDS].reshape(len(PER_CARD), N_CARDS)
            g = f[len(PER_CARD) * N_CARDS :]
            np.testing.assert_array_equal(per_card[CARD["legal"]], mask[:N_CARDS])
            hand = [c for c in range(N_CARDS) if game.hands[seat] >> c & 1]
            assert not per_card[1:, [c for c in range(N_CARDS) if c not in hand]].any()
            if game.phase == PLAY:
                for i, rel in enumerate((1, 2, 3)):  # every void read from the play is real
                    other = (seat + rel) % 4
                    for suit in range(4):
                        if g[G[f"void_{('next', 'partner', 'previous')[i]}_{'CDHS'[suit]}"]]:
                            assert not game.hands[other] & SUIT_MASK[suit]
                            checked_voids += 1
                for card in hand:  # "takes the trick now" is what the engine decides
                    if game.trick and mask[card]:
                        trial = copy.deepcopy(game)
                        trial.step(card)
                        if trial.trick:
                            takes = trial.win_seat == seat
                        else:  # my card completed the trick
                            takes = next(e for e in reversed(trial.events) if e.kind == "trick").seat == seat
                        assert bool(per_card[CARD["takes_trick_now"], card]) == takes
                        checked_takes += 1
                    if per_card[CARD["unbeatable_in_suit"], card]:  # no other hand holds a higher card of its suit
                        higher = SUIT_MASK[card // N_RANKS] & ~((2 << card) - 1)
                        assert not any(game.hands[o] & higher for o in range(4) if o != seat)
            legal = np.flatnonzero(mask)
            game.step(int(legal[rng.integers(len(legal))]))
    assert checked_voids > 30 and checked_takes > 300
