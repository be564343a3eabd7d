"""Worker processes that die with their parent and leave Ctrl-C to it; writes Ctrl-C cannot cut.

:func:`bind_to_parent` runs first in every worker (an eval worker's initializer, a training
env's constructor). On Linux the kernel kills the worker when its parent dies, even by
``kill -9`` (``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread polls the parent. SIGINT is
ignored in workers: a Ctrl-C on the terminal reaches the whole process group, and the parent
alone decides what is kept, then ends its workers, so they never print tracebacks of their own.
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


def bind_to_parent(parent: int) -> None:
    """Make this worker process (child of ``parent``) ignore SIGINT and die when ``parent`` dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
    """Run a block (a file write) to its end even if Ctrl-C comes. Then, with ``reraise``, the
    KeyboardInterrupt follows; without, the block's list of caught signals tells the caller
    (``with interrupts_deferred(reraise=False) as caught: ...; if caught: ...``).

    Python runs signal handlers in the main thread only: elsewhere the block just runs.
    """
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and reraise:
        raise KeyboardInterrupt
