"""Training options: one typed dataclass, read from a YAML file in ``configs/``.

Every key of the YAML file must be a field below with a value of the field's type; anything
else is a ``ConfigError`` that names the key. Command-line overrides go through the same check.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from agents.policy import ADVISED_LAYOUT, COMPACT_LAYOUT
from allfours_env.cards import N_CARDS, N_SEATS
from allfours_env.rules import Rules

SELF, SNAPSHOT = "self", "snapshot"  # the opponent kinds that are the learner's own networks (train/opponents.py)
POLICY_INPUTS = {"compact": COMPACT_LAYOUT, "advised": ADVISED_LAYOUT}  # policy_input -> input layout
HORIZONS = ("match", "deal")  # the learner's episode for its returns (train/selfplay.py)

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"
RUN_CONFIG_FILE = "config.yaml"  # the config of a run, in its folder
LABEL_BYTES = 700  # a label (or a relabelling) held for the fit: its input's non-zeros, mask, values (measured: 1.55 GB for 2.8M)
BASE_BYTES = 2**29  # what a run takes besides the parts memory_needs() counts: Python, torch, numba, the engine
HIDDEN_HANDS_SIZE = (N_SEATS - 1) * N_CARDS  # the other seats' hands a critic_sees_hands critic reads (train.selfplay)


class ConfigError(ValueError):
    """A config file or override that is not valid; the message names the key."""


@dataclass(frozen=True)
class TrainConfig:
    """Every option of a run. Their defaults, and what each means, are in configs/default.yaml:
    the one place they are written; any other config file states only what it changes."""

    # run
    run_name: str
    output_dir: str
    seed: int
    total_steps: int
    n_envs: int
    # game
    rules: dict[str, Any]
    reward: str
    horizon: str
    # PPO (sb3-contrib MaskablePPO)
    learning_rate: float
    n_steps: int
    batch_size: int
    n_epochs: int
    overlap_updates: bool
    gamma: float
    gae_lambda: float
    clip_range: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    # networks
    policy_input: str
    net_arch: list[int]
    critic_arch: list[int]
    critic_sees_hands: bool
    # opponents
    opponents: dict[str, float]
    snapshot_every: int
    max_snapshots: int
    # warm start
    imitate: str
    imitation_steps: int
    imitation_epochs: int
    imitation_learning_rate: float
    # expert iteration (train/expert_iteration.py)
    distil_labels: list[int]
    label_worlds: int
    label_confirm: int
    dagger_opponents: list[str]
    distil_epochs: int
    distil_suit_copies: int
    distil_learning_rate: float
    distil_eval: dict[str, int]  # bot -> board pairs
    label_workers: int
    student_pull: float  # train/pull.py
    student_pull_steps: int
    # evaluation and checkpoints
    eval_every: int
    eval_boards: int
    eval_opponents: list[str]
    checkpoint_every: int
    checkpoint_minutes: float

    def __post_init__(self) -> None:
        check_common(self)
        positive = (
            "imitation_steps", "imitation_epochs", "label_worlds", "distil_epochs", "student_pull_steps", "total_steps",
            "n_envs", "n_steps", "batch_size", "n_epochs", "snapshot_every", "max_snapshots", "eval_every", "eval_boards",
            "checkpoint_every",
        )  # fmt: skip
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if any(n < 1 for n in self.distil_labels):
            raise ConfigError(f"distil_labels must list positive label counts (or be empty), got {self.distil_labels}")
        if self.label_confirm and self.label_confirm <= self.label_worlds:
            raise ConfigError(
                f"label_confirm must be 0 (off) or more than label_worlds ({self.label_worlds}), got {self.label_confirm}"
            )
        if any(n < 1 for n in self.distil_eval.values()):
            raise ConfigError(f"distil_eval must give each bot at least 1 board pair, got {self.distil_eval}")
        if self.distil_suit_copies < 0:
            raise ConfigError(f"distil_suit_copies must be at least 0 (0: none), got {self.distil_suit_copies}")
        if self.label_workers < 0:
            raise ConfigError(f"label_workers must be at least 0 (0: every core), got {self.label_workers}")
        if len(self.distil_labels) > 1 and not self.dagger_opponents:
            raise ConfigError("dagger_opponents must name a bot or self when distil_labels has two or more rounds")
        if self.horizon not in HORIZONS:
            raise ConfigError(f"horizon must be one of {list(HORIZONS)}, got {self.horizon!r}")
        if self.horizon == "deal" and self.reward != "points":
            raise ConfigError("horizon 'deal' needs reward 'points': a match reward comes only at the match's end")
        if self.policy_input not in POLICY_INPUTS:
            raise ConfigError(f"policy_input must be one of {sorted(POLICY_INPUTS)}, got {self.policy_input!r}")
        if any(n < 1 for n in self.critic_arch):
            raise ConfigError(f"critic_arch must list positive layer sizes (or be empty), got {self.critic_arch}")
        if self.critic_sees_hands and not self.critic_arch:
            raise ConfigError("critic_sees_hands needs a critic of its own: give critic_arch, e.g. [256, 256]")
        if self.reward not in ("points", "match"):
            raise ConfigError(f"reward must be 'points' or 'match', got {self.reward!r}")
        weights = self.opponents.values()
        if not self.opponents or not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
            raise ConfigError(f"opponents needs finite, non-negative weights with a positive sum, got {self.opponents}")
        pool_bots = [name for name in self.opponents if name not in (SELF, SNAPSHOT)]
        imitate = [self.imitate] if self.imitate else []
        bots = {
            "imitate": imitate, "opponents": pool_bots, "eval_opponents": self.eval_opponents,
            "dagger_opponents": [name for name in self.dagger_opponents if name != SELF],
            "distil_eval": list(self.distil_eval),
        }  # fmt: skip
        for key, names in bots.items():
            for name in names:
                _check_bot(key, name)

    @property
    def layout(self) -> int:
        """The input layout of the policy (agents.policy)."""
        return POLICY_INPUTS[self.policy_input]

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.run_name

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


MAX_SEED = 2**32 - 1  # SB3 and RLlib seed numpy's global generator, which takes 0 .. 2**32 - 1
# Number options every backend shares (those a backend lacks are skipped): (lowest, highest, is
# the lowest itself allowed); every value must also be finite.
NUMBER_RANGES = {
    "learning_rate": (0.0, 1.0, False),
    "imitation_learning_rate": (0.0, 1.0, False),
    "distil_learning_rate": (0.0, 1.0, False),
    "gamma": (0.0, 1.0, True),
    "gae_lambda": (0.0, 1.0, True),
    "clip_range": (0.0, 1.0, False),
    "ent_coef": (0.0, math.inf, True),
    "student_pull": (0.0, math.inf, True),
    "vf_coef": (0.0, math.inf, True),
    "max_grad_norm": (0.0, math.inf, False),
    "checkpoint_minutes": (0.0, math.inf, False),
}


def memory_needs(config: TrainConfig) -> dict[str, int]:
    """Bytes the big parts of a run take, estimated from the config (the rest, torch and the
    compiled engine, about BASE_BYTES): what :func:`check_memory` holds against the machine."""
    from agents.policy import input_size  # noqa: PLC0415 (light; kept here so that config stays importable first)
    from allfours_env import N_ACTIONS

    inputs = input_size(config.layout) + (HIDDEN_HANDS_SIZE if config.critic_sees_hands else 0)

    def mlp(width: int, sizes: list[int], out: int) -> int:
        widths = [width, *sizes, out]
        return sum(a * b + b for a, b in zip(widths, widths[1:]))

    actor = mlp(input_size(config.layout), config.net_arch, N_ACTIONS)
    critic = mlp(inputs, config.critic_arch, 1) if config.critic_arch else config.net_arch[-1] + 1
    # SB3's buffer keeps every step's input, mask and 7 more floats; get() copies it once more,
    # and an overlapped run holds a second buffer
    buffers = 2 + 2 * config.overlap_updates
    return {
        "rollout buffer (n_envs x n_steps)": buffers * config.n_envs * config.n_steps * 4 * (inputs + N_ACTIONS + 7),
        "networks (net_arch, critic_arch) with gradients, Adam and snapshots": (
            16 * (actor + critic) + 8 * actor * (config.max_snapshots + 2)
        ),
        "warm start (imitation_steps)": (config.imitation_steps * (6 * inputs + N_ACTIONS + 16)) if config.imitate else 0,
        "expert-iteration labels (distil_labels, distil_suit_copies)": (
            LABEL_BYTES * sum(config.distil_labels) * (1 + config.distil_suit_copies)
        ),
        "minibatch activations (batch_size)": 16 * config.batch_size * (inputs + sum(config.net_arch) + sum(config.critic_arch)),
    }


def check_memory(config: TrainConfig, available: int | None = None) -> None:
    """A ConfigError, before any work, if the run would need more memory than the machine has
    (``available`` bytes; default: its physical memory), naming what takes it."""
    if available is None:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    needs = memory_needs(config)
    total = BASE_BYTES + sum(needs.values())
    if total > available:
        parts = "; ".join(f"{what}: {_gb(n)}" for what, n in sorted(needs.items(), key=lambda kv: -kv[1]) if n)
        raise ConfigError(
            f"this config needs about {_gb(total)} of memory and the machine has {_gb(available)} ({parts}); "
            "make the largest of these smaller"
        )


def _gb(n: int) -> str:
    return f"{n / 2**30:,.1f} GB"


def check_common(config: Any) -> None:
    """The checks every backend's config (a dataclass like TrainConfig) shares: each field's type,
    the numbers' ranges, the seed, net_arch, the rules and run_name."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        _check_type(f.name, getattr(config, f.name), hints[f.name])
    for name, (low, high, low_allowed) in NUMBER_RANGES.items():
        value = getattr(config, name, None)
        if value is None:
            continue
        above_low = value >= low if low_allowed else value > low
        if not (math.isfinite(value) and above_low and value <= high):
            raise ConfigError(f"{name} must be a finite number {_range_text(low, high, low_allowed)}, got {value!r}")
    if not 0 <= config.seed <= MAX_SEED:
        raise ConfigError(f"seed must be in 0 .. {MAX_SEED:,} (2**32 - 1), got {config.seed}")
    if not config.net_arch or any(n < 1 for n in config.net_arch):
        raise ConfigError(f"net_arch must list positive layer sizes, got {config.net_arch}")
    try:
        Rules.from_kwargs(**config.rules)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"rules: {err}") from None
    if not config.run_name or "/" in config.run_name or config.run_name in (".", ".."):
        raise ConfigError(f"run_name must be a plain folder name, got {config.run_name!r}")


