"""What a model call says while it runs (a timeout, a retry and its wait), told to whoever listens in this context;
and `every`, a heartbeat while a slow call runs, from one watcher thread for the whole process (a fast call
starts no thread).

The agent listens around each of its model calls and turns each notice into an event: the task's trace
keeps it and the console shows it with -v. The facade (llm.py) tells; nothing listens outside a task, so a
notice there is dropped. Context-local like core/cancellation.py: every worker thread hears its own task's.
"""

from __future__ import annotations

import heapq
import math
import os
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


class _Beat:
    """One block's heartbeat: when it is next due, and the callback (None once the block ended)."""

    __slots__ = ("callback", "due", "period", "running", "started")

    def __init__(self, period: float, callback: Callable[[float], None]) -> None:
        self.period, self.running = period, False
        self.callback: Callable[[float], None] | None = callback
        self.started = time.monotonic()
        self.due = self.started + period


class _Watcher:
    """One daemon thread for every heartbeat of the process, over a heap of deadlines. It sleeps toward the
    earliest and is woken only when a new one is earlier, so a block that ends before its first beat (a fast
    reply) costs a heap push and a flag: no thread, no wake-up. Ended blocks' entries are dropped when they come
    due, or all at once when they are most of the heap."""

    def __init__(self) -> None:
        self.lock = threading.Condition(threading.Lock())
        self.heap: list[tuple[float, int, _Beat]] = []
        self.count = self.ended = 0
        self.thread: threading.Thread | None = None
        self.waiting_until = math.inf  # the deadline the thread sleeps toward

    def add(self, beat: _Beat) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="call-heartbeats", daemon=True)
                self.thread.start()
            self._push(beat)
            if beat.due < self.waiting_until:
                self.lock.notify_all()  # all: a remove() may be waiting on the same condition

    def remove(self, beat: _Beat) -> None:
        """No callback after this returns (one under way on the watcher's thread is waited for)."""
        with self.lock:
            beat.callback = None
            self.ended += 1
            if self.ended > 64 and self.ended * 2 > len(self.heap):
                self.heap = [entry for entry in self.heap if entry[2].callback is not None]
                heapq.heapify(self.heap)
                self.ended = 0
            while beat.running and threading.current_thread() is not self.thread:
                self.lock.wait()

    def after_fork(self) -> None:
        """A forked child has no watcher thread: it starts afresh (its parent's blocks are not its own)."""
        self.lock = threading.Condition(threading.Lock())
        self.heap, self.thread, self.waiting_until, self.ended = [], None, math.inf, 0

    def _push(self, beat: _Beat) -> None:
        self.count += 1
        heapq.heappush(self.heap, (beat.due, self.count, beat))

    def _run(self) -> None:
        while True:
            with self.lock:
                beat = self._next_due()
                if beat is None:
                    continue
                callback, beat.running = beat.callback, True
            try:
                if callback is not None:
                    callback(time.monotonic() - beat.started)
            except Exception:  # a listener's failure must not end the heartbeats of every other call
                pass
            finally:
                with self.lock:
                    beat.running = False
                    if beat.callback is not None:
                        beat.due += beat.period
                        self._push(beat)
                    self.lock.notify_all()

    def _next_due(self) -> _Beat | None:
        """Under the lock: the live beat that is due now, else None after sleeping toward the earliest deadline."""
        while self.heap and self.heap[0][0] <= time.monotonic():
            beat = heapq.heappop(self.heap)[2]
            if beat.callback is not None:
                return beat
            self.ended = max(self.ended - 1, 0)  # its block ended
        self.waiting_until = self.heap[0][0] if self.heap else math.inf
        self.lock.wait(None if self.waiting_until == math.inf else self.waiting_until - time.monotonic())
        self.waiting_until = math.inf
        return None


_WATCHER = _Watcher()
if hasattr(os, "register_at_fork"):  # POSIX: Windows has no fork, and no os.register_at_fork to import with
    os.register_at_fork(after_in_child=_WATCHER.after_fork)


@contextmanager
def every(seconds: float, callback: Callable[[float], None]) -> Iterator[None]:
    """Call callback(seconds so far) every `seconds` while the block runs (a slow model call is heard from), from
    the process's one heartbeat thread; never after the block ended."""
    beat = _Beat(seconds, callback)
    _WATCHER.add(beat)
    try:
        yield
    finally:
        _WATCHER.remove(beat)


@contextmanager
def heard(listener: Listener, period: float) -> Iterator[None]:
    """listening(listener), plus listener("llm_waiting", {"seconds": s}) every `period` seconds of the block."""
    with listening(listener), every(period, lambda seconds: listener("llm_waiting", {"seconds": round(seconds)})):
        yield
