"""Fit a policy network to search's labels: the student of expert iteration.

``python -m train.distil --labels data/labels --out student.npz [--init agents/pretrained/allfours_v1.npz]``
reads one label set or several (:mod:`train.label_set`), turns each decision into the policy input of the
chosen layout (:func:`agents.policy.batch_inputs`), and fits an actor MLP by cross-entropy toward
the softmax of the searched values over the legal actions at ``temperature`` (a chance of the
match: at 0.01, an action 1% likelier to win the match weighs e times more), or, at temperature 0,
toward the action search played (the best value unless it beats the expert's by less than search's
margin). A held-out part of
the labels (``--holdout``) measures each epoch: how often the student plays search's action, and
its regret, the searched value of search's best action minus that of the student's choice. The
result is an ``.npz`` policy file for ``agents.make`` (numpy at play time).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents.policy import (
    ACTIVATION_KEY,
    ADVISED_LAYOUT,
    LAYOUT_KEY,
    Weights,
    batch_inputs,
    hidden_layers,
    input_size,
    load_weights,
    save_weights,
)

from .config import POLICY_INPUTS
from .label_set import iter_shards

CHUNK = 4096  # rows turned into policy inputs at a time


@dataclass
class Labels:
    inputs: np.ndarray  # float16 (n, input size)
    masks: np.ndarray  # bool (n, 56)
    values: np.ndarray  # float32 (n, 56), NaN where illegal
    search_actions: np.ndarray  # int64 (n,)
    player_actions: np.ndarray  # int64 (n,)


def read_labels(folders: list[Path], layout: int) -> Labels:
    """The decisions of one label set or several, as policy inputs of ``layout``."""
    parts: list[tuple[np.ndarray, ...]] = []
    for shard in (shard for folder in folders for shard in iter_shards(folder)):
        obs, masks = shard["observation"], shard["action_mask"]
        inputs = np.concatenate([
            batch_inputs(layout, obs[i : i + CHUNK], masks[i : i + CHUNK]).astype(np.float16) for i in range(0, len(obs), CHUNK)
        ])  # fmt: skip
        actions = shard["search_action"].astype(np.int64), shard["player_action"].astype(np.int64)
        parts.append((inputs, masks, shard["values"], *actions))
    return Labels(*(np.concatenate(column) for column in zip(*parts)))


def soft_targets(values: np.ndarray, masks: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of the legal actions' values at ``temperature``; 0 on illegal actions."""
    scaled = np.where(masks, np.nan_to_num(values, nan=0.0) / temperature, -np.inf)
    scaled -= scaled.max(axis=1, keepdims=True)
    p = np.exp(scaled)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


class Actor(nn.Module):
    """The MLP of :class:`agents.policy.PolicyBot`, in torch for fitting."""

    def __init__(self, inputs: int, hidden: list[int], activation: str) -> None:
        super().__init__()
        sizes = [inputs, *hidden]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.out = nn.Linear(sizes[-1], 56)
        self.activation_name = activation
        self.activation = nn.ReLU() if activation == "relu" else nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            x = self.activation(layer(x))
        return self.out(x)

    @classmethod
    def from_weights(cls, weights: Weights) -> Actor:
        hidden = [int(weights[f"b{i}"].shape[0]) for i in range(hidden_layers(weights))]
        with torch.random.fork_rng(devices=[]):  # the random init is overwritten: torch's generator stays the caller's
            actor = cls(int(weights["w0"].shape[0]), hidden, str(weights[ACTIVATION_KEY]))
        with torch.no_grad():
            for i, layer in enumerate(actor.hidden):
                layer.weight.copy_(torch.from_numpy(np.array(weights[f"w{i}"], dtype=np.float32).T))
                layer.bias.copy_(torch.from_numpy(np.array(weights[f"b{i}"], dtype=np.float32)))
            actor.out.weight.copy_(torch.from_numpy(np.array(weights["w_out"], dtype=np.float32).T))
            actor.out.bias.copy_(torch.from_numpy(np.array(weights["b_out"], dtype=np.float32)))
        return actor

    def weights(self, layout: int) -> Weights:
        w: Weights = {}
        for i, layer in enumerate(self.hidden):
            w[f"w{i}"] = layer.weight.detach().numpy().T.copy()
            w[f"b{i}"] = layer.bias.detach().numpy().copy()
        w["w_out"] = self.out.weight.detach().numpy().T.copy()
        w["b_out"] = self.out.bias.detach().numpy().copy()
        w[ACTIVATION_KEY] = np.array(self.activation_name)
        w[LAYOUT_KEY] = np.array(layout)
        return w


