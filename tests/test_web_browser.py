"""The web page in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Skipped, with the reason, where Playwright, the web extra or Chromium is missing; CI sets
``ALLFOURS_BROWSER_TESTS=required`` so that there they fail instead of skipping. The layout tests
(a phone 390 px wide, a desktop 1280 px) save screenshots in pytest's tmp_path, or in
``ALLFOURS_SCREENSHOTS=DIR`` for a person to look at.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from agents import make
from allfours_env.match import Match
from agents.apps.match_log import MatchLog, Recorder, Replay, loads, write
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
REVIEW_WORLDS = 32


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

    with running_server(review_worlds=REVIEW_WORLDS) as (url, app):  # (reviews quick enough for tests)
        yield url, app


@pytest.fixture()
def page(browser, server, request):
    url, _ = server
    viewport = getattr(request, "param", {"width": 1280, "height": 860})  # (a test may ask for another: indirect)
    context = browser.new_context(viewport=viewport, accept_downloads=True)
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


# ---------------------------------------------------------------- the layout: a phone and a desktop

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
BOTH_SIZES = pytest.mark.parametrize("page", [PHONE, DESKTOP], indirect=True, ids=["390px", "1280px"])
NARROW = 900  # below this width the page is one column (style.css's media query)
LONG_BOT = "search:worlds=8,ms=5,keep=expert,rollout=greedy,margin=0.02"
LONG_LABEL = "selfplay_2024-06-01_iteration_0042_final_policy.npz"  # as a policy file's label would look
SUIT_SYMBOLS = {"C": "\u2663", "D": "\u2666", "H": "\u2665", "S": "\u2660"}
RED = "rgb(198, 40, 40)"  # --red
MIN_TAP = 40  # px: the least width and height of a control on a phone
TAPPABLE = (
    "#modes button, #controls button, #controls select, #controls input[type=range], "
    "#controls label:has(input[type=checkbox]), #bids button, #hint, #result a, #result button, #hand .card, "
    "#start, #setup select, #setup input:not([type=checkbox])"
)
BOXES = """selector => [...document.querySelectorAll(selector)].filter(n => n.getClientRects().length).map(n => {
    const r = n.getBoundingClientRect();
    return {what: `${n.tagName.toLowerCase()}#${n.id}.${n.className}`, left: r.left, right: r.right, width: r.width,
            height: r.height};
})"""
MAX_TURNS = 200


@pytest.fixture()
def shots(tmp_path) -> Path:
    """Where the screenshots go: ALLFOURS_SCREENSHOTS=DIR to keep them and look at them, else tmp_path."""
    folder = Path(os.environ.get("ALLFOURS_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshots(page, folder: Path, name: str) -> None:
    """``NAME-WIDTHpx.png`` (the first screen, as a person sees it) and ``...-full.png`` (the whole page)."""
    page.evaluate("window.scrollTo(0, 0)")
    width = page.viewport_size["width"]
    for path, full in ((folder / f"{name}-{width}px.png", False), (folder / f"{name}-{width}px-full.png", True)):
        page.screenshot(path=str(path), full_page=full)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(BOXES, selector)


def assert_fits(page) -> None:
    """No horizontal scrolling, every visible element inside the viewport's width; on a phone, controls big to tap."""
    width = page.viewport_size["width"]
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    shown = boxes(page, "header, header *, #layout, #game, #game *, #side, #side *")
    outside = [b for b in shown if b["left"] < -0.5 or b["right"] > width + 0.5]
    assert not outside, outside[:5]
    if width < NARROW:
        small = [b for b in boxes(page, TAPPABLE) if b["height"] < MIN_TAP or b["width"] < MIN_TAP]
        assert not small, small[:5]


def assert_cut_with_title(page, seat: int, name: str) -> None:
    bot = page.locator(f".seat[data-seat='{seat}'] .bot")
    assert bot.get_attribute("title") == name and bot.text_content() == name
    assert bot.evaluate("n => [n.scrollWidth > n.clientWidth, getComputedStyle(n).textOverflow]") == [True, "ellipsis"]


