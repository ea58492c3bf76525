"""Per-host politeness shared by every task of a run: requests in flight, a gap between starts, Retry-After.

A 32-way batch must not hammer one site. Every request to a host takes a turn here first: at most
`max_in_flight` requests to the host run at once, each starts at least `gap` seconds after the previous
one to that host started, and a 429/503 with Retry-After holds every task's next request to that host
until the time the server asked for. Waiting is bounded by the caller's deadline and ends when the
batch stops.
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from core import cancellation

MAX_DEFERRAL = 600.0  # a hostile Retry-After cannot hold a host for longer than this
_POLL = 0.25  # longest wait between checks of the batch's stop flag


class HostBusyError(Exception):
    """The host's turn did not come before the caller's deadline."""


@dataclass
class _Host:
    in_flight: int = 0
    last_start: float = -1e18
    not_before: float = 0.0
    why: str = ""  # what asked for the hold (an API client's own words)


class HostLimiter:
    """Turns per host for the whole run; thread-safe."""

    def __init__(self, gap: float = 1.0, max_in_flight: int = 2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.gap = max(gap, 0.0)
        self.max_in_flight = max(max_in_flight, 1)
        self.clock = clock
        self._hosts: dict[str, _Host] = {}
        self._cond = threading.Condition()

    @contextmanager
    def turn(self, host: str, timeout: float | None = None, *, gap: bool = True) -> Iterator[None]:
        """Hold one of the host's request slots for the block; HostBusyError when timeout passes first."""
        self.acquire(host, timeout, gap=gap)
        try:
            yield
        finally:
            self.release(host)

    def release(self, host: str) -> None:
        """Give back a slot taken by acquire()."""
        with self._cond:
            self._hosts[host.lower()].in_flight -= 1
            self._cond.notify_all()

    def wait_for(self, host: str, gap: bool = True) -> float:
        """Seconds a request to host would wait now (0 when it may start); for tests and the console."""
        with self._cond:
            return self._wait(self._hosts.setdefault(host.lower(), _Host()), gap)

    def defer(self, host: str, seconds: float, why: str = "") -> None:
        """The server asked (Retry-After) that nothing reach host for `seconds`. An API client may hold a key of
        its own (a service's name, which no host spells) and ask held() before each request, so that its callers
        go elsewhere at once instead of waiting."""
        with self._cond:
            state = self._hosts.setdefault(host.lower(), _Host())
            until = self.clock() + min(max(seconds, 0.0), MAX_DEFERRAL)
            if until > state.not_before:
                state.not_before, state.why = until, why

    def held(self, host: str) -> tuple[float, str]:
        """Seconds left of the hold defer() put on host (0 when none) and what asked for it."""
        with self._cond:
            state = self._hosts.get(host.lower())
            left = state.not_before - self.clock() if state else 0.0
            return (left, state.why) if state and left > 0 else (0.0, "")

    def acquire(self, host: str, timeout: float | None = None, *, gap: bool = True) -> None:
        """Wait for a slot at host (and, with gap, for the gap since the last start); HostBusyError at timeout."""
        key = host.lower()
        end = None if timeout is None else self.clock() + max(timeout, 0.0)
        with self._cond:
            state = self._hosts.setdefault(key, _Host())
            while True:
                wait = self._wait(state, gap)
                if wait <= 0:
                    break
                left = float("inf") if end is None else end - self.clock()
                # A full host may free a slot any moment; a gap or a Retry-After longer than the time left will not.
                if cancellation.stopping() or left <= 0 or (wait != float("inf") and wait > left):
                    raise HostBusyError(self._why(state, wait))
                self._cond.wait(min(wait, left, _POLL))
            state.in_flight += 1
            if gap:
                state.last_start = self.clock()

    def _wait(self, state: _Host, gap: bool) -> float:
        """Seconds until a request may start (inf while the host's slots are all taken)."""
        if state.in_flight >= self.max_in_flight:
            return float("inf")
        now = self.clock()
        until = state.not_before
        if gap:
            until = max(until, state.last_start + self.gap)
        return max(until - now, 0.0)

    def _why(self, state: _Host, wait: float) -> str:
        if state.in_flight >= self.max_in_flight:
            return f"{state.in_flight} requests to this host were already in flight"
        if state.not_before > self.clock():
            return f"the server asked to wait {wait:.0f} s more (Retry-After)"
        return f"the next turn for this host was {wait:.1f} s away"


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date (RFC 9110 10.2.3); None if absent or bad."""
    if not value:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
