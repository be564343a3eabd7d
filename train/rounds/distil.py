"""Fit a policy network to search's labels: the student of expert iteration.

``python -m train.distil --labels data/labels --out student.npz [--init agents/pretrained/allfours_v1.npz]``
reads one label set or several (:mod:`train.rounds.label_set`), turns each decision into the policy input of the
chosen layout (:func:`agents.policy.batch_inputs`), and fits an actor MLP by cross-entropy toward
the softmax of the searched values over the legal actions at ``temperature`` (a chance of the
match: at 0.01, an action 1% likelier to win the match weighs e times more), or, at temperature 0,
toward the action search played (the best value unless it beats the expert's by less than search's
margin). ``--loss advantage`` keeps the starting network's own policy and tilts it by the searched
values: the target is π' ∝ π_prior · exp(Â/τ) over the legal actions (advantage-weighted
regression's and MPO's operator), π_prior the policy of the network the fit starts from (``--init``'s,
or a new network's near-uniform one; with ``--prior-suits K`` that network averaged over K suit
relabellings, :mod:`agents.averaged`) at each decision, computed once before the fit and fixed, Â each
action's searched value above π_prior's mean of them, τ ``--tau`` (a chance of the match, like
``--temperature``): τ → ∞ keeps the prior, τ → 0 is search's best value. (A label holds each
action's mean over the worlds and not its spread, so no weighting by a label's standard error is
possible; ``--deviation-weight`` weighs the decisions where search left the player's choice: where
the player is search's ``keep``, those whose values ``confirm`` averaged over more worlds.)
``--input`` picks the input layout; with ``--init``, a network of a layout that the chosen one
extends is widened to it first, playing the same (:func:`agents.policy.widen`: e.g. ``--init
student_v3.npz --input history``). With ``--suit-copies K`` each decision is fitted K more times
with its suits relabelled at random (suits have no order, so a relabelled position has the same values on the relabelled
actions: free labels, the network told that suits are alike). A held-out part of the labels
(``--holdout``, each decision with its relabellings) measures each epoch: how often the student
plays search's action, and its regret, the searched value of search's best action minus that of
the student's choice. The result is an ``.npz`` policy file for ``agents.make`` (numpy at play
time).

Every option, the ``--init`` policy and the label sets (each one, complete, every shard checked
as it is read, all of one rule set: :func:`train.rounds.label_set.check_sets`) are checked before the
fit starts, and the memory the labels take against the machine's. Exit codes: 0 done; 2 a bad
option, policy file or label set (a damaged shard is named), found before any fitting; 74
(EX_IOERR) the student could not be written (a full or read-only disk: one line, no temporary
file left); 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents.averaged import RELABELLINGS, AveragedPolicy
from agents.policy import (
    ACTIVATION_KEY,
    LAYOUT_KEY,
    CheckpointError,
    PolicyBot,
    Weights,
    batch_inputs,
    hidden_layers,
    input_size,
    legal_softmax,
    load_weights,
    save_weights,
    widen,
)
from agents.shared.processes import USAGE_EXIT, WRITE_FAILED_EXIT, exit_on_stop, handle_stops, one_blas_thread
from allfours_env import N_ACTIONS
from allfours_env.observation import suit_relabelling

from train.config import (
    LABEL_BYTES,
    MAX_EPOCHS,
    MAX_LAYER,
    MAX_SEED,
    MAX_SUIT_COPIES,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    POLICY_INPUTS,
    ConfigError,
    check_needs,
    check_range,
    network_needs,
)
from train.rounds.label_set import check_sets, read_shard
from train.run_folder.outputs import check_npz_out, write_failed
from train.sparse_input import SparseInputLinear

CHUNK = 4096  # rows turned into policy inputs at a time
DEFAULT_INPUT = "advised"  # --input of a new network


BLOCK = 1 << 24  # non-zeros a block of SparseRows holds (32 MB of columns, 32 MB of values)


@dataclass
class SparseRows:
    """Rows of policy inputs kept by their non-zeros (the input is over 90% zeros: a label then
    takes about a sixth of its dense float16 bytes), values in float16 as a dense copy would be.
    The non-zeros fill blocks of ``BLOCK`` allocated as they are reached: a large label set takes
    what it fills, without reserving room for every float of every row (which a machine that
    does not overcommit memory would refuse) and without the heap fragments of many small parts."""

    row_ptr: np.ndarray  # int64 (n + 1,): row i's non-zeros are [row_ptr[i], row_ptr[i + 1])
    columns: list[np.ndarray]  # int16 blocks: non-zero k is columns[k // BLOCK][k % BLOCK]
    values: list[np.ndarray]  # float16 blocks, likewise
    width: int

    @classmethod
    def room(cls, rows: int, width: int) -> SparseRows:
        """Room for ``rows`` rows, filled by :meth:`put` in order."""
        return cls(np.zeros(rows + 1, np.int64), [], [], width)

    def put(self, row: int, dense: np.ndarray) -> None:
        """Write ``dense`` as rows ``row`` on (the rows before written already)."""
        at = int(self.row_ptr[row])
        rows, columns = np.nonzero(dense)
        self.row_ptr[row + 1 : row + 1 + len(dense)] = at + np.cumsum(np.bincount(rows, minlength=len(dense)))
        values, end = dense[rows, columns], at + len(rows)
        while len(self.columns) * BLOCK < end:
            self.columns.append(np.empty(BLOCK, np.int16))
            self.values.append(np.empty(BLOCK, np.float16))
        for block in range(at // BLOCK, (end - 1) // BLOCK + 1):  # the blocks [at, end) falls in
            lo, hi = max(at, block * BLOCK), min(end, (block + 1) * BLOCK)
            self.columns[block][lo - block * BLOCK : hi - block * BLOCK] = columns[lo - at : hi - at]
            self.values[block][lo - block * BLOCK : hi - block * BLOCK] = values[lo - at : hi - at]

    def __len__(self) -> int:
        return len(self.row_ptr) - 1

    @property
    def non_zeros(self) -> int:
        return int(self.row_ptr[-1])

    def dense(self, rows: np.ndarray) -> np.ndarray:
        """Rows ``rows`` as a float32 array."""
        order = np.argsort(rows, kind="stable")  # read in row order: each block's non-zeros are then one slice
        starts = self.row_ptr[rows[order]]
        counts = self.row_ptr[rows[order] + 1] - starts
        ends = np.cumsum(counts)
        flat = np.repeat(starts - ends + counts, counts) + np.arange(ends[-1] if len(ends) else 0)
        columns, values = np.empty(len(flat), np.int64), np.empty(len(flat), np.float32)
        bounds = np.searchsorted(flat, np.arange(len(self.columns) + 1) * BLOCK)
        for block, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            if lo < hi:
                columns[lo:hi] = self.columns[block][flat[lo:hi] - block * BLOCK]
                values[lo:hi] = self.values[block][flat[lo:hi] - block * BLOCK]
        out = np.zeros((len(rows), self.width), dtype=np.float32)
        out[np.repeat(order, counts), columns] = values
        return out


@dataclass
class Labels:
    inputs: SparseRows  # (n, input size)
    masks: np.ndarray  # bool (n, 56)
    values: np.ndarray  # float32 (n, 56), NaN where illegal
    search_actions: np.ndarray  # int64 (n,)
    player_actions: np.ndarray  # int64 (n,)
    source: np.ndarray  # int64 (n,): the labelled decision each row is, or is a suit relabelling of
    is_copy: np.ndarray  # bool (n,): a relabelling (never held out)
    log_prior: np.ndarray | None = None  # float32 (n, 56): the prior's log-probabilities, read with a prior


# Every relabelling of the suits but the identity, stacked: its observation and action gather
# indices (suit_relabelling), and each old action's id after it (the inverse of the latter).
_OBS_INDEX, _ACTION_INDEX = (
    np.stack(part) for part in zip(*(suit_relabelling(p) for p in itertools.permutations(range(4)) if p != (0, 1, 2, 3)))
)
_NEW_ACTION = np.argsort(_ACTION_INDEX, axis=1)


def averaged_prior(start: Weights, suits: int) -> AveragedPolicy | None:
    """The advantage loss's prior read with the labels: the network ``start`` averaged over
    ``suits`` relabellings (a key of RELABELLINGS); None for 1, the network as it is, whose policy
    the fit computes itself."""
    return AveragedPolicy([PolicyBot(start)], RELABELLINGS[suits]) if suits > 1 else None


def read_labels(
    folders: list[Path], layout: int, suit_copies: int = 0, seed: int = 0, prior: AveragedPolicy | None = None
) -> Labels:
    """The decisions of one label set or several, as policy inputs of ``layout``; with
    ``suit_copies``, each decision also enters that many times with its suits relabelled (a
    random relabelling per row; suits have no order, so its searched values hold there too); with
    ``prior``, its log-probabilities at every row (it reads the raw observations, which the rows
    do not keep)."""
    rng = np.random.default_rng(seed)
    sets = check_sets(folders)  # each shard read below holds the rows its set's settings say: every row is filled
    rows = (1 + suit_copies) * sum(settings.count for settings in sets)
    # Filled in place (arrays allocated once, the inputs' blocks as reached): no heap fragments as
    # a few thousand small parts leave (measured for 1.4M rows kept as parts, then joined: 1.9 GB,
    # of which 0.7 GB fragments).
    out = Labels(
        SparseRows.room(rows, input_size(layout)), np.empty((rows, N_ACTIONS), bool), np.empty((rows, N_ACTIONS), np.float32),
        np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows, bool),
        None if prior is None else np.empty((rows, N_ACTIONS), np.float32),
    )  # fmt: skip
    row = n = 0
    for shard in (read_shard(f, k, s) for f, s in zip(folders, sets, strict=True) for k in range(s.shards())):
        obs, masks, values = shard["observation"], shard["action_mask"], shard["values"]
        search, player = shard["search_action"].astype(np.int64), shard["player_action"].astype(np.int64)
        source = np.arange(n, n + len(obs))
        n += len(obs)
        versions = [(obs, masks, values, search, player, False)]
        for _ in range(suit_copies):
            which = rng.integers(len(_OBS_INDEX), size=len(obs))
            o, a, new_action = _OBS_INDEX[which], _ACTION_INDEX[which], _NEW_ACTION[which]
            versions.append((
                np.take_along_axis(obs, o, axis=1), np.take_along_axis(masks, a, axis=1),
                np.take_along_axis(values, a, axis=1), np.take_along_axis(new_action, search[:, None], axis=1)[:, 0],
                np.take_along_axis(new_action, player[:, None], axis=1)[:, 0], True,
            ))  # fmt: skip
        for v_obs, v_masks, v_values, v_search, v_player, copy in versions:
            end = row + len(v_obs)
            for i in range(0, len(v_obs), CHUNK):
                out.inputs.put(row + i, batch_inputs(layout, v_obs[i : i + CHUNK], v_masks[i : i + CHUNK]))
                if prior is not None:
                    out.log_prior[row + i : min(end, row + i + CHUNK)] = prior.log_probabilities(
                        v_obs[i : i + CHUNK], v_masks[i : i + CHUNK]
                    )
            out.masks[row:end], out.values[row:end] = v_masks, v_values
            out.search_actions[row:end], out.player_actions[row:end] = v_search, v_player
            out.source[row:end], out.is_copy[row:end] = source, copy
            row = end
    return out


class Actor(nn.Module):
    """The MLP of :class:`agents.policy.PolicyBot`, in torch for fitting."""

    def __init__(self, inputs: int, hidden: list[int], activation: str) -> None:
        super().__init__()
        sizes = [inputs, *hidden]
        # the first layer reads the mostly-zero policy input and skips its zeros (the same function)
        self.hidden = nn.ModuleList(
            (SparseInputLinear if i == 0 else nn.Linear)(a, b) for i, (a, b) in enumerate(itertools.pairwise(sizes))
        )
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
            for i, layer in [*enumerate(actor.hidden), ("_out", actor.out)]:  # w0, b0, ..., w_out, b_out
                layer.weight.copy_(torch.from_numpy(np.array(weights[f"w{i}"], dtype=np.float32).T))
                layer.bias.copy_(torch.from_numpy(np.array(weights[f"b{i}"], dtype=np.float32)))
        return actor

    def weights(self, layout: int) -> Weights:
        w: Weights = {}
        for i, layer in [*enumerate(self.hidden), ("_out", self.out)]:
            w[f"w{i}"] = layer.weight.detach().numpy().T.copy()
            w[f"b{i}"] = layer.bias.detach().numpy().copy()
        w[ACTIVATION_KEY] = np.array(self.activation_name)
        w[LAYOUT_KEY] = np.array(layout)
        return w


def evaluate(actor: Actor, labels: Labels, rows: np.ndarray) -> str:
    """How the student plays at ``rows``: how often search's action, overall and where search
    differs from the player (the decisions it would teach), and its mean regret (the best searched
    value minus that of its choice, in chance of the match)."""
    with torch.no_grad():
        logits = actor(torch.from_numpy(labels.inputs.dense(rows))).numpy()
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


def log_policy(actor: Actor, labels: Labels) -> np.ndarray:
    """``actor``'s log-probabilities (float32 (n, 56), -inf where illegal) at every row of ``labels``."""
    out = np.empty(labels.masks.shape, np.float32)
    with torch.no_grad():
        for i in range(0, len(out), CHUNK):
            rows = np.arange(i, min(i + CHUNK, len(out)))
            logits = actor(torch.from_numpy(labels.inputs.dense(rows)))
            out[rows] = torch.log_softmax(logits.masked_fill(~torch.from_numpy(labels.masks[rows]), -np.inf), 1).numpy()
    return out


