"""--serve: the report page on 127.0.0.1, re-rendered from the records on disk as tasks finish."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from report.html import build_page
from report.html.data import load_run


class LiveReport:
    """A small HTTP server in a daemon thread; the run never waits on it and a closed browser costs nothing."""

    def __init__(self, records_file: Path, trace_dirs: list[Path], meta: dict[str, Any], port: int = 0) -> None:
        self.records_file, self.trace_dirs, self.meta = records_file, trace_dirs, meta
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-report", daemon=True)

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def version(self) -> str:
        """Changes whenever a record is added to the records file."""
        try:
            st = self.records_file.stat()
        except OSError:
            return "0"
        return f"{st.st_mtime_ns}-{st.st_size}"

    def page(self) -> str:
        """The page as it stands now."""
        version = self.version()
        run = load_run(self.records_file, self.trace_dirs, self.meta)
        return build_page(run, self.records_file.with_suffix(".html"), live=True, version=version)

    def start(self) -> LiveReport:
        """Start serving in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


def _handler(live: LiveReport) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path = self.path.split("?", 1)[0]
            if path == "/":
                self._send(200, "text/html; charset=utf-8", live.page().encode("utf-8"))
            elif path == "/state":
                self._send(200, "application/json", json.dumps({"version": live.version()}).encode())
            else:
                self._send(404, "text/plain", b"not found")

        def _send(self, status: int, kind: str, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away; the run goes on

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Silence the per-request log lines."""

    return Handler
