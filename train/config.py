"""Training options: one typed dataclass, read from a YAML file in ``configs/``.

Every key of the YAML file must be a field below with a value of the field's type; anything
else is a ``ConfigError`` that names the key. Command-line overrides go through the same check.
Every number has a range (:data:`RANGES`), and ``run_name`` must be a plain folder name: a value
outside is refused before any work.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml

import agents
from agents.averaged import RELABELLINGS
from agents.policy import (
    ACTIVATION_KEY, EXTENDS, LAYOUT_KEY, POLICY_INPUTS, PolicyBot, hidden_layers, input_size, widen,
)  # fmt: skip
from agents.search import MAX_WORLDS, POLICY_SUFFIXES, ROLLOUTS
from agents.shared.regular_file import read_bytes
from allfours_env import N_ACTIONS
from allfours_env.cards import N_SUITS
from allfours_env.engine import EPISODES
from allfours_env.rewards import REWARD_MODES
from allfours_env.rules import Rules
from allfours_env.vector import OTHER_HANDS_SIZE

SELF, SNAPSHOT = "self", "snapshot"  # the opponents that are the learner's own networks (train/ppo/league.py)
HORIZONS = ("match", "deal")  # the learner's episode for its returns (train/ppo/learner_env.py)
# distil_loss -> train.rounds.distil.fit's loss and temperature, how a round fits its student
# (train/rounds/expert_iteration.py): "logits" regresses each legal logit on its searched value, a chance
# of the match of 0.01 above the legal mean being one logit; "action" is cross-entropy toward the
# action search played; "advantage" is cross-entropy toward the round's starting network's policy
# tilted by the searched values at temperature distil_tau (None here: the config's)
DISTIL_FITS = {"logits": ("logits", 0.01), "action": ("cross_entropy", 0.0), "advantage": ("advantage", None)}
MIN_TEMPERATURE = 1e-4  # below it (but 0) the targets of the logits loss pass float32's range
MAX_TEMPERATURE = 100.0  # chances of the match: far beyond it every target is uniform (or the prior)
# distil_from: what a round fits. "start": the warm start's actor on every label made so far;
# "previous": the previous round's student on its own round's labels (each round one step on)
DISTIL_STARTS = ("start", "previous")
# The last step's labelling search (step_labels): the previous round's student as its prior and rollouts
STEP_SEARCH = "keep={student},rollout={student}"

# The shipped configs: the repository's configs/ in a clone, their copy in the package when
# installed from a wheel (pyproject.toml installs configs/ as train/configs/).
_HERE = Path(__file__).resolve().parent
CONFIG_DIR = _HERE / "configs" if (_HERE / "configs").is_dir() else _HERE.parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"
RUN_CONFIG_FILE = "config.yaml"  # the config of a run, in its folder
LABEL_BYTES = 700  # a label (or a relabelling) held for the fit: its input's non-zeros, mask, values (measured: 1.55 GB for 2.8M)
BASE_BYTES = 2**29  # what a run takes besides the parts memory_needs() counts: Python, torch, numba, the engine


class ConfigError(ValueError):
    """A config file or override that is not valid; the message names the key."""


@dataclass(frozen=True)
class Options:
    """The options both backends have (TrainConfig; RLlibConfig, train/rllib/config.py), under one
    name each, and what their configs share: where their defaults are, the options renamed since
    an earlier version, the run's folder and the options as a dict."""

    DEFAULTS_FILE: ClassVar[Path]  # every option's default, and what each means
    RENAMED: ClassVar[dict[str, str]] = {}  # options of earlier versions -> their names now
    # options added since an earlier version -> the value that keeps a run begun before as it was
    # (a run folder's config.yaml lists every option it had: one it lacks came later)
    ADDED: ClassVar[dict[str, Any]] = {}

    # run
    run_name: str
    output_dir: str
    seed: int
    total_steps: int
    # game
    rules: Rules  # made once, where the config is read (config_from_dict), from the file's mapping and --rule
    reward: str
    # PPO
    learning_rate: float
    batch_size: int
    n_epochs: int
    gamma: float
    gae_lambda: float
    clip_range: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    net_arch: list[int]
    init_policy: str  # the actor's start: a network (a policy file, student, pretrained), or "" (a new one)
    # the league (train/ppo/league.py)
    opponents: dict[str, float]
    snapshot_every: int
    max_snapshots: int
    # evaluation and checkpoints
    eval_every: int
    eval_boards: int
    eval_opponents: list[str]
    checkpoint_every: int

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.run_name

    def to_dict(self) -> dict[str, Any]:
        """The options as a config file holds them (the rules: those that differ from the defaults)."""
        return {**dataclasses.asdict(self), "rules": self.rules.changed()}

    def check(self) -> None:
        """A ConfigError naming the first option that is not valid: what :func:`config_from_dict`, the
        one place a config is made from outside values, asks before handing the config on. Here the
        checks both backends share; a backend's own follow in its override."""
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            check_type(f.name, getattr(self, f.name), hints[f.name])
        for name, allowed in RANGES.items():
            value = getattr(self, name, None)
            if value is None:  # an option of the other backend
                continue
            if not allowed.each:
                check_range(name, value, allowed.low, allowed.high, allowed.low_allowed, note=allowed.zero)
                continue
            for key, item in value.items() if isinstance(value, dict) else enumerate(value):
                check_range(f"{name}[{shown(key)}]", item, allowed.low, allowed.high, allowed.low_allowed)
        for name, choices in CHOICES.items():
            if hasattr(self, name) and getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {list(choices)}, got {shown(getattr(self, name))}")
        if not self.net_arch:
            raise ConfigError("net_arch must list at least one layer size")
        check_run_folder(self.run_name, self.output_dir)
        if not self.opponents or sum(self.opponents.values()) <= 0:  # the league's draw weights (train/ppo/league.py)
            raise ConfigError(f"opponents needs weights with a positive sum, got {self.opponents}")
        _check_bots("opponents", self.opponents, own=(SELF, SNAPSHOT))
        _check_bots("eval_opponents", self.eval_opponents)


