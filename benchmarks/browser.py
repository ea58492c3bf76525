"""Benchmark: the headless browser, as scrape's renderer and as the browser tool.

Run from the project root: `python benchmarks/browser.py [--pages N] [--no-mcp] [--render-only]`. Needs
Playwright and a Chromium (requirements-browser.txt). Prints:

- rendering: a loopback app shell whose text a script fetches: the first render of a run (browser launch
  included), the median of later renders in the same browser, the median scrape of a static article (no
  browser), and the same scrape with robots.txt and the per-host turn (gap 0) as a run uses them;
- the browser tool (benchmarks/browser_tool_bench.py): snapshot characters per page beside Playwright MCP's
  snapshot of the same page, on saved real pages (../shared/data/article-extraction) and the test site's
  pages; the share of interactive elements and of form controls that get a ref; time per action (p50, p95);
  wrong-element actions in 50 page-change trials.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.browser_tool_bench import tool_figures  # noqa: E402 (needs the root on sys.path)

RENDERS = 10
SCRAPES = 50
SHELL = (b"<!doctype html><html><head><title>App</title><script src=\"/app.js\"></script></head><body>"
         b"<div id=\"root\"></div></body></html>")
APP = (b"fetch('/story').then(r => r.json()).then(d => { const root = document.getElementById('root'); "
       b"for (const p of d) { const el = document.createElement('p'); el.textContent = p; root.appendChild(el); } });")
STORY = json.dumps([f"Paragraph {n}: sleeper trains returned to twelve European routes this year, and most "
                    "sold out within weeks of opening." for n in range(8)]).encode()


class _Site(BaseHTTPRequestHandler):
    pages = {"/app": (SHELL, "text/html"), "/app.js": (APP, "application/javascript"),
             "/story": (STORY, "application/json"),
             "/article": ((ROOT / "tests" / "data" / "article.html").read_bytes(), "text/html")}

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        body, ctype = self.pages.get(self.path, (b"not found", "text/plain"))
        self.send_response(200 if self.path in self.pages else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def timed(call: Callable[[], object]) -> float:
    """Wall time of call() in milliseconds."""
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    """Print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=0, help="saved real pages to snapshot (default: all)")
    parser.add_argument("--no-mcp", action="store_true", help="leave Playwright MCP's column out")
    parser.add_argument("--render-only", action="store_true", help="only the rendering figures")
    args = parser.parse_args()
    render_figures()
    if not args.render_only:
        tool_figures(args.pages, not args.no_mcp)


def render_figures() -> None:
    """The rendering figures (scrape's renderer)."""
    from config import Settings
    from tools.web.scrape import ScrapeTool
    from tools.web.session import WebSession

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    plain = Settings(scrape_allow_private=True, ignore_robots=True, host_gap=0.0)
    polite = Settings(scrape_allow_private=True, host_gap=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        web = WebSession(plain)
        try:
            tool = ScrapeTool(Path(tmp), plain, web=web)
            first = timed(lambda: tool.run(url=f"{base}/app"))
            later = [timed(lambda: tool.run(url=f"{base}/app")) for _ in range(RENDERS)]
        finally:
            web.close()
        static = [timed(lambda: ScrapeTool(Path(tmp), plain).run(url=f"{base}/article")) for _ in range(SCRAPES)]
        polite_web = WebSession(polite)
        polite_tool = ScrapeTool(Path(tmp), polite, web=polite_web)
        guarded = [timed(lambda: polite_tool.run(url=f"{base}/article")) for _ in range(SCRAPES)]
    server.shutdown()
    print(f"first render of a run (launch included): {first:.0f} ms")
    print(f"later renders, same browser (median of {RENDERS}): {statistics.median(later):.0f} ms")
    print(f"static scrape, no robots.txt (median of {SCRAPES}): {statistics.median(static):.1f} ms")
    print(f"static scrape with robots.txt cached and a host turn (median of {SCRAPES}): "
          f"{statistics.median(guarded):.1f} ms")


if __name__ == "__main__":
    main()
