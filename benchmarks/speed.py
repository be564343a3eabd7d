"""Decisions per second with uniformly random legal moves: All Fours against peer card-game envs.

    python benchmarks/speed.py [--seconds 5] [--rounds 5] [--baseline PATH]

The peers come with the bench extra (``pip install -e ".[bench]"``): those that cannot be
imported are skipped with a line that names the extra, and the rest still run.

Every AEC env is driven by the same loop: ``env.last()`` (observation and action mask read at
every decision), a uniform pick among the legal actions, ``env.step``. The raw engine loop asks
the engine for its legal actions and steps it; the engine + observe loop is the AEC loop on the
engine itself (``Game.observe``: the same observation and mask), so that env() over it is the
cost of the AEC layer alone (tests/test_env_speed.py guards that ratio). OpenSpiel's ``euchre`` (if ``open_spiel`` is
installed) reads ``information_state_tensor`` and ``legal_actions`` at every decision. One
process, one thread; the machine's other core is left idle. Each env runs briefly untimed first
(compiled code loaded), then ``--seconds`` in all, in ``--rounds`` slices taken in turn with the
others': a machine whose speed drifts during the run slows every env alike.

``--baseline PATH``: a checkout of another commit (``git worktree add /tmp/old 1a692bf``), whose
``env()`` is timed beside this one's by the same loop, in a process of its own (one process holds
one ``allfours_env``) that takes its slices in turn with the others.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

import allfours_env
from agents.shared.options import count, number, run_script
from allfours_env.engine import MATCH_OVER, Game
from allfours_env.rules import Rules

Result = tuple[int, int, float]  # decisions, episodes, seconds
BENCH_EXTRA = 'pip install -e ".[bench]"'


def aec_episode(env, pick: random.Random) -> int:
    """The AEC loop over one episode of a reset ``env``, to its end; the decisions made."""
    decisions = 0
    while True:
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            if not env.agents:
                return decisions
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[pick.randrange(len(legal))]))
        decisions += 1


def bench_aec(make_env: Callable, seconds: float, seed: int = 0) -> Result:
    env = make_env()
    env.reset(seed=seed)
    pick = random.Random(seed)
    decisions = episodes = 0
    start = time.perf_counter()
    while True:
        decisions += aec_episode(env, pick)
        episodes += 1
        if time.perf_counter() - start > seconds:
            break
        env.reset()
    return decisions, episodes, time.perf_counter() - start


def plain_match(game: Game, pick: random.Random) -> int:
    """The raw engine over ``game``'s match: a uniform legal pick from ``legal_actions``; the decisions."""
    decisions = 0
    while game.phase != MATCH_OVER:
        legal = game.legal_actions()
        game.step(legal[pick.randrange(len(legal))])
        decisions += 1
    return decisions


def observed_match(game: Game, pick: random.Random) -> int:
    """The AEC loop's work on the engine itself over ``game``'s match: the observation and mask of
    the seat to act read at every decision (``Game.observe``), a uniform legal pick; the decisions."""
    decisions = 0
    while game.phase != MATCH_OVER:
        _, mask = game.observe(game.current)
        legal = np.flatnonzero(mask)
        game.step(int(legal[pick.randrange(len(legal))]))
        decisions += 1
    return decisions


