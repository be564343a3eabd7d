"""``python -m eval.regret POLICY...``: a bot's mean regret a decision on fixed, searched decision sets.

A match result takes thousands of matches; this scores a bot or a policy file in seconds. A
decision set holds decisions with a choice, each legal action valued by a precise search; a bot
is shown each decision's observation and mask (what ``env.observe`` gives), and its regret there is
the best action's value minus the value of the action it chose: a chance of the match, 0 for a
best choice. The command prints each bot's mean regret a decision with its 95% interval, by phase
(the bids: stand / beg, give one / run; the cards), then each bot against the next better one, the
paired mean difference over the same decisions with its interval (which decides their order far
sooner than two separate intervals do).

The shipped sets (``eval/regret_sets/``, made by the documented commands of
``docs/results.md``, "The regret benchmark"): ``expert``, 1,000 decisions of ``expert`` playing
itself; ``student``, 1,000 of ``student_v3`` playing itself (another kind of play, the positions a
stronger player reaches). Each legal action was valued by ``search:ms=0,margin=0`` with 512 worlds
and the expert's rollouts (every seat of the rest of the deal played by the expert from what it
knows), then the chance to win the match from the deal's end (:mod:`allfours_env.match_model`).

What a set can and cannot see: an action's value is what it is worth if the rest of the deal is
played as the expert plays it. A bot whose choice pays only through its own different play later
(a plan, a signal to its partner) is judged by the expert's continuation and may score worse here
than in matches; a bot that plays like the rollouts (a search over them) is favoured. The values
carry the search's own noise (the best of several noisy values is too high), which adds the same
amount to every bot's regret and cancels in the paired differences. A set's positions are those
its player reached; a bot that reaches others is not scored there. Match results stay the judge:
the docs say how far this ranking agrees with them.

A set file (``.npz``, read without running code): ``observation`` float32 (n, OBS_SIZE),
``action_mask`` bool (n, 56) with two legal actions or more, ``values`` float32 (n, 56), each
legal action's value in 0..1 and NaN elsewhere, ``settings`` a JSON text saying how it was made
(written by ``python -m train.regret_set``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.shared.atomic_file import atomic_path
from agents.shared.npz_file import read_npz
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread

SETS_DIR = Path(__file__).parent / "regret_sets"
SHIPPED_SETS = ("expert", "student")
# allfours_env's N_ACTIONS and STAND (the first bid), written out: importing allfours_env loads the
# engine, which the command leaves until its options are read (run_script answers a stop before)
N_ACTIONS = 56
FIRST_BID = 52
PHASES = ("bids", "cards")
MAX_SET_BYTES = 1 << 30


@dataclass(frozen=True)
class DecisionSet:
    """Searched decisions: observations, legal masks, each legal action's value (see the module docstring)."""

    name: str
    observations: np.ndarray
    masks: np.ndarray
    values: np.ndarray
    settings: dict

    @property
    def bids(self) -> np.ndarray:
        """bool (n,): the decisions that are bids (the others are card plays)."""
        return self.masks[:, FIRST_BID:].any(axis=1)

    def regrets(self, actions: np.ndarray) -> np.ndarray:
        """Each decision's regret of ``actions`` (legal ones): the best value minus the chosen one's."""
        chosen = self.values[np.arange(len(actions)), actions]
        return (np.nanmax(self.values, axis=1) - chosen).astype(np.float64)


def set_path(name: str) -> Path:
    """The file of a shipped set's name, or ``name`` itself as a path."""
    return SETS_DIR / f"{name}.npz" if name in SHIPPED_SETS else Path(name)


def load_set(name: str) -> DecisionSet:
    """A decision set by shipped name or path; a ValueError naming the file and what is wrong."""
    path = set_path(name)
    try:
        arrays = read_npz(path, MAX_SET_BYTES)
        return _checked(Path(name).stem if name not in SHIPPED_SETS else name, arrays)
    except (OSError, ValueError) as err:  # (NpzError is a ValueError)
        raise ValueError(f"decision set {str(path)!r}: {getattr(err, 'strerror', None) or err}") from None


def _checked(name: str, arrays: dict[str, np.ndarray]) -> DecisionSet:
    from allfours_env.observation import OBS_SIZE

    expected = {"observation": (np.float32, OBS_SIZE), "action_mask": (np.bool_, N_ACTIONS),
                "values": (np.float32, N_ACTIONS), "settings": (np.str_, None)}  # fmt: skip
    if set(arrays) != set(expected):
        raise ValueError(f"holds {sorted(arrays)}, a decision set holds {sorted(expected)}")
    for key, (dtype, width) in expected.items():
        array = arrays[key]
        if array.dtype.type is not dtype or (width is None and array.ndim) or (width and array.shape[1:] != (width,)):
            raise ValueError(f"{key} must be {np.dtype(dtype).name} {'text' if width is None else f'(n, {width})'}")
    observations, masks, values = arrays["observation"], arrays["action_mask"], arrays["values"]
    n = len(observations)
    if not n or len(masks) != n or len(values) != n:
        raise ValueError(f"needs one mask and one row of values per observation, got {n}, {len(masks)}, {len(values)}")
    if not np.isfinite(observations).all() or observations.min() < 0 or observations.max() > 1:
        raise ValueError("an observation holds a value outside 0..1")
    if (masks.sum(axis=1) < 2).any():
        raise ValueError("a decision has fewer than two legal actions")
    legal_values = values[masks]
    if not (np.isfinite(legal_values).all() and legal_values.min() >= 0 and legal_values.max() <= 1):
        raise ValueError("a legal action's value is not a chance in 0..1")
    if not np.isnan(values[~masks]).all():
        raise ValueError("an illegal action has a value (NaN expected)")
    try:
        settings = json.loads(str(arrays["settings"]))
    except json.JSONDecodeError as err:
        raise ValueError(f"settings is not JSON ({err})") from None
    return DecisionSet(name, observations, masks, values, settings if isinstance(settings, dict) else {})