@BOTH_SIZES
def test_mid_match_everything_fits_and_plays(page, shots):
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    page.fill("#partner", "expert")
    page.fill("#right", LONG_BOT)
    page.fill("#seed", "7")
    page.select_option("#speed", "0")
    page.click("#start")
    for _ in range(MAX_TURNS):  # to the second deal's trick play, cards on the table, the person to play
        page.wait_for_selector(TURN_OR_END, state="attached")
        state = page.evaluate("ui.state")
        assert not state["over"], "the match ended before the second deal's trick play: choose another seed"
        table = state["table"]
        if table["deal"] >= 2 and table["phase"] == "play" and table["trick"]:
            break
        page.click("#bids button:not([disabled]), #hand .card.legal >> nth=0")
        wait_step_change(page, state["step"])
    screenshots(page, shots, "play")
    assert_fits(page)
    table_box = page.locator("#table").bounding_box()
    assert table_box["y"] + table_box["height"] <= height  # the whole table, the person's hand too, on the first screen
    if width >= NARROW:  # the side panel beside the table
        side = page.locator("#side").bounding_box()
        assert side["x"] + side["width"] <= table_box["x"] and table_box["width"] >= 700
    # Trump: a large suit symbol with its name, in the suit's colour.
    trump = page.locator("#trump")
    assert SUIT_SYMBOLS[table["trump"]] in trump.text_content() and table["trump_name"] in trump.text_content()
    symbol = page.locator("#trump .symbol")
    assert symbol.evaluate("n => parseFloat(getComputedStyle(n).fontSize)") >= 32
    assert symbol.bounding_box()["height"] >= 32
    assert (trump.evaluate("n => getComputedStyle(n).color") == RED) == (table["trump"] in "HD")
    # A long bot name: cut with an ellipsis, whole in its title.
    assert_cut_with_title(page, (state["person"] + 1) % 4, LONG_BOT)
    # Every card of the hand inside the viewport, big enough and not covered; a legal one played by a click.
    page.locator("#hand").scroll_into_view_if_needed()
    cards = page.locator("#hand .card")
    assert cards.count() == len(table["hand"]) > 0
    on_top = """c => { const r = c.getBoundingClientRect();
        return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2).closest('.card') === c; }"""
    for k in range(cards.count()):
        box = cards.nth(k).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width and min(box["width"], box["height"]) >= MIN_TAP
        assert cards.nth(k).evaluate(on_top)
    # A hand of 12 cards (the pack run twice): drawn in rows, every card inside the viewport and uncovered.
    twelve = ["2C", "5C", "9C", "JC", "AC", "3D", "TD", "4H", "QH", "KH", "6S", "8S"]
    page.evaluate("hand => draw({...ui.state, table: {...ui.state.table, hand}})", twelve)
    assert cards.count() == 12
    page.locator("#hand").scroll_into_view_if_needed()
    for k in range(12):
        box = cards.nth(k).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width and cards.nth(k).evaluate(on_top)
    page.evaluate("draw(ui.state)")
    legal = page.locator("#hand .card.legal")
    card = legal.nth(legal.count() - 1)  # (the rightmost: nearest the edge)
    text = card.get_attribute("data-card")
    card.click()
    wait_step_change(page, state["step"])
    assert text not in page.eval_on_selector_all("#hand .card", "cards => cards.map(c => c.dataset.card)")
    narration = page.eval_on_selector_all("#narration li", "items => items.map(i => i.textContent)")
    assert f"player_{state['person']} plays {text}" in narration


SEAT_TEXT_AND_CHIP = """() => [...document.querySelectorAll('.seat')].filter(s => s.querySelector('.chip')).map(s => {
    const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
    const range = document.createRange();
    range.selectNodeContents(s.querySelector('.who').firstChild);  // (the text, the chip left out)
    const text = [...range.getClientRects(), s.querySelector('.bot').getBoundingClientRect()].map(box);
    return {seat: Number(s.dataset.seat), chip: box(s.querySelector('.chip').getBoundingClientRect()), text};
})"""


