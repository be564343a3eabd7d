"""``python -m agents.web``: a web page to play All Fours against the bots, watch them, replay matches.

Install the extra and start it (it prints the address; 127.0.0.1 only unless ``--host`` says
otherwise)::

    pip install -e ".[web]"
    python -m agents.web [--port 8765] [--host 127.0.0.1] [POLICY.npz ...]

Policy files named on the command line can be seated by the page; the page itself can never make
the server load a file. The server (Starlette, run by uvicorn) holds every match: the engine, the
bots (driven through the shared match loop, :class:`allfours_env.match.Match`) and the match log
(:mod:`agents.match_log`). The page is plain HTML, CSS and JavaScript (``static/``) and sends only
actions; each is checked by the engine like a bot's. In play mode every response is built from
the person's observation (:func:`allfours_env.decode`): no other seat's hidden cards ever reach
the page; all hands open is only for watching bots and replays.

API (JSON; every POST body is ``Content-Type: application/json``; errors are
``{"error": message}`` with 400 bad input, 403 not yours to see, 404 unknown or expired match,
409 not now, 413 too large, 415 not JSON, 503 too many matches):

``GET /api/options``
    bots the page may choose (names, examples with options, policy files) and the rule form.
``POST /api/matches`` ``{"mode": "play"|"watch", "seat": 0..3, "players": [4 bots, null at your
seat], "rules": {A0 keys}, "seed": int|null}``
    a new match; returns its state, with ``id`` (unguessable; the match expires when idle).
``GET /api/matches/{id}?seat=S&open=1&since=E&step=K``
    the state: ``step`` (actions so far), ``table`` (as ``seat`` sees it: phase, seat to act,
    dealer, kick, trump, trick, last trick, own hand, cards each seat holds, scores, target, Game
    points; ``hands`` only with ``open``), ``legal`` (the viewer's legal actions), ``narration``
    (event lines from index ``since``), ``deals`` (each deal's awards and Game count),
    ``result``. Play mode shows only the person's seat; a replay takes ``step`` (0..steps).
``POST /api/matches/{id}/act`` ``{"action": 0..55, "step": K}``
    the person's action (play mode, their turn); an illegal one is refused, nothing changes.
``POST /api/matches/{id}/advance`` ``{"step": K}``
    one bot move (the seat to act is a bot's); the page calls it at its own pace.
``GET /api/matches/{id}/hint``
    what ``expert`` and ``search`` would play for the seat to act, and the searched chance to
    win the match after each legal action (from that seat's observation).
``GET /api/matches/{id}/log``
    the match log (docs/match_log.md); in play mode once the match is over.
``POST /api/matches/{id}/replay``, ``POST /api/replays`` (body: a match log)
    a replay of this match, or of an uploaded log (checked by replaying it on the engine).
``DELETE /api/matches/{id}``
    end a match now.

A ``step`` sent with an action must be the match's current step, so a stale page or a second tab
cannot act twice.
"""

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Imported on use, so that ``python -m agents.web`` can say which extra is missing.
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'agents.web' has no attribute {name!r}")
