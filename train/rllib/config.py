"""Options of the RLlib backend: one typed dataclass, read from YAML (``configs/rllib.yaml``).

Same rules as :mod:`train.config`: every key must be a field below with a value of its type and,
for a number, in its range (train/config.py's tables), anything else is a ``ConfigError`` naming
the key. Steps are environment steps: the learner's
decisions (the league's, made inside the env, are not counted).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from allfours_env.engine import EPISODES
from allfours_env.rewards import REWARD_MODES

from ..config import CONFIG_DIR, ConfigError, _check_bot, check_common, check_opponents, read_config

RLLIB_CONFIG = CONFIG_DIR / "rllib.yaml"


@dataclass(frozen=True)
class RLlibConfig:
    # run
    run_name: str = "rllib"
    output_dir: str = "runs"
    seed: int = 0
    total_steps: int = 500_000
    # Ray: env runners (one CPU each, spread over the cluster's nodes) and tables of the vector env in each
    num_env_runners: int = 2
    num_envs_per_env_runner: int = 256
    # game: rule variants (docs/rules.md table A0), reward ("points" or "match"), episode ("match" or "deal")
    rules: dict[str, Any] = field(default_factory=dict)
    reward: str = "points"
    episode: str = "match"
    # PPO
    learning_rate: float = 3e-4
    train_batch_size: int = 4000
    minibatch_size: int = 500
    num_epochs: int = 4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    # start main's actor from a policy file (.npz of the advised input, relu, hidden layers net_arch); "" : random
    init_policy: str = ""
    # league (train/league.py, as the SB3 backend's): draw weights of the other team, self (main's latest
    # weights), snapshot (one of the newest max_snapshots frozen copies), or a bot name
    opponents: dict[str, float] = field(default_factory=lambda: {"self": 0.5, "snapshot": 0.5})
    max_snapshots: int = 4
    snapshot_every: int = 50_000
    # evaluation (duplicate boards against bots) and checkpoints
    eval_every: int = 50_000
    eval_boards: int = 100
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "rule_based"])
    checkpoint_every: int = 50_000

    def __post_init__(self) -> None:
        check_common(self)  # every number's range too (train/config.py's tables)
        if self.minibatch_size > self.train_batch_size:
            raise ConfigError(f"minibatch_size ({self.minibatch_size}) must not exceed train_batch_size")
        for name, value, allowed in (("reward", self.reward, REWARD_MODES), ("episode", self.episode, EPISODES)):
            if value not in allowed:
                raise ConfigError(f"{name} must be one of {allowed}, got {value!r}")
        check_opponents(self.opponents)
        for name in self.eval_opponents:
            _check_bot("eval_opponents", name)
        if self.init_policy:
            _check_init_policy(self.init_policy, self.net_arch)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.run_name

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_init_policy(path: str, net_arch: list[int]) -> None:
    """The file must load (safely) and fit the module: the advised input, relu, hidden layers net_arch."""
    from agents.policy import ACTIVATION_KEY, ADVISED_LAYOUT, LAYOUT_KEY, CheckpointError, hidden_layers, load_weights

    try:
        weights = load_weights(path)
    except (OSError, CheckpointError) as err:
        raise ConfigError(f"init_policy: {err}") from None
    sizes = [int(weights[f"b{i}"].shape[0]) for i in range(hidden_layers(weights))]
    layout, activation = int(weights[LAYOUT_KEY]), str(weights[ACTIVATION_KEY])
    if layout != ADVISED_LAYOUT or activation != "relu" or sizes != list(net_arch):
        raise ConfigError(
            f"init_policy {path} does not fit the module: it reads input layout {layout}, uses {activation} and "
            f"hidden layers {sizes}; the module needs layout {ADVISED_LAYOUT}, relu and net_arch {list(net_arch)}"
        )


def load_rllib_config(path: str | Path = RLLIB_CONFIG, **overrides: Any) -> RLlibConfig:
    """Read a YAML config and apply overrides (None values are ignored)."""
    return read_config(RLlibConfig, path, **overrides)
