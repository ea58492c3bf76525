"""What may cut a running task short: its deadline and the batch's stop flag, seen by the loop and model calls.

The batch opens a scope with its stop flag, the agent one with the task's time limit; the model facade asks
remaining() and stopping() so that retries, waits and each request end at the task's deadline or when
the user asks the batch to stop (Ctrl-C / SIGTERM). The scope is context-local: every worker thread sees
its own task's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from core.errors import StopRequested, TaskDeadlineExceeded


@dataclass(frozen=True)
class _Scope:
    deadline: float | None = None  # time.monotonic() value
    stop: threading.Event | None = None


_SCOPE: ContextVar[_Scope] = ContextVar("task_scope")
_NO_SCOPE = _Scope()


@contextmanager
def scope(seconds: float | None = None, stop: threading.Event | None = None, *,
          extend: bool = False) -> Iterator[None]:
    """Run the block with a deadline `seconds` from now (never later than the enclosing one unless
    extend) and a stop flag (else the enclosing one)."""
    outer = _SCOPE.get(_NO_SCOPE)
    deadline = outer.deadline
    if seconds is not None:
        mine = time.monotonic() + seconds
        deadline = mine if deadline is None or extend else min(deadline, mine)
    token = _SCOPE.set(_Scope(deadline, stop if stop is not None else outer.stop))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def remaining() -> float | None:
    """Seconds until the current task's deadline (may be negative), or None without one."""
    deadline = _SCOPE.get(_NO_SCOPE).deadline
    return None if deadline is None else deadline - time.monotonic()


def stopping() -> bool:
    """True once the user asked the batch to stop."""
    stop = _SCOPE.get(_NO_SCOPE).stop
    return stop is not None and stop.is_set()


def check_stop() -> None:
    """Raise StopRequested when the batch is stopping (called at step boundaries)."""
    if stopping():
        raise StopRequested("the batch is stopping")


def check() -> None:
    """Raise StopRequested or TaskDeadlineExceeded when the task must not start another model call."""
    check_stop()
    left = remaining()
    if left is not None and left <= 0:
        raise TaskDeadlineExceeded("the task's time limit passed before the model call")


def waiter(sleep: Callable[[float], None]) -> Callable[[float], None]:
    """A sleep that ends early when the batch stops (only for the real time.sleep; fakes are kept)."""
    stop = _SCOPE.get(_NO_SCOPE).stop
    if stop is None or sleep is not time.sleep:
        return sleep

    def wait(seconds: float) -> None:
        stop.wait(seconds)

    return wait
