"""The web server under load, on this machine only: bot move latency and many matches at once.

    python benchmarks/web_load.py [--matches 50] [--seconds 120] [--moves 200] [--browser]

Starts ``python -m agents.web --port 0`` as its own process on 127.0.0.1 (the only address it
sends to), then

1. **move latency**, one match at a time: for each bot (random, rule_based, expert, pretrained,
   search with its default 100 ms budget) watch matches of four such bots, ``--moves`` bot moves
   asked one by one (``POST /advance``, as the page does) after 10 untimed ones (a compiled bot's
   first move in a process loads its kernels; the server's start warms the default ones up);
   reports the bot's time in ``act``, the server's time for the request and the round trip seen
   by the client (mean, p95, max, ms);
2. **load**: ``--matches`` clients at once, each on its own connection, each playing one whole
   match to 14 (half of them play a seat, choosing their first legal action; half watch four
   default bots), as fast as the server answers; reports requests, errors, request latency and
   the wall time; stops by itself after ``--seconds``;
3. with ``--browser``: headless Chromium (Debian's /usr/bin/chromium, via Playwright) watches a
   match of the default bots at the page's fastest pace and reports the time from asking for a
   bot's move to the table drawn with it (the page's own measure, ``window.allfoursTimes``).

Every loop is bounded in count and time, and the server process is stopped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agents.shared.options import run_script

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
LATENCY_BOTS = ("random", "rule_based", "expert", "pretrained", "search")
DEFAULT_BOT = "rule_based"
WARM_UP_MOVES = 10


class Client:
    """One keep-alive connection to the server; JSON in and out."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection(HOST, port, timeout=30)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any, float]:
        start = time.perf_counter()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        # bytes, so http.client sends headers and body in one packet (no 40 ms delayed-ACK stall)
        self.connection.request(method, path, json.dumps(body).encode() if body is not None else None, headers)
        response = self.connection.getresponse()
        data = json.loads(response.read() or b"null")
        return response.status, data, 1000 * (time.perf_counter() - start)


def start_server(max_matches: int) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.web", "--host", HOST, "--port", "0", "--max-matches", str(max_matches)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = process.stdout.readline()  # "All Fours web page: http://127.0.0.1:PORT/ ..."
    if "http://" not in line:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    port = int(line.split("http://")[1].split("/")[0].rsplit(":", 1)[1])
    try:
        status = Client(port).call("GET", "/api/options")[0]
    except OSError as error:
        status = error
    if status != 200:
        process.kill()
        raise SystemExit(f"the server does not answer: {status}")
    return process, port


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"mean {statistics.fmean(values):6.2f}  p95 {p95:6.2f}  max {ordered[-1]:7.2f}"


def latency(port: int, bot: str, moves: int, warm_up: int = WARM_UP_MOVES) -> dict[str, list[float]]:
    """Bot moves asked one at a time, over as many watch matches as ``moves`` needs, after
    ``warm_up`` untimed moves (the first use of a compiled bot in a process loads its kernels)."""
    if warm_up:
        latency(port, bot, warm_up, 0)
    client = Client(port)
    out: dict[str, list[float]] = {"think": [], "server": [], "round_trip": []}
    seed = 0
    while len(out["think"]) < moves:
        status, state, _ = client.call("POST", "/api/matches", {"mode": "watch", "players": [bot] * 4, "seed": seed})
        assert status == 200, state
        seed += 1
        while not state["over"] and len(out["think"]) < moves:
            status, state, ms = client.call("POST", f"/api/matches/{state['id']}/advance", {"step": state["step"], "since": state["event_count"]})
            assert status == 200, state
            out["think"].append(state["move"]["think_ms"])
            out["server"].append(state["server_ms"])
            out["round_trip"].append(ms)
        client.call("DELETE", f"/api/matches/{state['id']}")
    return out