@dataclass(frozen=True)
class TrainConfig(Options):
    """Every option of a run. Their defaults, and what each means, are in configs/default.yaml:
    the one place they are written; any other config file states only what it changes."""

    DEFAULTS_FILE: ClassVar[Path] = DEFAULT_CONFIG
    ADDED: ClassVar[dict[str, Any]] = {"step_labels": 0}  # (2026-12-06: a run begun before has no last step)

    n_envs: int
    horizon: str
    # PPO (sb3-contrib MaskablePPO)
    n_steps: int
    overlap_updates: bool
    # networks
    policy_input: str
    critic_arch: list[int]
    critic_sees_hands: bool
    # warm start
    imitate: str
    imitation_steps: int
    imitation_epochs: int
    imitation_learning_rate: float
    # expert iteration (train/rounds/expert_iteration.py)
    distil_labels: list[int]
    label_worlds: int
    label_confirm: int
    label_search: str  # search's keep / rollout for the labels, {student} the previous round's student
    dagger_opponents: list[str]
    distil_loss: str  # logits: each legal logit fitted to its searched value; action: toward search's action
    distil_tau: float  # advantage: the temperature that tilts the prior by the searched values
    distil_from: str  # start: the warm start on every label so far; previous: the last student on its round's labels
    distil_epochs: int
    distil_suit_copies: int
    distil_learning_rate: float
    distil_eval: dict[str, int]  # bot -> board pairs
    step_labels: int  # the last step: a round on the last student's own play, searched with its rollouts
    step_tau: float  # ...fitted by the advantage loss at this temperature...
    step_prior_suits: int  # ...from that student averaged over this many suit relabellings
    teacher_eval: dict[str, int]  # bot -> board pairs, for the round's labelling search
    label_workers: int
    student_pull: float  # train/ppo/pull.py
    student_pull_steps: int
    # fine-tuning from a network (train/ppo/fine_tune.py)
    critic_warmup_steps: int
    critic_learning_rate: float
    target_kl: float
    normalize_advantage: bool
    start_eval_boards: int
    final_gate_boards: int
    checkpoint_minutes: float
    max_minutes: float

    def check(self) -> None:
        super().check()
        if self.label_confirm and self.label_confirm <= self.label_worlds:
            raise ConfigError(
                f"label_confirm must be 0 (off) or more than label_worlds ({self.label_worlds}), got {self.label_confirm}"
            )
        label_search_options(self.label_search, STUDENT)
        if (len(self.distil_labels) > 1 or self.init_policy and self.distil_labels) and not self.dagger_opponents:
            raise ConfigError(
                "dagger_opponents must name a bot or self when distil_labels has two or more rounds, "
                "or one after init_policy"
            )
        if self.horizon == "deal" and self.reward == "match":
            raise ConfigError("horizon 'deal' needs reward 'points' or 'equity': a match reward comes only at the match's end")
        if self.critic_sees_hands and not self.critic_arch:
            raise ConfigError("critic_sees_hands needs a critic of its own: give critic_arch, e.g. [256, 256]")
        if self.init_policy and self.imitate:
            raise ConfigError("init_policy starts from a network: it goes with imitate ''")
        _check_bots("imitate", [self.imitate] if self.imitate else [])
        _check_bots("dagger_opponents", self.dagger_opponents, own=(SELF,))
        _check_bots("distil_eval", self.distil_eval)
        _check_bots("teacher_eval", self.teacher_eval)
        if self.init_policy:
            init_weights(self.init_policy, self.layout, self.net_arch)

    @property
    def layout(self) -> int:
        """The input layout of the policy (agents.policy)."""
        return POLICY_INPUTS[self.policy_input]

    @property
    def rounds(self) -> list[Round]:
        """The rounds of expert iteration: one per ``distil_labels`` entry, then (after them only)
        the last step of ``step_labels``."""
        shared = Round(0, self.label_search, tuple(self.dagger_opponents), self.distil_loss, self.distil_tau, self.distil_from)
        rounds = [dataclasses.replace(shared, labels=count) for count in self.distil_labels]
        if rounds and self.step_labels:
            step = Round(self.step_labels, STEP_SEARCH, (SELF,), "advantage", self.step_tau, "previous", self.step_prior_suits)
            rounds.append(step)
        return rounds