def advantage_targets(values: np.ndarray, masks: np.ndarray, log_prior: np.ndarray, tau: float) -> np.ndarray:
    """π' ∝ π_prior · exp(Â/τ) on the legal actions, 0 elsewhere: Â = value - Σ π_prior · value, the
    advantage over the prior's own play. Any one number taken from every action's value of a row
    cancels in the normalisation, so the sum is computed as log π_prior + value/τ less its largest."""
    scaled = np.where(masks, log_prior + np.nan_to_num(values, nan=0.0).astype(np.float64) / tau, -np.inf)
    p = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def targets(
    labels: Labels, rows: np.ndarray, loss_kind: str, temperature: float, log_prior: np.ndarray | None = None
) -> np.ndarray:
    """What the student's outputs are fitted to at ``rows`` (made a batch at a time: labels are large);
    ``log_prior`` (every row's, :func:`log_policy`) for the advantage loss."""
    values = labels.values[rows]
    if loss_kind == "advantage":
        return advantage_targets(values, labels.masks[rows], log_prior[rows], temperature)
    if loss_kind == "logits":  # each legal action's logit regressed on its value above the legal mean, / temperature
        return np.nan_to_num((values - np.nanmean(values, axis=1, keepdims=True)) / (temperature or 0.01), nan=0.0)
    if temperature:
        return legal_softmax(values, labels.masks[rows], temperature)
    return np.eye(labels.masks.shape[1], dtype=np.float32)[labels.search_actions[rows]]  # search's own choice


