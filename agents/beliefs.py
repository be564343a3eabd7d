"""Beliefs about the hidden cards: for each card a seat has not seen, who holds it.

From one seat's observation, each unseen card lies with one of four holders, relative to that
seat: the next seat, the partner, the previous seat, or the stock (cards not dealt to a hand;
the kicks are seen). What the observation makes certain narrows it: a seat holds no card of a
suit it has shown it lacks, and a seat with no card left holds none (:func:`holder_mask`, from
the same :class:`agents.search.Position` the search samples its worlds from).

Two models give each unseen card's holder a probability (``probs``: float (n, 52, 4), zero where
the mask rules a holder out, each unseen card's row summing to 1):

- :class:`SampledBeliefs`: what today's search assumes, the share of ``worlds`` worlds drawn by
  :func:`agents.search.sample_hidden` in which each holder has the card (smoothed, so that a
  holder the samples missed keeps a little chance);
- :class:`BeliefNet`: a correction to those shares, fitted to the true holders of positions
  from play (``python -m train.beliefs``: data from the simulator, whose every hand is known):
  ``probs = softmax(log sampled + f(x))`` per card, ``f`` a ReLU network whose input ``x`` is the
  observation, the holder mask, the cards each seat still holds and the sampled shares. A zero
  ``f`` gives the sampled shares exactly; ``exp(f)`` is the weight by which the network would
  reweigh a sampled world's holder of each card. Read from a plain ``.npz``
  (:mod:`agents.shared.npz_file`; loading runs no code).

:func:`quality` measures either against the true holders: the mean log-likelihood of the true
holder per hidden card, and how often the most likely holder is the true one (for every hidden
card, and for the hidden trumps).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from allfours_env import decode
from allfours_env.cards import N_CARDS, N_RANKS, N_SEATS, SUIT_MASK, cards_of
from allfours_env.observation import OBS_SIZE

from .search import OTHERS, Position, sample_hidden
from .shared.atomic_file import atomic_path
from .shared.npz_file import read_npz

N_HOLDERS = 4  # the next seat, the partner, the previous seat, the stock
STOCK = 3
INPUT_SIZE = OBS_SIZE + 2 * N_CARDS * N_HOLDERS + N_SEATS
MAX_FILE_BYTES = 64 * 2**20
SMOOTHING = 0.5  # added to each allowed holder's count of sampled worlds


class BeliefError(ValueError):
    """A belief file that is not one."""


def holder_mask(position: Position) -> np.ndarray:
    """bool (52, 4): who may hold each card (all False for a card the seat has seen)."""
    mask = np.zeros((N_CARDS, N_HOLDERS), dtype=bool)
    unseen = np.array(cards_of(position.unseen), dtype=np.int64)
    suits = unseen // N_RANKS
    for holder, seat in enumerate(OTHERS):
        if position.left[seat]:
            mask[unseen, holder] = (position.voids[seat] >> suits & 1) == 0
    stock = position.unseen.bit_count() - sum(position.left[s] for s in OTHERS)
    mask[unseen, STOCK] = stock > 0
    return mask


def inputs(observations: np.ndarray, positions: list[Position], prior: np.ndarray) -> np.ndarray:
    """float32 (n, INPUT_SIZE): each observation, its holder mask, the cards each seat holds / 12
    and the prior's shares (n, 52, 4)."""
    masks = np.stack([holder_mask(p) for p in positions]).reshape(len(positions), -1)
    left = np.array([p.left for p in positions], dtype=np.float32) / 12.0
    shares = prior.reshape(len(positions), -1)
    return np.concatenate([observations, masks, left, shares], axis=1, dtype=np.float32)


def positions_of(observations: np.ndarray) -> list[Position]:
    return [Position.from_view(decode(row)) for row in observations]


def _normalised(scores: np.ndarray, masks: np.ndarray) -> np.ndarray:
    scores = np.where(masks, scores, 0.0)
    totals = scores.sum(axis=2, keepdims=True)
    return np.divide(scores, totals, out=np.zeros_like(scores), where=totals > 0)


class SampledBeliefs:
    """Today's search's beliefs: the holders' shares over ``worlds`` sampled worlds."""

    def __init__(self, worlds: int = 512, seed: int = 0) -> None:
        self.worlds, self.rng = worlds, np.random.default_rng(seed)

    def probs(self, observations: np.ndarray, positions: list[Position]) -> np.ndarray:
        worlds = [self.worlds_of(position) for position in positions]  # each (worlds, 4): seat 0 mine
        return _normalised(np.stack([holder_counts(p, h) for p, h in zip(positions, worlds)]) + SMOOTHING,
                           np.stack([holder_mask(p) for p in positions]))  # fmt: skip

    def worlds_of(self, position: Position) -> np.ndarray:
        return sample_hidden(position, self.rng, self.worlds)