def write_set(path: Path, observations: np.ndarray, masks: np.ndarray, values: np.ndarray, settings: dict) -> None:
    """Write a decision set (compressed), whole or not at all; it is checked as :func:`load_set` checks it."""
    arrays = {"observation": observations.astype(np.float32), "action_mask": masks.astype(bool),
              "values": values.astype(np.float32), "settings": np.array(json.dumps(settings, sort_keys=True))}  # fmt: skip
    _checked(path.stem, arrays)
    with atomic_path(path) as temporary:
        with open(temporary, "wb") as file:
            np.savez_compressed(file, **arrays)


def bot_actions(spec: str, decisions: DecisionSet, seed: int) -> tuple[np.ndarray, float]:
    """The actions of the bot of ``spec`` at every decision (in one call for a batch bot) and its
    seconds a decision; a ValueError for the oracle (it needs the hands, which a set does not hold)
    or an illegal action (naming the decision)."""
    import agents
    from agents.base import act_rows, refuse_sighted

    bot = refuse_sighted(agents.make(spec), "here: a decision set holds no hands")
    bot.reset(seed)
    start = time.perf_counter()
    actions = act_rows(bot, decisions.observations, decisions.masks)
    seconds = (time.perf_counter() - start) / len(actions)
    inside = (actions >= 0) & (actions < N_ACTIONS)
    legal = inside & decisions.masks[np.arange(len(actions)), np.where(inside, actions, 0)]
    illegal = np.flatnonzero(~legal)
    if len(illegal):
        raise ValueError(f"bot {spec!r} chose the illegal action {actions[illegal[0]]} at decision {illegal[0]}")
    return actions, seconds


def report(specs: Sequence[str], sets: Sequence[DecisionSet], seed: int) -> str:
    """The tables of the module docstring: each set's rows, and with several sets their pool
    (``all``), whose paired differences order the bots."""
    from .report import format_table
    from .stats import mean_interval

    def interval(values: np.ndarray, sign: str = "") -> str:
        if not len(values):
            return "-"
        mean, low, high = (1000 * x for x in mean_interval(values))
        return f"{mean:{sign}.2f} [{low:{sign}.2f}, {high:{sign}.2f}]"

    regrets: dict[str, dict[str, np.ndarray]] = {}  # set name -> bot -> regret of each decision
    seconds: dict[str, list[float]] = {spec: [] for spec in specs}
    bids: dict[str, np.ndarray] = {}
    for decisions in sets:
        regrets[decisions.name], bids[decisions.name] = {}, decisions.bids
        for spec in specs:
            actions, per_decision = bot_actions(spec, decisions, seed)
            regrets[decisions.name][spec] = decisions.regrets(actions)
            seconds[spec].append(per_decision)
    if len(sets) > 1:
        regrets["all"] = {spec: np.concatenate([regrets[d.name][spec] for d in sets]) for spec in specs}
        bids["all"] = np.concatenate([d.bids for d in sets])
    rows = [
        [name, spec, interval(found[spec]), interval(found[spec][bids[name]]), interval(found[spec][~bids[name]]),
         f"{1000 * float(np.mean(seconds[spec])):.2f}"]
        for name, found in regrets.items() for spec in specs
    ]  # fmt: skip
    pooled = list(regrets)[-1]
    ranked = sorted(specs, key=lambda spec: regrets[pooled][spec].mean())
    pairs = [[worse, better, interval(regrets[pooled][worse] - regrets[pooled][better], "+")]
             for better, worse in zip(ranked, ranked[1:])]  # fmt: skip
    sizes = ", ".join(f"{d.name} {len(d.masks):,} ({int(d.bids.sum()):,} bids)" for d in sets)
    return "\n".join([
        f"Regret a decision, in thousandths of a chance of the match (0 = always a best action); decisions: {sizes}",
        format_table(["set", "bot", "all, 95% CI", *(f"{p}, 95% CI" for p in PHASES), "ms"], rows, left=2),
        "",
        f"Each bot against the next better one on the same decisions ({pooled}): its regret minus the better one's",
        format_table(["bot", "next better", "difference, 95% CI"], pairs, left=2),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.regret",
        description="Mean regret a decision of bots or policy files on fixed decision sets, each legal action "
        "valued by a precise search (see the module's docstring: what a set can and cannot see).",
        epilog="Example: python -m eval.regret random rule_based expert student",
    )
    parser.add_argument("bots", nargs="+", metavar="BOT", help="bot names (agents.make specs) or policy files")
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME",
                        help=f"a shipped set ({', '.join(SHIPPED_SETS)}) or a set file; repeatable (default: all shipped)")  # fmt: skip
    parser.add_argument("--seed", type=count(0, 2**63 - 1), default=0, help="the bots' seed (default 0)")
    args = parser.parse_args(argv)
    one_blas_thread()
    try:
        sets = [load_set(name) for name in args.sets or SHIPPED_SETS]
        text = report(args.bots, sets, args.seed)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_script(main, "python -m eval.regret"))
