"""Telling "nothing answers at the model's URL" apart from a passing failure, so a batch that cannot work stops.

A refused connection or a failed DNS lookup on the first request of a run is a configuration error (the
base URL is wrong or the server is not running): the run stops with exit 2 naming the URL. After the server
has answered once, such failures are retried like any dropped connection (a server restarting), but a
server that refuses every attempt for GONE_AFTER seconds, or STREAK model calls in a row failing that way,
stops the batch with one line naming the URL and the error. Likewise a server that has never given a usable
reply (an HTML page, a body that is not JSON, HTTP 5xx: a wrong base URL, a proxy's page) stops the run once
the first call's retries are spent; one that answered before keeps being retried.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from core.chat import split_spec
from core.errors import LLMError, LLMFatalError

STREAK = 3
# Seconds of refused attempts, with no answer in between, after which a server that answered before is gone.
# A refused attempt is retried after at most REFUSED_RETRY seconds (llm.py), so the run stops within ~5 s.
GONE_AFTER = 3.0
REFUSED_RETRY = 1.0


class ServerUnreachableError(LLMFatalError):
    """No server accepts connections at the model's URL (refused, or the host name does not resolve)."""

    def __init__(self, message: str, *, model: str = "", url: str | None = None, reason: str = "") -> None:
        super().__init__(message, model=model)
        self.url = url
        self.reason = reason


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 12:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def unreachable_reason(exc: BaseException) -> str | None:
    """'connection refused' or 'DNS lookup failed' when that is what caused exc, else None."""
    for link in _chain(exc):
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, socket.gaierror):
            return f"DNS lookup failed: {link.strerror or link}"
    return None


def request_url(exc: BaseException) -> str | None:
    """The URL of the request that failed, from the HTTP client's exception, if it says."""
    for link in _chain(exc):
        try:
            request = getattr(link, "request", None)
            url = getattr(request, "url", None)
        except RuntimeError:  # httpx raises when an error carries no request
            continue
        if url:
            return str(url)
    return None


def unusable_answer(exc: BaseException) -> str:
    """What a server answered that no API would (`an HTML page titled "..."`, `HTTP 500 (...)`), or ""."""
    for link in _chain(exc):
        answered = getattr(link, "unusable", "")
        if answered:
            return str(answered)
    return ""


def never_usable_error(exc: BaseException, model: str, answered: str, url: str | None,
                       attempts: int) -> ServerUnreachableError:
    """The run-stopping error for a server that answered every attempt of the run's first call with no API reply."""
    url = url or request_url(exc) or "the configured base URL"
    variable = f"{(split_spec(model)[0] or 'openai').upper()}_BASE_URL"
    tries = f"{attempts} attempts" if attempts > 1 else "the first attempt"
    return ServerUnreachableError(
        f"the server at {url} never gave a usable reply for {model}: it answered {answered} ({tries}). Check the "
        f"base URL (--base-url or {variable}): it must be the model API's root (an OpenAI-compatible server's "
        "usually ends in /v1), and the server must be running the model", model=model, url=url, reason=answered)


def gone_error(exc: BaseException, model: str, reason: str, seconds: float) -> ServerUnreachableError:
    """The run-stopping error for a model server that answered earlier in the run and no longer does."""
    url = request_url(exc) or "the configured base URL"
    return ServerUnreachableError(
        f"the model server for {model} at {url} stopped answering ({reason}, every attempt for {seconds:.0f} s); "
        "is it still running?", model=model, url=url, reason=reason)


def unreachable_error(exc: BaseException, model: str, reason: str, streak: int = 0) -> ServerUnreachableError:
    """The run-stopping error for an unreachable model server, naming the URL and the setting that holds it."""
    url = request_url(exc) or "the configured base URL"
    when = f"{streak} model calls in a row failed: " if streak else ""
    provider = split_spec(model)[0] or "openai"  # the model's provider's variable, not every one
    variable = "AZURE_OPENAI_ENDPOINT" if provider == "azure" else f"{provider.upper()}_BASE_URL"
    return ServerUnreachableError(
        f"{when}cannot reach the model server for {model} at {url} ({reason}). Check the base URL "
        f"(--base-url or {variable}) and that the server is running", model=model, url=url, reason=reason)


class Reachability:
    """Per model facade: whether the server ever answered, and how many calls in a row could not connect."""

    def __init__(self, streak_limit: int = STREAK, clock: Callable[[], float] = time.monotonic,
                 gone_after: float = GONE_AFTER) -> None:
        self.streak_limit, self.gone_after = streak_limit, gone_after
        self.answered = False
        self.streak = 0
        self.refused_since: float | None = None  # first refused attempt since the last answer
        self._clock = clock
        self._lock = threading.Lock()

    def succeeded(self) -> None:
        """A call got an answer."""
        with self._lock:
            self.answered, self.streak, self.refused_since = True, 0, None

    def check_attempt(self, exc: BaseException, model: str) -> None:
        """An attempt that cannot connect stops the run before the server ever answered, and after
        gone_after seconds of nothing but such attempts once it had."""
        reason = unreachable_reason(exc)
        if not reason:
            return
        if not self.answered:
            raise unreachable_error(exc, model, reason) from exc
        with self._lock:
            now = self._clock()
            if self.refused_since is None:
                self.refused_since = now
            refused_for = now - self.refused_since
        if refused_for >= self.gone_after:
            raise gone_error(exc, model, reason, refused_for) from exc

    def check_first_call(self, failures: list[LLMError], model: str, url: str | None) -> None:
        """Every model failed a call's retries with no API reply (an HTML page, HTTP 5xx) and the server never
        answered this run: the base URL is wrong or the server broken, so the run stops (no hours of retries)."""
        answers = [unusable_answer(f) for f in failures]
        if self.answered or not answers or not all(answers):
            return
        raise never_usable_error(failures[-1], model, answers[-1], url, failures[-1].attempts or 1) from failures[-1]

    def check_call(self, exc: LLMError, model: str) -> None:
        """A call failed after retries: count unreachable failures in a row; too many stop the run."""
        reason = unreachable_reason(exc)
        with self._lock:
            self.streak = self.streak + 1 if reason else 0
            streak = self.streak
        if reason and streak >= self.streak_limit:
            raise unreachable_error(exc, model, reason, streak) from exc
