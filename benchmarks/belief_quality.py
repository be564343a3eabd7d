"""How well the search's worlds name the holders of the hidden cards, on a player's positions:
uniform sampling against worlds inferred from a network's likelihood of the other seats' play.

    python benchmarks/belief_quality.py [--player student] [--infer student] [--positions 2000] [--worlds 128]

``--player`` (``expert``, ``student``, ``pretrained`` or a policy file) plays itself on the vector
engine (:func:`record`); at the positions kept, each seat's hidden cards are compared with the
worlds each belief draws, ``--worlds`` worlds a position (:func:`sampled_beliefs`): the search's
uniform sampling among the deals the observation allows, and the worlds drawn by the ``--infer``
network's likelihood of the other seats' decisions (:func:`inferred_hands`). Printed per belief
(:func:`quality`): the mean log-likelihood of the true holder a hidden card, how often the most
likely holder is the true one (every hidden card, and the hidden trumps), and the seconds it took.
One thread.

From one seat's observation each unseen card lies with one of four holders, relative to that
seat: the next seat, the partner, the previous seat, or the stock (cards not dealt to a hand; the
kicks are seen). What the observation makes certain narrows it: a seat holds no card of a suit it
has shown it lacks, and a seat with no card left holds none (:func:`holder_mask`, from the
:class:`agents.search.Position` the search samples its worlds from).

Until issue 63 the product held both the inference (``search:infer=NETWORK``) and a belief
network fitted to the true holders (``python -m train.beliefs``). The inference left the search
(within the noise in play, at four times the cost) but is kept here, as it drew its worlds, to
measure how readable a network's play is (issue 59); the belief network is gone, its figures
stay in docs/results.md ("Beliefs about the hidden cards").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial

import numpy as np

import agents
from agents.expert import expert_actions
from agents.policy import PolicyBot, batch_inputs
from agents.search import MAX_WORLDS, OTHERS, Position, SearchBot, sample_hidden, world_deck
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from allfours_env import decode
from allfours_env.cards import N_CARDS, N_RANKS, N_SEATS, SUIT_MASK, cards_of
from allfours_env.vector import VectorGame

N_HOLDERS = 4  # the next seat, the partner, the previous seat, the stock
STOCK = 3
SMOOTHING = 0.5  # added to each allowed holder's count of sampled worlds
TABLES = 256
KEEP_EVERY = 3  # keep one decision in three at each table: less alike, as many matches
INFER_GROUPS = 4  # inferred worlds: candidate worlds drawn per world kept


def record(
    rows: int, seed: int, play: Callable[[np.ndarray, np.ndarray], np.ndarray] = expert_actions
) -> tuple[np.ndarray, list[Position], np.ndarray]:
    """``rows`` decisions of self-play by ``play`` (a batch bot's actions; default ``expert``): the
    observations, their positions and the true holders (n, 52: 0..3, -1 for a card the seat has seen)."""
    game = VectorGame(TABLES)
    game.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, truths, kept = [], [], 0
    while kept < rows:
        obs, mask = game.observe(), game.legal_mask()
        live = np.flatnonzero(~game.is_over & (rng.random(TABLES) < 1 / KEEP_EVERY))
        if len(live):
            observations.append(obs[live])
            truths.append((game.hands[live], game.current[live]))
            kept += len(live)
        game.step(play(obs, mask))
        game.restart(game.is_over)
    observations = np.concatenate(observations)[:rows]
    hands, seats = (np.concatenate(parts)[:rows] for parts in zip(*truths))
    positions = [Position.from_view(decode(row)) for row in observations]
    return observations, positions, holders(positions, hands, seats)


def holders(positions: list[Position], hands: np.ndarray, seats: np.ndarray) -> np.ndarray:
    """int8 (n, 52): the holder of each card hidden from ``seats`` (relative: 0 next, 1 partner,
    2 previous, 3 stock), -1 for a card the seat has seen (its own hand, played, a kick)."""
    cards = np.uint64(1) << np.arange(N_CARDS, dtype=np.uint64)
    unseen = np.array([p.unseen for p in positions], dtype=np.uint64)
    out = np.full((len(positions), N_CARDS), STOCK, dtype=np.int8)
    for holder, rel in enumerate(OTHERS):
        hand = hands[np.arange(len(seats)), (seats + rel) % N_SEATS]
        out[(hand[:, None] & cards) != 0] = holder
    out[(unseen[:, None] & cards) == 0] = -1
    return out


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


def holder_counts(position: Position, hands: np.ndarray) -> np.ndarray:
    """(52, 4): in how many of the worlds ``hands`` ((worlds, 4) bit sets, seat 0 mine) each holder has each card."""
    counts = np.zeros((N_CARDS, N_HOLDERS))
    for holder, seat in enumerate(OTHERS):
        counts[:, holder] = ((hands[:, seat, None] >> np.arange(N_CARDS, dtype=np.uint64)) & np.uint64(1)).sum(0)
    unseen = np.array([position.unseen >> c & 1 for c in range(N_CARDS)], dtype=bool)
    counts[:, STOCK] = np.where(unseen, len(hands) - counts[:, :STOCK].sum(axis=1), 0)
    return counts


def sampled_beliefs(
    positions: list[Position], worlds: int, seed: int, draw: Callable[..., np.ndarray] = sample_hidden
) -> np.ndarray:
    """float (n, 52, 4): each holder's share of each unseen card over ``worlds`` worlds a position,
    drawn by ``draw(position, rng, worlds)`` (their hands, as :func:`agents.search.sample_hidden`,
    the default: the search's uniform sampling) from one generator seeded by ``seed``, smoothed so
    that a holder the samples missed keeps a little chance; zero where :func:`holder_mask` rules a
    holder out, each unseen card's row summing to 1."""
    rng = np.random.default_rng(seed)
    counts = np.stack([holder_counts(p, draw(p, rng, worlds)) for p in positions])
    scores = np.where(np.stack([holder_mask(p) for p in positions]), counts + SMOOTHING, 0.0)
    totals = scores.sum(axis=2, keepdims=True)
    return np.divide(scores, totals, out=np.zeros_like(scores), where=totals > 0)


def inferred_hands(position: Position, rng: np.random.Generator, n_worlds: int, network: PolicyBot) -> np.ndarray:
    """``n_worlds`` worlds drawn as ``search:infer=NETWORK`` drew them before issue 63 (policy-based
    inference, Rebstock, Solinas, Buro et al. 2019): ``INFER_GROUPS`` times as many candidates
    sampled as the search samples them (the first group from ``rng``, the rest from a generator
    seeded by it; which of a seat's cards came with a run is drawn too), each weighted by the
    likelihood under ``network``'s softmax of every decision the other three seats made this deal
    (decisions with one legal action count 1), then drawn by systematic resampling; exactly the
    first group where every candidate is equally likely. Their hands, as :func:`sample_hidden`."""

    def candidates(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[list[int]]]:
        hands = sample_hidden(position, rng, n)
        return hands, [world_deck(position, tuple(map(int, held)), rng, runs_drawn=True) for held in hands]

    hands, decks = candidates(rng, n_worlds)
    rng = np.random.default_rng(int(rng.integers(2**63)))
    more, more_decks = candidates(rng, (INFER_GROUPS - 1) * n_worlds)
    log_likelihood = np.zeros(INFER_GROUPS * n_worlds)
    for worlds, masks, action in SearchBot._replayed(position, decks + more_decks, OTHERS):
        asked = np.flatnonzero(masks.sum(axis=1) > 1)
        if len(asked):
            inputs = batch_inputs(network.layout, worlds.observe(tables=asked), masks[asked])
            logits = np.where(masks[asked] > 0, network.logits(inputs).astype(np.float64), -np.inf)
            top = logits.max(axis=1)
            log_likelihood[asked] += logits[:, action] - top - np.log(np.exp(logits - top[:, None]).sum(axis=1))
    if np.ptp(log_likelihood) == 0:
        return hands
    weights = np.exp(log_likelihood - log_likelihood.max())
    points = (rng.random() + np.arange(n_worlds)) / n_worlds  # systematic resampling
    chosen = np.searchsorted(np.cumsum(weights / weights.sum()), points, side="right")
    return np.concatenate([hands, more])[np.minimum(chosen, len(weights) - 1)]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--player", default="student", help="whose self-play gives the positions")
    parser.add_argument("--infer", default="student", help="the network the inference reads")
    parser.add_argument("--positions", type=count(1, 10**7), default=2000)
    parser.add_argument("--worlds", type=count(1, MAX_WORLDS), default=128, help="worlds a position, for each belief")
    parser.add_argument("--seed", type=count(0, 2**63 - 1), default=1_000_003)
    args = parser.parse_args()
    one_blas_thread()
    try:
        play = expert_actions if args.player == "expert" else agents.make(args.player).act_batch
        network = agents.make(args.infer)
        if not isinstance(network, PolicyBot):
            raise ValueError("--infer must be a network: student, pretrained or a policy file")
    except (ValueError, OSError, AttributeError) as err:  # an unknown bot or network; a bot that plays no batch
        parser.error(f"--player {args.player!r} / --infer {args.infer!r}: {err}")
    observations, positions, truth = record(args.positions, args.seed, play)
    trumps = trump_cards(positions, observations)
    results = {}
    for name, draw in (
        ("uniform sampling", sample_hidden),
        (f"infer={args.infer}", partial(inferred_hands, network=network)),
    ):
        start = time.perf_counter()
        probs = sampled_beliefs(positions, args.worlds, args.seed, draw)
        results[name] = {**quality(probs, truth, trumps), "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps({"player": args.player, "positions": args.positions, "worlds": args.worlds, **results}, indent=1))


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/belief_quality.py"))
