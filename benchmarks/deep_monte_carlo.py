"""Deep Monte Carlo from scratch beside PPO's reference curve (issue 59): the measurement, not a product path.

    python benchmarks/deep_monte_carlo.py --out runs/dmc [--steps 10000000] [--resume]

DouZero's method (Zha et al., ICML 2021): a network Q(s, .) with one output per action, fitted by
mean squared error to the Monte Carlo return of the action taken (no critic, no bootstrap), acting
epsilon-greedily. Everything else is ``configs/scratch_long.yaml``'s PPO run, so that the two curves
compare: the same vector env (256 tables, the advised input, rewards in points over the target
score), the return of a decision is the rest of its deal's rewards (``horizon: deal``, gamma 1), the
same league (``self`` 0.3, ``snapshot`` 0.2, ``expert`` 0.4, ``rule_based`` 0.1, a snapshot every
1M steps, 10 kept; the network opponents play its greedy choice), the same MLP (256, 256, ReLU)
and the same curve: every ``--eval-every`` steps (and at 0), the greedy network against ``random``,
``rule_based`` and ``expert`` on board pairs 0 to ``--eval-boards`` - 1.

The decisions of each deal wait until it ends; then each gets its return and joins the batch.
Every ``--batch`` finished decisions make ``--epochs`` passes of minibatches of ``--minibatch``
(Adam, ``--lr``), each decision used in them only: the data is always the current policy's.

The folder ``--out`` holds ``curve.csv`` (steps, minutes, CPU seconds of this process, opponent,
win rate and its 95% interval, points a deal), ``q.npz`` (the Q network, agents.policy's format:
its argmax is the policy) and ``policy.npz`` (the same scaled by 1 / ``TAU``, whose masked softmax
is nearly greedy: a policy file any command plays), both written at every evaluation. ``--resume``
goes on from ``q.npz`` and the curve's last step in a new leg: new tables, a fresh optimiser and
league (not a bit-exact continuation, as ``python -m train --resume`` is).
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

import agents
from agents.policy import ADVISED_LAYOUT, PolicyBot, input_size, load_weights, save_weights
from agents.shared.atomic_file import write_text
from agents.shared.options import count, number, run_script
from agents.shared.processes import one_blas_thread
from allfours_env.gym_vector import NEW_DEAL_KEY, TARGET_SCALE
from eval import evaluate
from train.ppo.league import League
from train.rounds.distil import Actor

OPPONENTS = {"self": 0.3, "snapshot": 0.2, "expert": 0.4, "rule_based": 0.1}  # configs/default.yaml's league
CURVE_BOTS = ("random", "rule_based", "expert")
CURVE_COLUMNS = ("steps", "minutes", "cpu_seconds", "opponent", "win_rate", "win_low", "win_high", "points_per_deal")
TAU = 1e-3  # policy.npz: Q / TAU; a return 0.01 better (0.14 points) is e**10 times likelier


def policy_weights(actor: Actor) -> dict[str, np.ndarray]:
    """The Q network as a policy file that plays (almost) its argmax when sampled."""
    weights = actor.weights(ADVISED_LAYOUT)
    weights["w_out"], weights["b_out"] = weights["w_out"] / TAU, weights["b_out"] / TAU
    return weights


class DealReturns:
    """Each table's decisions of the deal in play, given their returns when the deal ends."""

    def __init__(self, tables: int):
        self.pending: list[list[tuple[np.ndarray, int, float]]] = [[] for _ in range(tables)]
        self.paid = np.zeros(tables)  # each table's rewards since its deal began
        self.inputs: list[np.ndarray] = []
        self.actions: list[int] = []
        self.returns: list[float] = []

    def decided(self, inputs: np.ndarray, actions: np.ndarray) -> None:
        for t, (x, a) in enumerate(zip(inputs, actions)):
            self.pending[t].append((x, int(a), self.paid[t]))

    def paid_out(self, rewards: np.ndarray, ended: np.ndarray) -> None:
        """``rewards`` for the decisions just taken; ``ended``: tables whose deal (or match) ended with them."""
        self.paid += rewards
        for t in np.flatnonzero(ended):
            for x, a, before in self.pending[t]:
                self.inputs.append(x)
                self.actions.append(a)
                self.returns.append(self.paid[t] - before)
            self.pending[t], self.paid[t] = [], 0.0

    def take(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        batch = (torch.from_numpy(np.stack(self.inputs)), torch.tensor(self.actions),
                 torch.tensor(self.returns, dtype=torch.float32))  # fmt: skip
        self.inputs, self.actions, self.returns = [], [], []
        return batch


def fit(actor: Actor, optimiser: torch.optim.Optimizer, batch: tuple, args: argparse.Namespace, seed: int) -> float:
    """Passes of minibatches over ``batch``: Q(s, a) toward the return; the last minibatch's loss."""
    inputs, actions, returns = batch
    generator = torch.Generator().manual_seed(seed)
    loss = torch.zeros(())
    for _ in range(args.epochs):
        for rows in torch.randperm(len(returns), generator=generator).split(args.minibatch):
            q = actor(inputs[rows]).gather(1, actions[rows, None]).squeeze(1)
            loss = torch.nn.functional.mse_loss(q, returns[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return loss.item()


def evaluate_curve(actor: Actor, steps: int, clock: Callable[[], tuple[float, float]], args: argparse.Namespace) -> str:
    """The curve's rows at ``steps`` written, and the networks; ``clock``: the run's minutes and CPU seconds."""
    bot = PolicyBot(actor.weights(ADVISED_LAYOUT), name="dmc")
    rows, notes = [], []
    for name in CURVE_BOTS:
        result = evaluate(bot, name, boards=args.eval_boards)
        low, high = result.win_rate_ci
        rows.append((steps, *clock(), name, result.win_rate, low, high, result.point_diff_per_deal))
        notes.append(f"vs {name} {result.win_rate:.3f} [{low:.3f}, {high:.3f}] {result.point_diff_per_deal:+.3f}")
    out = args.out
    curve = out / "curve.csv"
    old = curve.read_text() if curve.exists() else ",".join(CURVE_COLUMNS) + "\n"
    write_text(curve, old + "".join(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row) + "\n"
                                    for row in rows))  # fmt: skip
    save_weights(actor.weights(ADVISED_LAYOUT), out / "q.npz")
    save_weights(policy_weights(actor), out / "policy.npz")
    return "  ".join(notes)


def train(args: argparse.Namespace) -> None:
    one_blas_thread()
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    steps, minutes, cpu = 0, 0.0, 0.0
    if args.resume:  # the curve's last row: its steps, minutes and CPU seconds go on
        with open(args.out / "curve.csv", newline="") as f:
            last = list(csv.DictReader(f))[-1]
        steps, minutes, cpu = int(last["steps"]), float(last["minutes"]), float(last["cpu_seconds"])
        actor = Actor.from_weights(load_weights(args.out / "q.npz"))
    else:
        actor = Actor(input_size(ADVISED_LAYOUT), [256, 256], "relu")
    optimiser = torch.optim.Adam(actor.parameters(), lr=args.lr)
    league = League(OPPONENTS, max_snapshots=10, seed=args.seed + steps)
    league.update(policy_weights(actor), snapshot=bool(steps))
    env = agents.vector_env(
        args.tables, league, layout=ADVISED_LAYOUT, reward="points", reward_scale=TARGET_SCALE,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )  # fmt: skip
    inputs, info = env.reset(seed=args.seed + steps)
    rng = np.random.default_rng(args.seed + steps)
    deals = DealReturns(args.tables)
    leg_start, cpu_before = time.monotonic(), cpu - time.process_time()

    def clock() -> tuple[float, float]:
        return minutes + (time.monotonic() - leg_start) / 60, cpu_before + time.process_time()

    next_eval = steps + args.eval_every if args.resume else 0
    next_snapshot, loss = steps + args.snapshot_every, float("nan")
    while True:
        if steps >= next_eval:
            print(f"[dmc] step {steps:,}  loss {loss:.5f}  {evaluate_curve(actor, steps, clock, args)}",
                  flush=True)  # fmt: skip
            next_eval += args.eval_every
        if steps >= args.steps:
            return
        masks = info["action_mask"].astype(bool)
        with torch.no_grad():
            q = actor(torch.from_numpy(inputs)).numpy()
        actions = np.where(masks, q, -np.inf).argmax(axis=1)
        explore = rng.random(args.tables) < args.epsilon
        if explore.any():  # a uniform legal action
            uniform = np.where(masks[explore], rng.random((int(explore.sum()), masks.shape[1])), -1.0)
            actions[explore] = uniform.argmax(axis=1)
        deals.decided(inputs.copy(), actions)  # (the env writes the next inputs in place)
        inputs, rewards, terminated, truncated, info = env.step(actions)
        deals.paid_out(rewards, terminated | truncated | info[NEW_DEAL_KEY])
        steps += args.tables
        if len(deals.returns) >= args.batch:
            loss = fit(actor, optimiser, deals.take(), args, args.seed + steps)
            league.update(policy_weights(actor), snapshot=steps >= next_snapshot)
            if steps >= next_snapshot:
                next_snapshot += args.snapshot_every


def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks/deep_monte_carlo.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the run's folder")
    parser.add_argument("--resume", action="store_true", help="go on from the folder's q.npz and curve")
    parser.add_argument("--steps", type=count(1, 10**12), default=10_000_000, help="learner decisions in all")
    parser.add_argument("--tables", type=count(1, 2**16), default=256)
    parser.add_argument("--epsilon", type=number(0.0, 1.0), default=0.01, help="share of uniform legal actions")
    parser.add_argument("--lr", type=number(1e-8, 1.0), default=3e-4)
    parser.add_argument("--batch", type=count(1, 2**24), default=16384, help="finished decisions a fit takes")
    parser.add_argument("--minibatch", type=count(1, 2**24), default=1024)
    parser.add_argument("--epochs", type=count(1, 100), default=1)
    parser.add_argument("--snapshot-every", type=count(1, 10**12), default=1_000_000)
    parser.add_argument("--eval-every", type=count(1, 10**12), default=1_000_000)
    parser.add_argument("--eval-boards", type=count(1, 100_000), default=500)
    parser.add_argument("--seed", type=count(0, 2**32 - 1), default=0)
    args = parser.parse_args()
    if args.resume and not (args.out / "q.npz").exists():
        parser.error(f"--resume: {args.out} holds no q.npz to go on from")
    train(args)


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/deep_monte_carlo.py"))
