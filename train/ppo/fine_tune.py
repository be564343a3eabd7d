"""PPO that starts from a network without losing it: the critic first, then anchored steps.

Every PPO run that began from a distilled network ended below it (docs/results.md, "Fine-tuning"):
the actor was the network's, the critic random, so the first updates followed the noise of a
critic that knew nothing, with one rate for both and nothing holding the actor near its start.
:class:`FineTunePPO` is MaskablePPO with the recipe's parts, each an option of the config
(configs/default.yaml):

1. **Critic warm-up** (``critic_warmup_steps``): while it lasts, each rollout trains the critic
   alone (value loss, PPO's epochs and minibatches) and the actor stays exactly the start policy,
   which keeps playing; it ends once the critic's explained variance on fresh rollouts has not
   risen by ``WARMUP_MIN_GAIN`` for ``WARMUP_PATIENCE`` rollouts, or at the cap. Its curve is
   ``warmup.csv`` in the run folder and ``warmup/explained_variance`` in tensorboard.
2. **Anchor** (``student_pull``, :mod:`train.ppo.pull`): a cross-entropy pass toward the start policy
   after each update, constant unless ``student_pull_steps`` fades it.
3. **Separate rates** (``critic_learning_rate``): the critic's own Adam rate in its own parameter
   group, built with the policy (:class:`train.ppo.network.SharedPolicy`; 0: PPO's ``learning_rate`` for
   both, one group as SB3 builds it).
4. SB3's own ``target_kl`` (an update's epochs stop once the policy has moved that far) and
   ``normalize_advantage``, passed through from the config.
5. **The gate** (``final_gate_boards``): at the end, PPO's network plays the start on that many
   board pairs that no training or curve uses; ``final.npz`` is PPO's network only if its paired
   points a deal are above the start's with 95% confidence, else the start (``final_gate.json``
   says which and why). A run from a network so never ends below it.

Only a run that starts from a network warms its critic up (a new actor has nothing to keep).
The warm-up's state is plain data in the checkpoints (:meth:`CriticWarmup.state`), so a resumed
run goes on exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.utils import explained_variance

from agents.policy import PolicyBot, Weights
from agents.shared.atomic_file import write_text
from allfours_env.checks import count, keys, like, number

from train.ppo.network import critic_parameters
from train.ppo.pull import Pull

WARMUP_PATIENCE = 2  # rollouts without a gain before the warm-up ends
WARMUP_MIN_GAIN = 0.005  # of explained variance: a smaller rise is noise between rollouts
WARMUP_FILE = "warmup.csv"
GATE_FILE = "final_gate.json"
GATE_FIRST_BOARD = 2 * 10**9  # past every board a curve or an exploit measure plays (train.exploit: 10**9)


class CriticWarmup:
    """When the critic trains alone, and how far it has got (see the module docstring)."""

    def __init__(self, max_steps: int):
        self.max_steps = max_steps
        self.active = max_steps > 0
        self.best = -np.inf  # the best explained variance so far
        self.stale = 0  # rollouts since it last rose by WARMUP_MIN_GAIN
        self.rows: list[tuple[int, float]] = []  # (step, explained variance) of each warm-up rollout

    def record(self, step: int, variance: float) -> None:
        """A rollout's explained variance at ``step`` (PPO steps including it); ends the warm-up when due."""
        self.rows.append((step, variance))
        if variance > self.best + WARMUP_MIN_GAIN:
            self.best, self.stale = variance, 0
        else:
            self.stale += 1
        if self.stale >= WARMUP_PATIENCE or step >= self.max_steps:
            self.active = False

    def state(self) -> dict[str, Any]:
        return {"active": self.active, "best": float(self.best), "stale": self.stale, "rows": list(self.rows)}

    def set_state(self, state: dict[str, Any], step: int) -> None:
        """Continue from a :meth:`state` of a checkpoint at ``step``; a ValueError names what does not fit."""
        keys("the critic warm-up's state", state, self.state())
        if not isinstance(state["active"], bool) or (state["active"] and not self.active):
            raise ValueError("the critic warm-up's active must be true or false, and false if the run has none")
        rows = like("the critic warm-up's rows", state["rows"], [])
        for row in rows:
            if not isinstance(row, (tuple, list)) or len(row) != 2:
                raise ValueError("each critic warm-up row must be (step, explained variance)")
            count("a critic warm-up row's step", row[0], 1, step)
            number("a critic warm-up row's explained variance", row[1], -1e9, 1.0)
        best = state["best"]
        if rows and not (isinstance(best, float) and -1e9 <= best <= 1.0):  # (-inf before the first rollout)
            raise ValueError(f"the critic warm-up's best must be a number at most 1, got {best!r}")
        self.active, self.best = state["active"], best
        self.stale = count("the critic warm-up's stale", state["stale"], 0, WARMUP_PATIENCE)
        self.rows = [(int(s), float(v)) for s, v in rows]

    def note(self) -> str:
        """For the progress lines: the critic's latest explained variance while it warms up."""
        return f"  critic warming up, explained variance {self.rows[-1][1]:.3f}" if self.active and self.rows else ""


