"""The Starlette application: the page, its static files and the JSON API (see :mod:`agents.apps.web`).

Every response carries ``SECURITY_HEADERS``: no other site may frame the page (``X-Frame-Options:
DENY``, CSP ``frame-ancestors 'none'``), and the page runs only its own same-origin files (CSP
``default-src 'self'``; it has no inline script or style).
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from allfours_env.cards import N_SEATS
from allfours_env.rules import _BOOLS, _CHOICES, _FIRST_DEALER_NAMES, DEFAULT_RULES, MAX_POINTS, RULE_KEYS, Rules

from ..match_log import MAX_SEED, MatchLog, MatchLogError, draw_seed, loads
from .players import BotChoices
from .reviews import REVIEW_SECONDS, REVIEW_WORLDS, ReviewJob, ReviewQueue
from .sessions import (
    CLIENT_SHARE,
    IDLE_SECONDS,
    LOCK_SECONDS,
    MAX_MATCHES,
    MAX_STEPS,
    MEMORY_BUDGET,
    LiveMatch,
    Refused,
    ReplayMatch,
    Session,
    Store,
    check_int,
)

STATIC = Path(__file__).parent / "static"
MAX_BODY_BYTES = 64 * 1024  # every request but a log upload is a few dozen bytes
MAX_UPLOAD_BYTES = 1024 * 1024  # a log of MAX_STEPS actions is about 100 KB; a match to 14, 3 KB
MAX_TARGET = 100  # the largest target_score the page plays to (a match to 100 takes up to about 1,600 actions)
MODES = ("play", "watch")
NO_STORE = {"Cache-Control": "no-store"}
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def rules_form() -> list[dict[str, Any]]:
    """Each A0 rule key with its default and what it may be, for the page's rule form."""
    form = []
    for key in RULE_KEYS:
        default = getattr(DEFAULT_RULES, key)
        if key in _BOOLS:
            entry = {"kind": "bool"}
        elif key in _CHOICES:
            entry = {"kind": "choice", "values": list(_CHOICES[key])}
        elif key == "first_dealer":
            entry = {"kind": "choice", "values": [*_FIRST_DEALER_NAMES, *range(N_SEATS)]}
        else:
            entry = {"kind": "int", "min": 1, "max": MAX_TARGET if key == "target_score" else MAX_POINTS}
        form.append({"key": key, "default": default, **entry})
    return form


def check_rules(data: Any) -> Rules:
    if data is None:
        return DEFAULT_RULES
    if not isinstance(data, dict):
        raise Refused(400, "rules must be an object of rule keys (docs/rules.md table A0), e.g. {\"target_score\": 7}")
    try:
        rules = Rules.from_kwargs(**data)
    except ValueError as error:
        raise Refused(400, str(error)) from None
    if rules.target_score > MAX_TARGET:
        raise Refused(400, f"rule 'target_score' is at most {MAX_TARGET} here, got {rules.target_score}")
    return rules


def check_seed(value: Any) -> int:
    """A seed the page chose: an int or its decimal digits (JavaScript's numbers hold only 53 bits), 0..2**128-1."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= len(str(MAX_SEED)):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise Refused(400, f"seed must be an integer 0..2**128-1 or its digits as text, got {str(value)[:40]!r}")
    return value


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused past ``limit`` bytes without reading the rest."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise Refused(415, "the API takes JSON: send the header Content-Type: application/json")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Refused(413, f"the request body is larger than {limit:,} bytes, the most this request takes")
    except ClientDisconnect:  # (its answer goes nowhere: no traceback, no log line, nothing done)
        raise Refused(400, "the client left before its request's body was whole") from None
    return bytes(body)


async def read_json(request: Request) -> dict[str, Any]:
    body = await read_body(request, MAX_BODY_BYTES)
    try:
        data = json.loads(body or b"{}")
    except (ValueError, RecursionError) as error:  # (nested too deep for the parser: RecursionError)
        raise Refused(400, f"the request body is not JSON: {str(error)[:200]}") from None
    if not isinstance(data, dict):
        raise Refused(400, "the request body must be a JSON object")
    return data


def query_int(request: Request, name: str, low: int, high: int) -> int | None:
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        raise Refused(400, f"{name} must be an integer {low}..{high}, got {text[:40]!r}") from None
    return check_int(name, value, low, high)


def locked(session: Session, work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` run under the match's lock (requests of one match take turns)."""

    def run() -> Any:
        if not session.lock.acquire(timeout=LOCK_SECONDS):
            raise Refused(409, "the match is busy with another request; try again")
        try:
            return work()
        finally:
            session.lock.release()

    return run