def holder_counts(position: Position, hands: np.ndarray) -> np.ndarray:
    """(52, 4): in how many of the worlds ``hands`` ((worlds, 4) bit sets, seat 0 mine) each holder has each card."""
    counts = np.zeros((N_CARDS, N_HOLDERS))
    for holder, seat in enumerate(OTHERS):
        counts[:, holder] = ((hands[:, seat, None] >> np.arange(N_CARDS, dtype=np.uint64)) & np.uint64(1)).sum(0)
    unseen = np.array([position.unseen >> c & 1 for c in range(N_CARDS)], dtype=bool)
    counts[:, STOCK] = np.where(unseen, len(hands) - counts[:, :STOCK].sum(axis=1), 0)
    return counts


class BeliefNet:
    """A fitted network's beliefs: ReLU layers ``w0, b0, w1, b1, ...`` (numpy), logits (52 x 4)."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.layers = len(weights) // 2

    @classmethod
    def from_file(cls, path: str | Path) -> BeliefNet:
        try:
            weights = read_npz(path, MAX_FILE_BYTES)
        except ValueError as err:
            raise BeliefError(f"{path}: {err}") from None
        check_weights(weights, path)
        return cls(weights)

    def save(self, path: str | Path) -> None:
        with atomic_path(Path(path)) as tmp:
            with open(tmp, "wb") as f:
                np.savez(f, **self.weights)

    def probs(self, observations: np.ndarray, positions: list[Position], prior: np.ndarray) -> np.ndarray:
        """The prior's shares (:class:`SampledBeliefs`), corrected by the network."""
        x = inputs(observations, positions, prior)
        for k in range(self.layers):
            x = x @ self.weights[f"w{k}"] + self.weights[f"b{k}"]
            if k < self.layers - 1:
                x = np.maximum(x, 0.0)
        masks = prior > 0
        logits = np.where(masks, x.reshape(prior.shape) + np.log(np.where(masks, prior, 1.0)), -np.inf)
        peak = np.max(logits, axis=2, keepdims=True)
        scores = np.exp(logits - np.where(np.isfinite(peak), peak, 0.0))
        return _normalised(scores, masks)


def check_weights(weights: dict[str, np.ndarray], source: object) -> None:
    """A BeliefError unless ``weights`` are the layers of a belief network, finite."""
    layers = len(weights) // 2
    expected = {f"{kind}{k}" for k in range(layers) for kind in "wb"}
    if layers < 1 or set(weights) != expected:
        raise BeliefError(f"{source}: a belief network holds w0, b0, w1, b1, ...; got {sorted(weights)[:8]}")
    width = INPUT_SIZE
    for k in range(layers):
        w, b = weights[f"w{k}"], weights[f"b{k}"]
        if w.dtype != np.float32 or b.dtype != np.float32 or w.ndim != 2 or w.shape[0] != width or b.shape != w.shape[1:]:
            raise BeliefError(f"{source}: layer {k} has shapes {w.shape}, {b.shape}; its input is {width} wide (float32)")
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise BeliefError(f"{source}: layer {k} holds values that are not finite")
        width = w.shape[1]
    if width != N_CARDS * N_HOLDERS:
        raise BeliefError(f"{source}: the last layer gives {width} values, not {N_CARDS * N_HOLDERS}")


def quality(probs: np.ndarray, truth: np.ndarray, trumps: np.ndarray) -> dict[str, float | None]:
    """How well ``probs`` (n, 52, 4) name the true holders ``truth`` (n, 52: 0..3, -1 where the
    card is not hidden); ``trumps`` (n, 52) bool marks the hidden trumps (None for the trumps'
    figure where no trump is hidden: JSON has no NaN)."""
    hidden = truth >= 0
    picked = np.take_along_axis(probs, np.maximum(truth, 0)[..., None], axis=2)[..., 0]
    top = probs.argmax(axis=2) == truth
    return {
        "log_likelihood": float(np.log(np.maximum(picked[hidden], 1e-12)).mean()),
        "top1": float(top[hidden].mean()),
        "top1_trumps": float(top[hidden & trumps].mean()) if (hidden & trumps).any() else None,
        "cards": int(hidden.sum()),
    }


def trump_cards(positions: list[Position], observations: np.ndarray) -> np.ndarray:
    """bool (n, 52): the cards of each position's trump suit (none before the trump is fixed)."""
    out = np.zeros((len(positions), N_CARDS), dtype=bool)
    for i, row in enumerate(observations):
        trump = decode(row).trump
        if trump is not None:
            out[i, cards_of(SUIT_MASK[trump])] = True
    return out
