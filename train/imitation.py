"""Warm start: behaviour cloning of a teacher bot before self-play PPO.

PPO from scratch learns trick play slowly on two cores. The default config therefore first
records ``imitation_steps`` decisions of a teacher bot (``imitate``, e.g. "expert") playing
matches against itself through the same team view the learner uses, then fits the policy to the
teacher's actions (cross-entropy over the masked logits) and the value head to the discounted
returns of those matches, for ``imitation_epochs`` passes. PPO then takes over from that policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

import agents
from allfours_env import OBS_SIZE

from .config import TrainConfig
from .team_env import TeamEnv


@dataclass
class Demonstrations:
    observations: np.ndarray  # float32 [n, OBS_SIZE]
    masks: np.ndarray  # bool [n, 56]
    actions: np.ndarray  # int64 [n]
    returns: np.ndarray  # float32 [n], discounted with the PPO gamma


def record(config: TrainConfig, seed: int) -> Demonstrations:
    """Play teacher-vs-teacher matches until ``imitation_steps`` learner decisions are recorded."""
    teacher = agents.make(config.imitate)
    env = TeamEnv(lambda rng: agents.make(config.imitate), config.rules, config.reward)
    rng = np.random.default_rng(seed)
    obs_list, mask_list, action_list, return_list = [], [], [], []
    while len(action_list) < config.imitation_steps:
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        teacher.reset(int(rng.integers(2**31)))
        rewards = []
        done = False
        while not done:
            mask = env.action_masks().astype(bool)
            action = teacher.act({"observation": obs[:OBS_SIZE], "action_mask": mask.astype(np.int8)})
            obs_list.append(obs)
            mask_list.append(mask)
            action_list.append(action)
            obs, reward, done, _, _ = env.step(action)
            rewards.append(reward)
        ret = 0.0
        returns = []
        for r in reversed(rewards):
            ret = r + config.gamma * ret
            returns.append(ret)
        return_list.extend(reversed(returns))
    return Demonstrations(
        np.asarray(obs_list, dtype=np.float32),
        np.asarray(mask_list, dtype=bool),
        np.asarray(action_list, dtype=np.int64),
        np.asarray(return_list, dtype=np.float32),
    )


def fit(policy, data: Demonstrations, config: TrainConfig, seed: int) -> dict[str, float]:
    """Fit the actor to the teacher's actions and the critic to the returns; returns final metrics."""
    rng = np.random.default_rng(seed)
    n = len(data.actions)
    policy.set_training_mode(True)
    for group in policy.optimizer.param_groups:  # PPO resets the rate from its own schedule at each update
        group["lr"] = config.imitation_learning_rate
    metrics: dict[str, float] = {}
    for _ in range(config.imitation_epochs):
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
        metrics = {"loss": float(np.mean(losses)), "accuracy": hits / n}
    policy.set_training_mode(False)
    return metrics