def _range_text(low: float, high: float, low_allowed: bool) -> str:
    if math.isinf(high):
        return f"{'at least' if low_allowed else 'above'} {low:g}"
    return f"in {'[' if low_allowed else '('}{low:g}, {high:g}]"


def _check_bot(key: str, name: str) -> None:
    """Build the bot ``name`` once, so that a typo fails now and not in the middle of training."""
    import agents  # the check is cheap: make() only builds the bot

    try:
        agents.make(name)
    except (ValueError, FileNotFoundError) as err:
        raise ConfigError(f"{key}: {err}") from None


def _check_type(name: str, value: Any, hint: Any) -> None:
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        if not isinstance(value, origin):
            raise ConfigError(f"{name} must be a {origin.__name__}, got {value!r}")
        args = typing.get_args(hint)
        items = value.items() if origin is dict else ((None, v) for v in value)
        for k, v in items:
            if origin is dict and not isinstance(k, args[0]):
                raise ConfigError(f"{name} keys must be {args[0].__name__}, got {k!r}")
            if args[-1] is not Any:
                _check_type(f"{name}[{k!r}]" if k is not None else f"{name} item", v, args[-1])
        return
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(hint, types.UnionType):
        ok = isinstance(value, typing.get_args(hint))
    else:
        ok = isinstance(value, hint)
    if not ok:
        raise ConfigError(f"{name} must be of type {getattr(hint, '__name__', hint)}, got {value!r}")