class FineTunePPO(MaskablePPO):
    """MaskablePPO with the recipe (module docstring); the critic's own rate is the policy's
    (:class:`train.ppo.network.SharedPolicy`). :attr:`pull` and :attr:`warmup` are set by the run after
    construction; neither is saved with the model (the run rebuilds them from its config and keeps
    the warm-up's state in its checkpoints)."""

    pull: Pull | None = None
    last_pull_loss: float | None = None
    warmup: CriticWarmup | None = None

    def _update_learning_rate(self, optimizers: Any) -> None:
        super()._update_learning_rate(optimizers)
        rate = getattr(self.policy, "critic_learning_rate", 0.0)  # (train/ppo/network.py's policies)
        if rate:
            self.policy.optimizer.param_groups[1]["lr"] = rate
            self.logger.record("train/critic_learning_rate", rate)

    def train(self) -> None:
        if self.warmup is not None and self.warmup.active:
            self._train_critic()
            return
        super().train()
        if self.pull is not None:
            self.last_pull_loss = self.pull.apply(self)
            if self.last_pull_loss is not None:
                self.logger.record("pull/cross_entropy", self.last_pull_loss)
                self.logger.record("pull/coefficient", self.pull.weight(self.num_timesteps))

    def _train_critic(self) -> None:
        """The warm-up's update: the value loss alone, over PPO's epochs and minibatches; the
        actor's parameters get no gradient, so the start policy is untouched."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        buffer = self.rollout_buffer
        variance = float(explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        critic = {id(p) for p in critic_parameters(self.policy)}
        losses = []
        for _ in range(self.n_epochs):
            for data in buffer.get(self.batch_size):
                values = self.policy.predict_values(data.observations).flatten()
                loss = torch.nn.functional.mse_loss(data.returns, values)
                self.policy.optimizer.zero_grad(set_to_none=True)
                (self.vf_coef * loss).backward()
                for p in self.policy.parameters():
                    if id(p) not in critic:
                        p.grad = None  # Adam skips a parameter without a gradient
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                losses.append(loss.item())
        self._n_updates += self.n_epochs
        self.warmup.record(self.num_timesteps, variance)
        self.logger.record("warmup/explained_variance", variance)
        self.logger.record("train/value_loss", float(np.mean(losses)))
        self.logger.record("train/explained_variance", variance)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "pull", "last_pull_loss", "warmup"]


def keep_the_better(
    trained: Weights, start: Weights, boards: int, rules: dict[str, Any], folder: Path, on_progress: Any = None
) -> tuple[Weights, dict[str, Any]]:
    """The gate (module docstring): ``trained`` if it beats ``start`` in paired points a deal with
    95% confidence over ``boards`` board pairs from GATE_FIRST_BOARD, else ``start``; the measure
    is written to ``folder``/GATE_FILE and returned."""
    from eval import evaluate
    from eval.stats import mean_interval

    options = {"boards": boards, "first_board": GATE_FIRST_BOARD, "rules": rules, "on_progress": on_progress}
    result = evaluate(PolicyBot(trained, name="trained"), PolicyBot(start, name="start"), **options)
    mean, low, high = mean_interval(result.board_points)
    kept = "trained" if low > 0 else "start"
    measure = {
        "boards": boards, "first_board": GATE_FIRST_BOARD, "kept": kept,
        "points_per_deal": [mean, low, high], "score": [result.win_rate, *result.win_rate_ci],
    }  # fmt: skip
    write_text(folder / GATE_FILE, json.dumps(measure, indent=2) + "\n")
    return (trained if kept == "trained" else start), measure
