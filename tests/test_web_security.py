"""The web server against a hostile client: what a play client may learn, what files the page may
name, how much memory it may make the server hold, and requests that used to answer 500.

The first test is the attack itself: a client plays a whole match and then tries every number it
was ever sent (every field, every header, ids and timings included) as the seed of the engine's
generator, as the server uses it, to rebuild the other seats' hands. None may rebuild them; the
seed the server shows once the match is over must (so the attempt is a real one).
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import logging
import math
import re
import signal
import socket
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web page needs the 'web' extra: pip install -e '.[web]'")
pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (the 'dev' extra)")

from starlette.testclient import TestClient

from agents.apps import match_log
from agents.apps.match_log import MAX_SEED, MatchLog, Recorder, Replay, loads, start
from agents.apps.web import sessions, views
from agents.apps.web.__main__ import allowed_hosts, main, reach_warning
from agents.apps.web.app import MAX_UPLOAD_BYTES, SECURITY_HEADERS, create_app
from agents.builtin import PRETRAINED
from allfours_env.cards import N_SEATS
from allfours_env.engine import Game
from allfours_env.match import Match
from allfours_env.rules import Rules

RULES = {"target_score": 5}  # (above a kick's 3 points: a match is never over as it is dealt)
JSON = {"content-type": "application/json"}
DIGITS = re.compile(r"\d+(?:\.\d+)?")
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,}")
OFFSETS = range(-4, 5)


class Capture:
    """A TestClient that keeps everything the client receives: status, headers and body text."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.received: list[str] = []

    def __call__(self, method: str, path: str, **kwargs) -> dict:
        response = self.client.request(method, path, **kwargs)
        self.received.append(f"{response.status_code} {response.reason_phrase}")
        self.received += [f"{name}: {value}" for name, value in response.headers.items()]
        self.received.append(response.text)
        return response.json()


def play_capturing(client: TestClient, person: int = 1) -> tuple[Capture, dict, list[str]]:
    """A play match with no seed given, played to its end through every kind of request; the
    capture, the final state, and what was received while the match was on."""
    capture = Capture(client)
    capture("GET", "/api/options")
    players = ["expert", "random", "search:worlds=8,ms=0", "rule_based"]
    players[person] = None
    state = capture("POST", "/api/matches", json={"mode": "play", "seat": person, "players": players, "rules": RULES})
    match = f"/api/matches/{state['id']}"
    capture("GET", f"{match}/log")  # refused (409) while on: its text is received too
    capture("GET", f"{match}?open=1")  # refused (403)
    while not state["over"]:
        on = list(capture.received)
        capture("GET", f"{match}?since={state['event_count']}")
        if state["table"]["to_act"] == person:
            capture("GET", f"{match}/hint")
            state = capture("POST", f"{match}/act", json={"action": state["legal"][0]["action"], "step": state["step"]})
        else:
            state = capture("POST", f"{match}/advance", json={"step": state["step"], "since": state["event_count"]})
    return capture, state, on


def numbers_in(texts: list[str]) -> set[int]:
    """Every integer a client could read in ``texts``: digit runs (a decimal's digits with and
    without its point), and the bytes of every id-like token read as an integer either way."""
    found: set[int] = set()
    for text in texts:
        for run in DIGITS.findall(text):
            found |= {int(run.replace(".", "")), int(run.split(".")[0])}
        for token in TOKEN.findall(text):
            try:
                raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            except (binascii.Error, ValueError):
                continue
            found |= {int.from_bytes(raw, "big"), int.from_bytes(raw, "little")}
    return {x + d for x in found for d in OFFSETS if x + d >= 0}


def others_hands(game: Game, person: int) -> list[int]:
    return [hand for seat, hand in enumerate(game.hands) if seat != person]


def test_a_play_client_cannot_rebuild_the_hidden_cards():
    client = TestClient(create_app())
    person = 1
    capture, end, on = play_capturing(client, person)
    log = loads(client.get(f"/api/matches/{end['id']}/log").text)
    truth = others_hands(start(log), person)  # the first deal's hidden hands
    rules = Rules(**RULES)
    candidates = numbers_in(on)
    assert len(candidates) > 500  # (steps, counts, timings, ids, header values...)
    rebuilt = [x for x in candidates if others_hands(Game(rules, np.random.default_rng(x)), person) == truth]
    assert not rebuilt, f"seeds found in what the client received while the match was on: {rebuilt[:5]}"
    # Once the match is over the seed is shown, and it does deal those hands: the attempt above is a real one.
    assert end["seed"] is not None and int(end["seed"]) in numbers_in(capture.received) and int(end["seed"]) == log.seed
    assert others_hands(Game(rules, np.random.default_rng(int(end["seed"]))), person) == truth


