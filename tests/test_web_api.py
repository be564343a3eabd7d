"""The web server's API (agents/apps/web) through Starlette's TestClient: no browser, no socket."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="the web page needs the 'web' extra: pip install -e '.[web]'")
pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (the 'dev' extra)")

from starlette.testclient import TestClient

from agents.apps.match_log import loads, replay
from agents.apps.web.app import create_app
from agents.builtin import PRETRAINED
from allfours_env.cards import N_SEATS, card_text
from tests.web_leaks import assert_seat_only, cards_in, hidden_cards

SHORT = {"target_score": 3}
BOTS = ["rule_based"] * 4


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def client(clock) -> TestClient:
    return TestClient(create_app(idle_seconds=60, max_matches=5, clock=clock, client_share=1.0))  # (one client: all)


def new_match(client: TestClient, mode: str = "play", seat: int = 0, players=None, rules=SHORT, seed=7) -> dict:
    players = list(players or BOTS)
    if mode == "play":
        players[seat] = None
    response = client.post("/api/matches", json={"mode": mode, "seat": seat, "players": players, "rules": rules, "seed": seed})
    assert response.status_code == 200, response.text
    return response.json()


def game_of(client: TestClient, match_id: str):
    return client.app.state.store.get(match_id).game


def play_to_end(client: TestClient, state: dict, check=None) -> dict:
    while not state["over"]:
        path = "act" if state["table"]["to_act"] == state["person"] else "advance"
        body = {"step": state["step"], "since": state["event_count"]}
        if path == "act":
            body["action"] = state["legal"][-1]["action"]
        response = client.post(f"/api/matches/{state['id']}/{path}", json=body)
        assert response.status_code == 200, response.text
        state = response.json()
        if check:
            check(state)
    return state


def test_options_list_the_bots_and_the_rules(client):
    options = client.get("/api/options").json()
    assert {"random", "rule_based", "expert", "search", "pretrained"} <= set(options["bots"]["names"])
    keys = [rule["key"] for rule in options["rules"]]
    assert keys[0] == "target_score" and "first_dealer" in keys and len(keys) == 13


def test_play_a_whole_match_seeing_only_own_cards(client):
    state = new_match(client, seat=1, players=["expert", None, "rule_based", "random"])
    match_id = state["id"]
    seen_steps = []

    def check(response: dict) -> None:
        game = game_of(client, match_id)
        assert_seat_only(response, game, 1)
        assert set(response["table"]["hand"]) == {card_text(c) for c in game.hand(1)}
        for legal in response["legal"]:
            assert legal["action"] >= 52 or card_text(legal["action"]) in response["table"]["hand"]
        seen_steps.append(response["step"])

    check(state)
    end = play_to_end(client, state, check)
    assert seen_steps == list(range(seen_steps[0], seen_steps[0] + len(seen_steps)))
    assert end["result"]["winner"] in (0, 1) and max(end["result"]["scores"]) >= 3
    assert end["deals"][-1]["scores"] == end["result"]["scores"]
    log_response = client.get(f"/api/matches/{match_id}/log")
    assert log_response.status_code == 200 and "attachment" in log_response.headers["content-disposition"]
    log = loads(log_response.text)
    assert log.players == ("expert", "person", "rule_based", "random")
    assert replay(log).events == game_of(client, match_id).events


def test_deal_summary_has_awards_and_game_count(client):
    state = play_to_end(client, new_match(client, mode="watch", rules={"target_score": 11}, seed=3))
    deal = next(d for d in state["deals"] if d["scored"])
    kinds = {a["kind"] for a in deal["awards"]}
    assert "high" in kinds and "low" in kinds
    game = [a for a in deal["awards"] if a["kind"] == "game"]
    assert sum(deal["game_count"]) > 0
    assert not game or game[0]["count"] == deal["game_count"] and deal["game_count"][game[0]["team"]] > deal["game_count"][1 - game[0]["team"]]


def test_illegal_and_forged_actions_change_nothing(client):
    state = new_match(client)
    match_id = state["id"]
    state = play_to(client, state, lambda s: s["table"]["to_act"] == 0)
    before = client.get(f"/api/matches/{match_id}").json()
    legal = {entry["action"] for entry in before["legal"]}
    illegal = next(a for a in range(56) if a not in legal)
    cases = [
        ({"action": illegal, "step": before["step"]}, 400, "cannot take action"),
        ({"action": "JH", "step": before["step"]}, 400, "integer 0..55"),
        ({"action": True, "step": before["step"]}, 400, "integer 0..55"),
        ({"action": 99, "step": before["step"]}, 400, "cannot take action"),
        ({"action": min(legal), "step": before["step"] + 1}, 409, "moved on"),
        ({"action": min(legal), "step": "x"}, 400, "step must be"),
        ({"action": min(legal)}, 400, "step is required"),
    ]
    for body, status, message in cases:
        response = client.post(f"/api/matches/{match_id}/act", json=body)
        assert response.status_code == status, (body, response.text)
        assert message in response.json()["error"]
    assert client.post(f"/api/matches/{match_id}/advance", json={"step": before["step"]}).status_code == 409
    watch = new_match(client, mode="watch")
    for body, status in (({"open": True, "seat": 7}, 400), ({"since": -1}, 400), ({"step": 5}, 409), ({}, 400)):
        response = client.post(f"/api/matches/{watch['id']}/advance", json=body)
        assert response.status_code == status, body
    assert game_of(client, watch["id"]).events == game_of(client, watch["id"]).events[: watch["event_count"]]
    assert client.get(f"/api/matches/{match_id}").json() == before
    # another match's id: unknown, malformed, or a match where it is not the person's turn
    for bad in ("nosuchmatch", "a" * 65, "..%2F..%2Fetc"):
        response = client.post(f"/api/matches/{bad}/act", json={"action": min(legal), "step": 0})
        assert response.status_code == 404 and "no" in response.json()["error"]
    watch = new_match(client, mode="watch")
    response = client.post(f"/api/matches/{watch['id']}/act", json={"action": min(legal)})
    assert response.status_code == 409 and "watch" in response.json()["error"]
    assert client.get(f"/api/matches/{match_id}").json() == before


def play_to(client: TestClient, state: dict, until) -> dict:
    while not until(state):
        assert not state["over"]
        path = "act" if state["table"]["to_act"] == state["person"] else "advance"
        body = {"step": state["step"]} | ({"action": state["legal"][0]["action"]} if path == "act" else {})
        state = client.post(f"/api/matches/{state['id']}/{path}", json=body).json()
    return state


def test_play_mode_refuses_other_views_and_early_logs(client):
    state = new_match(client)
    match_id = state["id"]
    for query, status in (("?open=1", 403), ("?seat=2", 403), ("?seat=0", 200), ("?seat=9", 400), ("?since=x", 400)):
        assert client.get(f"/api/matches/{match_id}{query}").status_code == status, query
    response = client.get(f"/api/matches/{match_id}/log")
    assert response.status_code == 409 and "once the match is over" in response.json()["error"]
    first = state["table"]["to_act"]  # the same seed deals the same way whatever the seat: a bot's turn
    bot_turn = new_match(client, seat=(first + 1) % N_SEATS)
    response = client.post(f"/api/matches/{bot_turn['id']}/advance", json={"open": True, "step": 0})
    assert response.status_code == 403 and game_of(client, bot_turn["id"]).events == game_of(client, match_id).events
    assert client.post(f"/api/matches/{match_id}/replay").status_code == 409


@pytest.mark.parametrize(
    "body, message",
    [
        ({"mode": "chess"}, "mode must be"),
        ({"mode": "play", "players": BOTS}, "seat must be"),
        ({"mode": "play", "seat": 0, "players": BOTS}, "leave players[0] null"),
        ({"mode": "watch", "players": BOTS[:3]}, "four bots"),
        ({"mode": "watch", "players": ["runs/default/final.npz", *BOTS[1:]]}, "loads no file"),
        ({"mode": "watch", "players": ["/etc/passwd", *BOTS[1:]]}, "loads no file"),
        ({"mode": "watch", "players": ["search:worlds=100000", *BOTS[1:]]}, "at most 512"),
        ({"mode": "watch", "players": ["search:depth=3", *BOTS[1:]]}, "does not take"),
        ({"mode": "watch", "players": [7, *BOTS[1:]]}, "named by text"),
        ({"mode": "watch", "players": BOTS, "rules": {"house": 1}}, "unknown rule"),
        ({"mode": "watch", "players": BOTS, "rules": {"target_score": 0}}, "target_score"),
        ({"mode": "watch", "players": BOTS, "rules": [1]}, "rules must be"),
        ({"mode": "watch", "players": BOTS, "seed": -1}, "seed must be"),
        ({"mode": "watch", "players": BOTS, "seed": 2**128}, "seed must be an integer 0..2**128-1"),
        ({"mode": "watch", "players": BOTS, "seed": str(2**128)}, "seed must be"),
        ({"mode": "watch", "players": BOTS, "seed": "12a"}, "seed must be"),
        ({"mode": "watch", "players": BOTS, "seed": 7.0}, "seed must be"),
        ({"mode": "watch", "players": BOTS, "rules": {"target_score": 101}}, "at most 100 here"),
        ({"mode": "watch", "players": ["search:ms=0,worlds=8,confirm=2000", *BOTS[1:]]}, "confirm is at most 1024"),
        ({"mode": "watch", "players": ["search:ms=5000", *BOTS[1:]]}, "ms is at most 2000"),
    ],
)
def test_bad_new_match_refused(client, body, message):
    response = client.post("/api/matches", json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]
    assert len(client.app.state.store) == 0


def test_requests_must_be_small_json(client):
    response = client.post("/api/matches", content=b"mode=play", headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 415
    response = client.post("/api/matches", content=b"{" + b" " * 70_000 + b"}", headers={"content-type": "application/json"})
    assert response.status_code == 413
    response = client.post("/api/matches", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "not JSON" in response.json()["error"]


def test_watch_views_and_hints(client):
    state = new_match(client, mode="watch", players=["expert", "random", "search:worlds=8", "rule_based"])
    match_id = state["id"]
    game = game_of(client, match_id)
    opened = client.get(f"/api/matches/{match_id}?open=1&seat=2").json()
    assert opened["table"]["seat"] == 2
    assert opened["table"]["hands"] == [[card_text(c) for c in game.hand(s)] for s in range(N_SEATS)]
    closed = client.get(f"/api/matches/{match_id}?seat=3").json()
    assert "hands" not in closed["table"] and not cards_in(closed["table"]) & hidden_cards(game, 3)
    to_act = game.current
    hint = client.get(f"/api/matches/{match_id}/hint?open=1").json()
    legal = set(game.legal_actions())
    assert hint["seat"] == to_act and hint["expert"]["action"] in legal and hint["search"]["action"] in legal
    assert {v["action"] for v in hint["values"]} == legal
    other = (to_act + 1) % N_SEATS
    assert client.get(f"/api/matches/{match_id}/hint?seat={other}").status_code == 409
    end = play_to_end(client, state)
    assert end["over"] and end["result"]["winner"] in (0, 1)
    assert client.get(f"/api/matches/{match_id}/log").status_code == 200


def test_hint_in_play_mode_is_for_the_person(client):
    state = new_match(client, players=[None, "rule_based", "rule_based", "rule_based"])
    state = play_to(client, state, lambda s: s["table"]["to_act"] == 0 and s["table"]["phase"] == "play")
    hint = client.get(f"/api/matches/{state['id']}/hint").json()
    assert hint["seat"] == 0 and hint["worlds"] > 0 or len(state["legal"]) == 1
    assert {v["action"] for v in hint["values"]} == {entry["action"] for entry in state["legal"]}
    assert all(0 <= v["value"] <= 1 for v in hint["values"])
    assert client.get(f"/api/matches/{state['id']}/hint?open=1").status_code == 403
    body = {"action": state["legal"][0]["action"], "step": state["step"]}
    state = client.post(f"/api/matches/{state['id']}/act", json=body).json()
    if state["table"]["to_act"] != 0:
        assert client.get(f"/api/matches/{state['id']}/hint").status_code == 409


def test_replays_step_both_ways_and_tampered_logs_are_refused(client):
    watched = play_to_end(client, new_match(client, mode="watch"))
    text = client.get(f"/api/matches/{watched['id']}/log").text
    headers = {"content-type": "application/json"}
    replayed = client.post("/api/replays", content=text, headers=headers).json()
    assert replayed["mode"] == "replay" and replayed["step"] == 0 and replayed["steps"] == watched["step"]
    replay_id = replayed["id"]
    end = client.get(f"/api/matches/{replay_id}?step={replayed['steps']}").json()
    assert end["result"] == watched["result"] and end["table"]["hands"] is not None
    middle = client.get(f"/api/matches/{replay_id}?step=9").json()
    assert client.get(f"/api/matches/{replay_id}?step=20").status_code == 200
    assert client.get(f"/api/matches/{replay_id}?step=9").json() == middle
    assert client.get(f"/api/matches/{replay_id}?step=9999").status_code == 400
    assert client.post(f"/api/matches/{replay_id}/act", json={"action": 0}).status_code == 409
    data = json.loads(text)
    data["actions"][3] = next(a for a in range(52) if a != data["actions"][3])
    response = client.post("/api/replays", content=json.dumps(data), headers=headers)
    assert response.status_code == 400 and "does not replay" in response.json()["error"]
    from_match = client.post(f"/api/matches/{watched['id']}/replay").json()
    assert from_match["steps"] == watched["step"]


def test_idle_matches_expire_and_the_store_is_bounded(client, clock):
    first = new_match(client)
    for _ in range(4):
        new_match(client)
    response = client.post("/api/matches", json={"mode": "watch", "players": BOTS})
    assert response.status_code == 503 and "the most it keeps" in response.json()["error"]
    clock.now += 30
    client.get(f"/api/matches/{first['id']}")  # used: kept
    clock.now += 45
    assert client.get(f"/api/matches/{first['id']}").status_code == 200
    assert len(client.app.state.store) == 1  # the other four idled past 60 s
    clock.now += 61
    response = client.get(f"/api/matches/{first['id']}")
    assert response.status_code == 404 and "expired" in response.json()["error"]
    ids = {new_match(client)["id"] for _ in range(5)}
    assert len(ids) == 5 and all(len(i) >= 24 for i in ids)
    assert client.delete(f"/api/matches/{ids.pop()}").json() == {"ended": True}


def test_policy_files_only_from_the_command_line(clock):
    client = TestClient(create_app(policy_files=(str(PRETRAINED),), clock=clock))
    options = client.get("/api/options").json()
    assert options["bots"]["policies"] == [PRETRAINED.name]
    state = new_match(client, mode="watch", players=[PRETRAINED.name, "rule_based", "expert", "random"])
    assert state["players"][0] == PRETRAINED.name
    response = client.post("/api/matches", json={"mode": "watch", "players": [str(PRETRAINED), *BOTS[1:]]})
    assert response.status_code == 400  # the same file by its path: refused


def test_host_header_checked_when_asked():
    client = TestClient(create_app(allowed_hosts=["127.0.0.1", "localhost"]), base_url="http://evil.example")
    assert client.get("/api/options").status_code == 400
    assert TestClient(create_app(allowed_hosts=["127.0.0.1"]), base_url="http://127.0.0.1:8765").get("/").status_code == 200


def test_the_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "<title>All Fours</title>" in page.text
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../app.py").status_code == 404
