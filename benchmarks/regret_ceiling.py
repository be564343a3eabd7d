"""How far can a better choice take a search? Each decision's regret under a far larger search.

    python benchmarks/regret_ceiling.py --player search_v1 --matches 80 --worlds 1024 \
        --compare "search:keep=agents/pretrained/student_v2.npz,ms=0,confirm=256" student --workers 2

Plays ``--matches`` seeded matches with ``--player`` at every seat and, at each decision with a
choice of seats 0 and 2, searches again with ``--worlds`` worlds (``search:ms=0,margin=0``,
``--rollout``'s rollouts, ``expert`` by default; a seed of its own): every legal action's value,
a chance of the match. Each choice's regret is the best value minus the chosen action's, for the player, for each
``--compare`` bot asked the same question, and for a second search like the precise one with an
independent seed ("another precise search"). Regrets are printed by phase (the bids: stand / beg,
give one / run; the cards) with their sum over a match, one team's decisions.

Why: a decision's regret is what the team loses in chance of the match by that choice, if play
goes on as the rollouts play, so a team's summed regret over a match is the most a player who
chose every action by these values could gain over it, in match win rate. The precise search's
own noise inflates every regret by the same amount, which the second precise search (whose
true regret is close to none) measures: the player's regret minus its is what a player of such
values would gain. It bounds what any lever inside this kind of search (more worlds, a better
prior, better worlds) can add; only values of a different kind (better rollouts, a deeper search)
can go past it.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import agents
import allfours_env
from agents.search import MAX_WORLDS, SearchBot
from agents.shared.options import count, run_script
from agents.shared.processes import one_blas_thread
from allfours_env.actions import STAND
from eval.bots import check_bots
from eval.stats import mean_interval

PRECISE = "another precise search"
PHASES = ("bids", "cards")


def match_regrets(
    player: str, compare: list[str], worlds: int, rollout: str, seed: int
) -> dict[str, list[tuple[int, float]]]:
    """One seeded match of ``player``: (phase, regret) of each choice at seats 0 and 2, by chooser."""
    one_blas_thread()
    bot = agents.make(player)
    others = {spec: agents.make(spec) for spec in compare}
    precise, again = (SearchBot(worlds=worlds, ms=0, margin=0.0, rollout=rollout) for _ in range(2))
    found: dict[str, list[tuple[int, float]]] = {name: [] for name in (player, *compare, PRECISE)}
    env = allfours_env.env()
    env.reset(seed=seed)
    for k, agent in enumerate(env.agent_iter()):
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        decision = seed * 10_000 + k  # every bot's seed at this decision
        bot.reset(decision)
        action = bot.act(observation)
        legal = np.flatnonzero(observation["action_mask"])
        if len(legal) > 1 and agent in ("player_0", "player_2"):
            precise.reset(decision + 1)
            searched, phase = precise.search(observation), int(legal[0] < STAND)
            again.reset(decision + 2)
            choices = {player: action, PRECISE: again.act(observation)}
            for spec, other in others.items():
                other.reset(decision + 3)
                choices[spec] = other.act(observation)
            for name, choice in choices.items():
                found[name].append((phase, searched.regret(int(choice))))
        env.step(action)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--player", default="search_v1", help="the bot at every seat (default search_v1)")
    parser.add_argument("--compare", nargs="*", default=[], help="bots asked the same questions")
    parser.add_argument("--matches", type=count(1, 100_000), default=40)
    parser.add_argument(
        "--worlds", type=count(1, MAX_WORLDS), default=1024, help="worlds of the precise search (default 1024)"
    )
    parser.add_argument("--rollout", default="expert", help="the precise search's rollout policy (default expert)")
    parser.add_argument("--first-seed", type=count(0, 2**62), default=5000, help="the first match's seed")
    parser.add_argument("--workers", type=count(1, 64), default=1)
    args = parser.parse_args()
    try:  # every bot and the precise search built once here, so that a bad one is refused before any work
        check_bots([args.player, *args.compare])
        SearchBot(worlds=args.worlds, ms=0, margin=0.0, rollout=args.rollout)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    started = time.monotonic()
    seeds = range(args.first_seed, args.first_seed + args.matches)
    found: dict[str, list[tuple[int, float]]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        asked = (args.player, args.compare, args.worlds, args.rollout)
        jobs = [pool.submit(match_regrets, *asked, seed) for seed in seeds]
        for job in jobs:
            for name, rows in job.result().items():
                found.setdefault(name, []).extend(rows)
    print(f"{args.matches} matches of {args.player} (seeds {seeds.start}..{seeds.stop - 1}), values of "
          f"{args.worlds} worlds ({args.rollout} rollouts), {time.monotonic() - started:.0f} s; "
          "regret: a chance of the match, 95% interval")  # fmt: skip
    width = max(len(name) for name in found)
    for phase, phase_name in enumerate(PHASES):
        counts = sum(1 for p, _ in found[args.player] if p == phase)
        print(f"{phase_name}: {counts / args.matches:.1f} decisions a match (one team's)")
        for name, rows in found.items():
            regret = [r for p, r in rows if p == phase]
            mean, low, high = mean_interval(regret)
            print(f"  {name:{width}s}  a decision {mean:.5f} [{low:.5f}, {high:.5f}]  "
                  f"a match {sum(regret) / args.matches:.4f}")  # fmt: skip
    precise = np.array([r for _, r in found[PRECISE]])
    print("regret a match beyond another precise search's (what choosing by these values would gain over it):")
    for name, rows in found.items():
        if name != PRECISE:
            gap = (np.array([r for _, r in rows]) - precise) * len(precise) / args.matches  # paired by decision
            print("  {:{}s}  {:.4f} [{:.4f}, {:.4f}]".format(name, width, *mean_interval(gap)))

if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/regret_ceiling.py"))
