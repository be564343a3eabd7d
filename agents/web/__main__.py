"""``python -m agents.web``: start the server and print its address (see :mod:`agents.web`)."""

from __future__ import annotations

import argparse
import socket
import sys
import threading
from collections.abc import Sequence

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agents.web",
        description="A web page to play All Fours against the bots, watch them and replay matches.",
        epilog="Example: python -m agents.web runs/default/final.npz   (then open the address it prints)",
    )
    parser.add_argument("policies", nargs="*", metavar="POLICY", help="policy files (.npz, .zip) the page may seat")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free one)")
    parser.add_argument("--idle-minutes", type=float, default=30.0, help="a match idle this long is dropped (default 30)")
    parser.add_argument("--max-matches", type=int, default=200, help="matches held at once (default 200)")
    return parser


def warm_up() -> None:
    """Load the compiled bots once (numba's cache) so the first move of a match is as quick as the rest."""
    import numpy as np

    from agents import make
    from allfours_env.engine import Game
    from allfours_env.match import Match

    game = Game(rng=np.random.default_rng(0))
    observation = Match(game, [None] * 4).observe(game.current)
    for spec in ("expert", "pretrained", "search:worlds=8"):
        try:
            make(spec).act(observation)
        except (OSError, ValueError):  # (a missing pretrained policy is said when a match asks for it)
            pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.idle_minutes <= 0 or args.max_matches < 1:
        parser.error("--idle-minutes must be above 0 and --max-matches at least 1")
    try:
        import uvicorn

        from .app import create_app
    except ImportError as error:
        parser.error(f"the web page needs the 'web' extra: pip install -e \".[web]\" ({error})")
    hosts = None if args.host in ("0.0.0.0", "::") else sorted({*LOOPBACK_NAMES, args.host})
    try:
        app = create_app(tuple(args.policies), args.idle_minutes * 60, args.max_matches, hosts)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by each connection: without it, a keep-alive connection's responses (headers, then
    # body) wait on the client's delayed ACK, 40 ms a request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as error:
        parser.error(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}")
    sock.listen(2048)  # connections wait from now on: the address printed below is ready
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    print(f"All Fours web page: http://{shown}:{port}/  (Ctrl-C stops the server)", flush=True)
    threading.Thread(target=warm_up, daemon=True).start()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
