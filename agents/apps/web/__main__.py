"""``python -m agents.web``: start the server and print its address (see :mod:`agents.apps.web`).

Hosts: by default the server listens on 127.0.0.1, this machine only. Another ``--host`` (an
address of this machine, or 0.0.0.0 / :: for all of them) makes it reachable from other machines,
and it says so with a warning at start. The Host header check stays on whatever the address: the
server answers only requests naming this machine's loopback names, the ``--host`` itself (unless
it is 0.0.0.0 or ::) and each ``--allow-host NAME`` (the name or address others type in their
browser); ``--allow-host '*'`` turns the check off, said in the warning too. (The check keeps a web
page elsewhere from reaching the server through a DNS name that points at it: DNS rebinding.)

Settings are checked before anything starts (exit 2). Ctrl-C stops the server with one line.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import re
import signal
import socket
import sys
import threading
from collections.abc import Sequence

from ...shared.options import number_option

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
ALL_ADDRESSES = ("0.0.0.0", "::")
ANY_HOST = "*"
HOST_NAME = re.compile(r"\*|(\*\.)?[A-Za-z0-9.:\[\]-]{1,253}")  # a name or address, '*.domain', or '*'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agents.web",
        description="A web page to play All Fours against the bots, watch them and replay matches.",
        epilog="Example: python -m agents.web runs/default/final.npz   (then open the address it prints)",
    )
    parser.add_argument("policies", nargs="*", metavar="POLICY", help="policy files (.npz, .zip) the page may seat")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free one)")
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME",
        help="also answer requests for this Host name or address (repeatable; '*': any); see the module docstring",
    )  # fmt: skip
    number_option(parser, "--idle-minutes", 30.0, "a match idle this long is dropped")
    number_option(parser, "--max-matches", 200, "matches held at once")
    number_option(
        parser, "--max-memory-mb", 512, "new matches are refused while the held ones take about this much memory"
    )
    return parser


def allowed_hosts(host: str, extra: Sequence[str]) -> list[str] | None:
    """The Host header names the server answers (None: any, if ``extra`` holds '*')."""
    if ANY_HOST in extra:
        return None
    names = {*LOOPBACK_NAMES, *extra, *([] if host in ALL_ADDRESSES else [host])}
    return sorted(names | {f"[{n}]" for n in names if ":" in n and not n.startswith("[")})  # IPv6 as Host writes it


def is_loopback(host: str) -> bool:
    try:
        return host in LOOPBACK_NAMES or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: only "localhost" is surely this machine alone
        return False


def reach_warning(host: str, hosts: list[str] | None) -> str | None:
    """What to tell the operator of a server other machines can reach (None on loopback)."""
    if is_loopback(host):
        return None
    answered = "requests for any Host name (--allow-host '*'): a web page elsewhere may reach it through DNS rebinding"
    if hosts is not None:
        answered = (
            f"only requests for the Host names {', '.join(hosts)}; add the name or address others use with "
            "--allow-host NAME"
        )
    where = "every address of this machine" if host in ALL_ADDRESSES else host
    return (
        f"warning: listening on {where}: other machines on the network can reach this server, seat its bots and use "
        f"its processors. It answers {answered}."
    )


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
    check_settings(parser, args)
    try:
        return serve(parser, args)
    except KeyboardInterrupt:  # (while starting, before serve takes Ctrl-C over)
        return stopped()


def stopped() -> int:
    """Say that Ctrl-C stopped the server; its exit code."""
    print("stopped", flush=True)
    return 130


def serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Build the app, listen, print the address and serve until stopped."""
    try:
        import uvicorn

        from .app import create_app
    except ImportError as error:
        parser.error(f"the web page needs the 'web' extra: pip install -e \".[web]\" ({error})")
    hosts = allowed_hosts(args.host, args.allow_host)
    try:
        budget = args.max_memory_mb * 2**20
        app = create_app(tuple(args.policies), args.idle_minutes * 60, args.max_matches, hosts, memory_budget=budget)
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
    warning = reach_warning(args.host, hosts)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    # No proxy headers: a client is its connection's peer address (app.client_of), never what a header claims.
    config = uvicorn.Config(app, log_level="warning", lifespan="off", proxy_headers=False)
    server = uvicorn.Server(config)
    interrupted = threading.Event()

    def on_ctrl_c(signum: int, frame: object) -> None:
        interrupted.set()
        server.should_exit = True  # (uvicorn holds Ctrl-C while it serves, and hands its own back here)

    # From here on Ctrl-C never raises: a KeyboardInterrupt in the middle of an import, while the
    # warm-up thread imports too, could leave an import lock held and the process hung.
    signal.signal(signal.SIGINT, on_ctrl_c)
    print(f"All Fours web page: http://{shown}:{port}/  (Ctrl-C stops the server)", flush=True)
    threading.Thread(target=warm_up, daemon=True).start()
    server.run(sockets=[sock])
    return stopped() if interrupted.is_set() else 0


def check_settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every setting in range, or exit 2 saying which is not (before any work)."""
    from .sessions import MAX_IDLE_SECONDS

    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if not (math.isfinite(args.idle_minutes) and 0 < args.idle_minutes <= MAX_IDLE_SECONDS / 60):
        most = MAX_IDLE_SECONDS // 60
        parser.error(f"--idle-minutes must be above 0 and at most {most:,} (a week), got {args.idle_minutes}")
    if args.max_matches < 1:
        parser.error(f"--max-matches must be at least 1, got {args.max_matches}")
    for name in args.allow_host:
        if not HOST_NAME.fullmatch(name):
            parser.error(f"--allow-host takes a host name or address, '*.domain' or '*', got {name[:60]!r}")
    if not 1 <= args.max_memory_mb <= 2**20:
        parser.error(f"--max-memory-mb must be 1..{2**20:,}, got {args.max_memory_mb}")


if __name__ == "__main__":
    sys.exit(main())
