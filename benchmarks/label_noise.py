"""How much better than its student is a label? Regret of each choice under a far larger search.

    python benchmarks/label_noise.py runs/teacher/labels/round-1-self --rows 600 --worlds 1024 [--policies FILE ...]

Reads a label set (``python -m train.labels`` or a round of ``python -m train``), takes its first
``--rows`` decisions, and searches each again with ``--worlds`` worlds (``search:ms=0,margin=0``,
the label set's rollout policy, a seed of its own): every legal action's value, far less noisy
than the label's. Against those values it prints the mean regret (the best value minus the
chosen action's, a chance of the match, with a 95% interval) of the player whose play reached the
position (the student, in a DAgger round), of the label's action (what the fit is taught), of
a fresh search as the labels were made (the set's worlds and confirm), and of each of
``--policies`` (students fitted to the labels, say): if the label's regret is no smaller than the
player's, the labels cannot teach the player anything; if a fitted student's is no smaller, the
fit did not learn what they teach.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from agents.policy import PolicyBot
from agents.search import MAX_WORLDS, SearchBot
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from eval.stats import mean_interval
from train.rounds.label_set import iter_shards, read_meta
from train.rounds.labels import teacher


def mean_ci(x: np.ndarray) -> str:
    return "{:.4f} [{:.4f}, {:.4f}]".format(*mean_interval(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path, help="a label set's folder")
    parser.add_argument("--rows", type=count(1, 10**7), default=600)
    parser.add_argument("--worlds", type=count(1, MAX_WORLDS), default=1024, help="worlds of the precise search")
    parser.add_argument("--seed", type=count(0, 2**62), default=12345)
    parser.add_argument("--policies", nargs="*", default=[], help="policy files whose choices are scored too")
    args = parser.parse_args()
    one_blas_thread()
    try:
        settings = read_meta(args.labels)
        policies = {path: PolicyBot.from_file(path) for path in args.policies}
    except (ValueError, OSError) as err:  # not a label set; a missing or damaged policy file
        parser.error(str(err))
    rows: dict[str, list[np.ndarray]] = {}
    for shard in iter_shards(args.labels):
        for name, column in shard.items():
            rows.setdefault(name, []).append(column)
        if sum(len(c) for c in rows["search_action"]) >= args.rows:
            break
    data = {name: np.concatenate(parts)[: args.rows] for name, parts in rows.items()}
    precise = SearchBot(worlds=args.worlds, ms=0, margin=0.0, rollout=settings.rollout)
    again = teacher(settings)
    regret = {"player": [], "label": [], "a fresh search like the label's": [], **{p: [] for p in args.policies}}
    started = time.monotonic()
    for i in range(len(data["search_action"])):
        asked = {"observation": data["observation"][i], "action_mask": data["action_mask"][i].view(np.int8)}
        precise.reset(args.seed + i)
        searched = precise.search(asked)
        again.reset(args.seed + 10**9 + i)
        for name, action in (
            ("player", data["player_action"][i]), ("label", data["search_action"][i]),
            ("a fresh search like the label's", again.act(asked)),
            *((path, bot.act(asked)) for path, bot in policies.items()),
        ):  # fmt: skip
            regret[name].append(searched.regret(int(action)))
    print(f"{len(data['search_action'])} decisions of {args.labels}, values of {args.worlds} worlds "
          f"({time.monotonic() - started:.0f} s): mean regret, a chance of the match (95% interval)")  # fmt: skip
    for name, values in regret.items():
        print(f"  {name:32s} {mean_ci(np.array(values))}")
    player, label = np.array(regret["player"]), np.array(regret["label"])
    print(f"  {'player minus label':32s} {mean_ci(player - label)}")


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/label_noise.py"))
