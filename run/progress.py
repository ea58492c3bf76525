"""Where a run stands: done / total, answered / failed / without sources, spend against the cap, tokens, ETA.

`Tally` counts (thread-safe) from the agents' events and the finished records; the console shows its line
in rich's live status on a terminal, and `PlainTicker` prints it every few tasks or seconds elsewhere
(CI, a log file). Finished tasks count their records' figures; running ones what their model calls cost so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from agent import Event
from core.text import money
from report.markdown import DONE_STATUSES, TaskRecord
from report.sources import without_sources

EVERY_TASKS = 10  # without a terminal: a progress line every this many finished tasks ...
EVERY_SECONDS = 30.0  # ... or this many seconds, whichever comes first


def duration(seconds: float) -> str:
    """`45 s`, `3 m 05 s`, `2 h 04 m`."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} m {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} m"


class Tally:
    """The run's counts so far; `line()` is the status line."""

    def __init__(self, total: int, cap: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.cap, self._clock = total, cap, clock
        self.started = clock()
        self.done = self.answered = self.failed = self.unsourced = 0
        self._finished_cost = 0.0
        self.unpriced = False  # a call or task without a known price: the spend shows n/a, never a guess
        self._finished_tokens = 0
        self._running: dict[str, tuple[float, int]] = {}  # task id -> (cost, tokens) of its calls so far
        self._lock = threading.Lock()
        self.extra_from: Callable[[], str] | None = None  # what else to show, asked at each refresh (RateLimits.note)

    def on_event(self, task_id: str, event: Event) -> None:
        """Count a model call of a running task."""
        if event.kind not in ("llm_call", "summary"):
            return
        data: dict[str, Any] = event.data
        tokens = int(data.get("prompt_tokens") or 0) + int(data.get("completion_tokens") or 0)
        with self._lock:
            self.unpriced = self.unpriced or data.get("cost") is None
            cost, seen = self._running.get(task_id, (0.0, 0))
            self._running[task_id] = (cost + float(data.get("cost") or 0.0), seen + tokens)

    def on_record(self, record: TaskRecord) -> None:
        """Count a finished task (its record's figures replace what its calls added so far)."""
        with self._lock:
            self._running.pop(record.id, None)
            self.done += 1
            answered = record.status in DONE_STATUSES
            self.answered += answered
            self.failed += not answered
            self.unsourced += without_sources(record.sourced, answered)
            self._finished_cost += record.cost or 0.0
            self.unpriced = self.unpriced or record.cost is None
            self._finished_tokens += record.tokens

    def spent(self) -> tuple[float, int]:
        """Cost and tokens so far, running tasks included."""
        with self._lock:
            return (self._finished_cost + sum(c for c, _ in self._running.values()),
                    self._finished_tokens + sum(t for _, t in self._running.values()))

    def eta(self) -> str:
        """Time left at the pace so far ('—' before the first task ends)."""
        if not self.done:
            return "—"
        if self.done >= self.total:
            return "0 s"
        elapsed = self._clock() - self.started
        return duration(elapsed / self.done * (self.total - self.done))

    def line(self) -> str:
        """`12/40 done · 10 answered · 2 failed · 1 without sources · $0.0412 of $1.00 · 51,200 tokens · ...`."""
        cost, tokens = self.spent()
        spend = money(None if self.unpriced else cost) + (f" of {money(self.cap)} cap" if self.cap is not None else "")
        parts = [f"{self.done}/{self.total} done", f"{self.answered} answered", f"{self.failed} failed",
                 f"{self.unsourced} without sources", spend, f"{tokens:,} tokens",
                 f"{duration(self._clock() - self.started)} elapsed", f"ETA {self.eta()}"]
        extra = self.extra_from() if self.extra_from is not None else ""
        return " · ".join(parts) + (f" · {extra}" if extra else "")


class PlainTicker:
    """Without a terminal: `say(tally.line())` every EVERY_TASKS finished tasks or EVERY_SECONDS seconds."""

    def __init__(self, tally: Tally, say: Callable[[str], None], every_tasks: int = EVERY_TASKS,
                 every_seconds: float = EVERY_SECONDS) -> None:
        self.tally, self.say = tally, say
        self.every_tasks, self.every_seconds = every_tasks, every_seconds
        self._stop = threading.Event()
        self._last = time.monotonic()
        self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)

    def start(self) -> PlainTicker:
        """Start the timer thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the timer thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def on_record(self) -> None:
        """After a finished task: a line when it completes a group of every_tasks (and not at the very end)."""
        done = self.tally.done
        if done % self.every_tasks == 0 and done < self.tally.total:
            self._emit()

    def _emit(self) -> None:
        self._last = time.monotonic()
        self.say("progress: " + self.tally.line())

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if time.monotonic() - self._last >= self.every_seconds:
                self._emit()