async def released(session: LiveMatch, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``work``, a bot's move in play mode, under the match's lock, answered on the match's release
    schedule (:mod:`agents.apps.web.release`): the lock is held until then, so that no other request
    of the match sees the move sooner."""
    held, begun = False, 0.0

    def take_and_work() -> dict[str, Any]:
        nonlocal held, begun
        if not session.lock.acquire(timeout=LOCK_SECONDS):
            raise Refused(409, "the match is busy with another request; try again")
        held, begun = True, time.perf_counter()
        return work()

    try:
        out = await run_in_threadpool(take_and_work)
        assert session.release is not None
        release = begun + session.release.release_after(out["move"]["seat"], time.perf_counter() - begun)
        await anyio.sleep(max(0.0, release - time.perf_counter()))
        return out
    finally:
        if held:
            session.lock.release()


def create_app(
    policy_files: tuple[str, ...] = (),
    idle_seconds: float = IDLE_SECONDS,
    max_matches: int = MAX_MATCHES,
    allowed_hosts: list[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    memory_budget: int = MEMORY_BUDGET,
    review_worlds: int = REVIEW_WORLDS,
    review_seconds: float = REVIEW_SECONDS,
    client_share: float = CLIENT_SHARE,
) -> Starlette:
    """The web app. ``policy_files``: the only files its matches may load (checked now);
    ``allowed_hosts``: Host headers accepted (None: any, for tests); ``memory_budget``: bytes the
    held matches may take (:class:`~agents.apps.web.sessions.Store`); ``review_worlds``, ``review_seconds``:
    a review's precision and time budget (:mod:`agents.apps.web.reviews`); ``client_share``: the part of the
    matches and of the memory one client may hold. A ValueError for a bad setting."""
    store = Store(idle_seconds, max_matches, clock, memory_budget, client_share)
    choices = BotChoices(policy_files)
    reviews = ReviewQueue(worlds=review_worlds, seconds=review_seconds)

    def live(request: Request) -> LiveMatch:
        session = store.get(request.path_params["match_id"])
        if not isinstance(session, LiveMatch):
            raise Refused(409, "this is a replay: it takes no actions; ask for a step with GET ?step=N")
        return session

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=NO_STORE)

    async def options(request: Request) -> Response:
        return {"bots": choices.listing(), "rules": rules_form(), "idle_minutes": idle_seconds / 60}

    async def create(request: Request) -> Response:
        data = await read_json(request)
        mode = data.get("mode")
        if mode not in MODES:
            raise Refused(400, f"mode must be one of {MODES} (a replay is made by POST /api/replays), got {str(mode)[:40]!r}")
        person = check_int("seat", data.get("seat"), 0, N_SEATS - 1) if mode == "play" else None
        specs = data.get("players")
        if not isinstance(specs, list) or len(specs) != N_SEATS:
            raise Refused(400, "players must be a list of four bots, seat 0 first (null at your own seat in play mode)")
        rules = check_rules(data.get("rules"))
        seed = data.get("seed")
        seed = draw_seed() if seed is None else check_seed(seed)
        bots, names = [], []
        for seat, spec in enumerate(specs):
            if seat == person:
                if spec not in (None, "person"):
                    raise Refused(400, f"seat {seat} is yours: leave players[{seat}] null")
                bots.append(None)
                names.append("you")
                continue
            try:
                bot = await run_in_threadpool(choices.make, spec)  # a policy file takes a moment to load
            except (ValueError, FileNotFoundError) as error:
                raise Refused(400, f"players[{seat}]: {error}") from None
            bots.append(bot)
            names.append(bot.name)
        session = LiveMatch(bots, names, rules, seed, person)
        store.add(session, client_of(request))
        return session.state()

    async def seen(request: Request, ask: str) -> Response:
        """The match's ``state`` (from event ``since``) or ``hint`` (``ask``) as ``seat`` sees it, every hand
        with ``open``; a replay's at ``step``, every hand unless ``open`` says no."""
        session = store.get(request.path_params["match_id"])
        since = {"since": query_int(request, "since", 0, 10**9) or 0} if ask == "state" else {}
        seat, open_text = query_int(request, "seat", 0, N_SEATS - 1), request.query_params.get("open")
        open_all = None if open_text is None else open_text.lower() in ("1", "true", "yes")
        if isinstance(session, ReplayMatch):
            step = query_int(request, "step", 0, 10**9)
            work = lambda: getattr(session, ask)(step, seat, True if open_all is None else open_all, **since)
        else:
            work = lambda: getattr(session, ask)(seat, bool(open_all), **since)
        return await run_in_threadpool(locked(session, work))

    async def act(request: Request) -> Response:
        session = live(request)
        data = await read_json(request)

        def work() -> dict[str, Any]:
            since = check_int("since", data.get("since", 0), 0, 10**9)  # (every check before the move)
            move = session.act(data.get("action"), data.get("step"))
            return {**session.state(since=since), "move": move}

        return await run_in_threadpool(locked(session, work))

    async def advance(request: Request) -> Response:
        session = live(request)
        data = await read_json(request)

        def work() -> dict[str, Any]:
            start = time.perf_counter()
            seat, open_all = data.get("seat"), data.get("open") is True
            since = check_int("since", data.get("since", 0), 0, 10**9)
            session.viewer(seat, open_all)  # (every check before the move: a refusal changes nothing)
            move = session.advance(data.get("step"))
            out = {**session.state(seat, open_all, since), "move": move}
            if session.release is None:  # a watch shows the time; in play mode it would tell the bot's hand
                out["server_ms"] = round(1000 * (time.perf_counter() - start), 2)
            return out

        if session.release is None:
            return await run_in_threadpool(locked(session, work))
        return await released(session, work)

    async def log(request: Request) -> Response:
        session = store.get(request.path_params["match_id"])
        match_log = session.log if isinstance(session, ReplayMatch) else session.log()
        name = f"allfours-match-{session.id[:8]}.json"
        headers = {**NO_STORE, "Content-Disposition": f'attachment; filename="{name}"'}
        return Response(match_log.dumps(), media_type="application/json", headers=headers)

    async def replay_of(request: Request) -> Response:
        session = live(request)
        replay = ReplayMatch(session.log())
        store.add(replay, client_of(request))
        return replay.state(step=0)

    async def read_log(request: Request) -> MatchLog:
        """The match log a request uploads, checked by replaying it (a 400 if it does not replay)."""
        body = await read_body(request, MAX_UPLOAD_BYTES)
        try:
            return await run_in_threadpool(loads, body, MAX_STEPS)
        except MatchLogError as error:
            raise Refused(400, f"this match log does not replay: {error}") from None

    async def upload(request: Request) -> Response:
        replay = ReplayMatch(await read_log(request))
        store.add(replay, client_of(request))
        return replay.state(step=0)

    def start_review(replay: ReplayMatch, client: str) -> dict[str, Any]:
        """Queue the review of a held replay (once) for ``client``; its state and the review's."""
        if replay.review is None:
            job = ReviewJob(replay.log, reviews.worlds, reviews.seconds)  # a 413 for a match too long to review here
            reviews.submit(job, client)  # a 429 past the client's share, a 503 when too many wait
            replay.review = job
        job = replay.review
        step, seat = job.steps[0] if job.steps else (0, 0)  # the first decision, as its seat saw it
        return {**replay.state(step, seat, False), "review": job.state(0, reviews.position(job))}

    async def review_of(request: Request) -> Response:
        session = store.get(request.path_params["match_id"])
        client = client_of(request)
        if isinstance(session, ReplayMatch):
            return await run_in_threadpool(locked(session, lambda: start_review(session, client)))
        if not session.over:
            raise Refused(409, "a match is reviewed once it is over")
        replay = ReplayMatch(session.log())
        return await run_in_threadpool(lambda: _added(replay, client))

    async def review_upload(request: Request) -> Response:
        match_log = await read_log(request)
        return await run_in_threadpool(lambda: _added(ReplayMatch(match_log), client_of(request)))

    def _added(replay: ReplayMatch, client: str) -> Any:
        """The review of ``replay``, held by the store for ``client``; if it is refused, the replay is dropped."""
        store.add(replay, client)
        try:
            return start_review(replay, client)
        except Refused:
            store.remove(replay.id)
            raise

    async def review_state(request: Request) -> Response:
        session = store.get(request.path_params["match_id"])
        if not isinstance(session, ReplayMatch) or session.review is None:
            raise Refused(409, "this match has no review: ask for one with POST /api/matches/{id}/review")
        since = query_int(request, "since", 0, 10**9) or 0
        job = session.review
        return await run_in_threadpool(lambda: job.state(since, reviews.position(job)))

    async def review_report(request: Request) -> Response:
        session = store.get(request.path_params["match_id"])
        job = session.review if isinstance(session, ReplayMatch) else None
        if job is None or job.status not in ("done", "stopped"):
            raise Refused(409, "the review's report can be had once the review is done")
        from ..review import html_report

        page = await run_in_threadpool(lambda: html_report(job.review()))
        name = f"allfours-review-{session.id[:8]}.html"
        headers = {**NO_STORE, "Content-Disposition": f'attachment; filename="{name}"'}
        return Response(page, media_type="text/html; charset=utf-8", headers=headers)

    async def end(request: Request) -> Response:
        store.remove(request.path_params["match_id"])
        return {"ended": True}

    def api(handler: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
        """JSON out, and a Refused as its status with ``{"error": message}``."""

        async def endpoint(request: Request) -> Response:
            try:
                result = await handler(request)
            except Refused as refused:
                return JSONResponse({"error": refused.message}, refused.status, headers=NO_STORE)
            return result if isinstance(result, Response) else JSONResponse(result, headers=NO_STORE)

        return endpoint

    routes = [
        Route("/", index),
        Route("/api/options", api(options)),
        Route("/api/matches", api(create), methods=["POST"]),
        Route("/api/matches/{match_id}", api(partial(seen, ask="state"))),
        Route("/api/matches/{match_id}", api(end), methods=["DELETE"]),
        Route("/api/matches/{match_id}/act", api(act), methods=["POST"]),
        Route("/api/matches/{match_id}/advance", api(advance), methods=["POST"]),
        Route("/api/matches/{match_id}/hint", api(partial(seen, ask="hint"))),
        Route("/api/matches/{match_id}/log", api(log)),
        Route("/api/matches/{match_id}/replay", api(replay_of), methods=["POST"]),
        Route("/api/replays", api(upload), methods=["POST"]),
        Route("/api/matches/{match_id}/review", api(review_of), methods=["POST"]),
        Route("/api/matches/{match_id}/review", api(review_state)),
        Route("/api/matches/{match_id}/review/report", api(review_report)),
        Route("/api/reviews", api(review_upload), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]  # first: outside the Host check, so its refusals have them too
    middleware += [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
    handlers = {HTTPException: http_error, Exception: server_error}
    app = Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)
    app.state.store = store
    app.state.choices = choices
    app.state.reviews = reviews
    return app


class SecurityHeaders:
    """ASGI middleware: ``SECURITY_HEADERS`` on every response (a header the app set wins)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in self.headers if k not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


async def server_error(request: Request, error: Exception) -> Response:
    """A bug's 500, as JSON and with the security headers (it is sent outside the middleware)."""
    message = {"error": f"the server failed on this request: {type(error).__name__}"}
    return JSONResponse(message, 500, headers={**NO_STORE, **SECURITY_HEADERS})


async def http_error(request: Request, error: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method) as JSON too."""
    assert isinstance(error, HTTPException)
    what = "no such page or API route" if error.status_code == 404 else error.detail
    return JSONResponse({"error": f"{what}: {request.method} {request.url.path[:80]}"}, error.status_code, headers=NO_STORE)


def client_of(request: Request) -> str:
    """Who asks, as far as the server can tell clients apart: the connection's peer address (an
    IPv6 one by its /64 network, what one machine is given); the server trusts no header for it
    (uvicorn runs with ``proxy_headers`` off). Behind a proxy every client is the proxy."""
    host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # (not an address: a test client's name)
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # (an IPv4 client of a dual-stack socket)
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)
