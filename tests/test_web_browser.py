"""The web page in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Skipped, with the reason, where Playwright, the web extra or Chromium is missing; CI sets
``ALLFOURS_BROWSER_TESTS=required`` so that there they fail instead of skipping.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from agents import make
from allfours_env.match import Match
from agents.match_log import MatchLog, Recorder, Replay, loads, write
from allfours_env.cards import N_SEATS, card_text
from allfours_env.engine import Game
from allfours_env.render import describe_event
from allfours_env.rules import Rules
from tests.web_leaks import CARD, assert_seat_only, hidden_cards

CHROMIUM = Path(os.environ.get("ALLFOURS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
REQUIRED = os.environ.get("ALLFOURS_BROWSER_TESTS") == "required"
DATA_CARD = re.compile(r'data-card="([^"]+)"')
WAIT_MS = 20_000
TURN_OR_END = "#game[data-turn=you], #game[data-over=true]"


def unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (ALLFOURS_BROWSER_TESTS=required: the browser tests must run here)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        unavailable("Playwright is not installed (pip install -e '.[dev]')")
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        unavailable("the web extra is not installed (pip install -e '.[web]')")
    if not CHROMIUM.exists():
        unavailable(f"Chromium is not at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        except Error as error:
            unavailable(f"Chromium did not start: {str(error).splitlines()[0]}")
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def server(browser):
    from tests.web_server import running_server

    with running_server() as (url, app):
        yield url, app


@pytest.fixture()
def page(browser, server):
    url, _ = server
    context = browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    response = page.goto(url)
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]  # and the page works under it
    page.wait_for_selector("body[data-ready=true]", state="attached")
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


def set_rules(page, target: int, seed: int, pace: str = "0") -> None:
    page.click("#rules-box summary")
    page.fill("#rule-target_score", str(target))
    page.fill("#seed", str(seed))
    page.select_option("#speed", pace)


def step_of(page) -> int:
    return int(page.get_attribute("#game", "data-step"))


def wait_step_change(page, step: int) -> None:
    page.wait_for_selector(f"#game:not([data-step='{step}'])", state="attached")  # (no script: the CSP forbids eval)


def test_play_a_match_to_the_end_seeing_only_own_cards(page, server, tmp_path):
    _, app = server
    responses = []
    page.on("response", lambda response: responses.append(response) if "/api/matches" in response.url else None)
    page.fill("#partner", "expert")
    set_rules(page, target=4, seed=11)
    page.click("#start")
    pages_seen: list[tuple[int, str, str, list[str]]] = []  # (step, table HTML, its text, narration) at each turn
    illegal_tried = hinted = False
    while True:
        page.wait_for_selector(TURN_OR_END, state="attached")
        if page.get_attribute("#game", "data-over") == "true":
            break
        step = step_of(page)
        narration = page.eval_on_selector_all("#narration li", "items => items.map(i => i.textContent)")
        pages_seen.append((step, page.inner_html("#game"), page.inner_text("#game"), narration))
        dimmed = page.query_selector("#hand .card.dim")
        if dimmed and not illegal_tried:  # an illegal click: refused with a message, nothing changes
            match_id = page.evaluate("ui.state.id")
            before = app.state.store.get(match_id).game.events[:]
            dimmed.click()
            page.wait_for_selector("#message:has-text('Not accepted')")
            assert "cannot take action" in page.inner_text("#message")
            assert step_of(page) == step and app.state.store.get(match_id).game.events == before
            illegal_tried = True
        if not hinted and page.query_selector("#hand .card.legal"):
            page.click("#hint")
            page.wait_for_selector("#hint-values tr")
            assert page.locator("#hint-values tr").count() == page.locator("#hand .card.legal").count()
            hinted = True
        bid = page.query_selector("#bids button:not([disabled])")
        (bid or page.query_selector("#hand .card.legal")).click()
        wait_step_change(page, step)
    assert illegal_tried and hinted
    assert re.match(r"Match over: team [01] wins, \d+ to \d+\. Your team (wins|loses)", page.inner_text("#result-text"))
    with page.expect_download() as download:
        page.click("#download-log")
    log_path = tmp_path / "played.json"
    download.value.save_as(log_path)
    log = loads(log_path.read_text())
    assert log.players[0] == "person" and log.players[2] == "expert" and log.winner in (0, 1)
    # Hidden cards: never in a response of the match, nor in the page, at any step.
    positions = Replay(log)
    checked = 0
    for response in responses:
        if "/log" in response.url or response.request.method == "DELETE":
            continue
        data = response.json()
        if "step" in data and "error" not in data:
            assert_seat_only(data, positions.game_at(data["step"]), 0)
            checked += 1
    assert checked >= len(pages_seen)
    for step, html, text, narration in pages_seen:
        game = positions.game_at(step)
        hidden = hidden_cards(game, 0)
        assert not set(DATA_CARD.findall(html)) & hidden and not set(CARD.findall(text)) & hidden, step
        assert set(narration) <= {describe_event(e) for e in game.events}
    times = page.evaluate("window.allfoursTimes")
    assert times and statistics.median(t["shown_ms"] for t in times) < 1000


def test_forged_requests_are_refused(page, server):
    _, app = server
    set_rules(page, target=4, seed=5)
    page.click("#start")
    page.wait_for_selector("#game[data-turn=you]", state="attached")
    match_id = page.evaluate("ui.state.id")
    before = page.evaluate("ui.state")
    legal = {entry["action"] for entry in before["legal"]}
    post = """async ([path, body]) => {
        const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
        return [r.status, await r.json()];
    }"""
    illegal = next(a for a in range(56) if a not in legal)
    status, body = page.evaluate(post, [f"/api/matches/{match_id}/act", {"action": illegal, "step": before["step"]}])
    assert status == 400 and "cannot take action" in body["error"]
    status, body = page.evaluate(post, [f"/api/matches/{'x' * 24}/act", {"action": min(legal), "step": before["step"]}])
    assert status == 404 and "no match with this id" in body["error"]
    status, body = page.evaluate(post, [f"/api/matches/{match_id}/advance", {"step": before["step"]}])
    assert status == 409 and "your turn" in body["error"]
    status, body = page.evaluate("async (p) => { const r = await fetch(p); return [r.status, await r.json()]; }",
                                 f"/api/matches/{match_id}?open=1")  # fmt: skip
    assert status == 403 and "only your own cards" in body["error"]
    status, _ = page.evaluate(post, [f"/api/matches/{match_id}/act", {"action": min(legal), "step": before["step"] + 5}])
    assert status == 409
    after = app.state.store.get(match_id)
    assert after.step == before["step"]
    page.click("#hand .card.legal, #bids button:not([disabled])")
    wait_step_change(page, before["step"])  # the page still plays on


def test_watch_four_bots_to_the_end(page):
    page.click("#mode-watch")
    page.fill("#bot-2", "search:worlds=8")
    set_rules(page, target=4, seed=3, pace="1500")
    page.click("#start")
    page.wait_for_selector("#game[data-mode=watch]", state="attached")
    page.click("#pause")
    page.wait_for_timeout(200)
    step = step_of(page)
    page.click("#step-once")
    wait_step_change(page, step)
    assert step_of(page) == step + 1
    page.wait_for_timeout(400)
    assert step_of(page) == step + 1  # paused: no move without a click
    assert page.locator("#spot-right .card.back").count() == 0  # all hands open
    page.uncheck("#view-open")
    page.select_option("#view-seat", "1")
    page.wait_for_selector("#spot-bottom[data-seat='1']", state="attached")
    assert page.locator("#spot-right .card.back").count() > 0 and page.locator("#spot-bottom .card.back").count() == 0
    page.select_option("#speed", "0")
    page.click("#pause")  # resume
    page.wait_for_selector("#game[data-over=true]", state="attached")
    assert page.inner_text("#result-text").startswith("Match over: team")
    assert page.locator("#deals .deal").count() >= 1
    assert page.locator("#narration li").count() > 20


def logged_match(seed: int = 2) -> MatchLog:
    game = Game(Rules(target_score=5), np.random.default_rng(seed))
    recorder = Recorder(game)
    Match(game, [make("rule_based") for _ in range(N_SEATS)], on_event=recorder).run()
    return recorder.log(["rule_based"] * N_SEATS, seed, "test")


def test_replay_a_saved_log_both_ways(page, tmp_path):
    log = logged_match()
    path = tmp_path / "saved.json"
    write(log, path)
    positions = Replay(log)
    page.click("#mode-replay")
    page.set_input_files("#replay-file", str(path))
    page.wait_for_selector("#game[data-mode=replay][data-step='0']", state="attached")
    for _ in range(6):
        step = step_of(page)
        page.click("#replay-next")
        wait_step_change(page, step)
    assert step_of(page) == 6
    page.click("#replay-prev")
    wait_step_change(page, 6)
    assert step_of(page) == 5
    game = positions.game_at(5)
    shown = page.eval_on_selector_all("#trick .card", "cards => cards.map(c => c.dataset.card)")
    expected = [card_text(c) for c in game.trick] or []
    assert shown == expected or not game.trick  # (an empty trick shows the last one won)
    for seat in range(N_SEATS):  # all hands open
        spot = page.locator(f".seat[data-seat='{seat}'] .hand .card")
        assert sorted(spot.evaluate_all("cards => cards.map(c => c.dataset.card)")) == sorted(card_text(c) for c in game.hand(seat))
    page.click("#replay-last")
    page.wait_for_selector(f"#game[data-step='{positions.steps}']", state="attached")
    assert page.is_visible("#result") and f"{max(log.scores)}" in page.inner_text("#result-text")
    page.click("#replay-first")
    page.wait_for_selector("#game[data-step='0']", state="attached")
    data = json.loads(log.dumps())
    data["actions"][4] = next(a for a in range(52) if a != data["actions"][4])
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(data))
    page.set_input_files("#replay-file", str(bad))
    page.wait_for_selector("#message:has-text('Cannot replay tampered.json')")
    assert "does not replay" in page.inner_text("#message")