@dataclass(frozen=True)
class Round:
    """One round of expert iteration (train/rounds/expert_iteration.py) as the config sets it."""

    labels: int  # decisions labelled
    search: str  # the labelling search's options (label_search's form; {student}: the previous round's student)
    opponents: tuple[str, ...]  # where its positions come from (dagger_opponents' form)
    loss: str  # a key of DISTIL_FITS
    tau: float  # the advantage loss's temperature
    start: str  # a DISTIL_STARTS: what the round fits
    prior_suits: int = 1  # the advantage loss's prior: the starting network averaged over so many relabellings

    @property
    def fit(self) -> tuple[str, float]:
        """train.rounds.distil.fit's loss and temperature (:data:`DISTIL_FITS`)."""
        loss_kind, temperature = DISTIL_FITS[self.loss]
        return loss_kind, self.tau if temperature is None else temperature


MAX_SEED = 2**32 - 1  # SB3 and RLlib seed numpy's global generator, which takes 0 .. 2**32 - 1
# The largest values of the options (see RANGES): far above any real run, small enough
# that no option alone asks for unbounded time or memory, or overflows a float.
MAX_STEPS = 10**12  # environment steps: at 10,000 a second, three years
MAX_TABLES = 2**20  # tables of one vector engine (n_envs; RLlib's n_envs_per_runner)
MAX_BATCH = 2**24  # decisions of a rollout per table, of a minibatch, of an RLlib rollout
MAX_LAYER = 2**16  # units of a hidden layer
FIT_BYTES = 16  # a parameter in training: float32 weight, gradient and Adam's two moments
MAX_EPOCHS = 10_000
MAX_SNAPSHOTS = 1000  # frozen policies kept (max_snapshots)
MAX_LABELS = 10**8  # decisions labelled in one round (or warm-start decisions): 70 GB held for the fit
MAX_SUIT_COPIES = math.factorial(N_SUITS) - 1  # the relabellings of the suits other than the identity
MAX_EVAL_BOARDS = 100_000  # board pairs per opponent at each evaluation: a few minutes against the expert
MAX_WORKERS = 1024  # processes (label_workers, RLlib's n_env_runners)
MAX_COEF = 1e6  # loss coefficients, gradient norms and opponent weights: far below float32's overflow
MAX_MINUTES = 10**6  # checkpoint_minutes, max_minutes: about two years
MAX_NAME_BYTES = 255  # a file name (run_name), as Linux, macOS and Windows file systems allow
MAX_PATH_BYTES = 4096  # a path (output_dir), Linux's PATH_MAX
MAX_CONFIG_BYTES = 2**20  # a config file lists a few dozen options


