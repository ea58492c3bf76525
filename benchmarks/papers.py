"""Benchmark: the time a search_papers call adds over the scholarly service's own latency.

Run from the project root: `python benchmarks/papers.py [--calls 40] [--latency 0.2]`. A loopback stand-in
(tests/fakes/scholarly.py) answers OpenAlex's, Semantic Scholar's and Crossref's recorded bodies after a fixed
latency; the tool is timed as a task calls it: a search OpenAlex answers (one request), a search where OpenAlex
answers 503 (`Retry-After: 0`, so that every call asks it) and Semantic Scholar answers, with Crossref's retraction
look-up (three requests), a search while OpenAlex is on hold after a 429 (not asked: two requests), and reading a
hit's open-access PDF (robots.txt, then the PDF: one request with latency). For each it prints the median and
90th percentile of the wall time minus the latency the stand-in added, and the median CPU time of this process.
The per-host gap between two requests (SCRAPE_HOST_GAP, 1 s by default) is set to 0 here: it is politeness,
not overhead, and a run waits it only when it asks the same service again within the second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.loopback import Response  # noqa: E402
from tests.fakes.scholarly import DOI, Scholarly, serve, settings_for  # noqa: E402
from tools.base import ToolOutput  # noqa: E402
from tools.web.papers.tool import SearchPapersTool  # noqa: E402
from tools.web.session import web_session  # noqa: E402


def _timed(call: Callable[[], object], calls: int, waits: int, latency: float) -> tuple[list[float], list[float]]:
    """Wall time minus the stand-in's latency (waits × latency), and CPU time, of each call, in ms."""
    walls, cpus = [], []
    for _ in range(calls):
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()
        walls.append((time.perf_counter() - wall - waits * latency) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert isinstance(out, ToolOutput), out
    return walls, cpus


def _row(name: str, walls: list[float], cpus: list[float]) -> str:
    p90 = statistics.quantiles(walls, n=10)[-1] if len(walls) > 1 else walls[0]
    return f"| {name} | {statistics.median(walls):.1f} | {p90:.1f} | {statistics.median(cpus):.1f} |"


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--latency", type=float, default=0.2, help="seconds each stand-in service takes to answer")
    args = ap.parse_args()
    world = Scholarly(latency=args.latency)
    with serve(world):
        settings = settings_for(world)
        with web_session(settings):
            tool = SearchPapersTool(settings)
            tool.run(query="warm-up")  # imports and the first connection, as a task's first call pays them
            rows = [_row("search, OpenAlex answers", *_timed(lambda: tool.run(query="chemistry tools"),
                                                             args.calls, 1, args.latency))]
            rows.append(_row("read a hit's open-access PDF (3 pages)", *_timed(
                lambda: tool.run(read=DOI), args.calls, 1, args.latency)))
            world.answers["openalex"] = Response(503, "<html><body>Service Unavailable</body></html>",
                                                 content_type="text/html", delay=args.latency,
                                                 headers={"Retry-After": "0"})
            world.answers["crossref"] = "crossref_work_corrected"
            rows.append(_row("search, OpenAlex 503 → Semantic Scholar + Crossref's retraction check", *_timed(
                lambda: tool.run(query="turing"), args.calls, 3, args.latency)))
            world.answers["openalex"] = Response(429, {"error": "Rate limit exceeded"}, headers={"Retry-After": "600"})
            tool.run(query="turing")  # OpenAlex is held for the rest of the run
            rows.append(_row("search, OpenAlex on hold → Semantic Scholar + Crossref's retraction check", *_timed(
                lambda: tool.run(query="turing"), args.calls, 2, args.latency)))
    print(f"search_papers: {args.calls} calls each, service latency {args.latency * 1000:.0f} ms per request")
    print("| call | median ms added | p90 ms added | median CPU ms |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
