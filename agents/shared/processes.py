"""Stopping a command cleanly: SIGTERM as Ctrl-C, workers that die with their parent, writes a stop cannot cut.

:func:`handle_stops` makes SIGTERM (what schedulers, ``docker stop`` and ``timeout`` send)
raise :class:`Terminated`, a KeyboardInterrupt, so a command ends the same way on either signal,
raises a stop again until the command says it has caught it (:func:`stop_handled`; compiled code
can swallow one), and :func:`exit_code` gives the shell's code for each (130, 143).

:func:`start_worker` runs first in every worker (an eval worker's initializer): :func:`one_blas_thread`,
and :func:`bind_to_parent`. On Linux the kernel kills the worker when its parent dies, even by
``kill -9`` (``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread polls the parent. SIGINT and SIGTERM
are ignored in workers: a Ctrl-C on the terminal reaches the whole process group, and the parent
alone decides what is kept, then ends its workers, so they never print tracebacks of their own.
The parent starts its workers inside :func:`stops_held`, so a stop that comes between a fork and
the worker's ignoring it waits (blocked, then dropped by the worker) instead of raising in the new
process.
"""

from __future__ import annotations

import _thread
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from threadpoolctl import threadpool_limits

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
USAGE_EXIT = 2  # a bad setting, found before any work (argparse's own code)
WRITE_FAILED_EXIT = 74  # EX_IOERR (sysexits.h): a file the disk refused (full, read-only) during the work


NUDGE_SECONDS = 1.0  # a stop the main thread lost (see handle_stops) is raised again this often
_stops: list[int] = []  # the stop signals received, in order
_handled = threading.Event()


UNSAFE_MODULES = ("numba", "llvmlite")  # a stop raised inside them breaks a compile: wait until they return
# The module-level code of these calls into C++ that checks for signals itself (pybind11): a stop
# raised there aborts the process (std::terminate, exit -6) instead of unwinding. Wait until it returns.
UNSAFE_IMPORTS = ("torch",)


def stop_must_wait(frame: Any) -> bool:
    """Whether a stop arriving in ``frame`` must wait: in the module-level code of one of
    ``UNSAFE_IMPORTS`` (being imported), or inside numba's machinery (compiling, loading a cached kernel)."""
    module_level = frame is not None and frame.f_code.co_name == "<module>"
    if module_level and frame.f_globals.get("__name__", "").split(".")[0] in UNSAFE_IMPORTS:
        return True
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith(UNSAFE_MODULES):
            return True
        frame = frame.f_back
    return False


def _on_stop(signum: int, frame: Any) -> None:
    if not _stops:
        threading.Thread(target=_nudge, name="stop-nudge", daemon=True).start()
    _stops.append(signum)
    if stop_must_wait(frame):  # raised again by _nudge once it is safe
        return
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _nudge() -> None:
    while not _handled.wait(NUDGE_SECONDS):
        _thread.interrupt_main(_stops[-1])  # runs _on_stop again in the main thread


