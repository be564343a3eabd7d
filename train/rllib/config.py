"""Options of the RLlib backend: one typed dataclass, read from YAML and checked as :mod:`train.config`
says (every default in ``configs/rllib.yaml``). Steps are environment steps: the learner's decisions
(the league's, made inside the env, are not counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from agents.policy import ADVISED_LAYOUT

from train.config import CONFIG_DIR, ConfigError, Options, init_weights, read_config

RLLIB_CONFIG = CONFIG_DIR / "rllib.yaml"


@dataclass(frozen=True)
class RLlibConfig(Options):
    """Every option of an RLlib run. Their defaults, and what each means, are in configs/rllib.yaml:
    the one place they are written."""

    DEFAULTS_FILE: ClassVar[Path] = RLLIB_CONFIG
    # Options of earlier versions, by RLlib's names, and what they are called now: the SB3 config's names
    # where both backends have the option.
    RENAMED: ClassVar[dict[str, str]] = {
        "num_env_runners": "n_env_runners",
        "num_envs_per_env_runner": "n_envs_per_runner",
        "train_batch_size": "rollout_steps",
        "minibatch_size": "batch_size",
        "num_epochs": "n_epochs",
        "league_size": "max_snapshots",
        "self_play": "opponents",
    }

    # Ray: env runners, and tables of the vector env in each
    n_env_runners: int
    n_envs_per_runner: int
    episode: str  # the env's episode: a match, or one deal from 0-0 (python -m train's horizon cuts returns instead)
    rollout_steps: int  # PPO's batch: the learner decisions of all env runners before an update

    def check(self) -> None:
        super().check()  # every number's range too (train/config.py's tables)
        if self.batch_size > self.rollout_steps:
            raise ConfigError(f"batch_size ({self.batch_size}) must not exceed rollout_steps ({self.rollout_steps})")
        if self.init_policy:
            init_weights(self.init_policy, ADVISED_LAYOUT, self.net_arch)


def load_rllib_config(path: str | Path = RLLIB_CONFIG, **overrides: Any) -> RLlibConfig:
    """:func:`train.config.load_config` for the RLlib backend (its defaults: configs/rllib.yaml)."""
    return read_config(RLlibConfig, path, **overrides)
