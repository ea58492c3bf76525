"""The proxy the headless browser must send everything through: each connection is checked like scrape's.

Chromium is started with this loopback proxy and told to send even loopback traffic to it, so every
connection a page opens (the document, its redirects, subresources, iframes, WebSockets, fetches of any
worker) arrives here as CONNECT host:port or an absolute-form GET. The proxy runs the run's UrlPolicy on
the host (scheme, domain rules, every resolved address public) and connects to the address it checked,
so a second DNS answer cannot reach a private one. HTTPS stays end to end (CONNECT is a byte tunnel).
The proxy asks for a per-run password, so other local processes cannot use it, and caps the bytes each
connection may carry.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tools.web.errors import FetchError

HEAD_LIMIT = 65_536
HEAD_TIMEOUT = 15.0
CONNECT_TIMEOUT = 15.0
_DROP = ("proxy-authorization", "proxy-connection", "connection", "keep-alive")


@dataclass
class ProxyLog:
    """What the proxy refused (host:port -> reason) for one render, or for the whole run."""

    refused: dict[str, str] = field(default_factory=dict)


class GuardProxy:
    """An HTTP/HTTPS forward proxy on 127.0.0.1 that applies `check` (a UrlPolicy.check) to every connection."""

    def __init__(self, check: Callable[[str], str | None], max_bytes: int) -> None:
        self.check = check
        self.max_bytes = max_bytes
        self.user, self.password = "agent", secrets.token_urlsafe(24)
        self.log = ProxyLog()  # connections made with the launch password (none when every context has its own)
        self._jobs: dict[str, ProxyLog] = {}  # password -> the log of the render (browser context) using it
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on a free loopback port; returns the proxy's URL."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def open_job(self) -> tuple[str, ProxyLog]:
        """A password for one browser context and the log of what its connections were refused."""
        password, log = secrets.token_urlsafe(24), ProxyLog()
        self._jobs[password] = log
        return password, log

    def close_job(self, password: str) -> None:
        """The context is closed: its password is no longer accepted."""
        self._jobs.pop(password, None)

    async def close(self) -> None:
        """Stop listening and cut every open connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # a client that hung up or sent garbage: nothing to answer
        except asyncio.CancelledError:
            pass  # close() cuts open connections: ending quietly keeps asyncio from reporting each one
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = [line.split(":", 1) for line in lines[1:] if ":" in line]
        log = self._log_for(headers)
        if log is None:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"agent\""
                         b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        url, host, port = _target(method, target)
        try:
            address = await asyncio.get_running_loop().run_in_executor(None, self.check, url)
        except FetchError as exc:
            log.refused[f"{host}:{port}"] = str(exc)
            body = f"refused by the agent's address policy: {exc}".encode()
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
            return
        up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(address or host, port),
                                                      CONNECT_TIMEOUT)
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await asyncio.gather(_pipe(reader, up_writer, None), _pipe(up_reader, writer, self.max_bytes))
                return
            # Plain http: this one request and its body, then the connection ends, so a second request on it
            # (perhaps for another host) can never reach this origin unchecked.
            length = int(next((v for k, v in headers if k.strip().lower() == "content-length"), "0") or 0)
            body = await reader.readexactly(min(length, self.max_bytes)) if length else b""
            up_writer.write(_origin_request(method, target, headers) + body)
            await _pipe(up_reader, writer, self.max_bytes)
        finally:
            up_writer.close()

    def _log_for(self, headers: list[list[str]]) -> ProxyLog | None:
        """The log of the context whose password the request carries; None when it carries none we gave out."""
        given = next((v.strip() for k, v in headers if k.strip().lower() == "proxy-authorization"), "")
        scheme, _, encoded = given.partition(" ")
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        if scheme.lower() != "basic" or user != self.user:
            return None
        if secrets.compare_digest(password, self.password):
            return self.log
        return self._jobs.get(password)


def _target(method: str, target: str) -> tuple[str, str, int]:
    """The URL to check, host and port of a CONNECT authority or an absolute-form request target."""
    if method == "CONNECT":
        parts = urlsplit("//" + target)
        port = parts.port or 443
        scheme = "http" if port == 80 else "https"  # ws:// to port 80 is tunnelled too
        host = parts.hostname or ""
        shown = f"[{host}]" if ":" in host else host
        return f"{scheme}://{shown}:{port}/", host, port
    parts = urlsplit(target)
    if parts.scheme != "http":
        raise ValueError(f"not an absolute http:// target: {target[:100]!r}")
    return target, parts.hostname or "", parts.port or 80


def _origin_request(method: str, target: str, headers: list[list[str]]) -> bytes:
    """The request as the origin server must see it: origin-form target, no proxy headers, one request only."""
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [f"{k}:{v}" for k, v in headers if k.strip().lower() not in _DROP]
    return (f"{method} {path} HTTP/1.1\r\n" + "\r\n".join(kept) + "\r\nConnection: close\r\n\r\n").encode("latin-1")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int | None) -> None:
    """Copy until EOF (or `limit` bytes), then half-close the other side."""
    sent = 0
    try:
        while chunk := await reader.read(65_536):
            sent += len(chunk)
            if limit is not None and sent > limit:
                break
            writer.write(chunk)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()
