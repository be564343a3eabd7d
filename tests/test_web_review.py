"""The web page's review (agents/apps/web/reviews.py) through Starlette's TestClient: the same figures as
the command line, in the background, bounded, cancelled with its replay."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("starlette", reason="the web page needs the 'web' extra: pip install -e '.[web]'")
pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (the 'dev' extra)")

from starlette.testclient import TestClient

from agents.apps.match_log import loads
from agents.apps.review import Settings, review_match
from agents.apps.web.app import create_app
from agents.apps.web.reviews import MAX_REVIEW_DECISIONS, ReviewJob
from agents.apps.web.sessions import Refused
from tests.test_review import logged
from tests.test_web_api import Clock, new_match, play_to_end

WORLDS = 8


@pytest.fixture()
def client() -> TestClient:
    return TestClient(create_app(idle_seconds=60, max_matches=8, clock=Clock(), review_worlds=WORLDS, client_share=1.0))


def wait_review(client: TestClient, match_id: str, seconds: float = 60) -> dict:
    """Poll as the page does, gathering the decisions; the last state with all of them."""
    gathered, deadline = [], time.monotonic() + seconds
    while True:
        state = client.get(f"/api/matches/{match_id}/review?since={len(gathered)}").json()
        assert state["since"] == len(gathered)
        gathered += state["decisions"]
        if state["status"] in ("done", "stopped", "cancelled", "failed") or time.monotonic() > deadline:
            return {**state, "decisions": gathered}
        time.sleep(0.05)


def test_review_a_played_match_as_the_command_line_does(client):
    state = play_to_end(client, new_match(client, seat=2, players=["expert", "rule_based", None, "rule_based"]))
    response = client.post(f"/api/matches/{state['id']}/review")
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["mode"] == "replay" and replay["review"]["status"] in ("queued", "running", "done")
    first_step, first_seat = replay["review"]["steps"][0]
    assert replay["step"] == first_step and replay["table"]["seat"] == first_seat and "hands" not in replay["table"]
    review = wait_review(client, replay["id"])
    assert review["status"] == "done" and review["done"] == review["total"] == len(review["decisions"]) > 0
    log = loads(client.get(f"/api/matches/{replay['id']}/log").text)
    expected = review_match(log, settings=Settings(worlds=WORLDS, open=True))  # the command line's figures
    assert [(d["step"], d["action"], [a["value"] for a in d["actions"]]) for d in review["decisions"]] == [
        (d.step, d.action, [v for v in d.values]) for d in expected.decisions
    ]
    assert [s["accuracy"] for s in review["seats"]] == [expected.summary(s).accuracy for s in range(4)]
    assert [step for step, _ in review["steps"]] == [d.step for d in expected.decisions]
    assert "open_value" in review["decisions"][0]["actions"][0] and f"--worlds {WORLDS}" in review["command"]
    report = client.get(f"/api/matches/{replay['id']}/review/report")
    assert report.status_code == 200 and "attachment" in report.headers["content-disposition"]
    assert "<svg" in report.text and "<script" not in report.text


def test_a_review_of_an_unfinished_play_match_is_refused(client):
    state = new_match(client, seat=0)
    response = client.post(f"/api/matches/{state['id']}/review")
    assert response.status_code == 409 and "once it is over" in response.json()["error"]


def test_upload_a_log_to_review_and_bad_logs_refused(client):
    log = logged(target=5)
    response = client.post("/api/reviews", content=log.dumps(), headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    review = wait_review(client, response.json()["id"])
    assert review["status"] == "done" and review["total"] > 0
    assert client.get(f"/api/matches/{response.json()['id']}?step={review['steps'][3][0]}&seat={review['steps'][3][1]}&open=0").status_code == 200
    for body in ("not json", '{"format": "other"}', log.dumps()[:300]):
        bad = client.post("/api/reviews", content=body, headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and "does not replay" in bad.json()["error"]
    held = len(client.app.state.store)
    big = client.post("/api/reviews", content="x" * (1024 * 1024 + 1), headers={"Content-Type": "application/json"})
    assert big.status_code == 413 and len(client.app.state.store) == held


def test_no_review_no_report(client):
    log = logged(target=3)
    replay = client.post("/api/replays", content=log.dumps(), headers={"Content-Type": "application/json"}).json()
    assert client.get(f"/api/matches/{replay['id']}/review").status_code == 409
    assert client.get(f"/api/matches/{replay['id']}/review/report").status_code == 409
    started = client.post(f"/api/matches/{replay['id']}/review")  # a replay on screen can be reviewed too
    assert started.status_code == 200 and wait_review(client, replay["id"])["status"] == "done"


def test_a_job_is_bounded_in_decisions_time_and_queue(client, monkeypatch):
    log = logged(target=7)
    job = ReviewJob(log, worlds=WORLDS, seconds=0.3)
    job.run()
    assert job.status == "stopped" and 0 < len(job.results) < len(job.steps)  # its budget spent: what it did is kept
    monkeypatch.setattr("agents.apps.web.reviews.MAX_REVIEW_DECISIONS", 10)
    with pytest.raises(Refused, match="more than 10 decisions"):
        ReviewJob(log)
    assert MAX_REVIEW_DECISIONS >= 400
    monkeypatch.undo()
    queue = client.app.state.reviews
    monkeypatch.setattr(queue, "max_queued", 0)
    refused = client.post("/api/reviews", content=log.dumps(), headers={"Content-Type": "application/json"})
    assert refused.status_code == 503 and "try again" in refused.json()["error"]
    assert len(client.app.state.store) == 0  # the replay made for it is dropped


def test_ending_a_replay_cancels_its_review(client):
    slow = TestClient(create_app(idle_seconds=60, max_matches=8, clock=Clock(), review_worlds=512, client_share=1.0))
    log = logged(target=7)
    first = slow.post("/api/reviews", content=log.dumps(), headers={"Content-Type": "application/json"}).json()
    second = slow.post("/api/reviews", content=log.dumps(), headers={"Content-Type": "application/json"}).json()
    assert second["review"]["status"] == "queued" and second["review"]["queue_position"] >= 1
    job = slow.app.state.store.get(first["id"]).review
    waiting = slow.app.state.store.get(second["id"]).review
    assert slow.delete(f"/api/matches/{second['id']}").status_code == 200
    assert waiting.status == "cancelled"
    assert slow.delete(f"/api/matches/{first['id']}").status_code == 200
    deadline = time.monotonic() + 30
    while job.status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.status == "cancelled" and len(job.results) < len(job.steps)
    assert not waiting.results


def test_one_client_cannot_keep_the_review_queue_full():
    app = create_app(review_worlds=512)  # (slow reviews: the queue stays full while the test runs)
    hostile, other = TestClient(app, client=("10.0.0.66", 40000)), TestClient(app, client=("10.0.0.7", 40000))
    text, json_type = logged(target=7).dumps(), {"Content-Type": "application/json"}
    answers = [hostile.post("/api/reviews", content=text, headers=json_type) for _ in range(6)]
    statuses = [a.status_code for a in answers]
    try:
        assert statuses == [200, 200, 429, 429, 429, 429], statuses  # (before: 4 taken, then 503 for everyone)
        assert "the most one client has at once" in answers[-1].json()["error"]
        theirs = other.post("/api/reviews", content=text, headers=json_type)
        assert theirs.status_code == 200 and theirs.json()["review"]["status"] == "queued"
    finally:
        for match_id in [a.json()["id"] for a in answers if a.status_code == 200]:
            hostile.delete(f"/api/matches/{match_id}")  # (cancels the reviews)
        other.delete(f"/api/matches/{theirs.json()['id']}") if theirs.status_code == 200 else None
