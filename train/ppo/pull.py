"""The anchor: a pull toward the network PPO started from (kickstarting, Schmitt et al. 2018).

With ``student_pull`` above 0, PPO starts from the last expert-iteration student (or from
``init_policy``'s network, which then takes the student's place here) and, after each
PPO update, takes one more pass over the rollout it has just trained on, minimising
``coefficient x cross-entropy(student's policy, actor's policy)`` over the legal actions of the
learner's decisions (the KL from the student plus the student's own entropy: the same gradient).
The coefficient is ``student_pull`` throughout (``student_pull_steps`` 0, the default: an anchor the
actor leaves only where the rewards outweigh it), or falls linearly from it to 0 at
``student_pull_steps``. The student (the teacher here) is a fixed policy file, run with numpy.

The pass is alternated with PPO's rather than added to its loss, so SB3's update is unchanged; it
uses PPO's optimizer (Adam, whose state the checkpoints keep), with PPO's minibatch size and
gradient clipping, so the coefficient weighs the pull against PPO's own gradients. The student's
targets are the softmax of its logits: at PPO's first step the actor is the student and the pull
is zero. Minibatches come from a generator seeded by the run's seed and the step, so a resumed run
makes the same passes. Tensorboard: ``pull/cross_entropy``, ``pull/coefficient``.
"""

from __future__ import annotations

import numpy as np
import torch
from sb3_contrib import MaskablePPO

from agents.policy import PolicyBot, Weights, input_size, legal_softmax


class Pull:
    """The teacher and the schedule; :meth:`apply` is called after each PPO update."""

    def __init__(self, teacher: Weights, coefficient: float, steps: int, seed: int):
        self.teacher = PolicyBot(teacher, name="student")
        self.coefficient, self.steps, self.seed = coefficient, steps, seed

    def weight(self, step: int) -> float:
        """The pull's coefficient after ``step`` PPO steps."""
        return self.coefficient * (max(0.0, 1.0 - step / self.steps) if self.steps else 1.0)

    def apply(self, model: MaskablePPO) -> float | None:
        """One pass over ``model``'s last rollout; the mean cross-entropy before it (None: no pull left)."""
        weight = self.weight(model.num_timesteps)
        if weight <= 0:
            return None
        buffer = model.rollout_buffer
        observations = buffer.observations.reshape(-1, buffer.observations.shape[-1])
        masks = buffer.action_masks.reshape(len(observations), -1).astype(bool)
        inputs = observations[:, : input_size(self.teacher.layout)]  # (the critic's extra inputs follow)
        logits = self.teacher.logits(inputs.astype(np.float32))
        targets = torch.from_numpy(legal_softmax(logits, masks, temperature=1.0))
        order = np.random.default_rng([self.seed, model.num_timesteps]).permutation(len(observations))
        policy, losses = model.policy, []
        for begin in range(0, len(order), model.batch_size):
            rows = order[begin : begin + model.batch_size]
            distribution = policy.get_distribution(torch.from_numpy(observations[rows]), action_masks=masks[rows])
            log_probs = distribution.distribution.logits  # log-probabilities, illegal actions at about -1e8
            target = targets[rows]
            loss = -(target * torch.where(target > 0, log_probs, 0.0)).sum(dim=1).mean()
            policy.optimizer.zero_grad()
            (weight * loss).backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            policy.optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