@dataclass(frozen=True)
class Range:
    """The values a number option takes: ``low`` to ``high`` (integers if ``low`` is one);
    ``low_allowed``: ``low`` itself too; ``each``: the option lists numbers (or maps names to
    them) and the range is each one's; ``zero``: what 0 means, for the message."""

    low: float
    high: float
    low_allowed: bool = True
    each: bool = False
    zero: str | None = None


# Every number option of either backend (those a backend lacks are skipped), checked in this order.
RANGES = {
    "seed": Range(0, MAX_SEED),
    "total_steps": Range(1, MAX_STEPS),
    "n_envs": Range(1, MAX_TABLES),
    "n_steps": Range(1, MAX_BATCH),
    "batch_size": Range(1, MAX_BATCH),
    "n_epochs": Range(1, MAX_EPOCHS),
    "snapshot_every": Range(1, MAX_STEPS),
    "max_snapshots": Range(1, MAX_SNAPSHOTS),
    "imitation_steps": Range(1, MAX_LABELS),
    "imitation_epochs": Range(1, MAX_EPOCHS),
    "label_worlds": Range(1, MAX_WORLDS),  # search's own caps (agents.search)
    "label_confirm": Range(0, MAX_WORLDS, zero="off"),
    "step_labels": Range(0, MAX_LABELS, zero="no last step"),
    "step_prior_suits": Range(1, MAX_SUIT_COPIES + 1),  # (and then one of RELABELLINGS)
    "distil_epochs": Range(1, MAX_EPOCHS),
    "distil_suit_copies": Range(0, MAX_SUIT_COPIES, zero="none"),
    "label_workers": Range(0, MAX_WORKERS, zero="every core"),
    "student_pull_steps": Range(0, MAX_STEPS, zero="constant"),
    "critic_warmup_steps": Range(0, MAX_STEPS, zero="none"),
    "start_eval_boards": Range(0, MAX_EVAL_BOARDS, zero="none"),
    "final_gate_boards": Range(0, MAX_EVAL_BOARDS, zero="none: final.npz is PPO's"),
    "eval_every": Range(1, MAX_STEPS),
    "eval_boards": Range(1, MAX_EVAL_BOARDS),
    "checkpoint_every": Range(1, MAX_STEPS),
    # RLlib (train/rllib/config.py)
    "n_env_runners": Range(0, MAX_WORKERS, zero="sample in the trainer"),
    "n_envs_per_runner": Range(1, MAX_TABLES),
    "rollout_steps": Range(1, MAX_BATCH),
    # floats
    "learning_rate": Range(0.0, 1.0, low_allowed=False),
    "imitation_learning_rate": Range(0.0, 1.0, low_allowed=False),
    "distil_learning_rate": Range(0.0, 1.0, low_allowed=False),
    "distil_tau": Range(MIN_TEMPERATURE, MAX_TEMPERATURE),
    "step_tau": Range(MIN_TEMPERATURE, MAX_TEMPERATURE),
    "gamma": Range(0.0, 1.0),
    "gae_lambda": Range(0.0, 1.0),
    "clip_range": Range(0.0, 1.0, low_allowed=False),
    "ent_coef": Range(0.0, MAX_COEF),
    "student_pull": Range(0.0, MAX_COEF),
    "critic_learning_rate": Range(0.0, 1.0, zero="learning_rate's"),
    "target_kl": Range(0.0, MAX_COEF, zero="off"),
    "vf_coef": Range(0.0, MAX_COEF),
    "max_grad_norm": Range(0.0, MAX_COEF, low_allowed=False),
    "checkpoint_minutes": Range(0.0, MAX_MINUTES, low_allowed=False),
    "max_minutes": Range(0.0, MAX_MINUTES, zero="no limit"),
    # lists and mappings of numbers
    "net_arch": Range(1, MAX_LAYER, each=True),
    "critic_arch": Range(1, MAX_LAYER, each=True),
    "distil_labels": Range(1, MAX_LABELS, each=True),
    "distil_eval": Range(1, MAX_EVAL_BOARDS, each=True),
    "teacher_eval": Range(1, MAX_EVAL_BOARDS, each=True),
    "opponents": Range(0.0, MAX_COEF, each=True),
}
# Every option of either backend that takes one of a few values (as the message lists them), checked in this order.
CHOICES = {
    "reward": REWARD_MODES, "horizon": HORIZONS, "episode": EPISODES, "policy_input": sorted(POLICY_INPUTS),
    "distil_loss": DISTIL_FITS, "distil_from": DISTIL_STARTS, "step_prior_suits": sorted(RELABELLINGS),
}  # fmt: skip