def load_config(path: str | Path = DEFAULT_CONFIG, **overrides: Any) -> TrainConfig:
    """Read a YAML config (the options it changes from configs/default.yaml) and apply overrides
    (None values are ignored)."""
    return read_config(TrainConfig, path, f"the shipped ones are in {CONFIG_DIR}", **overrides)


Config = TypeVar("Config")


def read_config(cls: type[Config], path: str | Path, shipped: str, **overrides: Any) -> Config:
    """A config of dataclass ``cls`` from the YAML file ``path`` and overrides (None values are
    ignored); ``shipped`` says where the shipped configs are, for the error of a missing file."""
    data = _read_yaml(Path(path), shipped)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return config_from_dict(data, source=str(path), cls=cls)


def _read_yaml(path: Path, shipped: str) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"no config file at {path}; {shipped}")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from None
    if data is None:
        raise ConfigError(f"{path} is empty; a config lists option: value lines ({shipped})")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of option: value, got {type(data).__name__}")
    return data


def config_from_dict(data: dict[str, Any], source: str = "config", cls: type[Config] = TrainConfig) -> Config:
    """A config of ``cls`` from the options ``data`` changes: for TrainConfig, from the values of
    configs/default.yaml; other config classes have defaults of their own."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown option(s) {unknown}; known options: {sorted(known)}")
    if cls is TrainConfig:
        data = {**default_options(), **data}
    try:
        return cls(**data)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None


def default_options() -> dict[str, Any]:
    """Every option's default: configs/default.yaml, which must name each one."""
    defaults = _read_yaml(DEFAULT_CONFIG, "it ships with the project")
    missing = sorted({f.name for f in dataclasses.fields(TrainConfig)} - set(defaults))
    if missing:
        raise ConfigError(f"{DEFAULT_CONFIG} must give every option its default; missing {missing}")
    return defaults


def run_folder(run_name: str | None, output_dir: str | None) -> Path:
    """The folder of run ``run_name`` under ``output_dir`` (None: the default config's values)."""
    defaults = default_options()
    return Path(output_dir or defaults["output_dir"]) / (run_name or defaults["run_name"])
