"""The API requests of search_papers: JSON through the run's web session, a service's failure as one line.

Each request goes through the run's web session like wikipedia's and arxiv's (address policy, domain rules, per-host
turns, size cap); robots.txt is not asked (see api_get)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from core.secrets import SecretRedactor
from providers.ratelimit import DEFAULT_PAUSE
from tools.web.api_get import Fetcher
from tools.web.errors import FetchError, HTTPStatusError
from tools.web.politeness import HostLimiter, retry_after_seconds
from tools.web.search_backends import SearchBackendError, SearchRateLimitedError


@dataclass
class Client:
    """The API requests of one tool: its fetcher (no robots.txt), the run's host turns, the redactor that keeps
    the configured keys out of messages."""

    fetcher: Fetcher
    limiter: HostLimiter
    redact: SecretRedactor

    def get(self, label: str, url: str, key: tuple[str, bool] = ("", False), *, missing: bool = False) -> Any:
        """The JSON answer to GET url (None for a 404 when `missing`: a DOI the service does not know);
        SearchBackendError (rate limited: SearchRateLimitedError). `key` is the service's key variable and whether
        it is set, for the messages."""
        try:
            result = self.fetcher.get(url)
        except HTTPStatusError as exc:
            if exc.status == 404 and missing:
                return None
            raise self._status_error(label, exc, url, key) from exc
        except FetchError as exc:
            raise SearchBackendError(self.redact(f"{label}: {exc}")) from exc
        try:
            return json.loads(result.text())
        except ValueError as exc:
            raise SearchBackendError(f"{label} did not answer JSON (is its base URL an API's?)") from exc

    def _status_error(self, label: str, exc: HTTPStatusError, url: str, key: tuple[str, bool]) -> SearchBackendError:
        said = _detail(exc.body)
        said = f": {self.redact(said)}" if said else ""
        variable, key_set = key
        if exc.status == 429:
            wait = retry_after_seconds(exc.headers.get("retry-after"))
            if wait is None:  # like search: every task's next request waits 2 s
                self.limiter.defer(urlsplit(url).hostname or "", DEFAULT_PAUSE)
            hint = f" (a {variable} raises it)" if variable and not key_set else ""
            return SearchRateLimitedError(f"{label} rate limit or daily allowance spent (HTTP 429){hint}{said}", wait)
        if exc.status in (401, 403) and key_set:
            return SearchBackendError(f"{label} refused the key (HTTP {exc.status}); check {variable}{said}")
        return SearchBackendError(f"{label} answered HTTP {exc.status}{said}")


def _detail(body: bytes) -> str:
    """An error body's own words: OpenAlex's error/message, Semantic Scholar's message, Crossref's message list."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return " ".join(body[:200].decode("utf-8", "replace").split()) if body[:1] not in (b"<", b"") else ""
    if isinstance(data, dict):
        said = data.get("message") or data.get("error")
        if isinstance(said, list) and said and isinstance(said[0], dict):
            said = said[0].get("message")
        return " ".join(str(said).split())[:200] if said else ""
    return ""