def fitted_labels(config: TrainConfig, round_: int) -> int:
    """How many labels round ``round_``'s fit reads: its own round's (a round from the previous
    student) or every one so far."""
    rounds = config.rounds
    if rounds[round_ - 1].start == "previous":
        return rounds[round_ - 1].labels
    return sum(r.labels for r in rounds[:round_])


def held_labels(config: TrainConfig) -> int:
    """The most labels any round's fit holds."""
    return max((fitted_labels(config, r) for r in range(1, len(config.rounds) + 1)), default=0)


def memory_needs(config: TrainConfig) -> dict[str, int]:
    """Bytes the big parts of a run take, estimated from the config (the rest, torch and the
    compiled engine, about BASE_BYTES): what :func:`check_memory` holds against the machine."""
    inputs = input_size(config.layout) + (OTHER_HANDS_SIZE if config.critic_sees_hands else 0)
    actor = mlp_parameters([input_size(config.layout), *config.net_arch, N_ACTIONS])
    critic = mlp_parameters([inputs, *config.critic_arch, 1]) if config.critic_arch else config.net_arch[-1] + 1
    # SB3's buffer keeps every step's input, mask and 7 more floats; get() copies it once more,
    # and an overlapped run holds a second buffer
    buffers = 2 + 2 * config.overlap_updates
    return {
        "rollout buffer (n_envs x n_steps)": buffers * config.n_envs * config.n_steps * 4 * (inputs + N_ACTIONS + 7),
        "networks (net_arch, critic_arch) with gradients, Adam and snapshots": (
            FIT_BYTES * (actor + critic) + 8 * actor * (config.max_snapshots + 2)
        ),
        "warm start (imitation_steps)": (config.imitation_steps * (6 * inputs + N_ACTIONS + 16)) if config.imitate else 0,
        "expert-iteration labels (distil_labels, step_labels, distil_suit_copies, distil_from)": (
            LABEL_BYTES * held_labels(config) * (1 + config.distil_suit_copies)
        ),
        "minibatch activations (batch_size)": 16 * config.batch_size * (inputs + sum(config.net_arch) + sum(config.critic_arch)),
    }


def mlp_parameters(widths: list[int]) -> int:
    """Weights and biases of a fully connected network whose layers have ``widths`` (inputs first)."""
    return sum(a * b + b for a, b in zip(widths, widths[1:]))


def network_needs(widths: list[int]) -> dict[str, int]:
    """Bytes fitting a network of layer ``widths`` (inputs first) takes: its weights, gradients and
    Adam's moments; for :func:`check_needs`, named by the ``--hidden`` that sets its hidden layers."""
    what = f"the network (--hidden {' '.join(map(str, widths[1:-1]))}) with its gradients and Adam's moments"
    return {what: FIT_BYTES * mlp_parameters(widths)}


def check_memory(config: TrainConfig, available: int | None = None) -> None:
    """A ConfigError, before any work, if the run would need more memory than the machine has
    (``available`` bytes; default: its physical memory), naming what takes it."""
    check_needs(memory_needs(config), available)


def check_needs(needs: dict[str, int], available: int | None = None, lead: str = "this config needs") -> None:
    """A ConfigError if ``needs`` (bytes by what takes them) and BASE_BYTES pass ``available``
    (default: the machine's physical memory), naming the largest parts."""
    if available is None:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    total = BASE_BYTES + sum(needs.values())
    if total > available:
        parts = "; ".join(f"{what}: {_gb(n)}" for what, n in sorted(needs.items(), key=lambda kv: -kv[1]) if n)
        raise ConfigError(
            f"{lead} about {_gb(total)} of memory and the machine has {_gb(available)} ({parts}); "
            "make the largest of these smaller"
        )


def _gb(n: int) -> str:
    return f"{n / 2**30:,.1f} GB"


