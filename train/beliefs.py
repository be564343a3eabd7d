"""Fit a belief network (:mod:`agents.beliefs`) to the true holders of hidden cards, and measure it.

    python -m train.beliefs --train 400000 --test 20000 --out data/beliefs.npz

The simulator knows every hand, so the labels are free: ``expert`` plays itself on the vector
engine, and at every decision the seat to act's observation is kept with the true holder of
each card it has not seen (the next seat, the partner, the previous seat or the stock). A
network (ReLU layers, torch) is fitted to them as a correction to today's search sampling
(:class:`agents.beliefs.SampledBeliefs`, ``--worlds`` worlds a position), by cross-entropy over
the holders the observation allows, then measured beside that sampling on positions of other
seeds: the mean log-likelihood of the true holder per hidden card, and how often the most likely
holder is the true one.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents.beliefs import (
    INPUT_SIZE, N_HOLDERS, STOCK, BeliefNet, SampledBeliefs, inputs, positions_of, quality, trump_cards,
)  # fmt: skip
from agents.expert import expert_actions
from agents.search import MAX_WORLDS, Position
from agents.shared.options import count
from agents.shared.processes import one_blas_thread
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.vector import VectorGame

from .cli import run_fit

TABLES = 256
KEEP_EVERY = 3  # keep one decision in three at each table: less alike, as many matches


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
    positions = positions_of(observations)
    return observations, positions, holders(positions, hands, seats)


def holders(positions: list[Position], hands: np.ndarray, seats: np.ndarray) -> np.ndarray:
    """int8 (n, 52): the holder of each card hidden from ``seats`` (relative: 0 next, 1 partner,
    2 previous, 3 stock), -1 for a card the seat has seen (its own hand, played, a kick)."""
    cards = np.uint64(1) << np.arange(N_CARDS, dtype=np.uint64)
    unseen = np.array([p.unseen for p in positions], dtype=np.uint64)
    out = np.full((len(positions), N_CARDS), STOCK, dtype=np.int8)
    for holder, rel in enumerate((1, 2, 3)):
        hand = hands[np.arange(len(seats)), (seats + rel) % N_SEATS]
        out[(hand[:, None] & cards) != 0] = holder
    out[(unseen[:, None] & cards) == 0] = -1
    return out


def fit(
    x: np.ndarray, prior: np.ndarray, truth: np.ndarray, hidden: list[int], epochs: int, seed: int
) -> tuple[BeliefNet, list[float]]:
    """A correction ``f`` to the prior's shares (softmax(log prior + f) per card), fitted to
    ``truth`` by cross-entropy; a tenth of the rows is held out, and the epoch that names its true
    holders best is kept. Returns the network and each epoch's held-out log-likelihood per card."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    one_blas_thread()
    sizes = [x.shape[1], *hidden, N_CARDS * N_HOLDERS]
    layers: list[torch.nn.Module] = []
    for k in range(len(sizes) - 1):
        layers += [torch.nn.Linear(sizes[k], sizes[k + 1]), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    torch.nn.init.zeros_(net[-1].weight)  # it starts as the prior itself
    torch.nn.init.zeros_(net[-1].bias)
    optimiser = torch.optim.Adam(net.parameters(), lr=5e-4)
    masks = prior > 0
    log_prior = np.log(np.where(masks, prior, 1.0)).astype(np.float32)
    tensors = [torch.from_numpy(a) for a in (x, log_prior, masks, truth.astype(np.int64))]
    held = len(x) // 10
    train, check = [t[held:] for t in tensors], [t[:held] for t in tensors]

    def loss_of(rows: list) -> torch.Tensor:
        inputs_, base, allowed, target = rows
        logits = (net(inputs_).view(base.shape) + base).masked_fill(~allowed, -1e9)
        return torch.nn.functional.cross_entropy(logits[target >= 0], target[target >= 0])

    generator = torch.Generator().manual_seed(seed)
    best, curve = (np.inf, None), []
    for epoch in range(epochs):
        started = time.monotonic()
        for batch in torch.randperm(len(train[0]), generator=generator).split(512):
            loss = loss_of([t[batch] for t in train])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            held_out = float(loss_of(check))
        curve.append(-held_out)
        print(f"[beliefs] epoch {epoch + 1}/{epochs}: held out log-likelihood {-held_out:.4f} a card "
              f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
        if held_out < best[0]:
            best = (held_out, [p.detach().numpy().copy() for p in net.parameters()])
    parameters = best[1]
    weights = {}
    for k in range(len(parameters) // 2):
        weights[f"w{k}"] = parameters[2 * k].T.astype(np.float32).copy()
        weights[f"b{k}"] = parameters[2 * k + 1].astype(np.float32)
    return BeliefNet(weights), curve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.beliefs", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--train", type=count(10, 10**8), default=400_000, help="decisions to fit on (a tenth held out)"
    )
    parser.add_argument("--test", type=count(1, 10**8), default=20_000, help="decisions of other seeds to measure on")
    parser.add_argument("--epochs", type=count(1, 10_000), default=4)
    parser.add_argument("--hidden", type=count(1, 65_536), nargs="+", default=[512, 512], help="hidden layers' widths")
    parser.add_argument(
        "--worlds", type=count(1, MAX_WORLDS), default=128, help="worlds sampled per position for the prior"
    )
    parser.add_argument("--seed", type=count(0, 2**63 - 1), default=0)
    parser.add_argument("--out", type=Path, required=True, help="the network (.npz)")
    args = parser.parse_args(argv)

    def work() -> int:
        started = time.monotonic()
        data = {}
        for part, rows, seed in (("train", args.train, args.seed), ("test", args.test, args.seed + 1_000_003)):
            observations, positions, truth = record(rows, seed)
            prior = SampledBeliefs(args.worlds, seed).probs(observations, positions)
            data[part] = observations, positions, truth, prior
        seconds = time.monotonic() - started
        print(f"[beliefs] recorded and sampled {args.train:,} + {args.test:,} decisions ({seconds:.0f} s)")
        observations, positions, truth, prior = data["train"]
        net, _ = fit(inputs(observations, positions, prior), prior, truth, args.hidden, args.epochs, args.seed)
        observations, positions, truth, prior = data["test"]
        trumps = trump_cards(positions, observations)
        results = {
            "sampled": quality(prior, truth, trumps),
            "network": quality(net.probs(observations, positions, prior), truth, trumps),
        }
        net.save(args.out)  # last: a stop before it writes nothing
        print(json.dumps(results, indent=1))
        return 0

    return run_fit(parser, args.out, "a belief network", [INPUT_SIZE, *args.hidden, N_CARDS * N_HOLDERS], work)


if __name__ == "__main__":
    raise SystemExit(main())
