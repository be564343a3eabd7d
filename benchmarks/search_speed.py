"""Time the search bot takes a decision, split into decisions with a choice and forced ones.

    python benchmarks/search_speed.py [--worlds 32 64] [--matches 6]

Plays ``--matches`` whole matches of ``search`` (seats 0 and 2) against ``expert`` (seats 1 and
3) through the project's match loop (:class:`agents.match.Match`), decks from seeds 0, 1, ...,
and times every ``act`` of the search seats: the mean and the 95th percentile of those with more
than one legal action (a forced move is answered at once). One process, one thread. The figures
depend on the machine: the first plays of a deal and the bids, whose rollouts play the whole
deal, are the slow ones.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import agents
from agents.base import Observation
from agents.match import Match
from allfours_env.engine import Game
from allfours_env.rules import Rules


class Timed:
    """A bot's ``act`` timed, each decision filed by whether it had a choice."""

    def __init__(self, bot: agents.Bot) -> None:
        self.bot = bot
        self.seconds: dict[bool, list[float]] = {True: [], False: []}

    def reset(self, seed: int | None = None) -> None:
        self.bot.reset(seed)

    def act(self, observation: Observation) -> int:
        start = time.perf_counter()
        action = self.bot.act(observation)
        self.seconds[int(observation["action_mask"].sum()) > 1].append(time.perf_counter() - start)
        return action


def decision_seconds(worlds: int, matches: int) -> dict[bool, list[float]]:
    """Seconds of every search decision, keyed by whether it had a choice."""
    search = Timed(agents.make(f"search:worlds={worlds}"))
    bots = [search, agents.make("expert")] * 2  # search at seats 0 and 2
    for match in range(matches):
        for seat, bot in enumerate(bots):
            bot.reset(match * len(bots) + seat)
        Match(Game(Rules(), np.random.default_rng(match)), bots).run()
    return search.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[32, 64], help="world budgets to time")
    parser.add_argument("--matches", type=int, default=6, help="matches per budget")
    args = parser.parse_args()
    decision_seconds(1, 1)  # warm-up: numba's compiled kernels load on first use
    for worlds in args.worlds:
        times = decision_seconds(worlds, args.matches)
        choice, forced = np.array(times[True]) * 1000, np.array(times[False]) * 1000
        print(
            f"search:worlds={worlds}: {len(choice)} decisions with a choice, {choice.mean():.1f} ms mean, "
            f"{np.percentile(choice, 95):.1f} ms at the 95th percentile, {choice.max():.1f} ms at most; "
            f"{len(forced)} forced, {forced.mean():.3f} ms mean"
        )


if __name__ == "__main__":
    main()
