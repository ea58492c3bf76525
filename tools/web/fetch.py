"""Safe HTTP(S) GET for the scrape tool: public addresses only, checked redirects, size cap, retries, politeness."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from config import project_version
from tools.web.addresses import is_public_address
from tools.web.errors import BlockedURLError, FetchError, HTTPStatusError
from tools.web.fetch_deadline import FetchDeadline
from tools.web.policy import AddressCheck, IPAddress, Resolver, UrlPolicy, split_url, system_resolver
from tools.web.politeness import HostBusyError, HostLimiter, retry_after_seconds
from tools.web.robots import origin

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = ["AddressCheck", "BlockedURLError", "FetchError", "FetchResult", "HTTPStatusError", "IPAddress",
           "Resolver", "SafeFetcher", "is_public_address", "system_resolver"]

MAX_REDIRECTS = 5
DEADLINE_FACTOR = 4  # a whole fetch (every hop, retry, header and body byte) gets 4x SCRAPE_TIMEOUT
RETRIES = 2
ERROR_BODY_BYTES = 131_072  # enough of an error page to tell a challenge page from a plain 403/503
_REDIRECT_CODES = {301, 302, 303, 307, 308}
_TEXT_TYPES = ("application/xml", "application/csv", "application/x-ndjson", "application/javascript")


@dataclass
class FetchResult:
    """A fetched body: final URL after redirects, status, headers, and whether the size cap cut it."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. robots.txt could not be read

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased ('' when absent)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        """The charset parameter of Content-Type, if any."""
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None

    def text(self) -> str:
        """The body as text: the declared charset, else UTF-8, else a detected encoding."""
        body = self.body
        if self.charset:
            try:
                return body.decode(self.charset, errors="replace")
            except LookupError:
                pass
        try:
            return body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if self.truncated and exc.start >= len(body) - 3:  # the size cap cut a character in two
                return body[: exc.start].decode("utf-8-sig")
        from charset_normalizer import from_bytes

        best = from_bytes(body).best()
        return str(best) if best is not None else body.decode("utf-8", errors="replace")

    def kind(self) -> str:
        """'html', 'pdf', 'json', 'text' or 'binary', from Content-Type, the body and the URL."""
        ctype, head = self.content_type, self.body[:512].lstrip().lower()
        if ctype in ("text/html", "application/xhtml+xml"):
            return "html"
        if ctype in ("application/pdf", "application/x-pdf") or head.startswith(b"%pdf"):
            return "pdf"
        if ctype == "application/json" or ctype.endswith("+json"):
            return "json"
        if ctype.startswith("text/") or ctype in _TEXT_TYPES or ctype.endswith("+xml"):
            return "text"
        if ctype in ("", "application/octet-stream", "binary/octet-stream"):
            if head.startswith((b"<!doctype html", b"<html")):
                return "html"
            suffix = PurePosixPath(urlsplit(self.url).path).suffix.lower()
            return {".json": "json", ".csv": "text", ".txt": "text", ".md": "text"}.get(suffix, "binary")
        return "binary"