def test_drawn_seeds_have_128_random_bits():
    client = TestClient(create_app())
    store = client.app.state.store
    seeds = []
    for _ in range(8):
        state = client.post("/api/matches", json={"mode": "play", "seat": 0, "players": [None, *["random"] * 3]}).json()
        assert state["seed"] is None
        seeds.append(store.get(state["id"]).seed)
    assert len(set(seeds)) == 8 and max(s.bit_length() for s in seeds) > 120 and max(seeds) <= MAX_SEED


def test_a_chosen_seed_deals_as_given_and_is_not_sent_back_while_on():
    client = TestClient(create_app())
    seed = str(MAX_SEED - 5)  # as text: JavaScript cannot hold it as a number
    body = {"mode": "play", "seat": 0, "players": [None, *["random"] * 3], "seed": seed, "rules": RULES}
    play = client.post("/api/matches", json=body).json()
    body = {"mode": "watch", "players": ["random"] * 4, "seed": int(seed), "rules": RULES}
    watch = client.post("/api/matches", json=body).json()
    assert play["seed"] is None and watch["seed"] == seed  # (a watch shows every hand anyway)
    store = client.app.state.store
    assert store.get(play["id"]).game.hands == store.get(watch["id"]).game.hands
    while not play["over"]:
        path = "act" if play["table"]["to_act"] == 0 else "advance"
        body = {"step": play["step"], **({"action": play["legal"][0]["action"]} if path == "act" else {})}
        play = client.post(f"/api/matches/{play['id']}/{path}", json=body).json()
        assert play["seed"] is None or play["over"]
    assert play["seed"] == seed and loads(client.get(f"/api/matches/{play['id']}/log").text).seed == int(seed)


def test_bots_and_the_hinter_draw_from_streams_of_their_own():
    client = TestClient(create_app())
    body = {"mode": "play", "seat": 3, "players": ["random", "random", "random", None]}
    state = client.post("/api/matches", json=body).json()
    session = client.app.state.store.get(state["id"])
    near_seed = [np.random.default_rng(session.seed + d).bit_generator.state["state"] for d in OFFSETS]
    streams = [bot._rng.bit_generator.state["state"] for bot in session.match.bots[:3]]
    streams.append(session.hinter().search._rng.bit_generator.state["state"])
    assert not [s for s in streams if s in near_seed]
    assert len({json.dumps(s) for s in streams}) == 4


# ---------------------------------------------------------------- files the page names, hosts


@pytest.mark.parametrize("option", ["keep", "rollout", "opponents"])
def test_search_files_only_by_a_command_line_label(option, tmp_path, monkeypatch):
    client = TestClient(create_app(policy_files=(str(PRETRAINED),)))
    copy = tmp_path / "x.npz"
    copy.write_bytes(PRETRAINED.read_bytes())
    loaded = []
    monkeypatch.setattr("agents.policy.load_weights", lambda path: loaded.append(path))
    messages = []
    for path in (copy, tmp_path / "y.npz", "../../../etc/passwd.npz"):
        spec = f"search:{option}={path},worlds=8,ms=0"
        response = client.post("/api/matches", json={"mode": "watch", "players": [spec, *["random"] * 3]})
        assert response.status_code == 400, response.text
        messages.append(re.sub(r"got '[^']*'", "got PATH", response.json()["error"]))
    assert not loaded and len(set(messages)) == 1 and "loads no file the page names" in messages[0], messages
    monkeypatch.undo()
    spec = f"search:{option}={PRETRAINED.name},worlds=8,ms=0"
    state = client.post("/api/matches", json={"mode": "watch", "players": [spec, *["random"] * 3]}).json()
    assert state["players"][0] == spec


@pytest.mark.parametrize(
    "spec",
    [
        "search:opponents=rule_based", "search:opponents=random,worlds=64",
        "search:opponents=pretrained,worlds=128,ms=2000",
        "search:opponents=expert,worlds=512,ms=2000", "search:rollout=allfours_v1.npz,worlds=512",
    ],
)  # fmt: skip
def test_every_costly_search_option_is_within_the_pages_cap(spec):
    client = TestClient(create_app(policy_files=(str(PRETRAINED),)))
    response = client.post("/api/matches", json={"mode": "watch", "players": [spec, *["random"] * 3]})
    assert response.status_code == 400 and "more work than the page's search takes" in response.json()["error"]
    allowed = re.search(r"at most (\d+) worlds", response.json()["error"])
    cheaper = re.sub(r",?worlds=\d+", "", spec) + f",worlds={allowed.group(1)}"
    state = client.post("/api/matches", json={"mode": "watch", "players": [cheaper, *["random"] * 3]}).json()
    assert state["players"][0] == cheaper