def fit(
    actor: Actor, labels: Labels, temperature: float, epochs: int, lr: float, holdout: float, seed: int,
    loss_kind: str = "cross_entropy", deviation_weight: float = 1.0, batch: int = 1024, say=print,
    on_batch: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    """Fit ``actor`` to the labels (``holdout`` of the decisions held out, with their relabellings,
    to report on); ``on_batch(rows)`` after each batch: ``epochs`` times the rows not held out in all.
    ``loss_kind``: cross_entropy (toward search's action at temperature 0, else the softmax of the
    values), logits, or advantage (toward ``actor``'s own policy before the fit tilted by the values
    at ``temperature``: :func:`advantage_targets`)."""
    rng = np.random.default_rng(seed)  # (torch's global generator is the caller's: PPO's, in a training run)
    originals = np.flatnonzero(~labels.is_copy)  # the row of each labelled decision, in order
    order = rng.permutation(len(originals))
    n_test = int(len(originals) * holdout)
    held_out = np.zeros(len(originals), bool)
    held_out[order[:n_test]] = True  # a decision held out is held out with its relabellings
    test = originals[order[:n_test]]
    train = np.concatenate([originals[order[n_test:]], np.flatnonzero(labels.is_copy & ~held_out[labels.source])])
    # the decisions where search differs from the player are the ones that teach something new
    weights = np.where(labels.search_actions != labels.player_actions, deviation_weight, 1.0).astype(np.float32)
    log_prior = None  # the advantage loss's prior: read with the labels, or the start's own policy; fixed
    if loss_kind == "advantage":
        log_prior = labels.log_prior if labels.log_prior is not None else log_policy(actor, labels)
    optimizer = torch.optim.Adam(actor.parameters(), lr=lr)
    if n_test:
        say(f"before: held out: {evaluate(actor, labels, test)}")
    for epoch in range(epochs):
        start = time.monotonic()
        shuffled = rng.permutation(train)
        losses = []
        for i in range(0, len(shuffled), batch):
            idx = shuffled[i : i + batch]
            x = torch.from_numpy(labels.inputs.dense(idx))
            mask = torch.from_numpy(labels.masks[idx])
            target = torch.from_numpy(targets(labels, idx, loss_kind, temperature, log_prior))
            if loss_kind == "logits":
                out = actor(x)
                out = out - (out * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True)
                per_row = (((out - target) ** 2) * mask).sum(dim=1) / mask.sum(dim=1)
            else:
                logits = actor(x).masked_fill(~mask, -1e9)
                per_row = -(target * torch.log_softmax(logits, dim=1)).sum(dim=1)
            w = torch.from_numpy(weights[idx])
            loss = (per_row * w).sum() / w.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if on_batch:
                on_batch(len(idx))
        text = f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f}"
        if n_test:
            text += f", held out: {evaluate(actor, labels, test)}"
        say(f"{text} ({time.monotonic() - start:.0f} s)")


