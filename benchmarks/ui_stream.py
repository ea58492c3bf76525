"""Benchmark: how fast `main.py ui` starts and streams a question's steps (issue #30).

Run from the project root: `python benchmarks/ui_stream.py [N]`. It starts the app against the tests' scripted
loopback model (which answers at once), asks N questions over the HTTP API (each: one scrape of a loopback
page, then an answer citing it) and prints the start-up time and the medians from posting a question to its
first streamed step, and to its answer with the citation check. The model and the page cost ~nothing here,
so what is left is the app, the engine and the event stream.

`python benchmarks/ui_stream.py --streams 200` instead holds a question open with 200 pages streaming its events
and prints the median time /api/history takes meanwhile (issue #34: each waiting stream held a worker thread).
"""

from __future__ import annotations

import socket
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.ui_app import FakeApp, running_app  # noqa: E402 (needs the root on sys.path)
from tests.test_ui_http import _call, _multipart  # noqa: E402


def _question(app: FakeApp, n: int) -> tuple[float, float]:
    """Seconds from posting question n to its first step event and to its answer event."""
    body, headers = _multipart({"question": f"What does Widget Corp publish? ({n})", "conversation": ""})
    start = time.perf_counter()
    key = _call(app, "/api/ask", body, headers)["conversation"]
    req = urllib.request.Request(f"http://127.0.0.1:{app.port}/api/events/{key}",
                                 headers={"Authorization": f"token {app.token}"})
    first = answer = 0.0
    with urllib.request.urlopen(req, timeout=60) as stream:  # noqa: S310 (loopback only)
        for raw in stream:
            line = raw.decode()
            if not first and '"type": "step"' in line:
                first = time.perf_counter() - start
            if '"type": "answer"' in line:
                answer = time.perf_counter() - start
                break
    return first, answer


def _open_stream(app: FakeApp, key: str) -> socket.socket:
    """A page listening to a conversation's events (the request sent, the answer left unread)."""
    sock = socket.create_connection(("127.0.0.1", app.port), timeout=60)
    sock.sendall(f"GET /api/events/{key} HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\n"
                 f"Authorization: token {app.token}\r\n\r\n".encode())
    return sock


def history_with_streams(streams: int, samples: int = 3) -> None:
    """Print the median latency of /api/history while `streams` pages wait on a running question's events."""
    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp)) as app:
        _call(app, "/api/history")
        body, headers = _multipart({"question": "What does Widget Corp publish? (held)", "conversation": ""})
        key = _call(app, "/api/ask", body, headers)["conversation"]  # its answer waits on the gate
        socks = [_open_stream(app, key) for _ in range(streams)]
        time.sleep(2)  # every stream is waiting now
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            _call(app, "/api/history")
            times.append(time.perf_counter() - start)
        app.gate.set()
        for sock in socks:
            sock.close()
    print(f"/api/history with {streams} open event streams (median of {samples}): "
          f"{statistics.median(times) * 1000:,.0f} ms (each: {', '.join(f'{t * 1000:,.0f}' for t in times)} ms)")


def main(n: int = 20) -> None:
    """Print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with running_app(Path(tmp)) as app:
            _call(app, "/api/history")
            ready = time.perf_counter() - started
            app.gate.set()
            _question(app, 0)  # warm: the first question builds the models and imports the tools
            times = [_question(app, i) for i in range(1, n + 1)]
    print(f"start-up to the first answered request: {ready * 1000:,.0f} ms")
    print(f"post to first streamed step (median of {n}): {statistics.median(t[0] for t in times) * 1000:,.0f} ms")
    print(f"post to the answer (median of {n}): {statistics.median(t[1] for t in times) * 1000:,.0f} ms")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--streams"]:
        history_with_streams(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
