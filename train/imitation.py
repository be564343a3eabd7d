"""Warm start: behaviour cloning of a teacher bot before self-play PPO.

PPO from scratch learns trick play slowly on two cores. The default config therefore first
records ``imitation_steps`` decisions of a teacher bot (``imitate``, e.g. "expert") playing
matches against itself on :data:`RECORD_TABLES` tables of the vector engine, every seat's
decision recorded as the policy input the learner reads (and, for a critic that sees them, the
other seats' hands), then fits the policy to the teacher's actions (cross-entropy over the
masked logits) and the value head to the discounted returns of those matches (each seat's
team's rewards, as the learner is paid in self-play), for ``imitation_epochs`` passes. PPO then
takes over from that policy. A teacher with ``act_batch`` answers for every table in one call.

The demonstrations are written into arrays allocated once for ``imitation_steps`` decisions
(the inputs as float16, the hands as packed bits), and both phases report their progress through
an optional ``report(done, total)`` callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

import agents
from agents.policy import batch_inputs, input_size
from allfours_env import N_ACTIONS
from allfours_env.arena import Arena
from allfours_env.cards import N_SEATS
from allfours_env.rewards import equity_for, points_scale, team_gain
from allfours_env.vector import OTHER_HANDS_SIZE as HIDDEN_SIZE
from allfours_env.vector import VectorGame

from train.config import TrainConfig

Report = Callable[[int, int], None]  # (done, total)
RECORD_TABLES = 64


@dataclass
class Demonstrations:
    observations: np.ndarray  # float16 [n, input size]: half the memory; inputs are 0/1 or coarse fractions
    hidden: np.ndarray | None  # uint8 [n, HIDDEN_SIZE / 8]: the other seats' hands as packed bits, for the critic
    masks: np.ndarray  # bool [n, 56]
    actions: np.ndarray  # int64 [n]
    returns: np.ndarray  # float32 [n], discounted with the PPO gamma

    def inputs(self, rows: np.ndarray) -> np.ndarray:
        """float32: what the learner's network reads at these rows (the policy input, then the hands)."""
        x = self.observations[rows].astype(np.float32)
        if self.hidden is None:
            return x
        hands = np.unpackbits(self.hidden[rows], axis=1, count=HIDDEN_SIZE).astype(np.float32)
        return np.concatenate([x, hands], axis=1)


def record(config: TrainConfig, seed: int, report: Report | None = None) -> Demonstrations:
    """Teacher-vs-teacher matches until ``imitation_steps`` decisions are recorded (the matches
    still going then are cut off: their last rows' returns miss the rest of the match), played by
    :class:`allfours_env.arena.Arena`, every decision written as it is made."""
    size = config.imitation_steps
    rng = np.random.default_rng(seed)
    game = VectorGame(RECORD_TABLES, rules=config.rules)
    batched = agents.make(config.imitate)
    if hasattr(batched, "act_batch"):
        teachers = [[batched] * N_SEATS for _ in range(RECORD_TABLES)]
    else:
        teachers = [[agents.make(config.imitate) for _ in range(N_SEATS)] for _ in range(RECORD_TABLES)]
    data = Demonstrations(
        np.empty((size, input_size(config.layout)), dtype=np.float16),
        np.empty((size, (HIDDEN_SIZE + 7) // 8), dtype=np.uint8) if config.critic_sees_hands else None,
        np.empty((size, N_ACTIONS), dtype=bool),
        np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.float32),
    )
    rewards = np.zeros(size, dtype=np.float64)  # paid to the row's team until its next decision
    next_row = np.full(size, -1, dtype=np.int64)  # the same team's next decision at the same table
    last_row = np.full((RECORD_TABLES, 2), -1, dtype=np.int64)  # each team's latest decision per table
    scale = points_scale(config.reward, game.rules.target_score)
    equity = equity_for(config.reward, game.rules)
    n = 0

    def start(which: np.ndarray) -> None:
        for t in np.flatnonzero(which):
            for teacher in teachers[t] if batched is not teachers[t][0] else ():
                teacher.reset(int(rng.integers(2**63)))
        last_row[which] = -1

    def decided(tables: np.ndarray, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> None:
        nonlocal n
        take = min(len(tables), size - n)  # the last tick records only as many tables as fit
        rows, tables = np.arange(n, n + take), tables[:take]
        seats = game.current[tables]
        data.observations[rows] = batch_inputs(config.layout, observations[:take], masks[:take])
        if data.hidden is not None:
            data.hidden[rows] = np.packbits(game.other_hands(game.current)[tables].astype(np.uint8), axis=1)
        data.masks[rows], data.actions[rows] = masks[:take], actions[:take]
        teams = seats % 2
        previous = last_row[tables, teams]
        next_row[previous[previous >= 0]] = rows[previous >= 0]
        last_row[tables, teams] = rows
        n += take

    def stepped(moved: np.ndarray, points: np.ndarray) -> None:
        gain = team_gain(points, game.winner, moved, config.reward, game.scores, equity) * scale  # team 0's; team 1's: its negative
        for team, sign in ((0, 1.0), (1, -1.0)):
            paid = last_row[:, team]
            rewards[paid[paid >= 0]] += sign * gain[paid >= 0]
        over = game.is_over & moved
        if over.any():
            start(over)
            game.restart(over)
        if report:
            report(n, size)

    game.reset(seed=int(rng.integers(2**63)))
    arena = Arena(game, teachers, on_step=stepped, on_decisions=decided)
    start(np.ones(RECORD_TABLES, dtype=bool))
    if report:
        report(n, size)  # the phase has begun (a first run then compiles the teacher, if it is numba)
    while n < size:
        arena.tick()
    returns = np.zeros(size + 1, dtype=np.float64)  # returns[-1]: nothing follows
    for row in range(size - 1, -1, -1):  # a row's next decision comes later: one backward pass
        returns[row] = rewards[row] + config.gamma * returns[next_row[row]]
    data.returns[:] = returns[:size]
    return data


def fit(policy, data: Demonstrations, config: TrainConfig, seed: int, report: Report | None = None) -> dict[str, float]:
    """Fit the actor to the teacher's actions and the critic to the returns; returns final metrics."""
    rng = np.random.default_rng(seed)
    n = len(data.actions)
    policy.set_training_mode(True)
    for group in policy.optimizer.param_groups:  # PPO resets the rate from its own schedule at each update
        group["lr"] = config.imitation_learning_rate
    metrics: dict[str, float] = {}
    for epoch in range(config.imitation_epochs):
        order = rng.permutation(n)
        losses, hits = [], 0
        for start in range(0, n, config.batch_size):
            idx = order[start : start + config.batch_size]
            obs = torch.as_tensor(data.inputs(idx))
            actions = torch.as_tensor(data.actions[idx])
            values, log_prob, _ = policy.evaluate_actions(obs, actions, action_masks=data.masks[idx])
            loss = -log_prob.mean() + config.vf_coef * F.mse_loss(values.flatten(), torch.as_tensor(data.returns[idx]))
            policy.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
            policy.optimizer.step()
            losses.append(loss.item())
            with torch.no_grad():
                dist = policy.get_distribution(obs, action_masks=data.masks[idx])
                hits += int((dist.distribution.probs.argmax(dim=1) == actions).sum())
            if report:
                report(epoch * n + start + len(idx), config.imitation_epochs * n)
        metrics = {"loss": float(np.mean(losses)), "accuracy": hits / n}
    policy.set_training_mode(False)
    return metrics
