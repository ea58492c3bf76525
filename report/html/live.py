"""--serve: the report page on 127.0.0.1, re-rendered from the records on disk as tasks finish."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from report.html import build_page
from report.html.assets import SCRIPT
from report.html.data import load_run
from report.html.guard import Guard, content_security_policy, script_hash, security_headers

LINGER = 2.0  # seconds the run waits at its end for an open page to take the final state
_CSP = content_security_policy((script_hash(SCRIPT),))


class LiveReport:
    """A small HTTP server in a daemon thread; the run never waits on it and a closed browser costs nothing."""

    def __init__(self, records_file: Path, trace_dirs: list[Path], meta: dict[str, Any], port: int = 0) -> None:
        self.records_file, self.trace_dirs, self.meta = records_file, trace_dirs, meta
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self.guard = Guard(int(self._server.server_address[1]))
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-report", daemon=True)
        self.results_html: Path | None = None  # set when the run ends: the page links the final report
        self._last_poll = 0.0
        self._final_taken = threading.Event()

    @property
    def url(self) -> str:
        """The page's address with its token."""
        return self.guard.url()

    def version(self) -> str:
        """Changes whenever a record is added to the records file, and once more when the run ends."""
        done = "-done" if self.results_html is not None else ""
        try:
            st = self.records_file.stat()
        except OSError:
            return "0" + done
        return f"{st.st_mtime_ns}-{st.st_size}{done}"

    def state(self) -> dict[str, Any]:
        """What the page polls: the version, and whether the run is over."""
        self._last_poll = time.monotonic()
        return {"version": self.version(), "done": self.results_html is not None}

    def page(self) -> str:
        """The page as it stands now: waiting, running, or finished with a link to results.html."""
        self._last_poll = time.monotonic()  # a page is open: it polls within a second
        version = self.version()
        state = "done" if self.results_html is not None else "running"
        run = load_run(self.records_file, self.trace_dirs, self.meta)
        if not run.tasks and state == "running":
            state = "waiting"
        run.meta.update(live_state=state, results_html=str(self.results_html or ""))
        page = build_page(run, self.records_file.with_suffix(".html"), live=True, version=version)
        if state == "done":
            self._final_taken.set()
        return page

    def start(self) -> LiveReport:
        """Start serving in the background."""
        self._thread.start()
        return self

    def finish(self, results_html: Path) -> None:
        """The run is over: a page that is open takes the final state (waits at most LINGER seconds)."""
        self.results_html = results_html
        if time.monotonic() - self._last_poll < 3 * LINGER:  # a page polled lately: let it fetch the end
            self._final_taken.wait(LINGER)

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


def _handler(live: LiveReport) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path, _, query = self.path.partition("?")
            verdict = live.guard.check(self.headers.get("Host"), query, self.headers.get("Cookie"),
                                       self.headers.get("Authorization"), self.headers.get("Origin"))
            if not verdict.allowed:  # a refusal is the guard working, not an error: nothing is logged
                self._send(verdict.status, "text/plain; charset=utf-8", verdict.reason.encode())
            elif path == "/":
                self._send(200, "text/html; charset=utf-8", live.page().encode("utf-8"), verdict.set_cookie)
            elif path == "/state":
                self._send(200, "application/json", json.dumps(live.state()).encode(), verdict.set_cookie)
            else:
                self._send(404, "text/plain", b"not found")

        def _send(self, status: int, kind: str, body: bytes, cookie: str | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in security_headers(_CSP):
                    self.send_header(name, value)
                if cookie:
                    self.send_header("Set-Cookie", cookie)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away; the run goes on

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Silence the per-request log lines."""

    return Handler
