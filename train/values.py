"""Fit a value network (:mod:`agents.values`) to the outcome of deals played out by ``expert``.

    python -m train.values --out agents/pretrained/value_v1.npz

The simulator knows every hand, so the labels are free: ``expert`` plays single deals against
itself on the vector engine (deal episodes, each from a score drawn uniformly below the target and
a random dealer, so that the match's stakes vary), and at the end of every trick but the deal's last
the seat to act's observation and the other hands are kept with the outcome: whether that seat's
team wins the match once the deal is over (search's :func:`agents.search.match_value`: 1 or 0
where the deal ends the match, else the match model's chance from the final score). A ReLU
network (torch) is fitted to them by cross-entropy (Adam, its rate falling linearly to 0); a
tenth of the deals is held out, and the epoch with the least held-out squared error is kept.
The last line gives that error beside the mean outcome's (what the network explains) and the
file written. The default, 200,000 deals (1.1M trick ends), took 4 min 24 s and 6.3 GB here.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from agents.expert import expert_actions
from agents.search import match_value
from agents.shared.options import count
from agents.shared.processes import one_blas_thread
from agents.values import INPUTS, save_value
from allfours_env.actions import PLAY
from allfours_env.rules import Rules
from allfours_env.vector import VectorGame
from allfours_env.vector_kernels import PHASE, TRICK_LEN, TRICKS_PLAYED

from .cli import run_fit

TABLES = 512
LEARNING_RATE = 1e-3  # Adam's, falling linearly to 0 over the fit
BATCH = 512


def record(deals: int, seed: int, rules: Rules | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trick ends of ``deals`` deals of expert self-play: inputs (observation and other hands, in
    float16 to halve the memory: the flags exact, the few fractions to three digits), the outcome
    for the seat to act's team (0..1), and each row's deal number."""
    rules = rules or Rules()
    rng = np.random.default_rng(seed)
    xs, outcomes, deal_ids = [], [], []
    for first in range(0, deals, TABLES):
        n = min(TABLES, deals - first)
        game = VectorGame(n, episode="deal", **dataclasses.asdict(rules))
        starts = [
            {"scores": [int(a), int(b)], "dealer": int(d)}
            for a, b, d in zip(*rng.integers(0, rules.target_score, (2, n)), rng.integers(0, 4, n))
        ]
        game.reset(seed=int(rng.integers(2**32)), options=starts)
        rows, tables, teams = [], [], []
        while not game.is_over.all():
            st = game.kernel_state()[0]
            ends = np.flatnonzero(
                ~game.is_over & (st[:, PHASE] == PLAY) & (st[:, TRICK_LEN] == 0) & (st[:, TRICKS_PLAYED] > 0)
            )
            if len(ends):
                seats = np.maximum(game.current, 0)
                x = np.concatenate([game.observe(tables=ends), game.other_hands(seats)[ends]], axis=1)
                rows.append(x.astype(np.float16))
                tables.append(ends)
                teams.append(seats[ends] % 2)
            live = ~game.is_over
            actions = np.zeros(n, dtype=np.int64)
            actions[live] = expert_actions(game.observe(tables=np.flatnonzero(live)), game.legal_mask()[live])
            game.step(actions)
        if not rows:
            continue
        team0 = match_value(game.scores, game.winner, rules)
        tables_, teams_ = np.concatenate(tables), np.concatenate(teams)
        xs.append(np.concatenate(rows))
        outcomes.append(np.where(teams_ == 0, team0[tables_], 1.0 - team0[tables_]))
        deal_ids.append(first + tables_)
    return np.concatenate(xs), np.concatenate(outcomes).astype(np.float32), np.concatenate(deal_ids)


def fit(
    x: np.ndarray, y: np.ndarray, deal: np.ndarray, hidden: list[int], epochs: int, seed: int
) -> tuple[dict[str, np.ndarray], float, float]:
    """The network fitted to ``(x, y)`` by cross-entropy, the deals with ``deal % 10 == 0`` held
    out (whole deals: their trick ends are alike); the best epoch's. Returns it, its held-out mean
    squared error and that of the training mean. The weights are a value file's
    (:func:`agents.values.save_value`)."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    one_blas_thread()
    sizes = [x.shape[1], *hidden, 1]
    layers: list[torch.nn.Module] = []
    for k in range(len(sizes) - 1):
        layers += [torch.nn.Linear(sizes[k], sizes[k + 1]), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    optimiser = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE)
    batches = -(-int((deal % 10 != 0).sum()) // BATCH)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 1.0 - step / (epochs * batches))
    held = deal % 10 == 0
    train_x, train_y = torch.from_numpy(x[~held]), torch.from_numpy(y[~held])
    check_x, check_y = torch.from_numpy(x[held]), torch.from_numpy(y[held])
    baseline = float(((check_y - train_y.mean()) ** 2).mean())
    generator = torch.Generator().manual_seed(seed)
    best: tuple[float, list[np.ndarray]] = (np.inf, [])
    for epoch in range(epochs):
        started = time.monotonic()
        for batch in torch.randperm(len(train_x), generator=generator).split(BATCH):
            logits = net(train_x[batch].float())[:, 0]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, train_y[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
        with torch.no_grad():
            error = float(((torch.sigmoid(net(check_x.float())[:, 0]) - check_y) ** 2).mean())
        print(f"[values] epoch {epoch + 1}/{epochs}: held-out squared error {error:.4f} (the mean's {baseline:.4f}; "
              f"{time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip
        if error < best[0]:
            best = (error, [p.detach().numpy().copy() for p in net.parameters()])
    error, parameters = best
    weights = {}
    for k, name in enumerate([*range(len(hidden)), "_out"]):
        weights[f"w{name}"] = parameters[2 * k].T.astype(np.float32).copy()
        weights[f"b{name}"] = parameters[2 * k + 1].astype(np.float32)
    return weights, error, baseline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.values", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--deals", type=count(10, 10**8), default=200_000, help="deals of expert self-play (a tenth held out)"
    )
    parser.add_argument("--epochs", type=count(1, 10_000), default=12)
    parser.add_argument("--hidden", type=count(1, 65_536), nargs="+", default=[256, 256], help="hidden layers' widths")
    parser.add_argument("--seed", type=count(0, 2**63 - 1), default=0)
    parser.add_argument("--out", type=Path, required=True, help="the value file (.npz)")
    args = parser.parse_args(argv)

    def work() -> int:
        started = time.monotonic()
        x, y, deal = record(args.deals, args.seed)
        seconds = time.monotonic() - started
        print(f"[values] {len(x):,} trick ends of {args.deals:,} deals ({seconds:.0f} s)", flush=True)
        weights, error, baseline = fit(x, y, deal, args.hidden, args.epochs, args.seed)
        save_value(weights, args.out)
        print(f"[values] held-out squared error {error:.4f} against the mean's {baseline:.4f}: {args.out}")
        return 0

    return run_fit(parser, args.out, "a value file", [INPUTS, *args.hidden, 1], work)


if __name__ == "__main__":
    raise SystemExit(main())