class SafeFetcher:
    """GET a URL over HTTP(S) while refusing non-public hosts on every hop; never reads past max_bytes.

    Given a HostLimiter, every request takes a turn at its host first (requests in flight, the gap between
    them, Retry-After); given a robots check, every hop is checked against the site's robots.txt.
    """

    def __init__(self, timeout: float, max_bytes: int, allow_private: bool = False,
                 resolver: Resolver | None = None, address_check: AddressCheck | None = None,
                 sleep: Callable[[float], None] = time.sleep, retries: int = RETRIES,
                 deadline: float | None = None, *, policy: UrlPolicy | None = None,
                 limiter: HostLimiter | None = None, robots: Callable[[str], str | None] | None = None,
                 user_agent: str | None = None, gap: bool = True, holds: bool = True) -> None:
        self.timeout = timeout
        self.deadline = deadline if deadline is not None else timeout * DEADLINE_FACTOR
        self.max_bytes = max_bytes
        self.policy = policy or UrlPolicy(allow_private, resolver, address_check)
        self.sleep = sleep
        self.retries = retries
        self.limiter, self.robots, self.gap = limiter, robots, gap
        self.holds = holds  # False: a Retry-After is the caller's to keep (an API client holding its service)
        self.headers = {**_HEADERS, "User-Agent": user_agent or default_user_agent()}
        self.origin_headers: dict[str, dict[str, str]] = {}  # origin -> headers sent there only (an API's key)

    def check(self, url: str) -> str | None:
        """Refuse a URL with a bad scheme, a refused domain or a non-public host; returns the address to use."""
        return self.policy.check(url)

    def get(self, url: str) -> FetchResult:
        """Fetch url, following up to MAX_REDIRECTS redirects, each hop checked before connecting."""
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is a hard dependency
            raise FetchError("the httpx package is missing: pip install httpx", url) from exc
        hops: list[str] = []
        notes: list[str] = []
        current = url
        address = self.check(url)
        self._robots(url, notes)  # before the fetch's deadline starts: robots.txt has a deadline of its own
        deadline = FetchDeadline(self.deadline)
        try:
            with httpx.Client(timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                              headers=self.headers, verify=tls_context()) as client:
                for hop in range(MAX_REDIRECTS + 1):
                    if hop:
                        address = self.check(current)
                        self._robots(current, notes)
                    result = self._get_with_retries(client, current, address, deadline)
                    location = result.headers.get("location")
                    if result.status in _REDIRECT_CODES and location:
                        hops.append(current)
                        current = _redirect_target(current, location)
                        continue
                    result.redirects, result.notes = hops, notes
                    if result.status >= 400:
                        raise _status_error(result, current)
                    return result
        finally:
            deadline.close()
        raise FetchError(f"too many redirects (more than {MAX_REDIRECTS})", url)

    def _robots(self, url: str, notes: list[str]) -> None:
        """RobotsRefusedError when robots.txt disallows url; a note when it could not be read."""
        if self.robots is not None and (note := self.robots(url)) and note not in notes:
            notes.append(note)

    def _get_with_retries(self, client: httpx.Client, url: str, address: str | None,
                          deadline: FetchDeadline) -> FetchResult:
        last_error: FetchError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(0.5 * 2 ** (attempt - 1))  # at most 1 s: the deadline is checked right after
            if deadline.expired or deadline.remaining() <= 0:
                break
            result, last_error = self._attempt(client, url, address, deadline)
            if result is None:
                continue
            wait = self._retry_after(url, result)
            if result.status < 500 and not (result.status == 429 and wait is not None):
                return result
            last_error = _status_error(result, url)
            if wait is not None and wait > deadline.remaining():
                last_error.args = (f"{last_error.args[0]}; the server asked to wait {wait:.0f} s (Retry-After)",)
                raise last_error
        if deadline.expired or last_error is None:
            raise FetchError(f"gave up at the {deadline.seconds:g}s deadline for the whole fetch "
                             "(connection, headers and body of every redirect and retry)", url)
        if self.retries:
            last_error.args = (f"{last_error.args[0]} (tried {self.retries + 1} times)",)
        raise last_error

    def _attempt(self, client: httpx.Client, url: str, address: str | None,
                 deadline: FetchDeadline) -> tuple[FetchResult | None, FetchError | None]:
        """One request in the host's turn: its result, or the error worth a retry."""
        import httpx

        try:
            with self._turn(url, deadline):
                return self._stream(client, url, address, deadline), None
        except httpx.TimeoutException as exc:
            return None, FetchError(f"timed out after {self.timeout:g}s ({type(exc).__name__})", url)
        except httpx.TransportError as exc:
            error = FetchError(f"network error: {exc or type(exc).__name__}", url)
            if _is_tls_failure(exc) and not deadline.expired:
                raise error from exc  # a bad certificate stays bad: no retry
            return None, error

    @contextmanager
    def _turn(self, url: str, deadline: FetchDeadline) -> Iterator[None]:
        """Hold a request slot at the URL's host (no-op without a limiter)."""
        if self.limiter is None:
            yield
            return
        host = urlsplit(url).hostname or ""
        try:
            self.limiter.acquire(host, deadline.remaining(), gap=self.gap)
        except HostBusyError as exc:
            raise FetchError(f"gave up waiting for a turn at {host} ({exc}); try again later or another "
                             "source", url) from exc
        try:
            yield
        finally:
            self.limiter.release(host)

    def _retry_after(self, url: str, result: FetchResult) -> float | None:
        """A 429/503's Retry-After in seconds, also told to the limiter so every task waits it out."""
        if result.status not in (429, 503):
            return None
        wait = retry_after_seconds(result.headers.get("retry-after"))
        if wait is not None and self.limiter is not None and self.holds:
            self.limiter.defer(urlsplit(url).hostname or "", wait)
        return wait

    def _stream(self, client: httpx.Client, url: str, address: str | None,
                deadline: FetchDeadline) -> FetchResult:
        """One GET, pinned to the address that was checked, reading at most max_bytes."""
        import httpx

        try:
            request = client.build_request("GET", _pinned(url, address) if address else url,
                                           timeout=httpx.Timeout(max(min(self.timeout, deadline.remaining()),
                                                                     0.001)))
        except (httpx.InvalidURL, ValueError) as exc:
            raise BlockedURLError(f"the URL is malformed ({exc})", url) from exc
        request.extensions["trace"] = deadline.trace
        request.headers.update(self.origin_headers.get(origin(url) or "", {}))  # never to a redirect's other host
        if address:
            parts = urlsplit(url)
            request.headers["Host"] = parts.netloc.rsplit("@", 1)[-1]
            if parts.scheme == "https":
                request.extensions["sni_hostname"] = parts.hostname
        response = _send(client, request, url)
        try:
            headers = {k.lower(): v for k, v in response.headers.items()}
            if response.status_code in _REDIRECT_CODES:
                return FetchResult(url, response.status_code, headers, b"")
            limit = ERROR_BODY_BYTES if response.status_code >= 400 else self.max_bytes
            chunks: list[bytes] = []
            size, truncated = 0, False
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    truncated = True
                    break
            if deadline.expired:  # the timer cut the socket: what was read is incomplete
                raise httpx.ReadTimeout("the fetch deadline passed")
            body = b"".join(chunks)[:limit]
            return FetchResult(url, response.status_code, headers, body, truncated)
        finally:
            response.close()


