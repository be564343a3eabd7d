"""Warm start: behaviour cloning of a teacher bot before self-play PPO.

PPO from scratch learns trick play slowly on two cores. The default config therefore first
records ``imitation_steps`` decisions of a teacher bot (``imitate``, e.g. "expert") playing
matches against itself through the same team view the learner uses, then fits the policy to the
teacher's actions (cross-entropy over the masked logits) and the value head to the discounted
returns of those matches, for ``imitation_epochs`` passes. PPO then takes over from that policy.

The demonstrations are written into arrays allocated once for ``imitation_steps`` decisions (and
grown only for the last match's overshoot), not gathered as lists of arrays, and both phases
report their progress through an optional ``report(done, total)`` callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

import agents
from allfours_env import N_ACTIONS, OBS_SIZE

from .config import TrainConfig
from .team_env import TeamEnv

Report = Callable[[int, int], None]  # (done, total)
OVERSHOOT_ROWS = 1024  # room added when the last match runs past imitation_steps (more than a match's decisions)


@dataclass
class Demonstrations:
    observations: np.ndarray  # float32 [n, OBS_SIZE]
    masks: np.ndarray  # bool [n, 56]
    actions: np.ndarray  # int64 [n]
    returns: np.ndarray  # float32 [n], discounted with the PPO gamma


def record(config: TrainConfig, seed: int, report: Report | None = None) -> Demonstrations:
    """Play teacher-vs-teacher matches until ``imitation_steps`` learner decisions are recorded."""
    teacher = agents.make(config.imitate)
    env = TeamEnv(lambda rng: agents.make(config.imitate), config.rules, config.reward)
    rng = np.random.default_rng(seed)
    data = _allocate(config.imitation_steps, env.observation_space.shape[0])
    n = 0
    while n < config.imitation_steps:
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        teacher.reset(int(rng.integers(2**31)))
        rewards: list[float] = []
        done = False
        while not done:
            if n == len(data.actions):  # the last match runs past the planned size
                data = _allocate(n + OVERSHOOT_ROWS, obs.shape[0], data)
            mask = env.action_masks().astype(bool)
            action = teacher.act({"observation": obs[:OBS_SIZE], "action_mask": mask.astype(np.int8)})
            data.observations[n], data.masks[n], data.actions[n] = obs, mask, action
            obs, reward, done, _, _ = env.step(action)
            rewards.append(reward)
            n += 1
        ret = 0.0
        for i, reward in zip(range(n - 1, -1, -1), reversed(rewards)):
            ret = reward + config.gamma * ret
            data.returns[i] = ret
        if report:
            report(min(n, config.imitation_steps), config.imitation_steps)
    return Demonstrations(data.observations[:n], data.masks[:n], data.actions[:n], data.returns[:n])


def _allocate(size: int, width: int, old: Demonstrations | None = None) -> Demonstrations:
    """Arrays for ``size`` decisions, holding a copy of ``old``'s if given."""
    new = Demonstrations(
        np.empty((size, width), dtype=np.float32),
        np.empty((size, N_ACTIONS), dtype=bool),
        np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.float32),
    )
    if old is not None:
        k = len(old.actions)
        new.observations[:k], new.masks[:k], new.actions[:k], new.returns[:k] = (
            old.observations, old.masks, old.actions, old.returns,
        )
    return new


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
            obs = torch.as_tensor(data.observations[idx])
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