def test_the_costliest_opponents_the_page_takes_decide_within_two_seconds():
    client = TestClient(create_app())
    spec = "search:opponents=rule_based,worlds=32,ms=0"  # (the 1.4 to 8.2 s a move: 64 worlds, ms up to 2000)
    state = client.post("/api/matches", json={"mode": "watch", "players": [spec, *["expert"] * 3], "seed": 3}).json()
    session = client.app.state.store.get(state["id"])
    slowest = 0.0
    while session.game.tricks_played < 4 or session.game.current != 0:  # (late in a deal: the most to check)
        if session.game.current == 0 and len(session.game.legal_actions()) > 1:
            begun = time.perf_counter()
            client.post(f"/api/matches/{state['id']}/advance", json={"step": session.step})
            slowest = max(slowest, time.perf_counter() - begun)
        else:
            client.post(f"/api/matches/{state['id']}/advance", json={"step": session.step})
    assert slowest < 2.0, slowest


def test_other_hosts_warn_and_keep_the_host_check():
    assert reach_warning("127.0.0.1", allowed_hosts("127.0.0.1", [])) is None
    hosts = allowed_hosts("0.0.0.0", [])
    assert hosts is not None and "0.0.0.0" not in hosts and {"127.0.0.1", "localhost", "[::1]"} <= set(hosts)
    assert "reach this server" in reach_warning("0.0.0.0", hosts) and "--allow-host" in reach_warning("0.0.0.0", hosts)
    lan = allowed_hosts("192.168.1.5", [])
    assert "192.168.1.5" in lan and "reach this server" in reach_warning("192.168.1.5", lan)
    assert {"pc.lan", "fe80::1", "[fe80::1]"} <= set(allowed_hosts("::", ["pc.lan", "fe80::1"]))
    assert allowed_hosts("0.0.0.0", ["*"]) is None and "DNS rebinding" in reach_warning("0.0.0.0", None)
    app = create_app(allowed_hosts=hosts)
    assert TestClient(app, base_url="http://evil.example:8765").get("/api/options").status_code == 400
    assert TestClient(app, base_url="http://127.0.0.1:8765").get("/api/options").status_code == 200


def test_the_server_warns_on_all_addresses_and_stops_on_ctrl_c_with_one_line():
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.web", "--host", "0.0.0.0", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout.readline().startswith("All Fours web page: http://0.0.0.0:")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and out.strip() == "stopped", (process.returncode, out, err[-3000:])
    assert "warning: listening on every address" in err and "Traceback" not in err