def check_range(
    name: str, value: float, low: float, high: float, low_allowed: bool = True, note: str | None = None
) -> None:
    """A ConfigError unless ``low <= value <= high`` (``low < value`` if not ``low_allowed``): NaN,
    infinities and integers of any size are refused without converting them. ``note``: what 0 means."""
    above_low = value >= low if low_allowed else value > low
    if not (above_low and value <= high):  # NaN fails both
        if isinstance(low, int):
            kind, bounds = "an integer", f"{low:,}, {high:,}"
        else:
            kind, bounds = "a finite number", f"{low:g}, {high:g}"
        meaning = f" (0: {note})" if note else ""
        opening = "[" if low_allowed else "("
        raise ConfigError(f"{name} must be {kind} in {opening}{bounds}]{meaning}, got {shown(value)}")


def shown(value: Any, limit: int = 100) -> str:
    """``value`` for a message, cut at ``limit`` characters; a long integer by its size (Python
    refuses to print one past 4,300 digits)."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * math.log10(2)):,} digits"
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} holding an integer too long to print"
    return text if len(text) <= limit else f"{text[:limit]}..."


def check_run_folder(name: str, path: str) -> None:
    """A ConfigError unless ``name`` (run_name) can be a folder's own name on any system: not empty,
    '.' or '..', no '/' or '\\', no control character (NUL cannot be in a path at all), short enough;
    and ``path`` (output_dir) can name a folder: not empty, no control character, not too long."""
    bad = not name or name in (".", "..") or any(c in "/\\" or not c.isprintable() for c in name)
    if bad or len(name.encode()) > MAX_NAME_BYTES:  # (surrogates are not printable: the encoding works)
        raise ConfigError(
            f"run_name must be a plain folder name (no '/', '\\' or control characters, not '.' or '..', at most "
            f"{MAX_NAME_BYTES} bytes), got {name[:80]!r}{'...' if len(name) > 80 else ''}"
        )
    if not path or any(not c.isprintable() for c in path) or len(path.encode()) > MAX_PATH_BYTES:
        raise ConfigError(
            f"output_dir must be a folder's path (no control characters, at most {MAX_PATH_BYTES} bytes), "
            f"got {path[:80]!r}{'...' if len(path) > 80 else ''}"
        )


def init_weights(spec: str, layout: int, net_arch: list[int]) -> dict[str, Any]:
    """The weights of the network ``init_policy`` names (widened to input ``layout`` if its own is
    one that ``layout``'s input begins with: :func:`agents.policy.widen`); a ConfigError unless it
    is one that an actor of input ``layout``, hidden layers ``net_arch`` and ReLU can take."""
    try:
        bot = agents.make(spec)
    except (ValueError, FileNotFoundError) as err:
        raise ConfigError(f"init_policy: {err}") from None
    if not isinstance(bot, PolicyBot):
        raise ConfigError(
            f"init_policy must be a network (a policy file, student or pretrained), got {shown(spec)}: a {type(bot).__name__}"
        )
    weights = widen(bot.weights(), layout) if EXTENDS.get(layout) == bot.layout else bot.weights()
    sizes = [int(weights[f"w{i}"].shape[1]) for i in range(hidden_layers(weights))]
    activation = str(weights[ACTIVATION_KEY])
    if (int(weights[LAYOUT_KEY]), sizes, activation) != (layout, list(net_arch), "relu"):
        raise ConfigError(
            f"init_policy {shown(spec)} has input layout {bot.layout}, layers {sizes} and {activation}; the actor "
            f"takes layout {layout}, net_arch {list(net_arch)} and relu"
        )
    return weights


STUDENT = "{student}"  # in label_search: the previous round's student (round 1's: the actor the rounds start from)
LABEL_SEARCH = {"keep": ("expert",), "rollout": ROLLOUTS}  # option -> names


def label_search_options(text: str, student: str) -> dict[str, str]:
    """``label_search``'s options for the labelling search (keep, rollout: each a name it allows,
    {student} or a policy file), {student} replaced by ``student``; a ConfigError naming what is
    allowed."""
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = (word.strip() for word in item.partition("="))
        allowed = LABEL_SEARCH.get(key, ())
        if not sep or key not in LABEL_SEARCH or key in options:
            raise ConfigError(
                f"label_search must be search options KEY=VALUE separated by commas, each of {sorted(LABEL_SEARCH)} "
                f"at most once (e.g. keep={STUDENT},rollout=expert), got {shown(text)}"
            )
        if value not in (*allowed, STUDENT) and not value.endswith(POLICY_SUFFIXES):
            raise ConfigError(
                f"label_search: {key} must be one of {[*allowed, STUDENT]} or a policy file (.npz or .zip), "
                f"got {shown(value)}"
            )
        options[key] = student if value == STUDENT else value
    return options


def _check_bots(key: str, names: Iterable[str], own: tuple[str, ...] = ()) -> None:
    """Build each bot of ``names`` (but the learner's ``own`` networks) once, so that a typo fails now
    and not in the middle of training (cheap: make() only builds the bot)."""
    for name in names:
        try:
            if name not in own:
                agents.make(name)
        except (ValueError, FileNotFoundError) as err:
            raise ConfigError(f"{key}: {err}") from None


def check_type(name: str, value: Any, hint: Any) -> None:
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        if not isinstance(value, origin):
            raise ConfigError(f"{name} must be a {origin.__name__}, got {shown(value)}")
        args = typing.get_args(hint)
        items = value.items() if origin is dict else ((None, v) for v in value)
        for k, v in items:
            if origin is dict and not isinstance(k, args[0]):
                raise ConfigError(f"{name} keys must be {args[0].__name__}, got {shown(k)}")
            if args[-1] is not Any:
                check_type(f"{name}[{shown(k)}]" if k is not None else f"{name} item", v, args[-1])
        return
    if hint in (int, float):  # a float option takes an integer too; a bool is no number
        ok = isinstance(value, (int, hint)) and not isinstance(value, bool)
    elif isinstance(hint, types.UnionType):
        ok = isinstance(value, typing.get_args(hint))
    else:
        ok = isinstance(value, hint)
    if not ok:
        raise ConfigError(f"{name} must be of type {getattr(hint, '__name__', hint)}, got {shown(value)}")


def load_config(path: str | Path = DEFAULT_CONFIG, saved_run: bool = False, **overrides: Any) -> TrainConfig:
    """Read a YAML config (the options it changes from configs/default.yaml; ``saved_run``: a run
    folder's own config, :func:`read_config`) and apply overrides (None values are ignored)."""
    return read_config(TrainConfig, path, saved_run, **overrides)


Config = TypeVar("Config")
Adjust = Callable[[dict[str, Any]], dict[str, Any]]  # the options read -> a command's changes to them


def config_file(spec: str | Path) -> Path:
    """The config file ``spec`` names: a path, or the name of a shipped config (``quick`` is
    ``CONFIG_DIR/quick.yaml``) where no file of that name exists."""
    path = Path(spec)
    if not path.exists() and not path.suffix and path.name == str(spec):
        return CONFIG_DIR / f"{path.name}.yaml"
    return path


def config_name(spec: str | Path) -> str:
    """How a run's first line names its config: a shipped one by its name, another by its path."""
    path = config_file(spec)
    return path.stem if path.parent == CONFIG_DIR else str(path)


def shipped_configs() -> str:
    """The names of the shipped configs, for a message or a flag's help."""
    return ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))


