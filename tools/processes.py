"""Registry of the tool processes running now, so that stopping the batch can kill them all at once.

A tool that starts a process group (the shell tool does, with start_new_session=True; a python session's
first process leads one) calls register(proc) after starting it and unregister(proc) once it has ended;
kill_all() sends SIGKILL to every registered group. Anything with a `pid` and a `returncode` (None while it
runs) can be registered. Thread-safe; kill_all() is also safe from a signal handler in the main thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from typing import Protocol


class Running(Protocol):
    """A started process: a Popen, or the handle of a group another process started (a python session)."""

    pid: int
    returncode: int | None


_lock = threading.RLock()  # re-entrant: a signal handler may run while the main thread holds it
_running: dict[int, Running] = {}
_after_kill: dict[int, Callable[[], None]] = {}  # pid -> what to remove once it is killed (the browser's profile)


def register(proc: Running) -> None:
    """Track a started process (the leader of its own process group)."""
    with _lock:
        _running[proc.pid] = proc


def unregister(proc: Running) -> None:
    """Stop tracking a process that has finished."""
    with _lock:
        _running.pop(proc.pid, None)
        _after_kill.pop(proc.pid, None)


def after_kill(proc: Running, cleanup: Callable[[], None]) -> None:
    """Run cleanup (quick, idempotent, no locks) after kill_all() has killed proc, e.g. remove its files."""
    with _lock:
        _after_kill[proc.pid] = cleanup


def running() -> list[int]:
    """The process ids being tracked."""
    with _lock:
        return list(_running)


def kill_all() -> int:
    """SIGKILL every tracked process group (and the process itself); returns how many were signalled."""
    with _lock:
        procs = list(_running.values())
    for proc in procs:
        if proc.returncode is not None:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGKILL)
    _run_cleanups()
    return len(procs)


def _run_cleanups() -> None:
    """Each after_kill() clean-up, once it has run to the end; a second signal may run one again (idempotent)."""
    with _lock:
        pending = list(_after_kill.items())
    for pid, cleanup in pending:
        with contextlib.suppress(Exception):  # a clean-up that fails must not stop the others
            cleanup()
        with _lock:
            _after_kill.pop(pid, None)
