"""The run budget's shared part: what all tasks have spent and hold for calls in flight, against the run's cap.

`RunSpend` is the protocol providers/budget.py uses; `LocalRunSpend` serves the threads of one process.
Every method is a short, non-blocking step, so an implementation that lives elsewhere (a Ray actor shared
by the workers of a cluster) can stand in through `RunBudget(..., spend=...)`: the caller does the waiting.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from core.text import money

WAIT = 0.0  # reserve()'s answer "not now, but it may fit once the calls in flight settle"


@dataclass(frozen=True)
class SpendTotals:
    """The run's spend so far: USD spent, USD held for calls in flight, why no task may start, tasks skipped."""

    spent: float = 0.0
    reserved: float = 0.0
    exhausted: str | None = None
    skipped: int = 0


class RunSpend(Protocol):
    """The shared spend of one run (thread-safe; may live in another process)."""

    def reserve(self, least: float, most: float, keep: float = 0.0) -> float | None:
        """Hold up to `most` USD, at least `least`, leaving `keep` free: the amount, WAIT, or None (never fits)."""
        ...

    def settle(self, reserved: float, cost: float) -> None:
        """Release a reservation and add what the call really cost."""
        ...

    def stop_new(self, reason: str) -> None:
        """No task may start from now on (the first reason is kept)."""
        ...

    def may_start(self) -> bool:
        """False (and the task counted as skipped) once the cap has been reached."""
        ...

    def totals(self) -> SpendTotals:
        """Spent, held, why exhausted, skipped."""
        ...


class LocalRunSpend:
    """RunSpend for the threads of this process."""

    def __init__(self, cap: float | None) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._spent = self._reserved = 0.0
        self._exhausted: str | None = None
        self._skipped = 0

    def reserve(self, least: float, most: float, keep: float = 0.0) -> float | None:
        """Hold what fits under the cap now; WAIT when it would fit once the calls in flight settle."""
        if self.cap is None:
            return most
        with self._lock:
            free = self.cap - self._spent - self._reserved - keep
            if free >= least:
                amount = max(min(most, free), least, 1e-12)  # never WAIT's 0.0 for a granted hold
                self._reserved += amount
                return amount
            if self._reserved > 0 and self.cap - self._spent - keep >= least:
                return WAIT
            return None

    def settle(self, reserved: float, cost: float) -> None:
        """Release a reservation, add the real cost; at the cap no new task starts."""
        with self._lock:
            self._reserved = max(self._reserved - reserved, 0.0)  # no float dust left "in flight"
            self._spent += cost
            if self.cap is not None and self._spent >= self.cap and self._exhausted is None:
                self._exhausted = f"the run's cost cap of {money(self.cap)} (--max-run-cost) was reached"

    def stop_new(self, reason: str) -> None:
        """Keep the first reason no task may start."""
        with self._lock:
            self._exhausted = self._exhausted or reason

    def may_start(self) -> bool:
        """Count a skipped task once the cap is reached."""
        with self._lock:
            if self._exhausted:
                self._skipped += 1
            return not self._exhausted

    def totals(self) -> SpendTotals:
        """A consistent snapshot."""
        with self._lock:
            return SpendTotals(self._spent, self._reserved, self._exhausted, self._skipped)
