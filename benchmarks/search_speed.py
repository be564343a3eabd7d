"""Time the search bot takes a decision, split into decisions with a choice and forced ones.

    python benchmarks/search_speed.py [--spec search search:ms=0] [--matches 20]
    python benchmarks/search_speed.py --worlds 32 64 [--matches 6]

Plays ``--matches`` whole matches of each bot spec (seats 0 and 2) against ``expert`` (seats 1
and 3) through the project's match loop (:class:`allfours_env.match.Match`), decks from seeds 0, 1,
..., and times every ``act`` of the searching seats: the mean, the 95th and 99th percentiles and
the maximum of those with more than one legal action (a forced move is answered at once).
``--spec`` takes any bot specs (``search``, ``search:ms=0``, ``search:worlds=32,ms=40``);
``--worlds N`` is short for ``--spec search:worlds=N`` (the default budget kept). One
thread (set OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 to be sure); several specs are timed one after
the other, each in a fresh process (the memory allocator's state after one bot changes the
next one's figures by a third). The figures depend on the machine and on what else it runs: the
first plays of a deal and the bids, whose rollouts play the whole deal, are the slow ones. For a
search bot the lines also give the worlds and batches it searched, and for one with a time
budget (``ms``) how far the slowest decision went past the budget, and whether any decision
went past its budget plus its slowest batch (the bound the bot promises).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

import agents
from agents.base import Observation
from agents.search import MAX_WORLDS
from agents.shared.options import count, run_script
from allfours_env.engine import Game
from allfours_env.match import Match
from allfours_env.rules import Rules


class Timed:
    """A bot's ``act`` timed, each decision filed by whether it had a choice."""

    def __init__(self, bot: agents.Bot) -> None:
        self.bot = bot
        self.seconds: dict[bool, list[float]] = {True: [], False: []}
        self.searched: list = []  # the bot's ``last_search`` after each decision with a choice, if it tells

    def reset(self, seed: int | None = None) -> None:
        self.bot.reset(seed)

    def act(self, observation: Observation) -> int:
        start = time.perf_counter()
        action = self.bot.act(observation)
        seconds = time.perf_counter() - start
        choice = int(observation["action_mask"].sum()) > 1
        self.seconds[choice].append(seconds)
        if choice and getattr(self.bot, "last_search", None) is not None:
            self.searched.append(self.bot.last_search)
        return action


def decision_seconds(spec: str, matches: int) -> Timed:
    """The bot built from ``spec``, timed over ``matches`` matches against ``expert``."""
    search = Timed(agents.make(spec))
    bots = [search, agents.make("expert")] * 2  # search at seats 0 and 2
    for match in range(matches):
        for seat, bot in enumerate(bots):
            bot.reset(match * len(bots) + seat)
        Match(Game(Rules(), np.random.default_rng(match)), bots).run()
    return search


def summary(spec: str, timed: Timed) -> str:
    """The distribution of the decisions with a choice, and the forced ones; for a search bot,
    the worlds and batches it searched, and for one with a budget, how far past it it went."""
    bot, times = timed.bot, timed.seconds
    choice, forced = np.array(times[True]) * 1000, np.array(times[False]) * 1000
    line = (
        f"{spec}: {len(choice)} decisions with a choice: mean {choice.mean():.1f} ms, "
        f"p95 {np.percentile(choice, 95):.1f} ms, p99 {np.percentile(choice, 99):.1f} ms, "
        f"MAX {choice.max():.1f} ms; {len(forced)} forced, {forced.mean():.3f} ms mean"
    )
    if len(timed.searched) == len(choice):
        worlds = np.array([s.worlds for s in timed.searched])
        batches = np.array([s.batches for s in timed.searched])
        slowest_batch = np.array([s.slowest_batch for s in timed.searched]) * 1000
        line += (
            f"\n  worlds searched: mean {worlds.mean():.1f}, fewest {worlds.min()}, "
            f"all {bot.worlds} at {100 * (worlds == bot.worlds).mean():.1f}% of the decisions; "
            f"batches: mean {batches.mean():.2f}, most {batches.max()}; "
            f"slowest batch {slowest_batch.max():.1f} ms"
        )
        budget = getattr(bot, "ms", 0)
        if budget:
            over = choice - budget
            worst = int(np.argmax(over))
            beyond = choice - (budget + slowest_batch)  # past the budget plus the decision's slowest batch
            line += (
                f"\n  budget {budget:g} ms: {(over > 0).sum()} decisions over it ({100 * (over > 0).mean():.1f}%); "
                f"the slowest {over[worst]:+.1f} ms past it, its slowest batch {slowest_batch[worst]:.1f} ms "
                f"({timed.searched[worst].worlds} worlds in {timed.searched[worst].batches} batches); "
                f"decisions past budget + their slowest batch: {(beyond > 0).sum()} (at most {beyond.max():+.1f} ms)"
            )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", nargs="+", default=[], help="bot specs to time (e.g. search search:ms=0)")
    parser.add_argument(
        "--worlds", type=count(1, MAX_WORLDS), nargs="+", default=[], help="short for --spec search:worlds=N"
    )
    parser.add_argument("--matches", type=count(1, 10_000), default=6, help="matches per spec")
    args = parser.parse_args()
    specs = args.spec + [f"search:worlds={worlds}" for worlds in args.worlds] or ["search"]
    for spec in specs:
        try:
            agents.make(spec)
        except (ValueError, OSError) as err:
            parser.error(f"--spec {spec!r}: {err}")
    if len(specs) > 1:  # each in a fresh process: the memory allocator's state carries over and skews the next
        for spec in specs:
            subprocess.run([sys.executable, __file__, "--spec", spec, "--matches", str(args.matches)], check=True)
        return
    decision_seconds("search:worlds=1", 1)  # warm-up: numba's compiled kernels load on first use
    for spec in specs:
        start = time.perf_counter()
        timed = decision_seconds(spec, args.matches)
        print(f"{summary(spec, timed)}\n  ({args.matches} matches, {time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/search_speed.py"))
