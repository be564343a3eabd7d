"""Stopping a command cleanly: SIGTERM as Ctrl-C, workers that die with their parent, writes a stop cannot cut.

:func:`stop_on_sigterm` makes SIGTERM (what schedulers, ``docker stop`` and ``timeout`` send)
raise :class:`Terminated`, a KeyboardInterrupt, so a command ends the same way on either signal
and :func:`exit_code` gives the shell's code for each (130, 143).

:func:`bind_to_parent` runs first in every worker (an eval worker's initializer). On Linux the
kernel kills the worker when its parent dies, even by ``kill -9`` (``prctl(PR_SET_PDEATHSIG)``);
elsewhere a thread polls the parent. SIGINT and SIGTERM are ignored in workers: a Ctrl-C on the
terminal reaches the whole process group, and the parent alone decides what is kept, then ends
its workers, so they never print tracebacks of their own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_SECONDS = 0.5


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as a Ctrl-C would be."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
INTERRUPTED_EXIT, TERMINATED_EXIT = 128 + signal.SIGINT, 128 + signal.SIGTERM  # what the shell reports


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def stop_on_sigterm() -> None:
    """From now on SIGTERM raises :class:`Terminated` in the main thread (call it there)."""
    signal.signal(signal.SIGTERM, _raise_terminated)


def exit_code(stop: KeyboardInterrupt) -> int:
    """The exit code of a command stopped by ``stop``: 143 for SIGTERM, 130 for Ctrl-C."""
    return TERMINATED_EXIT if isinstance(stop, Terminated) else INTERRUPTED_EXIT


def stop_name(stop: KeyboardInterrupt) -> str:
    """How a stop is named in the one line a command prints: "interrupted" or "terminated (SIGTERM)"."""
    return "terminated (SIGTERM)" if isinstance(stop, Terminated) else "interrupted"


def bind_to_parent(parent: int) -> None:
    """Make this worker process (child of ``parent``) ignore SIGINT and SIGTERM and die when ``parent`` dies."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


@contextmanager
def interrupts_deferred(reraise: bool = True) -> Iterator[list[int]]:
    """Run a block (a file write) to its end even if Ctrl-C or SIGTERM comes. Then, with
    ``reraise``, the KeyboardInterrupt (or :class:`Terminated`) follows; without, the block's list
    of caught signals tells the caller (``with interrupts_deferred(reraise=False) as caught: ...``).

    Python runs signal handlers in the main thread only: elsewhere the block just runs.
    """
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = {stop: signal.signal(stop, lambda signum, frame: caught.append(signum)) for stop in STOP_SIGNALS}
    try:
        yield caught
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    if caught and reraise:
        raise Terminated if signal.SIGTERM in caught else KeyboardInterrupt