def read_config(
    cls: type[Config], path: str | Path, saved_run: bool = False, rules: dict[str, Any] | None = None,
    adjust: Adjust | None = None, **overrides: Any,
) -> Config:  # fmt: skip
    """A config of dataclass ``cls`` from the YAML file ``path`` (or a shipped config's name) and
    overrides (None values are ignored), made and checked once (:func:`config_from_dict`, which
    takes ``rules`` and ``adjust``). ``saved_run``: ``path`` is a run folder's config, written
    with every option the run had, so an option added since takes the value that keeps the run as it
    began (``cls.ADDED``), not today's default."""
    path = config_file(path)
    data = _read_yaml(path, f"the shipped configs, by name or path: {shipped_configs()} (in {CONFIG_DIR})")
    if saved_run:
        data = {**cls.ADDED, **data}  # type: ignore[attr-defined]  (every config class is an Options)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return config_from_dict(data, source=str(path), cls=cls, rules=rules, adjust=adjust)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (it keeps the last silently)
    and any alias (``*name``): a few lines of aliases of aliases stand for billions of values, which
    the checks would walk for hours (a config has no use for them)."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            refused = "an alias (*name) is not allowed in a config: write the value out"
            raise yaml.composer.ComposerError(None, None, refused, event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # a merged mapping's keys may be given again
                continue
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # (refused as such by the loader below)
            if key in seen:
                twice = f"the key {key!r} is given twice"
                raise yaml.constructor.ConstructorError(None, None, twice, key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path, shipped: str) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"no config file at {path}; {shipped}")
    try:  # a FIFO or device is refused unread (agents.shared.regular_file)
        text = read_bytes(path, MAX_CONFIG_BYTES)
    except OSError as err:
        raise ConfigError(f"{path} cannot be read: {err.strerror or err}; {shipped}") from None
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} holds more than {MAX_CONFIG_BYTES:,} bytes; a config file is far smaller")
    try:
        data = yaml.load(text.decode(), Loader=_UniqueKeyLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as err:  # on one line: its problem and where (PyYAML's takes several)
        mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None) or str(err).splitlines()[0]
        where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
        raise ConfigError(f"{path} is not valid YAML: {problem}{where}") from None
    except (ValueError, RecursionError) as err:  # an integer past Python's 4,300 digits; nesting past its stack
        raise ConfigError(f"{path} holds a value that cannot be read: {str(err).split(';')[0]}") from None
    if data is None:
        raise ConfigError(f"{path} is empty; a config lists option: value lines ({shipped})")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of option: value, got {type(data).__name__}")
    return data


