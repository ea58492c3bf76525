"""Safe HTTP(S) GET for the scrape tool: public addresses only, checked redirects, size cap, retries."""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urljoin, urlsplit

from tools.web.addresses import is_public_address
from tools.web.fetch_deadline import FetchDeadline

if TYPE_CHECKING:
    import httpx

USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)
MAX_REDIRECTS = 5
DEADLINE_FACTOR = 4  # a whole fetch (every hop, retry, header and body byte) gets 4x SCRAPE_TIMEOUT
RETRIES = 2
_REDIRECT_CODES = {301, 302, 303, 307, 308}
_TEXT_TYPES = ("application/xml", "application/csv", "application/x-ndjson", "application/javascript")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
AddressCheck = Callable[[IPAddress], bool]


class FetchError(Exception):
    """A URL could not be fetched; the message is written for the model."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class BlockedURLError(FetchError):
    """The URL (or a redirect hop) has a refused scheme or resolves to a non-public address."""


class HTTPStatusError(FetchError):
    """The server answered with an error status."""

    def __init__(self, message: str, url: str, status: int) -> None:
        super().__init__(message, url)
        self.status = status


@dataclass
class FetchResult:
    """A fetched body: final URL after redirects, status, headers, and whether the size cap cut it."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)

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


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver returns for host:port."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class SafeFetcher:
    """GET a URL over HTTP(S) while refusing non-public hosts on every hop; never reads past max_bytes."""

    def __init__(self, timeout: float, max_bytes: int, allow_private: bool = False,
                 resolver: Resolver | None = None, address_check: AddressCheck | None = None,
                 sleep: Callable[[float], None] = time.sleep, retries: int = RETRIES,
                 deadline: float | None = None) -> None:
        self.timeout = timeout
        self.deadline = deadline if deadline is not None else timeout * DEADLINE_FACTOR
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver
        self.address_check = address_check or is_public_address
        self.sleep = sleep
        self.retries = retries

    def check(self, url: str) -> str | None:
        """Refuse a URL with a bad scheme or a non-public host; returns the address to connect to."""
        parts = _split(url)
        if parts.scheme not in ("http", "https"):
            got = f"scheme {parts.scheme!r} refused" if parts.scheme else "the URL has no scheme"
            raise BlockedURLError(f"only http:// and https:// URLs can be fetched ({got})", url)
        host = parts.hostname
        if not host:
            raise BlockedURLError("the URL has no host name", url)
        if self.allow_private:
            return None
        literal = _ip_or_none(host)
        addresses = [host] if literal else self._resolve(host, parts.port, parts.scheme, url)
        for text in addresses:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
            if not self.address_check(ip):
                where = f"{ip} is" if literal else f"{host} resolves to {ip},"
                raise BlockedURLError(
                    f"{where} a private/loopback/link-local or otherwise non-public address; refused "
                    "(set SCRAPE_ALLOW_PRIVATE_URLS=1 to allow intranet URLs)", url)
        return addresses[0].split("%", 1)[0]

    def _resolve(self, host: str, port: int | None, scheme: str, url: str) -> list[str]:
        try:
            addresses = self.resolver(host, port or (443 if scheme == "https" else 80))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchError(f"could not resolve host {host!r}: {exc}", url) from exc
        if not addresses:
            raise FetchError(f"host {host!r} has no addresses", url)
        return addresses

    def get(self, url: str) -> FetchResult:
        """Fetch url, following up to MAX_REDIRECTS redirects, each hop checked before connecting."""
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is a hard dependency
            raise FetchError("the httpx package is missing: pip install httpx", url) from exc
        hops: list[str] = []
        current = url
        deadline = FetchDeadline(self.deadline)
        try:
            with httpx.Client(timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                              headers=_HEADERS) as client:
                for _ in range(MAX_REDIRECTS + 1):
                    address = self.check(current)
                    result = self._get_with_retries(client, current, address, deadline)
                    location = result.headers.get("location")
                    if result.status in _REDIRECT_CODES and location:
                        hops.append(current)
                        current = _redirect_target(current, location)
                        continue
                    result.redirects = hops
                    if result.status >= 400:
                        raise HTTPStatusError(f"the server answered HTTP {result.status} "
                                              f"{_reason(result.status)}", current, result.status)
                    return result
        finally:
            deadline.close()
        raise FetchError(f"too many redirects (more than {MAX_REDIRECTS})", url)

    def _get_with_retries(self, client: httpx.Client, url: str, address: str | None,
                          deadline: FetchDeadline) -> FetchResult:
        import httpx

        last_error: FetchError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(0.5 * 2 ** (attempt - 1))  # at most 1 s: the deadline is checked right after
            if deadline.expired or deadline.remaining() <= 0:
                break
            try:
                result = self._stream(client, url, address, deadline)
            except httpx.TimeoutException as exc:
                last_error = FetchError(f"timed out after {self.timeout:g}s ({type(exc).__name__})", url)
                continue
            except httpx.TransportError as exc:
                last_error = FetchError(f"network error: {exc or type(exc).__name__}", url)
                if _is_tls_failure(exc) and not deadline.expired:
                    raise last_error from exc  # a bad certificate stays bad: no retry
                continue
            if result.status < 500:
                return result
            last_error = HTTPStatusError(f"the server answered HTTP {result.status} "
                                         f"{_reason(result.status)}", url, result.status)
        if deadline.expired or last_error is None:
            raise FetchError(f"gave up at the {deadline.seconds:g}s deadline for the whole fetch "
                             "(connection, headers and body of every redirect and retry)", url)
        if self.retries:
            last_error.args = (f"{last_error.args[0]} (tried {self.retries + 1} times)",)
        raise last_error

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
        if address:
            parts = urlsplit(url)
            request.headers["Host"] = parts.netloc.rsplit("@", 1)[-1]
            if parts.scheme == "https":
                request.extensions["sni_hostname"] = parts.hostname
        response = _send(client, request, url)
        try:
            headers = {k.lower(): v for k, v in response.headers.items()}
            if response.status_code in _REDIRECT_CODES or response.status_code >= 500:
                return FetchResult(url, response.status_code, headers, b"")
            chunks: list[bytes] = []
            size, truncated = 0, False
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_bytes:
                    truncated = True
                    break
            if deadline.expired:  # the timer cut the socket: what was read is incomplete
                raise httpx.ReadTimeout("the fetch deadline passed")
            body = b"".join(chunks)[: self.max_bytes]
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
    "User-Agent": USER_AGENT,
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


def _split(url: str) -> SplitResult:
    """urlsplit, with the port parsed; a malformed URL is a BlockedURLError the model can read."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise BlockedURLError(f"the URL is malformed ({exc})", url) from exc
    return parts


def _redirect_target(current: str, location: str) -> str:
    """The absolute URL a Location header points to; a malformed one is a clear FetchError."""
    try:
        target = urljoin(current, location.strip())
    except ValueError as exc:
        raise FetchError(f"the server redirected to a malformed URL {location[:200]!r} ({exc})",
                         current) from exc
    try:
        _split(target)
    except BlockedURLError as exc:
        raise FetchError(f"the server redirected to a malformed URL {location[:200]!r} "
                         f"({exc.args[0]})", current) from exc
    return target


def _ip_or_none(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


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
