"""sb3-contrib's MaskablePPO on the All Fours Gymnasium vector env, through the project's adapter.

    python examples/sb3_maskable_ppo.py [--total-steps 200000] [--num-envs 64] [--out maskable_ppo.npz]

Stable-Baselines3 steps its own ``VecEnv`` API, not Gymnasium's ``VectorEnv``:
:class:`train.ppo.learner_env.LearnerVecEnv`, the adapter ``python -m train`` uses, maps one onto the
other for an env that resets a table in the step that ends its episode
(``autoreset_mode="SameStep"``): SB3's ``dones``, the final observation in
``info["terminal_observation"]``, and ``env_method("action_masks")`` (what MaskablePPO calls). A progress line
comes every 10 seconds; the trained policy is written in the project's ``.npz`` policy format
(``--out``: ``agents.make`` and ``python -m eval`` read it) and played against ``rule_based``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

import agents
from agents.policy import PolicyBot, save_weights, weights_from_policy
from eval import evaluate
from train.ppo.learner_env import LearnerVecEnv


class Progress(BaseCallback):
    """A line every ``seconds``: steps, speed, and the learner's mean return over the episodes ended since."""

    def __init__(self, total: int, seconds: float = 10.0) -> None:
        super().__init__()
        self.total, self.seconds = total, seconds
        self.returns: list[float] = []
        self.running: np.ndarray | None = None

    def _on_training_start(self) -> None:
        self.start = self.last = time.monotonic()

    def _on_step(self) -> bool:
        rewards, dones = self.locals["rewards"], self.locals["dones"]
        self.running = rewards.copy() if self.running is None else self.running + rewards
        self.returns += self.running[dones].tolist()
        self.running[dones] = 0.0
        now = time.monotonic()
        if now - self.last >= self.seconds:
            mean = f"{np.mean(self.returns):+.2f}" if self.returns else "-"
            speed = self.num_timesteps / (now - self.start)
            print(f"step {self.num_timesteps:,}/{self.total:,}  {speed:,.0f} steps/s  "
                  f"points a match against expert (own - other) {mean} ({len(self.returns)} matches)", flush=True)  # fmt: skip
            self.last, self.returns = now, []
        return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--total-steps", type=int, default=200_000, help="learner decisions to train on")
    parser.add_argument("--num-envs", type=int, default=64, help="tables played at once against expert")
    parser.add_argument("--eval-boards", type=int, default=200, help="duplicate board pairs against rule_based at the end")
    parser.add_argument("--out", default="maskable_ppo.npz", help="the trained policy file (.npz) to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tables and of the network")
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = agents.vector_env(args.num_envs, "expert", layout=3, reward="points", autoreset_mode="SameStep")
    model = MaskablePPO("MlpPolicy", LearnerVecEnv(env, seed=args.seed), n_steps=64, batch_size=1024, seed=args.seed, verbose=0)
    model.learn(total_timesteps=args.total_steps, callback=Progress(args.total_steps))
    weights = weights_from_policy(model.policy)
    save_weights(weights, args.out)
    print(f"wrote {args.out}")
    result = evaluate(PolicyBot(weights, name="maskable_ppo"), "rule_based", boards=args.eval_boards)
    low, high = result.win_rate_ci
    print(
        f"against rule_based: match win rate {result.win_rate:.3f} [{low:.3f}, {high:.3f}] over {args.eval_boards} boards"
    )


if __name__ == "__main__":
    main()
