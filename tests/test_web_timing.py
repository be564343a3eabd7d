"""A bot's thinking time is hidden information: in play mode nothing a client observes of a bot's
move, its fields or the time its response takes, may tell how many legal actions the bot had (a
forced follow would tell that it holds no other card of the suit, which the rules hide).

The test plays whole matches against a cheap search (the bot whose time grows the most with its
legal actions), times every bot move as the client sees it, and compares the moves with one legal
action against those with several: a rank-sum test, and the rank correlation of the time with the
count. Before the release schedule (:mod:`agents.apps.web.release`) a forced move answered in about
a millisecond and a searched one in several, and both statistics were far beyond chance.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web page needs the 'web' extra: pip install -e '.[web]'")
pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (the 'dev' extra)")

from starlette.testclient import TestClient

from agents import make
from agents.apps.web.app import create_app
from agents.apps.web.release import FLOOR_SECONDS, MAX_SECONDS, ReleaseSchedule, release_seconds

BOT = "search:worlds=8,ms=0"  # cheap, deterministic, and slower with more legal actions
PERSON = 0
Z_LIMIT = 3.3  # two-sided p about 0.001 under no difference
WARM_UP = 8  # bot moves left out (the first decisions of a process load the compiled search)


def rank_sum_z(a: np.ndarray, b: np.ndarray) -> float:
    """The Mann-Whitney statistic of ``a`` against ``b`` as a z-score (normal approximation)."""
    ranks = np.argsort(np.argsort(np.concatenate([a, b]))) + 1.0
    u = ranks[: len(a)].sum() - len(a) * (len(a) + 1) / 2
    mean, sd = len(a) * len(b) / 2, np.sqrt(len(a) * len(b) * (len(a) + len(b) + 1) / 12)
    return float((u - mean) / sd)


def rank_correlation_z(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (ties broken by order), as a z-score."""
    rx, ry = (np.argsort(np.argsort(v, kind="stable")).astype(float) for v in (x, y))
    return float(np.corrcoef(rx, ry)[0, 1] * np.sqrt(len(x) - 1))


def play_timed(client: TestClient, seed: int) -> list[tuple[int, float]]:
    """A whole play match against three search bots: (the bot's legal actions, seconds the client
    waited) for every bot move; every response's fields are checked to be the person's view alone."""
    players = [BOT] * 4
    players[PERSON] = None
    body = {"mode": "play", "seat": PERSON, "players": players, "rules": {"target_score": 5}, "seed": seed}
    state = client.post("/api/matches", json=body).json()
    match = f"/api/matches/{state['id']}"
    game = client.app.state.store.get(state["id"]).game
    moves = []
    while not state["over"]:
        since = state["event_count"]
        if state["table"]["to_act"] == PERSON:
            body = {"action": state["legal"][0]["action"], "step": state["step"]}
            state = client.post(f"{match}/act", json=body).json()
            continue
        legal = len(game.legal_actions())  # (the server's knowledge, never the client's)
        begun = time.perf_counter()
        response = client.post(f"{match}/advance", json={"step": state["step"], "since": since})
        moves.append((legal, time.perf_counter() - begun))
        state = response.json()
        move = state.pop("move")
        assert set(move) == {"seat", "action", "label"}, move  # what was played, by whom: public
        assert state == client.get(f"{match}?since={since}").json()  # the rest: the person's view of the table
        state["move"] = move
    return moves


def test_a_bots_legal_count_does_not_show_in_its_response():
    client = TestClient(create_app())
    moves = [*play_timed(client, seed=1)[WARM_UP:], *play_timed(client, seed=2)]
    legal, seconds = np.array([m[0] for m in moves]), np.array([m[1] for m in moves])
    forced, several = seconds[legal == 1], seconds[legal > 1]
    assert len(forced) >= 10 and len(several) >= 30, (len(forced), len(several))
    z_two_samples, z_correlation = rank_sum_z(forced, several), rank_correlation_z(legal, seconds)
    medians = f"median {1000 * np.median(forced):.2f} ms forced, {1000 * np.median(several):.2f} ms with a choice"
    assert abs(z_two_samples) < Z_LIMIT, f"{medians}: rank-sum z {z_two_samples:.1f}"
    assert abs(z_correlation) < Z_LIMIT, f"{medians}: rank correlation z {z_correlation:.1f}"


def test_release_times_come_from_the_bots_settings_and_an_overrun_is_rounded_up():
    times = {spec: release_seconds(make(spec)) for spec in ("expert", "search", "search:worlds=8,ms=0", "search_v1")}
    assert times["expert"] == FLOOR_SECONDS and times["expert"] < times["search:worlds=8,ms=0"] < times["search"]
    assert times["search"] < 0.25 and times["search_v1"] < 0.25  # (the page's own pause is 0.8 s)
    schedule = ReleaseSchedule([None, make("expert"), make("search:worlds=8,ms=0"), make("random")])
    release = schedule.seconds[1]
    assert schedule.release_after(1, 0.001) == release  # however quick the decision
    assert schedule.release_after(1, 2.5 * release) == pytest.approx(3 * release)  # an overrun: the next multiple
    assert schedule.seconds[1] == pytest.approx(2 * release)  # and twice as long from then on
    for _ in range(12):
        schedule.release_after(3, 100.0)
    assert schedule.seconds[3] == MAX_SECONDS