def handle_stops() -> None:
    """From now on Ctrl-C raises KeyboardInterrupt and SIGTERM :class:`Terminated` in the main
    thread (call it there, first thing in a command). A stop that comes while numba compiles or
    loads a kernel, or while torch is imported, waits until it returns (an exception there breaks
    the compile, or aborts the process); one lost anyway (compiled code calling back into Python
    may swallow it, or wrap it in a SystemError: see :func:`stop_of`) is raised again every
    NUDGE_SECONDS until :func:`stop_handled` is called, and a swallowed one is not printed."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, _on_stop)
    sys.unraisablehook = _quiet_about_stops


def _quiet_about_stops(unraisable: Any) -> None:
    """A stop raised inside a callback of compiled code (llvmlite's, while numba compiles) is
    swallowed there, and Python would print its traceback; it is raised again (_nudge) instead."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


@contextmanager
def stop_handlers_kept() -> Iterator[None]:
    """Run a block that installs its own handlers for Ctrl-C or SIGTERM (``ray.init``: Ray's C++
    core reports SIGTERM as a crash and exits with 1) and put back the ones before it when it ends."""
    before = {stop: signal.getsignal(stop) for stop in STOP_SIGNALS}
    try:
        yield
    finally:
        for stop, handler in before.items():
            if handler is not None:  # (None: a handler not installed from Python, which cannot be put back)
                signal.signal(stop, handler)


def stop_handled() -> None:
    """The command has caught the stop and is ending: raise it no more."""
    _handled.set()


def stop_of(error: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (or Terminated) behind ``error``: itself, the cause of a SystemError
    that compiled code wrapped it in, or the signal's own exception that a stop carrying a partial
    result names as its ``stop`` (eval's EvaluationStopped: a SIGTERM in a training run's
    evaluation is still a SIGTERM); None for any other error."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            wrapped = getattr(error, "stop", None)
            if isinstance(wrapped, KeyboardInterrupt):
                return stop_of(wrapped)
            return error
        error = error.__cause__ or error.__context__
    return None


def caught_stop(error: BaseException) -> KeyboardInterrupt | None:
    """The stop behind ``error`` (:func:`stop_of`), now handled (:func:`stop_handled`: it is raised
    no more); None, with nothing done, for any other error (which the caller raises again)."""
    stop = stop_of(error)
    if stop is not None:
        stop_handled()
    return stop


def is_sigterm(stop: KeyboardInterrupt) -> bool:
    """Whether ``stop`` came from SIGTERM: a :class:`Terminated`, or a plain KeyboardInterrupt
    raised for the last stop signal received, if that was SIGTERM (a library that waits in compiled
    code may raise its own KeyboardInterrupt for a stop our handler raised: Ray's ``ray.get`` does)."""
    if isinstance(stop, Terminated):
        return True
    return type(stop) is KeyboardInterrupt and bool(_stops) and _stops[-1] == signal.SIGTERM


def exit_code(stop: KeyboardInterrupt) -> int:
    """The exit code of a command stopped by ``stop``: 143 for SIGTERM, 130 for Ctrl-C."""
    return TERMINATED_EXIT if is_sigterm(stop) else INTERRUPTED_EXIT


def stop_name(stop: KeyboardInterrupt) -> str:
    """How a stop is named in the one line a command prints: "interrupted" or "terminated (SIGTERM)"."""
    return "terminated (SIGTERM)" if is_sigterm(stop) else "interrupted"


def exit_on_stop(error: BaseException, line: str) -> int:
    """A command's end on a stop, in its ``except`` clause: the one line ``line`` (``{stop}`` in it
    names the stop) on stderr and the stop's exit code; ``error`` raised again if it was no stop."""
    stop = caught_stop(error)
    if stop is None:
        raise error
    print("\n" + line.format(stop=stop_name(stop)), file=sys.stderr, flush=True)
    return exit_code(stop)


def worker_context() -> multiprocessing.context.BaseContext:
    """Fork where available: workers inherit the imported modules, the bot factories and the
    policy weights the parent already loaded (so no torch code runs in a forked worker)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def end_workers(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's workers now and cancel the tasks they have not begun: after a stop or a
    failed task, a command does not wait for the running ones.

    A worker killed while it wrote a result leaves half a message in the pool's result pipe, and
    the pool's manager thread would wait for the rest forever (this process holds the pipe's
    writing end too), which holds up the interpreter's exit: that end is closed, so the thread
    reads the end of the pipe and gives up once the killed workers are gone."""
    writer = pool._result_queue._writer  # (the executor has no public kill; shutdown forgets the queue)
    for process in list(pool._processes.values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    writer.close()


@contextmanager
def stops_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back in this thread while the block starts worker processes (they
    inherit the held mask until :func:`bind_to_parent` ignores both); a stop that came meanwhile
    is raised when the block ends. Where signals cannot be held (Windows) the block just runs."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def start_worker(parent: int) -> None:
    """The first lines of every worker process (child of ``parent``): :func:`one_blas_thread`, then
    :func:`bind_to_parent`."""
    one_blas_thread()
    bind_to_parent(parent)


def one_blas_thread() -> None:
    """One thread, for the rest of this process, in the BLAS library numpy's matrix products call:
    a command's processes and threads already fill the cores (an eval worker per core; PPO's
    collection beside its update, which holds torch to one thread), and BLAS's own threads would
    only fight them (on 2 cores, 2 eval workers whose search asks a network decided 18 times
    slower; PPO's throughput showed no change beyond the machine's noise)."""
    import numpy  # noqa: F401  (a limit reaches only the libraries loaded already)

    threadpool_limits(limits=1, user_api="blas")  # (not used as a context: the limit stays)


def bind_to_parent(parent: int) -> None:
    """Make this worker process (child of ``parent``) ignore SIGINT and SIGTERM and die when ``parent`` dies."""
    for stop in STOP_SIGNALS:
        signal.signal(stop, signal.SIG_IGN)  # drops a stop held since the fork (stops_held)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
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