def evaluate(actor: Actor, labels: Labels, rows: np.ndarray) -> str:
    """How the student plays at ``rows``: how often search's action, overall and where search
    differs from the player (the decisions it would teach), and its mean regret (the best searched
    value minus that of its choice, in chance of the match)."""
    with torch.no_grad():
        logits = actor(torch.from_numpy(labels.inputs[rows].astype(np.float32))).numpy()
    choice = np.where(labels.masks[rows], logits, -np.inf).argmax(axis=1)
    values = np.nan_to_num(labels.values[rows], nan=-np.inf)
    regret = values.max(axis=1) - values[np.arange(len(rows)), choice]
    search = labels.search_actions[rows]
    differs = search != labels.player_actions[rows]
    where = f"{(choice == search)[differs].mean():.3f}" if differs.any() else "none"
    return (
        f"plays search's action {(choice == search).mean():.3f} ({where} where it differs from the player's), "
        f"regret {regret.mean():.4f}"
    )


def fit(
    actor: Actor, labels: Labels, temperature: float, epochs: int, lr: float, holdout: float, seed: int,
    loss_kind: str = "cross_entropy", deviation_weight: float = 1.0, batch: int = 1024, say=print,
) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)  # (torch's global generator is the caller's: PPO's, in a training run)
    n = len(labels.search_actions)
    order = rng.permutation(n)
    n_test = int(n * holdout)
    test, train = order[:n_test], order[n_test:]
    if loss_kind == "logits":  # each legal action's logit regressed on its value above the legal mean, / temperature
        legal_mean = np.nanmean(labels.values, axis=1, keepdims=True)
        targets = np.nan_to_num((labels.values - legal_mean) / (temperature or 0.01), nan=0.0).astype(np.float32)
    elif temperature:
        targets = soft_targets(labels.values, labels.masks, temperature)
    else:  # search's own choice, its margin toward the expert kept
        targets = np.eye(labels.masks.shape[1], dtype=np.float32)[labels.search_actions]
    # the decisions where search differs from the player are the ones that teach something new
    weights = np.where(labels.search_actions != labels.player_actions, deviation_weight, 1.0).astype(np.float32)
    optimizer = torch.optim.Adam(actor.parameters(), lr=lr)
    if n_test:
        say(f"before: held out: {evaluate(actor, labels, test)}")
    for epoch in range(epochs):
        start = time.monotonic()
        shuffled = rng.permutation(train)
        losses = []
        for i in range(0, len(shuffled), batch):
            idx = shuffled[i : i + batch]
            x = torch.from_numpy(labels.inputs[idx].astype(np.float32))
            mask = torch.from_numpy(labels.masks[idx])
            if loss_kind == "logits":
                out = actor(x)
                out = out - (out * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
                per_row = (((out - torch.from_numpy(targets[idx])) ** 2) * mask).sum(dim=1) / mask.sum(dim=1)
            else:
                logits = actor(x).masked_fill(~mask, -1e9)
                per_row = -(torch.from_numpy(targets[idx]) * torch.log_softmax(logits, dim=1)).sum(dim=1)
            w = torch.from_numpy(weights[idx])
            loss = (per_row * w).sum() / w.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        text = f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f}"
        if n_test:
            text += f", held out: {evaluate(actor, labels, test)}"
        say(f"{text} ({time.monotonic() - start:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.distil", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--labels", required=True, type=Path, nargs="+", help="label sets' folders (python -m train.labels)"
    )
    parser.add_argument("--out", required=True, type=Path, help="the student's .npz policy file")
    parser.add_argument("--init", help="start from this policy file's actor (its layout and sizes)")
    parser.add_argument("--hidden", default="256,256", help="hidden layer sizes without --init (default 256,256)")
    parser.add_argument(
        "--input", choices=tuple(POLICY_INPUTS), default="advised",
        help="the policy input without --init: advised (with the expert's advice) or compact (without)",
    )  # fmt: skip
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.01,
        help="of the softmax over searched values (default 0.01); 0: the action search played",
    )
    parser.add_argument(
        "--loss", choices=("cross_entropy", "logits"), default="cross_entropy",
        help="cross_entropy toward the targets, or logits: regress each legal logit on its value above the mean / temperature",
    )  # fmt: skip
    parser.add_argument(
        "--deviation-weight", type=float, default=1.0,
        help="weight of the decisions where search differs from the player (default 1)",
    )  # fmt: skip
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument(
        "--holdout", type=float, default=0.05, help="share of labels held out to measure (default 0.05)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.init:
        weights = load_weights(args.init)
        layout = int(weights.get(LAYOUT_KEY, ADVISED_LAYOUT))
        actor = Actor.from_weights(weights)
    else:
        layout = POLICY_INPUTS[args.input]
        torch.manual_seed(args.seed)
        actor = Actor(input_size(layout), [int(h) for h in args.hidden.split(",")], "relu")
    labels = read_labels(args.labels, layout)
    print(f"{len(labels.search_actions):,} labels, input layout {layout}", file=sys.stderr)
    fit(
        actor, labels, args.temperature, args.epochs, args.lr, args.holdout, args.seed, args.loss, args.deviation_weight,
        say=lambda t: print(t, file=sys.stderr),
    )  # fmt: skip
    save_weights(actor.weights(layout), args.out)
    print(f"written: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