def _send(client: httpx.Client, request: httpx.Request, url: str) -> httpx.Response:
    """client.send, streaming; a malformed Location (which httpx parses itself) is a FetchError."""
    import httpx

    try:
        return client.send(request, stream=True)
    except httpx.RemoteProtocolError as exc:
        if "location header" not in str(exc).lower():
            raise
        raise FetchError(f"the server redirected to a malformed URL ({exc})", url) from exc
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise FetchError(f"the server redirected to a malformed URL ({exc})", url) from exc


_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
}


def _is_tls_failure(exc: BaseException) -> bool:
    import ssl

    seen: BaseException | None = exc
    for _ in range(10):  # bounded: exception chains can loop
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _redirect_target(current: str, location: str) -> str:
    """The absolute URL a Location header points to; a malformed one is a clear FetchError."""
    try:
        target = urljoin(current, location.strip())
    except ValueError as exc:
        raise FetchError(f"the server redirected to a malformed URL {location[:200]!r} ({exc})",
                         current) from exc
    try:
        split_url(target)
    except BlockedURLError as exc:
        raise FetchError(f"the server redirected to a malformed URL {location[:200]!r} "
                         f"({exc.args[0]})", current) from exc
    return target


def _pinned(url: str, address: str) -> str:
    """The URL with its host replaced by the checked IP address (closes the DNS-rebinding gap)."""
    parts = urlsplit(url)
    host = f"[{address}]" if ":" in address else address
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _status_error(result: FetchResult, url: str) -> HTTPStatusError:
    """The error for an error status, carrying the start of the error page (a challenge page is named from it)."""
    return HTTPStatusError(f"the server answered HTTP {result.status} {_reason(result.status)}", url,
                           result.status, result.body, result.headers)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The certificate store every fetch verifies against, loaded once per process: httpx would load it again
    for each client, 20 to 200 ms a fetch (a search_papers call, every scrape)."""
    import httpx

    return httpx.create_ssl_context()


@functools.cache
def default_user_agent() -> str:
    """The identifying User-Agent: the project's name and version (SCRAPE_USER_AGENT / --user-agent replace it)."""
    return f"Mozilla/5.0 (compatible; react-research-agent/{project_version()}; research agent, obeys robots.txt)"