@pytest.mark.parametrize("minutes", ["nan", "inf", "-1", "0", "1e9"])
def test_bad_idle_minutes_refused_at_start(minutes, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--idle-minutes", minutes, "--port", "0"])
    assert stop.value.code == 2 and "--idle-minutes must be above 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="idle time"):
        create_app(idle_seconds=float(minutes) * 60)


# ---------------------------------------------------------------- memory


def long_log(actions: int) -> MatchLog:
    """A legal log of exactly ``actions`` actions (a match to 1,000 left unfinished; first legal actions)."""
    game = Game(Rules(target_score=1000), np.random.default_rng(5))
    recorder = Recorder(game)
    match = Match(game, [None] * N_SEATS, on_event=recorder)
    for _ in range(actions):
        match.step(game.legal_actions()[0])
    return recorder.log(seed=5)


def test_a_log_longer_than_a_match_here_is_refused_before_its_replay():
    client = TestClient(create_app())
    text = long_log(sessions.MAX_STEPS + 1).dumps()
    assert len(text) < MAX_UPLOAD_BYTES
    begun = time.perf_counter()
    response = client.post("/api/replays", content=text, headers=JSON)
    assert response.status_code == 400 and "at most 10,000 are read here" in response.json()["error"]
    assert time.perf_counter() - begun < 1.0
    response = client.post("/api/replays", content=b" " * (MAX_UPLOAD_BYTES + 1), headers=JSON)
    assert response.status_code == 413


def test_a_replay_at_the_limit_holds_little_and_answers_small():
    client = TestClient(create_app())
    text = long_log(sessions.MAX_STEPS).dumps()
    tracemalloc.start()
    try:
        state = client.post("/api/replays", content=text, headers=JSON).json()
        last = client.get(f"/api/matches/{state['id']}?step={state['steps']}")
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(last.content) < 50_000 and len(last.json()["deals"]) == 10
    estimate = client.app.state.store.get(state["id"]).estimated_bytes()
    assert held < estimate < 4 * held and estimate < 8 * 2**20  # measured against the estimate the budget adds up
    begun = time.perf_counter()
    assert client.get(f"/api/matches/{state['id']}?step={state['steps'] - 1}").status_code == 200  # back: replayed
    assert time.perf_counter() - begun < 1.0


def test_a_live_match_stops_at_the_step_limit(monkeypatch):
    monkeypatch.setattr(sessions, "MAX_STEPS", 12)
    client = TestClient(create_app())
    state = client.post("/api/matches", json={"mode": "watch", "players": ["random"] * 4}).json()
    for _ in range(12):
        state = client.post(f"/api/matches/{state['id']}/advance", json={"step": state["step"]}).json()
    response = client.post(f"/api/matches/{state['id']}/advance", json={"step": 12})
    assert response.status_code == 409 and "reached 12 actions" in response.json()["error"]


def test_the_store_keeps_to_its_memory_budget():
    client = TestClient(create_app(memory_budget=8 * 2**20, max_matches=50, client_share=1.0))
    body = {"mode": "play", "seat": 0, "players": [None, "pretrained", "pretrained", "pretrained"]}
    ids = [client.post("/api/matches", json=body).json()["id"] for _ in range(2)]  # about 3 MB each: their networks
    response = client.post("/api/matches", json=body)
    assert response.status_code == 503 and "more than the 8 MB the server keeps for matches" in response.json()["error"]
    assert client.post("/api/matches", json={**body, "players": [None, *["random"] * 3]}).status_code == 200
    client.delete(f"/api/matches/{ids[0]}")
    assert client.post("/api/matches", json=body).status_code == 200


# ---------------------------------------------------------------- what used to answer 500


def test_deeply_nested_json_is_a_bad_request():
    client = TestClient(create_app())
    deep = "[" * 30_000 + "]" * 30_000
    for path in ("/api/matches", "/api/matches/x/act"):
        response = client.post(path, content=deep, headers=JSON)
        assert response.status_code in (400, 404) and "error" in response.json()
    response = client.post("/api/matches", content=deep, headers=JSON)
    assert response.status_code == 400 and "not JSON" in response.json()["error"]
    response = client.post("/api/replays", content=deep, headers=JSON)
    assert response.status_code == 400 and "does not replay" in response.json()["error"]


def test_a_replay_seed_out_of_range_is_refused_and_any_other_hints():
    client = TestClient(create_app())
    log = long_log(30).to_json()
    response = client.post("/api/replays", content=json.dumps({**log, "seed": -1}), headers=JSON)
    assert response.status_code == 400 and "'seed' must be null or an integer" in response.json()["error"]
    for seed in (None, 0, MAX_SEED):
        state = client.post("/api/replays", content=json.dumps({**log, "seed": seed}), headers=JSON).json()
        assert state["seed"] == (None if seed is None else str(seed))
        assert client.get(f"/api/matches/{state['id']}/hint?step=5").status_code == 200


def test_every_response_forbids_framing(monkeypatch):
    client = TestClient(create_app(allowed_hosts=["testserver"]), raise_server_exceptions=False)
    state = client.post("/api/matches", json={"mode": "watch", "players": ["random"] * 4}).json()
    monkeypatch.setattr(sessions.LiveMatch, "state", lambda *args, **kwargs: 1 / 0)  # a bug: a 500
    responses = {
        "page": client.get("/"), "static file": client.get("/static/app.js"), "api": client.get("/api/options"),
        "400": client.post("/api/matches", json={}), "404": client.get("/nowhere"), "405": client.put("/api/options"),
        "413": client.post("/api/matches", content=b"{" + b" " * 70_000 + b"}", headers=JSON),
        "415": client.post("/api/matches", content=b"x"), "500": client.get(f"/api/matches/{state['id']}"),
        "bad host": TestClient(client.app, base_url="http://evil.example").get("/"),
    }  # fmt: skip
    for what, response in responses.items():
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (what, name)
    assert responses["500"].status_code == 500 and "ZeroDivisionError" in responses["500"].json()["error"]
    assert "frame-ancestors 'none'" in SECURITY_HEADERS["Content-Security-Policy"]
    assert not math.isnan(client.get("/api/options").json()["idle_minutes"])


def test_a_client_that_leaves_mid_body_costs_at_most_one_log_line(caplog):
    app = create_app()
    body = b'{"mode": "watch", "players": '  # the rest never comes: the client is gone
    messages = iter([{"type": "http.request", "body": body, "more_body": True}, {"type": "http.disconnect"}])
    sent = []

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/matches", "raw_path": b"/api/matches", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip
    import anyio

    with caplog.at_level("DEBUG"):
        anyio.run(app, scope, receive, send)  # (before: ClientDisconnect raised out of the app, a traceback)
    records = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert len(records) <= 1 and not any(r.exc_info for r in records), [r.getMessage() for r in records]
    assert len(app.state.store) == 0


def test_a_replay_jumps_back_from_kept_snapshots(monkeypatch):
    log = long_log(sessions.MAX_STEPS)
    steps = len(log.actions)
    jumps = [steps, steps - 1, 0, 1, *np.random.default_rng(0).integers(0, steps, 12).tolist(), 7_777, 7_776]

    def seen(game: Game) -> tuple:
        return game.hands, game.scores, game.played, game.current, list(game.events)

    truth, game = {}, start(log)
    for step in range(steps + 1):
        truth[step] = seen(game) if step in jumps else None
        if step < steps:
            match_log.apply(game, log, step)
    replay, applied, real_apply = Replay(log), [], match_log.apply
    monkeypatch.setattr(match_log, "apply", lambda game, log, i: applied.append(i) or real_apply(game, log, i))
    for step in jumps:
        applied.clear()
        assert seen(replay.game_at(step)) == truth[step], step
        assert len(applied) <= 1_000 or step == steps == jumps[0], (step, len(applied))  # (before: up to 9,999)
        events = truth[step][-1]  # a response's last deals, read from their events alone, as from all of them:
        assert views.deals(events, views.MAX_DEALS) == views.deals(events)[-views.MAX_DEALS :], step


def test_the_server_trusts_no_header_for_who_a_client_is_and_leaves_disconnects_unlogged():
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.web", "--port", "0", "--max-matches", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = int(re.search(r":(\d+)/", process.stdout.readline()).group(1))
        for _ in range(3):  # a body cut off by the client leaving (before: 50 lines of traceback each)
            with socket.create_connection(("127.0.0.1", port)) as cut:
                cut.sendall(b"POST /api/replays HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 100000\r\n\r\n" + b"{" * 5000)  # fmt: skip
                time.sleep(0.1)
        connection, statuses = http.client.HTTPConnection("127.0.0.1", port, timeout=30), []
        for i in range(4):  # a header claiming another address changes nothing: a quarter of 8 for 127.0.0.1
            body = json.dumps({"mode": "watch", "players": ["random"] * 4})
            connection.request("POST", "/api/matches", body, {**JSON, "X-Forwarded-For": f"10.1.{i}.1"})
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
        assert statuses == [200, 200, 429, 429], statuses
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert err == "", err[-3000:]


def test_one_client_cannot_take_every_match_or_the_memory():
    app = create_app(max_matches=40, memory_budget=16 * 2**20)
    hostile, other = TestClient(app, client=("10.0.0.66", 40000)), TestClient(app, client=("10.0.0.7", 40000))
    body = {"mode": "watch", "players": ["random"] * 4}
    statuses = [hostile.post("/api/matches", json=body).status_code for _ in range(40)]
    assert statuses == [200] * 10 + [429] * 30, statuses  # a quarter of the matches (before: all 40, then 503)
    assert other.post("/api/matches", json=body).status_code == 200
    neighbour = TestClient(app, client=("2001:db8::1", 40000))  # (one IPv6 /64 is one client: one machine's)
    assert [neighbour.post("/api/matches", json=body).status_code for _ in range(10)] == [200] * 10
    assert TestClient(app, client=("2001:db8::2:1", 1)).post("/api/matches", json=body).status_code == 429
    for match_id in list(app.state.store._sessions):
        app.state.store.remove(match_id)
    text = long_log(3_000).dumps()  # a replay of about 1.3 MB by its estimate
    uploads = [hostile.post("/api/replays", content=text, headers=JSON) for _ in range(10)]
    statuses, held = [u.status_code for u in uploads], app.state.store._sessions.values()
    assert statuses == [200] * 3 + [429] * 7, statuses  # (before: all 10 taken, 13 MB of the 16)
    assert sum(s.estimated_bytes() for s in held) <= 4 * 2**20  # a quarter of the budget
    assert "one client's matches" in uploads[-1].json()["error"]
    assert other.post("/api/replays", content=text, headers=JSON).status_code == 200
