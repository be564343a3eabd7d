"""The web server in a thread of the test process, on 127.0.0.1 and a free port (tests, screenshots)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

START_SECONDS = 10.0


@contextmanager
def running_server(**app_options: Any) -> Iterator[tuple[str, Any]]:
    """Yield the base URL (``http://127.0.0.1:PORT``) and the app; stop the server on exit."""
    import uvicorn

    from agents.apps.web.app import create_app

    app = create_app(**app_options)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as agents.web's main does (no 40 ms stalls)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(START_SECONDS)
        sock.close()