MAX_WEIGHT = 1e6
PRIOR_BYTES = 4 * N_ACTIONS  # a row's log-probabilities under the starting network (the advantage loss)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    handle_stops()
    torch.set_num_threads(1)
    one_blas_thread()
    try:
        try:  # every option, the policy file and the label sets, before any work
            hidden = check_options(args)
            actor, layout = _start(args, hidden)
            prior = averaged_prior(actor.weights(layout), args.prior_suits)
            labels = read_labels(args.labels, layout, args.suit_copies, args.seed, prior)
        except (ValueError, FileNotFoundError) as err:  # LabelSetError, ConfigError, CheckpointError
            parser.exit(USAGE_EXIT, f"python -m train.distil: error: {err}\n")
        copies = int(labels.is_copy.sum())
        labelled = f"{len(labels.is_copy) - copies:,} labels and {copies:,} relabellings"
        print(f"{labelled}, input layout {layout}", file=sys.stderr)
        temperature = args.tau if args.loss == "advantage" else args.temperature
        fit(
            actor, labels, temperature, args.epochs, args.lr, args.holdout, args.seed, args.loss,
            args.deviation_weight, say=lambda t: print(t, file=sys.stderr),
        )  # fmt: skip
        save_weights(actor.weights(layout), args.out)
    except OSError as err:
        print(f"python -m train.distil: {write_failed(err)}; nothing was written", file=sys.stderr)
        return WRITE_FAILED_EXIT
    except CheckpointError as err:  # the fit's weights are not finite: save_weights refuses to write them
        print(f"python -m train.distil: the fit diverged, nothing was written ({err}); try a smaller --lr",
              file=sys.stderr)  # fmt: skip
        return 1
    except (KeyboardInterrupt, SystemError) as error:
        return exit_on_stop(error, "{stop}: stopped; nothing was written")
    print(f"written: {args.out}", file=sys.stderr)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m train.distil", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--labels", required=True, type=Path, nargs="+", help="label sets' folders (python -m train.labels)"
    )
    parser.add_argument("--out", required=True, type=Path, help="the student's .npz policy file")
    parser.add_argument("--init", help="start from this policy file's actor (its layout and sizes)")
    parser.add_argument("--hidden", default="256,256", help="hidden layer sizes without --init (default 256,256)")
    parser.add_argument(
        "--input", choices=tuple(POLICY_INPUTS),
        help="the policy input: advised (with the expert's advice; the default without --init), compact "
        "(without), history (advised and the deal's public history); with --init, its network widened to it",
    )  # fmt: skip
    parser.add_argument(
        "--loss", choices=("cross_entropy", "logits", "advantage"), default="cross_entropy",
        help="cross_entropy toward the targets; logits: regress each legal logit on its value above the mean / "
        "temperature; advantage: toward the --init network's policy tilted by exp(value / tau)",
    )  # fmt: skip
    temperatures = {  # flag -> what it is (both default 0.01, in MIN_TEMPERATURE..MAX_TEMPERATURE)
        "--temperature": "of the softmax over searched values; 0: the action search played",
        "--tau": "the advantage loss's temperature, a chance of the match: an action that much better weighs e "
        "times more than the prior gives it",
    }
    bounds = f"{MIN_TEMPERATURE:g}..{MAX_TEMPERATURE:g}"
    for flag, meaning in temperatures.items():
        parser.add_argument(flag, type=float, default=0.01, help=f"{meaning} (default 0.01; {bounds})")
    parser.add_argument(
        "--prior-suits", type=int, choices=sorted(RELABELLINGS), default=1,
        help="the advantage loss's prior: the starting network averaged over this many suit relabellings "
        "(agents.averaged; 24: all, an exactly suit-blind prior; default 1: the network as it is); with a large "
        "--tau the fit distils the averaged network into one",
    )  # fmt: skip
    parser.add_argument(
        "--deviation-weight", type=float, default=1.0,
        help="weight of the decisions where search differs from the player (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--epochs", type=int, default=10, help=f"passes over the labels (default 10; at most {MAX_EPOCHS:,})"
    )
    parser.add_argument("--lr", type=float, default=3e-4, help="Adam's learning rate (default 0.0003; at most 1)")
    parser.add_argument(
        "--holdout", type=float, default=0.05, help="share of labels held out to measure, 0 <= h < 1 (default 0.05)"
    )
    parser.add_argument(
        "--suit-copies", type=int, default=0,
        help=f"each decision also enters this many times with its suits relabelled (default 0; at most "
        f"{MAX_SUIT_COPIES})",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    return parser


def check_options(args: argparse.Namespace) -> list[int]:
    """Every option's range, ``--out`` and the memory the labels and a new network take (a ValueError
    naming the bad one); the hidden layer sizes."""
    check_range("--epochs", args.epochs, 1, MAX_EPOCHS)
    check_range("--lr", args.lr, 0.0, 1.0, low_allowed=False)
    check_range("--holdout", args.holdout, 0.0, 1.0)
    if args.holdout == 1.0:
        raise ConfigError("--holdout must be below 1: a share held out leaves the rest to fit")
    if args.temperature != 0:
        check_range("--temperature", args.temperature, MIN_TEMPERATURE, MAX_TEMPERATURE)
    check_range("--tau", args.tau, MIN_TEMPERATURE, MAX_TEMPERATURE)
    check_range("--deviation-weight", args.deviation_weight, 0.0, MAX_WEIGHT, low_allowed=False)
    if args.prior_suits > 1 and args.loss != "advantage":
        raise ConfigError(f"--prior-suits {args.prior_suits} is the advantage loss's prior: give --loss advantage too")
    check_range("--suit-copies", args.suit_copies, 0, MAX_SUIT_COPIES)
    check_range("--seed", args.seed, 0, MAX_SEED)
    check_npz_out(args.out)
    hidden = _hidden_sizes(args.hidden)
    rows = sum(settings.count for settings in check_sets(args.labels)) * (1 + args.suit_copies)
    needs = {"labels (of every --labels set, times 1 + --suit-copies)": LABEL_BYTES * rows}
    if args.loss == "advantage":
        needs["the starting network's policy at every label (--loss advantage)"] = PRIOR_BYTES * rows
    if not args.init:  # (--init's network is the file's, whose size its reader checked)
        needs |= network_needs([input_size(POLICY_INPUTS[args.input or DEFAULT_INPUT]), *hidden, N_ACTIONS])
    check_needs(needs, lead="these labels and the network need")
    return hidden


def _hidden_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(
            f"--hidden must be layer sizes separated by commas, e.g. 256,256; got {text[:80]!r}"
        ) from None
    for size in sizes:
        check_range("--hidden", size, 1, MAX_LAYER)
    return sizes


def _start(args: argparse.Namespace, hidden: list[int]) -> tuple[Actor, int]:
    """The actor to fit and its input layout: ``--init``'s (widened to ``--input``'s if given), or a
    new one of ``hidden`` and ``--input``."""
    if args.init:
        weights = load_weights(args.init)
        if args.input:
            weights = widen(weights, POLICY_INPUTS[args.input])  # a ValueError if it cannot be
        return Actor.from_weights(weights), int(weights[LAYOUT_KEY])
    layout = POLICY_INPUTS[args.input or DEFAULT_INPUT]
    torch.manual_seed(args.seed)
    return Actor(input_size(layout), hidden, "relu"), layout