def one_match(port: int, index: int, deadline: float, results: list[dict[str, Any]]) -> None:
    """Play (even index) or watch (odd) one match to the end; record every request."""
    client = Client(port)
    record: dict[str, Any] = {"requests": 0, "errors": [], "ms": [], "over": False}
    try:
        players: list[str | None] = [DEFAULT_BOT] * 4
        body: dict[str, Any] = {"mode": "watch", "players": players, "seed": 1000 + index}
        if index % 2 == 0:
            players[0] = None
            body.update(mode="play", seat=0)
        status, state, ms = client.call("POST", "/api/matches", body)
        while True:
            record["requests"] += 1
            record["ms"].append(ms)
            if status != 200:
                record["errors"].append(f"{status}: {state}")
                break
            if state["over"]:
                record["over"] = True
                break
            if time.monotonic() > deadline:
                record["errors"].append("time limit")
                break
            base = f"/api/matches/{state['id']}"
            move = {"step": state["step"], "since": state["event_count"]}
            if state["mode"] == "play" and state["table"]["to_act"] == state["person"]:
                status, state, ms = client.call("POST", f"{base}/act", {**move, "action": state["legal"][0]["action"]})
            else:
                status, state, ms = client.call("POST", f"{base}/advance", move)
    except (OSError, http.client.HTTPException, ValueError) as error:
        record["errors"].append(f"{type(error).__name__}: {error}")
    results.append(record)


def load(port: int, matches: int, seconds: float) -> None:
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=one_match, args=(port, i, deadline, results)) for i in range(matches)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    wall = time.perf_counter() - start
    requests = sum(r["requests"] for r in results)
    errors = [e for r in results for e in r["errors"]]
    finished = sum(r["over"] for r in results)
    all_ms = [ms for r in results for ms in r["ms"]]
    print(f"\n{matches} matches at once ({matches - matches // 2} played, {matches // 2} watched, {DEFAULT_BOT} bots, to 14):")
    print(f"  finished {finished}/{matches}, {requests:,} requests in {wall:.1f} s ({requests / wall:,.0f}/s), errors {len(errors)}")
    print(f"  request latency ms: {summary(all_ms)}")
    for error in errors[:5]:
        print(f"  error: {error[:200]}")


def browser_latency(port: int, moves: int) -> None:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.test_web_browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(f"http://{HOST}:{port}/")
        page.wait_for_selector("body[data-ready=true]", state="attached")
        page.click("#mode-watch")
        for seat in range(4):
            page.fill(f"#bot-{seat}", "expert" if seat % 2 == 0 else DEFAULT_BOT)
        page.select_option("#speed", "0")
        page.click("#start")
        deadline = time.monotonic() + 120
        while page.evaluate("window.allfoursTimes.length") < moves and time.monotonic() < deadline:
            if page.get_attribute("#game", "data-over") == "true":
                page.click("#start")
            page.wait_for_timeout(200)
        times = page.evaluate("window.allfoursTimes")
        browser.close()
    shown = [t["shown_ms"] for t in times]
    print(f"\nin Chromium, expert and rule_based bots, {len(shown)} moves: ask for the move -> table drawn, ms: {summary(shown)}")
    print(f"  moves drawn within 100 ms: {sum(s <= 100 for s in shown)}/{len(shown)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/web_load.py", description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=50, help="matches at once in the load test (default 50)")
    parser.add_argument("--seconds", type=float, default=120.0, help="time limit of the load test (default 120)")
    parser.add_argument("--moves", type=int, default=200, help="bot moves timed per bot (default 200)")
    parser.add_argument("--browser", action="store_true", help="also time moves drawn in headless Chromium")
    args = parser.parse_args(argv)
    if not 1 <= args.matches <= 500 or not 0 < args.seconds <= 1800 or not 1 <= args.moves <= 10_000:
        parser.error("--matches 1..500, --seconds up to 1800, --moves 1..10,000")
    process, port = start_server(max(args.matches + 10, 200))
    try:
        print(f"server on http://{HOST}:{port}/ (its own process); bot move latency, {args.moves} moves each, ms:")
        for bot in LATENCY_BOTS:
            times = latency(port, bot, args.moves)
            print(f"  {bot:11s} act {summary(times['think'])} | server {summary(times['server'])} | round trip {summary(times['round_trip'])}")
        load(port, args.matches, args.seconds)
        if args.browser:
            browser_latency(port, args.moves)
    finally:
        process.terminate()
        process.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, "benchmarks/web_load.py"))
