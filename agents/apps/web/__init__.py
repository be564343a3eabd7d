"""``python -m agents.web``: a web page to play All Fours against the bots, watch them, replay matches.

Install the extra and start it (it prints the address; 127.0.0.1 only unless ``--host`` says
otherwise)::

    pip install -e ".[web]"
    python -m agents.web [--port 8765] [--host 127.0.0.1] [--allow-host NAME] [--idle-minutes 30]
                         [--max-matches 200] [--max-memory-mb 512] [POLICY.npz ...]

Policy files named on the command line can be seated by the page (by their label, also as a
search bot's ``keep=``, ``rollout=`` or ``opponents=``); the page itself can never make
the server load a file (:mod:`agents.apps.web.players`, which also caps search's options and the
work they ask of a decision). Another ``--host`` than loopback
prints a warning, and the Host header check stays on (``--allow-host``; see
:mod:`agents.apps.web.__main__`). The server (Starlette, run by uvicorn) holds every match: the engine,
the bots (driven through the shared match loop, :class:`allfours_env.match.Match`) and the match
log (:mod:`agents.apps.match_log`). The page is plain HTML, CSS and JavaScript (``static/``) and sends
only actions; each is checked by the engine like a bot's. In play mode every response is built
from the person's observation (:func:`allfours_env.decode`): no other seat's hidden cards ever
reach the page; all hands open is only for watching bots and replays. Nor does the seed, which
deals every hand: a play match's seed is sent once the match is over (with the log), never
before; a seed the server draws has 128 random bits (:mod:`agents.apps.web.sessions`).

Bounds: a match plays to at most 100 points (``target_score``), and a match or a replay holds at
most 10,000 actions (an uploaded log is at most 1 MB); a response holds at most 400 narration
lines and the last 10 deals; new matches are refused (503) beyond ``--max-matches`` or while the
held ones take about ``--max-memory-mb``, and a client's (429) beyond a quarter of either (a client
is a peer address, an IPv6 one by its /64; no header is trusted for it:
:func:`agents.apps.web.app.client_of`). Reviews run one at a time in one background thread, each
at most 600 decisions and 2 minutes, at most 4 waiting and 2 of one client's waiting or running
(:mod:`agents.apps.web.reviews`).

API (JSON; every POST body is ``Content-Type: application/json``; errors are
``{"error": message}`` with 400 bad input, 403 not yours to see, 404 unknown or expired match,
409 not now, 413 too large, 415 not JSON, 429 past your share of the matches, memory or reviews,
503 too many matches or too much memory held). Every
response carries ``X-Frame-Options: DENY`` and a Content-Security-Policy with
``frame-ancestors 'none'`` (:mod:`agents.apps.web.app`).

``GET /api/options``
    bots the page may choose (names, examples with options, policy files) and the rule form.
``POST /api/matches`` ``{"mode": "play"|"watch", "seat": 0..3, "players": [4 bots, null at your
seat], "rules": {A0 keys}, "seed": int|"digits"|null}``
    a new match; returns its state, with ``id`` (unguessable; the match expires when idle). A seed
    is 0..2**128-1, as an int or its decimal digits (JavaScript's numbers hold 53 bits); null: the
    server draws 128 random bits. A seed the page chooses deals as it does (who chose it can work
    out every hand: their own choice) and is not sent back while a play match is on either.
``GET /api/matches/{id}?seat=S&open=1&since=E&step=K``
    the state: ``step`` (actions so far), ``table`` (as ``seat`` sees it: phase, seat to act,
    dealer, kick, trump, trick, last trick, own hand, cards each seat holds, scores, target, Game
    points; ``hands`` only with ``open``), ``legal`` (the viewer's legal actions), ``narration``
    (event lines from index ``since``), ``deals`` (the last 10 deals' awards and Game count),
    ``result``, ``seed`` (its decimal digits; null in play mode until the match is over). Play
    mode shows only the person's seat; a replay takes ``step`` (0..steps).
``POST /api/matches/{id}/act`` ``{"action": 0..55, "step": K}``
    the person's action (play mode, their turn); an illegal one is refused, nothing changes.
``POST /api/matches/{id}/advance`` ``{"step": K}``
    one bot move (the seat to act is a bot's); the page calls it at its own pace. The state and
    ``move`` (seat, action, label); a watch adds the bot's ``think_ms`` and the ``server_ms``. In
    play mode the move is answered on a schedule the bot's hand cannot change, a fixed time per
    bot after the request began (:mod:`agents.apps.web.release`): a bot's thinking time would
    tell how many cards it could play.
``GET /api/matches/{id}/hint``
    what ``expert`` and ``search`` would play for the seat to act, and the searched chance to
    win the match after each legal action (from that seat's observation).
``GET /api/matches/{id}/log``
    the match log (docs/match_log.md); in play mode once the match is over.
``POST /api/matches/{id}/replay``, ``POST /api/replays`` (body: a match log)
    a replay of this match, or of an uploaded log (checked by replaying it on the engine).
``POST /api/matches/{id}/review``, ``POST /api/reviews`` (body: a match log)
    the review (:mod:`agents.apps.review`) of this match once it is over (or of this replay), or of an
    uploaded log: a replay whose review is queued and made in the background
    (:mod:`agents.apps.web.reviews`); returns the replay's state with ``review``.
``GET /api/matches/{id}/review?since=K``
    the review so far: ``status`` (queued, running, done, stopped, cancelled, failed), ``done`` of
    ``total`` decisions, ``steps`` ([step, seat] of each decision with a choice), the figures per
    seat, and the reviewed decisions from index ``since`` (each legal action's chance and deal
    points, fair and hands open). ``GET /api/matches/{id}/review/report``: the HTML report, once done.
``DELETE /api/matches/{id}``
    end a match now.

``step`` is required with every act and advance, and must be the match's current step, so a stale
page or a second tab cannot act twice.
"""

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Imported on use, so that ``python -m agents.web`` can say which extra is missing.
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'agents.apps.web' has no attribute {name!r}")
