"""Masked PPO on the All Fours Gymnasium vector env, in one file (CleanRL style, torch only).

    python examples/ppo_masked.py                                  # about 11 minutes on 2 cores
    python examples/ppo_masked.py --total-steps 20000 --eval-boards 20   # a smoke run

Bring your own algorithm: this file uses only the public env API. ``agents.vector_env`` gives
``n_envs`` tables where the learner plays one team against ``opponents`` (they answer inside
``step``); observations are the policy input ``policy_input`` names (advised: the compact input
and the expert's advice, what the shipped policies read, input layout 3; compact: without the
advice, layout 2), ``info["action_mask"]`` the legal actions. The env resets a table in the
step that ends its episode (a deal, or a match with ``--horizon match``;
``autoreset_mode="SameStep"``), so every transition in the rollout is a real one; an episode
never truncates, so no final observation is bootstrapped. The options carry the names of
``python -m train``'s (configs/default.yaml).

At the end the actor is written as a policy file (``--out``, the plain-array ``.npz`` that
``agents.make`` loads) and played against ``random`` and ``rule_based`` over duplicate boards
(``eval.evaluate``); ``python -m eval <out> rule_based --boards 2000`` measures it further.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

import agents
from agents.policy import ACTIVATION_KEY, LAYOUT_KEY, POLICY_INPUTS, PolicyBot, save_weights
from eval import evaluate


@dataclass
class Args:
    seed: int = 0
    total_steps: int = 3_000_000  # learner decisions, all tables together
    n_envs: int = 128
    n_steps: int = 64  # decisions per table in one rollout: a rollout is n_envs x n_steps
    opponents: str = "rule_based"  # the learner's opponents (a bot name); "expert" answers faster
    policy_input: str = "advised"  # or "compact"
    horizon: str = "deal"  # an episode (the critic's horizon) ends with each deal; or "match"
    reward_scale: float = 1 / 14  # points rewards over the target score
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    batch_size: int = 1024  # a minibatch of the update
    n_epochs: int = 4
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    net_arch: list[int] = field(default_factory=lambda: [256, 256])  # hidden layers of the actor and the critic
    eval_boards: int = 500
    out: str = "runs/ppo_masked/policy.npz"


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for option in dataclasses.fields(Args):
        flag = f"--{option.name.replace('_', '-')}"
        if option.name == "net_arch":
            parser.add_argument(flag, type=int, nargs="+", default=option.default_factory())
        elif option.name == "policy_input":
            parser.add_argument(flag, choices=sorted(POLICY_INPUTS), default=option.default)
        else:
            parser.add_argument(flag, type=type(option.default), default=option.default)
    return Args(**vars(parser.parse_args()))


def mlp(inputs: int, hidden: list[int], outputs: int, out_std: float) -> nn.Sequential:
    def layer(a: int, b: int, std: float) -> nn.Linear:
        linear = nn.Linear(a, b)
        nn.init.orthogonal_(linear.weight, std)
        nn.init.zeros_(linear.bias)
        return linear

    widths = [inputs, *hidden]
    layers = [piece for a, b in itertools.pairwise(widths) for piece in (layer(a, b, 2**0.5), nn.Tanh())]
    return nn.Sequential(*layers, layer(widths[-1], outputs, out_std))


class Agent(nn.Module):
    def __init__(self, inputs: int, actions: int, hidden: list[int]):
        super().__init__()
        self.actor = mlp(inputs, hidden, actions, 0.01)
        self.critic = mlp(inputs, hidden, 1, 1.0)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def act(self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        logits = self.actor(x).masked_fill(~mask, -1e9)  # illegal actions: probability 0
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)

    def export(self, layout: int) -> dict[str, np.ndarray]:
        """The actor in the project's policy format (``agents.policy``: numpy at play time)."""
        linear = [m for m in self.actor if isinstance(m, nn.Linear)]
        out = {ACTIVATION_KEY: np.array("tanh"), LAYOUT_KEY: np.array(layout)}
        for i, m in enumerate(linear[:-1]):
            out[f"w{i}"], out[f"b{i}"] = m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()
        out["w_out"], out["b_out"] = (
            linear[-1].weight.detach().numpy().T.copy(),
            linear[-1].bias.detach().numpy().copy(),
        )
        return out


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    layout = POLICY_INPUTS[args.policy_input]
    envs = agents.vector_env(
        args.n_envs,
        args.opponents,
        layout=layout,
        reward="points",
        episode=args.horizon,
        autoreset_mode="SameStep",
    )
    n_inputs, n_actions = envs.single_observation_space.shape[0], envs.single_action_space.n
    agent = Agent(n_inputs, n_actions, args.net_arch)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    shape = (args.n_steps, args.n_envs)
    obs = torch.zeros((*shape, n_inputs))
    masks = torch.zeros((*shape, n_actions), dtype=torch.bool)
    actions, logprobs, rewards, dones, values = (torch.zeros(shape) for _ in range(5))
    rollout = args.n_steps * args.n_envs
    iterations = max(1, args.total_steps // rollout)

    next_obs, info = envs.reset(seed=args.seed)
    next_obs, next_mask = torch.tensor(next_obs), torch.tensor(info["action_mask"], dtype=torch.bool)
    next_done = torch.zeros(args.n_envs)
    start, returns_now, episode_returns = time.time(), np.zeros(args.n_envs), []
    for iteration in range(1, iterations + 1):
        # 1. Rollout: n_steps decisions at every table.
        for step in range(args.n_steps):
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value
            next_obs, reward, terminated, truncated, info = envs.step(action.numpy())
            rewards[step] = torch.tensor(reward * args.reward_scale, dtype=torch.float32)
            next_obs, next_mask = torch.tensor(next_obs), torch.tensor(info["action_mask"], dtype=torch.bool)
            next_done = torch.tensor(terminated | truncated, dtype=torch.float32)
            returns_now += reward
            episode_returns += returns_now[terminated].tolist()  # points won less points lost
            returns_now[terminated] = 0.0

        # 2. Advantages (GAE); a match's end is terminal, so nothing is bootstrapped past it.
        with torch.no_grad():
            next_value = agent.value(next_obs)
            advantages = torch.zeros(shape)
            last = torch.zeros(args.n_envs)
            for t in reversed(range(args.n_steps)):
                not_done = 1.0 - (next_done if t == args.n_steps - 1 else dones[t + 1])
                following = next_value if t == args.n_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * following * not_done - values[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + values

        # 3. PPO updates on the flattened batch.
        b_obs, b_masks = obs.reshape(rollout, n_inputs), masks.reshape(rollout, n_actions)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        for _ in range(args.n_epochs):
            order = torch.randperm(rollout)
            for lo in range(0, rollout, args.batch_size):
                mb = order[lo : lo + args.batch_size]
                _, new_logprob, entropy, new_value = agent.act(b_obs[mb], b_masks[mb], b_actions[mb].long())
                ratio = (new_logprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_range, 1 + args.clip_range)).mean()
                v_loss = 0.5 * ((new_value - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        steps = iteration * rollout
        recent = episode_returns[-1000:]
        mean = f"{np.mean(recent):+.3f} points over the last {len(recent)}" if recent else "none ended yet"
        print(
            f"step {steps:,}  {steps / (time.time() - start):,.0f} steps/s  episodes against {args.opponents}: {mean}"
        )

    # 4. Export the actor and measure it against bots over duplicate boards.
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_weights(agent.export(layout), out)
    print(f"wrote {out} after {time.time() - start:.0f} s")
    for opponent in ("random", "rule_based"):
        result = evaluate(PolicyBot.from_file(out), opponent, boards=args.eval_boards)
        low, high = result.win_rate_ci
        print(
            f"against {opponent}: match win rate {result.win_rate:.3f} [{low:.3f}, {high:.3f}] over {args.eval_boards} boards"
        )


if __name__ == "__main__":
    main()
