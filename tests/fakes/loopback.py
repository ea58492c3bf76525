"""A scripted HTTP server on 127.0.0.1 for tests: each request is answered by a Python function."""

from __future__ import annotations

import dataclasses
import functools
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body or b"null")


@dataclass
class Response:
    """What to send back. `delay` sleeps before answering (to provoke timeouts)."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str | None = None
    pace: float = 0.0  # seconds between two 64 KiB pieces of the body (0: all at once)

    def encoded(self) -> tuple[bytes, str]:
        """The body as bytes and its content type."""
        if isinstance(self.body, dict | list):
            return json.dumps(self.body).encode(), self.content_type or "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), self.content_type or "text/plain; charset=utf-8"
        return self.body, self.content_type or "application/octet-stream"


Handler = Callable[[Request], Response]


class LoopbackServer:
    """Serve scripted responses on a free loopback port; use as a context manager."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1") -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self._stop = threading.Event()
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                              self.rfile.read(length) if length else b"")
                server.requests.append(req)
                resp = server.handler(req)
                if resp.delay:
                    server._stop.wait(resp.delay)
                body, ctype = resp.encoded()
                try:
                    self.send_response(resp.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in resp.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if self.command != "HEAD":
                        for at in range(0, len(body), 65536 if resp.pace else max(len(body), 1)):
                            self.wfile.write(body[at:at + 65536] if resp.pace else body)
                            self.wfile.flush()
                            server._stop.wait(resp.pace)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

        self.httpd = ThreadingHTTPServer((host, 0), _H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=functools.partial(self.httpd.serve_forever, poll_interval=0.05),
                                        daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def wait_for_requests(self, count: int, limit: float = 60.0) -> list[Request]:
        """The requests received, once `count` have come or after `limit` s: on a busy machine the server's
        thread may read a request only after its client has timed out and gone on."""
        deadline = time.monotonic() + limit
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.requests)


def routes(table: dict[str, Response | Callable[[Request], Response]]) -> Handler:
    """A handler from a path -> response table (404 for anything else); the query string is ignored."""

    def handle(req: Request) -> Response:
        entry = table.get(req.path.split("?", 1)[0])
        if entry is None:
            return Response(404, "not found")
        return entry(req) if callable(entry) else entry

    return handle


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, limit: float = 30.0) -> None:
    """Wait until something accepts connections on 127.0.0.1:port (a server started as a subprocess)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {limit:g} s")


def gone_after_one_answer(reply: Response) -> LoopbackServer:
    """A model server that answers its first POST with reply, closing the connection, then shuts down (as a
    server that dies mid-run); anything else (a probe of its context window) gets 404."""

    def answer_once(req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "not found")
        threading.Thread(target=lambda: (server.httpd.shutdown(), server.httpd.server_close())).start()
        return dataclasses.replace(reply, headers={"Connection": "close"})

    server = LoopbackServer(answer_once)
    return server
