"""Where two bots lose their points: the reviews of several matches, added up per bot.

    python -m eval rule_based search --boards 4 --logs runs/review/logs --log-boards 4
    for f in runs/review/logs/*_a?.json; do python -m agents.review "$f"; done
    python benchmarks/review_bots.py runs/review/logs/*.review.json

Reads review JSON files (``python -m agents.review`` writes one beside each log) and prints, per
player name (a bot, over every seat it held): the decisions reviewed, the accuracy (the share
within 1 point of chance of the best, pooled), the average chance lost a decision, the
inaccuracies, mistakes and blunders (and per 100 decisions), the average and the largest loss of
its flagged decisions, and the points a deal its team's flagged decisions cost (its two seats
together, over the deals of the matches); then each review's time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reviews", nargs="+", type=Path, help="review JSON files (python -m agents.review writes them)")
    args = parser.parse_args(argv)
    bots: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    losses: dict[str, list[float]] = defaultdict(list)
    flagged: dict[str, list[float]] = defaultdict(list)
    times = []
    for path in args.reviews:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:  # missing, unreadable, not JSON
            parser.error(f"{path}: {err}")
        if not isinstance(data, dict) or not {"log", "decisions", "seconds", "settings"} <= data.keys():
            parser.error(f"{path} is not a review's JSON (python -m agents.review writes them)")
        deals = data["log"]["deals"]
        players = data["log"]["players"]
        times.append((path.name, len(data["decisions"]), data["seconds"], data["settings"]["workers"]))
        for team in (0, 1):
            names = {players[s] for s in (team, team + 2)}
            if len(names) == 1:
                bots[names.pop()]["team_deals"] += deals
        for seat in data["seats"]:
            bot = bots[players[seat["seat"]]]
            bot["decisions"] += seat["decisions"]
            bot["points_lost"] += seat["points_lost"]
            for label in ("inaccuracy", "mistake", "blunder"):
                bot[label] += seat[label]
        for decision in data["decisions"]:
            name = players[decision["seat"]]
            losses[name].append(decision["loss"])
            if decision["label"]:
                flagged[name].append(decision["loss"])
    print(f"{len(args.reviews)} reviews; worlds {sorted({json.loads(p.read_text())['settings']['worlds'] for p in args.reviews})}")
    print(f"{'bot':<14}{'decisions':>10}{'accuracy':>10}{'avg loss':>10}{'inacc.':>8}{'mistakes':>10}{'blunders':>10}"
          f"{'flagged /100':>14}{'flagged avg':>13}{'largest':>9}{'team pts a deal lost':>22}")  # fmt: skip
    for name, bot in sorted(bots.items()):
        mine, bad = losses[name], flagged[name]
        n = len(mine)
        accuracy = sum(loss < 0.01 for loss in mine) / n if n else 0.0
        print(
            f"{name:<14}{n:>10}{100 * accuracy:>9.1f}%{100 * sum(mine) / max(1, n):>10.2f}{int(bot['inaccuracy']):>8}"
            f"{int(bot['mistake']):>10}{int(bot['blunder']):>10}{100 * len(bad) / max(1, n):>14.1f}"
            f"{100 * sum(bad) / max(1, len(bad)):>13.2f}{100 * max(bad, default=0):>9.1f}"
            f"{bot['points_lost'] / max(1, bot['team_deals']):>22.3f}"
        )
    print("times: " + "; ".join(f"{name} {n} decisions {s:.1f} s ({w} workers)" for name, n, s, w in times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