def config_from_dict(
    data: dict[str, Any], source: str = "config", cls: type[Config] = TrainConfig, rules: dict[str, Any] | None = None,
    adjust: Adjust | None = None,
) -> Config:  # fmt: skip
    """A config of ``cls`` from the options ``data`` changes, the others from ``cls.DEFAULTS_FILE``
    (configs/default.yaml for TrainConfig): made once and checked once, here, where outside values
    come in (inside, a config is trusted). ``rules``: rule values (``--rule``) over the config's;
    ``adjust``: changes a command makes from the options read (``python -m train.exploit``'s)."""
    check_known(data, cls, source)
    options = {**default_options(cls), **data}
    try:
        if adjust is not None:
            options.update(adjust(options))
        config = cls(**{**options, "rules": config_rules(options["rules"], rules)})
        config.check()
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    return config


def config_rules(value: Any, given: dict[str, Any] | None = None) -> Rules:
    """The one :class:`Rules` of a config, from its ``rules`` mapping (rule key -> value) and the
    values ``given`` over them (``--rule``)."""
    check_type("rules", value, dict[str, Any])
    try:
        return Rules.from_kwargs(**{**value, **(given or {})})
    except (TypeError, ValueError) as err:
        raise ConfigError(f"rules: {err}") from None


def check_known(data: dict[str, Any], cls: type, source: str) -> None:
    """A ConfigError naming the keys of ``data`` that are no option of ``cls``; one an earlier
    version had (``cls.RENAMED``) with what it is called now."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    renamed = [f"{key} is now {cls.RENAMED[key]}" for key in unknown if key in cls.RENAMED]
    others = [key for key in unknown if key not in cls.RENAMED]
    parts = ([f"renamed option(s): {', '.join(renamed)}"] if renamed else []) + (
        [f"unknown option(s) {others}; known options: {sorted(known)}"] if others else []
    )
    if parts:
        raise ConfigError(f"{source}: {'; '.join(parts)}")


def default_options(cls: type = TrainConfig) -> dict[str, Any]:
    """Every option's default: ``cls.DEFAULTS_FILE`` (configs/default.yaml for TrainConfig), which
    must name each one and nothing else."""
    path = cls.DEFAULTS_FILE
    defaults = _read_yaml(path, "it ships with the project")
    check_known(defaults, cls, str(path))
    missing = sorted({f.name for f in dataclasses.fields(cls)} - set(defaults))
    if missing:
        raise ConfigError(f"{path} must give every option its default; missing {missing}")
    return defaults


def run_folder(run_name: str | None, output_dir: str | None, cls: type = TrainConfig) -> Path:
    """The folder of run ``run_name`` under ``output_dir`` (None: the default of config class ``cls``)."""
    defaults = default_options(cls)
    run_name, output_dir = run_name or defaults["run_name"], output_dir or defaults["output_dir"]
    check_run_folder(run_name, output_dir)
    return Path(output_dir) / run_name
