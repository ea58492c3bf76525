"""A per-run circuit breaker: models whose account is exhausted or that keep failing are skipped."""

from __future__ import annotations

import threading

from core.errors import LLMError

# Calls in a row that failed after all their retries before a model is skipped while another one answers.
PERSISTENT_FAILURES = 3


class ModelBreaker:
    """Thread-safe memory, for one run, of the models not worth calling again."""

    def __init__(self, persistent_failures: int = PERSISTENT_FAILURES) -> None:
        self._lock = threading.Lock()
        self._dead: dict[str, LLMError] = {}  # spec -> the error that killed it (quota, account, region)
        self._failing: dict[str, int] = {}  # spec -> calls in a row that failed after retries
        self.limit = persistent_failures

    def dead(self, spec: str) -> LLMError | None:
        """The error that marked this model dead for the rest of the run, if any."""
        with self._lock:
            return self._dead.get(spec)

    def trip(self, spec: str, error: LLMError) -> None:
        """Mark the model dead: its quota, spend limit or account will not recover during this run."""
        with self._lock:
            self._dead.setdefault(spec, error)

    def failed(self, spec: str) -> None:
        """Count one call that failed after all its retries."""
        with self._lock:
            self._failing[spec] = self._failing.get(spec, 0) + 1

    def succeeded(self, spec: str) -> None:
        """The model answered: its run of failures is over."""
        with self._lock:
            self._failing.pop(spec, None)

    def failing(self, spec: str) -> bool:
        """True when the model failed its last calls in a row (skip it while another model answers)."""
        with self._lock:
            return self._failing.get(spec, 0) >= self.limit
