"""What a model call says while it runs (a timeout, a retry and its wait), told to whoever listens in this context;
and `every`, a heartbeat while a slow call runs.

The agent listens around each of its model calls and turns each notice into an event: the task's trace
keeps it and the console shows it with -v. The facade (llm.py) tells; nothing listens outside a task, so a
notice there is dropped. Context-local like core/cancellation.py: every worker thread hears its own task's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_LISTENER: ContextVar[Listener | None] = ContextVar("call_notices", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Hear the notices of the calls made in this block: listener(kind, data)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def tell(kind: str, **data: Any) -> None:
    """Tell the listener of this context, if any (`kind`: llm_retry, llm_timeout ...)."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(kind, data)


@contextmanager
def every(seconds: float, callback: Callable[[float], None]) -> Iterator[None]:
    """Call callback(seconds so far) every `seconds` while the block runs (a slow model call is heard from)."""
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(seconds):
            callback(time.monotonic() - started)

    thread = threading.Thread(target=beat, name="call-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextmanager
def heard(listener: Listener, period: float) -> Iterator[None]:
    """listening(listener), plus listener("llm_waiting", {"seconds": s}) every `period` seconds of the block."""
    with listening(listener), every(period, lambda seconds: listener("llm_waiting", {"seconds": round(seconds)})):
        yield