def overlaps(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


@BOTH_SIZES
def test_the_dealer_chip_covers_no_seat_text(page):
    """Whichever seat deals, its chip leaves the seat's name, team number and bot readable (at 390 px the top
    seat's chip once covered its team number)."""
    page.fill("#seed", "7")
    page.select_option("#speed", "0")
    page.click("#start")
    page.wait_for_selector(TURN_OR_END, state="attached")
    for dealer in range(N_SEATS):
        page.evaluate("dealer => draw({...ui.state, table: {...ui.state.table, dealer}})", dealer)
        [seat] = page.evaluate(SEAT_TEXT_AND_CHIP)
        assert seat["seat"] == dealer
        assert not [line for line in seat["text"] if overlaps(seat["chip"], line)], seat


@BOTH_SIZES
def test_a_finished_replay_fits_and_play_clears_it(page, shots, tmp_path):
    log = dataclasses.replace(logged_match(), players=("rule_based", LONG_LABEL, "expert", "rule_based"))
    path = tmp_path / "saved.json"
    write(log, path)
    page.click("#mode-replay")
    page.set_input_files("#replay-file", str(path))
    page.wait_for_selector("#game[data-mode=replay][data-step='0']", state="attached")
    page.click("#replay-last")
    page.wait_for_selector("#result:not([hidden])")
    screenshots(page, shots, "replay")
    assert_fits(page)
    assert_cut_with_title(page, 1, LONG_LABEL)  # (at the right of the viewing seat 0)
    assert f"{max(log.scores)}" in page.inner_text("#result-text")
    # Play: the replay leaves the screen, the play form takes its place, and a match starts as before.
    page.click("#mode-play")
    page.wait_for_selector("#game:not([data-mode])", state="attached")
    assert page.evaluate("ui.state") is None and page.get_attribute("#game", "data-step") == "-1"
    assert page.locator("#table .card, #table .seat .name, #narration li, #deals .deal, #scoreboard *").count() == 0
    assert not page.is_visible("#result") and page.inner_text("#step-label") == "" and page.is_disabled("#hint")
    assert page.is_visible("#setup .for-play") and not page.is_visible("#replay-first")
    screenshots(page, shots, "cleared")
    assert_fits(page)
    page.fill("#seed", "3")
    page.click("#start")
    page.wait_for_selector("#game[data-mode=play] #hand .card", state="attached")
    assert page.locator("#game #hand .card").count() == 6


def test_leaving_a_match_mid_move_ends_it_and_nothing_comes_back(page, server):
    _, app = server
    slow = "search:worlds=512,ms=1500"  # (a bot move that is still on its way when the person leaves)
    for box in ("#partner", "#right", "#left"):
        page.fill(box, slow)
    page.fill("#seed", "3")
    page.select_option("#speed", "0")
    page.click("#start")
    page.wait_for_selector("#game[data-mode=play]", state="attached")
    match_id = page.evaluate("ui.state.id")
    page.wait_for_timeout(200)
    assert page.evaluate("ui.busy"), "no bot move on its way: choose another seed"
    page.click("#mode-watch")
    assert page.evaluate("ui.state") is None and page.locator("#table .card").count() == 0
    page.wait_for_timeout(2500)  # the bot's move comes back, and is dropped
    assert page.get_attribute("#game", "data-mode") is None and page.locator("#table .card").count() == 0
    assert page.inner_text("#message") == "" and page.is_visible("#setup .for-watch")
    from agents.apps.web.sessions import Refused

    with pytest.raises(Refused, match="no match with this id"):  # (the page ended it on the server)
        app.state.store.get(match_id)


# ---------------------------------------------------------------- the review


def review_log(path: Path) -> MatchLog:
    log = dataclasses.replace(logged_match(seed=5), players=("rule_based", LONG_LABEL, "rule_based", "search"))
    write(log, path)
    return log


@BOTH_SIZES
def test_review_an_uploaded_log_step_by_step(page, shots, tmp_path):
    """The graph, the flagged decisions and, at each decision, the table as its seat saw it with
    every action's chance; the same figures as python -m agents.review; it fits a phone and a desktop."""
    from agents.apps.review import Settings, review_match

    path = tmp_path / "reviewed.json"
    log = review_log(path)
    expected = review_match(log, settings=Settings(worlds=REVIEW_WORLDS))
    positions = Replay(log)
    page.click("#mode-review")
    page.set_input_files("#review-file", str(path))
    page.wait_for_selector("#game[data-review=done]", state="attached", timeout=60_000)
    page.wait_for_selector("#review-actions tr[data-action]")
    # The first decision: the table from the acting seat, hands closed, its actions' chances as the command's.
    for k in range(3):
        if k:
            step = step_of(page)
            page.click("#review-next")
            wait_step_change(page, step)
            page.wait_for_selector(f"#review-decision:has-text('Move {step_of(page) + 1} ')")
        decision = next(d for d in expected.decisions if d.step == step_of(page))
        assert page.get_attribute("#spot-bottom", "data-seat") == str(decision.seat)
        assert page.locator("#spot-right .card.back").count() > 0  # (hands closed: the seat's own view)
        shown_cards = set(page.eval_on_selector_all("#table .card[data-card]", "cs => cs.map(c => c.dataset.card)"))
        assert not shown_cards & hidden_cards(positions.game_at(decision.step), decision.seat)
        rows = page.eval_on_selector_all("#review-actions tr[data-action]", "rs => rs.map(r => [Number(r.dataset.action), r.children[1].textContent])")
        assert sorted(a for a, _ in rows) == sorted(decision.actions)
        assert {a: text for a, text in rows} == {a: f"{100 * v:.1f}%" for a, v in zip(decision.actions, decision.values)}
    # The seats' figures and the flagged decisions, as the command's.
    accuracy = page.eval_on_selector_all("#review-seats tr td:nth-child(2)", "cs => cs.map(c => c.textContent)")
    assert accuracy == [f"{round(100 * expected.summary(s).accuracy)}%" for s in range(N_SEATS)]
    flagged = [d for d in expected.decisions if d.label]
    assert page.locator("#review-flags li").count() == len(flagged) > 0
    assert page.locator("#review-svg polyline").count() == 2 and page.locator("#review-svg circle").count() == len(flagged)
    later = [d for d in flagged if d.step > step_of(page)]
    assert later, "no flagged decision after the third: choose another log"
    page.click("#review-next-flag")
    page.wait_for_selector(f"#game[data-step='{later[0].step}']", state="attached")
    page.wait_for_selector("#review-decision .tag")
    assert later[0].label in page.inner_text("#review-decision")
    screenshots(page, shots, "review")
    assert_fits(page)
    # Hands open: every hand on the table, and the hands-open columns, labelled.
    page.check("#review-open")
    page.wait_for_selector("#review-actions th.open")
    page.wait_for_selector("#spot-right .hand.open", state="attached")
    assert "Hands open" in page.inner_text("#review-decision")
    screenshots(page, shots, "review-open")
    assert_fits(page)
    page.uncheck("#review-open")
    # One seat's decisions only; a click on a flagged one goes there; the log and the report to download.
    seat = flagged[-1].seat
    page.select_option("#review-seat", str(seat))
    page.wait_for_selector(f"#spot-bottom[data-seat='{seat}']", state="attached")
    assert page.locator("#review-flags li").count() == sum(d.seat == seat for d in flagged)
    page.locator("#review-flags li button").last.click()
    page.wait_for_selector(f"#game[data-step='{flagged[-1].step}']", state="attached")
    assert page.get_attribute("#review-summary a >> nth=0", "href").endswith("/log")
    with page.expect_download() as download:
        page.click("#review-summary a >> nth=1")
    report = tmp_path / "report.html"
    download.value.save_as(report)
    assert "<svg" in report.read_text() and "<script" not in report.read_text()


def test_review_this_match_after_playing_it_opens_on_your_decisions(page):
    set_rules(page, target=3, seed=6)
    page.select_option("#seat", "1")
    page.click("#start")
    for _ in range(MAX_TURNS):
        page.wait_for_selector(TURN_OR_END, state="attached")
        if page.get_attribute("#game", "data-over") == "true":
            break
        step = step_of(page)
        page.click("#bids button:not([disabled]), #hand .card.legal >> nth=0")
        wait_step_change(page, step)
    page.click("#review-this")
    page.wait_for_selector("#game[data-review=done]", state="attached", timeout=60_000)
    page.wait_for_selector("#spot-bottom[data-seat='1']", state="attached")  # your seat's first decision
    assert page.input_value("#review-seat") == "1"
    step = step_of(page)
    page.keyboard.press("ArrowRight")  # the arrow keys step through your decisions
    wait_step_change(page, step)
    assert page.get_attribute("#spot-bottom", "data-seat") == "1" and step_of(page) > step


def test_review_this_match_after_watching_it(page):
    page.click("#mode-watch")
    for seat in range(N_SEATS):
        page.fill(f"#bot-{seat}", "rule_based")
    set_rules(page, target=3, seed=4)
    page.click("#start")
    page.wait_for_selector("#game[data-over=true]", state="attached")
    page.click("#review-this")
    page.wait_for_selector("#game[data-review=done]", state="attached", timeout=60_000)
    assert page.get_attribute("#mode-review", "class") == "active"
    assert page.locator("#review-seats tr").count() == 1 + N_SEATS and page.is_hidden("#result")
    page.click("#mode-play")  # leaving clears the review
    assert page.evaluate("ui.review") is None and page.locator("#review-graph *").count() == 0