def timed_matches(play: Callable[[Game, random.Random], int], seconds: float, seed: int = 0) -> Result:
    """New matches played by ``play`` (``plain_match`` or ``observed_match``) for ``seconds``."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    rules = Rules()
    decisions = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        decisions += play(Game(rules, rng), pick)
        episodes += 1
    return decisions, episodes, time.perf_counter() - start


def bench_openspiel_euchre(seconds: float, seed: int = 0) -> Result:
    import pyspiel

    game = pyspiel.load_game("euchre")
    pick = random.Random(seed)
    decisions = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[pick.randrange(len(outcomes))][0])
                continue
            state.information_state_tensor()
            legal = state.legal_actions()
            state.apply_action(legal[pick.randrange(len(legal))])
            decisions += 1
        episodes += 1
    return decisions, episodes, time.perf_counter() - start


Run = Callable[[float], Result]  # seconds -> result
ENGINE_OBSERVED = "allfours engine + observe (obs + mask)"


def peer_runs() -> dict[str, Run]:
    """The peer benchmarks whose packages import; a line naming the extra for each one that does not."""
    runs: dict[str, Run] = {}
    try:
        from pettingzoo.classic import leduc_holdem_v4, texas_holdem_v4
    except ImportError as error:
        print(f"PettingZoo's classic games skipped ({error}); they come with the bench extra: {BENCH_EXTRA}")
    else:
        runs["pettingzoo leduc_holdem_v4"] = lambda seconds: bench_aec(leduc_holdem_v4.env, seconds)
        runs["pettingzoo texas_holdem_v4"] = lambda seconds: bench_aec(texas_holdem_v4.env, seconds)
    try:
        import pyspiel  # noqa: F401
    except ImportError:
        print(f"OpenSpiel euchre skipped (open_spiel is not installed); it comes with the bench extra: {BENCH_EXTRA}")
    else:
        runs["openspiel euchre (info-state tensor)"] = bench_openspiel_euchre
    return runs


def baseline_run(checkout: Path) -> Run:
    """``env()`` of the checkout ``checkout``, timed by :func:`bench_aec` in a worker process
    (this script with ``--serve``, importing the checkout's packages), one slice per request; a
    ValueError if the worker's ``allfours_env`` is not the checkout's."""
    environment = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    worker = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env=environment, cwd=checkout,
    )  # fmt: skip
    imported = Path(worker.stdout.readline().strip() or "(nothing: the worker stopped)")
    if checkout not in imported.parents:  # an installed allfours_env would time this commit twice
        worker.kill()
        worker.wait()
        raise ValueError(f"its worker imported allfours_env from {imported}, not from the checkout")

    def run(seconds: float) -> Result:
        worker.stdin.write(f"{seconds}\n")
        worker.stdin.flush()
        reply = worker.stdout.readline()
        if not reply:
            raise RuntimeError(f"the worker timing {checkout}'s env() stopped (exit code {worker.wait()})")
        return tuple(json.loads(reply))

    return run


def serve() -> None:
    """The worker of :func:`baseline_run`: the path of the ``allfours_env`` it imported, then a
    slice of ``env()`` per line of seconds read, its result a JSON line."""
    print(allfours_env.__file__, flush=True)
    for line in sys.stdin:
        print(json.dumps(bench_aec(allfours_env.env, float(line))), flush=True)


def checkout_path(text: str) -> Path:
    """``--baseline``: a folder holding the ``allfours_env`` and ``agents`` packages of another commit."""
    path = Path(text).resolve()
    if not (path / "allfours_env" / "env.py").is_file() or not (path / "agents").is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a checkout of this project (no allfours_env/env.py, agents/)")
    return path


def commit_of(checkout: Path) -> str:
    """The short commit of ``checkout``, or its path where git cannot tell."""
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or str(checkout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=number(0.01, 86_400), default=5.0, help="time per env (default 5)")
    parser.add_argument("--rounds", type=count(1, 1000), default=5, help="slices per env, taken in turn (default 5)")
    parser.add_argument(
        "--baseline", type=checkout_path, metavar="PATH", help="a checkout of another commit: its env() is timed too"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the baseline's worker
    args = parser.parse_args()
    if args.serve:
        return serve()
    runs: dict[str, Run] = {"allfours env() (AEC, obs + mask)": lambda seconds: bench_aec(allfours_env.env, seconds)}
    if args.baseline:
        try:
            runs[f"allfours env() at {commit_of(args.baseline)}"] = baseline_run(args.baseline)
        except ValueError as error:
            parser.error(f"--baseline {args.baseline}: {error}")
    engine, observed = partial(timed_matches, plain_match), partial(timed_matches, observed_match)
    runs.update({"allfours raw engine": engine, ENGINE_OBSERVED: observed, **peer_runs()})
    for run in runs.values():
        run(0.2)  # warm-up, untimed
    results = dict.fromkeys(runs, (0, 0, 0.0))
    for _ in range(args.rounds):
        for name, run in runs.items():
            results[name] = tuple(a + b for a, b in zip(results[name], run(args.seconds / args.rounds)))
    rate = {name: d / s for name, (d, _, s) in results.items()}
    ours = rate["allfours env() (AEC, obs + mask)"]
    print("| env | decisions/s | episodes/s | allfours env() / this |")
    print("|---|---:|---:|---:|")
    for name, (d, e, s) in results.items():
        print(f"| {name} | {d / s:,.0f} | {e / s:,.1f} | {ours / rate[name]:.2f}x |")


if __name__ == "__main__":
    raise SystemExit(run_script(main, "benchmarks/speed.py"))
