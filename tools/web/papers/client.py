"""The API requests of search_papers: JSON through the run's web session, a service's failure as one line.

Each request goes through the run's web session like wikipedia's and arxiv's (address policy, domain rules, per-host
turns, size cap); robots.txt is not asked (see api_get). A 429 or a 503 puts the service on hold for every task of
the run, for its Retry-After (else search's 2 s): while the hold lasts the service is not asked and the call goes
to the next service at once; the first call after it ends asks it again. No call ever waits on a hold."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from core.secrets import SecretRedactor
from providers.ratelimit import DEFAULT_PAUSE
from tools.web.api_get import Fetcher
from tools.web.errors import FetchError, HTTPStatusError
from tools.web.politeness import HostLimiter, retry_after_seconds
from tools.web.search_backends import SearchBackendError, SearchRateLimitedError

T = TypeVar("T")


@dataclass
class Client:
    """The API requests of one tool: its fetcher (no robots.txt), the run's host turns, the redactor that keeps
    the configured keys out of messages."""

    fetcher: Fetcher
    limiter: HostLimiter
    redact: SecretRedactor

    def get(self, label: str, url: str, key: tuple[str, bool] = ("", False), *, missing: bool = False) -> Any:
        """The JSON answer to GET url (None for a 404 when `missing`: a DOI the service does not know);
        SearchBackendError (rate limited or on hold: SearchRateLimitedError). `key` is the service's key variable
        and whether it is set, for the messages."""
        left, why = self.limiter.held(_hold(label))
        if left > 0:
            raise SearchRateLimitedError(f"{label} not asked: on hold {math.ceil(left)} s more ({why})", left)
        try:
            result = self.fetcher.get(url)
        except HTTPStatusError as exc:
            if exc.status == 404 and missing:
                return None
            raise self._status_error(label, exc, key) from exc
        except FetchError as exc:
            raise SearchBackendError(self.redact(f"{label}: {exc}")) from exc
        try:
            return json.loads(result.text())
        except RecursionError as exc:
            raise SearchBackendError(f"{label} answered JSON nested too deeply to read") from exc
        except ValueError as exc:
            raise SearchBackendError(f"{label} did not answer JSON (is its base URL an API's?)") from exc

    def _status_error(self, label: str, exc: HTTPStatusError, key: tuple[str, bool]) -> SearchBackendError:
        said = _detail(exc.body)
        said = f": {self.redact(said)}" if said else ""
        variable, key_set = key
        if exc.status in (429, 503):  # the service is held for every task: the next one is asked meanwhile
            wait = retry_after_seconds(exc.headers.get("retry-after"))
            asked = f"Retry-After {wait:.0f} s" if wait is not None else f"no Retry-After: {DEFAULT_PAUSE:g} s"
            self.limiter.defer(_hold(label), DEFAULT_PAUSE if wait is None else wait,
                               f"it answered HTTP {exc.status}, {asked}")
            if exc.status == 503:
                return SearchRateLimitedError(f"{label} answered HTTP 503{said}", wait)
            hint = f" (a {variable} raises it)" if variable and not key_set else ""
            return SearchRateLimitedError(f"{label} rate limit or daily allowance spent (HTTP 429){hint}{said}", wait)
        if exc.status in (401, 403) and key_set:
            return SearchBackendError(f"{label} refused the key (HTTP {exc.status}); check {variable}{said}")
        return SearchBackendError(f"{label} answered HTTP {exc.status}{said}")


def asked(service: Any, call: Callable[[], T]) -> T:
    """call() of a service, a reply of the wrong shape (a string where an object belongs, a list for a number...)
    as one line naming the service, like any other failure of it."""
    try:
        return call()
    except SearchBackendError:
        raise
    except RecursionError as exc:
        raise SearchBackendError(f"{service.label} answered JSON nested too deeply to read") from exc
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise SearchBackendError(f"{service.label} answered a record of a shape it does not document "
                                 f"({type(exc).__name__}); try another service or query") from exc


def clauses(failures: list[str]) -> str:
    """Several services' failures, each its own clause: `A answered HTTP 503; B: network error`."""
    return "; ".join(f.rstrip(" .;") for f in failures)


def _hold(label: str) -> str:
    """The key of a service's hold in the run's HostLimiter (no host name has a space): services sharing a host (a
    local mirror, the tests' stand-in) are held apart, and a hold never stalls a turn at the host."""
    return f"{label} API"


def _detail(body: bytes) -> str:
    """An error body's own words: OpenAlex's error/message, Semantic Scholar's message, Crossref's message list."""
    try:
        data = json.loads(body or b"null")
    except RecursionError:
        return ""
    except ValueError:
        return " ".join(body[:200].decode("utf-8", "replace").split()) if body[:1] not in (b"<", b"") else ""
    if isinstance(data, dict):
        said = data.get("message") or data.get("error")
        if isinstance(said, list) and said and isinstance(said[0], dict):
            said = said[0].get("message")
        return " ".join(str(said).split())[:200] if said else ""
    return ""
