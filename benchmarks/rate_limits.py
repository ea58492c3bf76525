"""Benchmark: 64 concurrent tasks against a model server that allows 120 requests a minute, with and without
the shared rate limiter (providers/ratelimit.py).

Run from the project root: `python benchmarks/rate_limits.py [--scale 10] [--tasks 64] [--concurrency 32]
[--repeat 1]`. A loopback server speaks OpenAI's Chat Completions: it keeps a sliding window of 120 requests,
answers 429 with `retry-after` beyond it, and sends `x-ratelimit-limit-requests`, `-remaining-requests` and
`-reset-requests` on every reply as api.openai.com does (the reset: until all 120 are free again). Each task
takes two tool steps and answers on its third call. Time is scaled down by --scale (10: the minute is 6 s,
the limiter's window too); the wall times printed are the scaled ones. Modes: each task retrying alone (no
shared limiter), the limiter learning from the headers only, and the limiter with --rpm 120 set.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import main  # noqa: E402  (after the path set-up above)
import providers.ratelimit as ratelimit  # noqa: E402
import run.execute  # noqa: E402
from tests.fakes.loopback import LoopbackServer, Request, Response  # noqa: E402
from tests.fakes.providers import openai_error, openai_reply  # noqa: E402

LIMIT = 120  # requests a minute
ACTION = 'Thought: note it\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "x"}'


class LimitedServer:
    """A Chat Completions handler that enforces LIMIT requests per (scaled) minute and counts its 429s."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.sent: collections.deque[float] = collections.deque()
        self.calls: collections.Counter[str] = collections.Counter()
        self.ok = self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "not found")
        now = time.monotonic()
        with self.lock:
            while self.sent and self.sent[0] <= now - self.window:
                self.sent.popleft()
            # OpenAI's reset-requests: the time until the limit is back to its initial state (all 120 free).
            reset = f"{max(self.sent[-1] + self.window - now, 0.001) if self.sent else 0.001:.3f}s"
            if len(self.sent) >= LIMIT:
                self.refused += 1
                wait = max(self.sent[0] + self.window - now, 0.001)
                return openai_error(429, "Rate limit reached for requests", type_="requests",
                                    code="rate_limit_exceeded", headers={
                                        "retry-after": f"{wait:.3f}", "x-ratelimit-limit-requests": str(LIMIT),
                                        "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": reset})
            self.sent.append(now)
            self.ok += 1
            task = next(m["content"] for m in req.json()["messages"] if m["role"] == "user")
            self.calls[task] += 1
            text = "Final Answer: done" if self.calls[task] >= 3 else ACTION
            headers = {"x-ratelimit-limit-requests": str(LIMIT),
                       "x-ratelimit-remaining-requests": str(LIMIT - len(self.sent)),
                       "x-ratelimit-reset-requests": reset}
        return Response(200, openai_reply(text, 300, 20, model="gpt-4.1-mini").body, headers=headers)


@contextlib.contextmanager
def mode(name: str, window: float) -> Iterator[list[str]]:
    """The run's flags for a mode, with the limiter switched off or its window scaled."""
    with mock.patch.object(ratelimit, "WINDOW", window):
        if name == "alone":
            with mock.patch.object(run.execute, "RateLimits", lambda *a, **k: None):
                yield []
        else:
            yield ["--rpm", str(LIMIT)] if name == "rpm" else []


def run_mode(name: str, tasks: int, concurrency: int, scale: float) -> dict[str, Any]:
    """One run of `tasks` tasks in a fresh folder; the server's counts and the records' statuses."""
    window = 60.0 / scale
    server_handler = LimitedServer(window)
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(server_handler) as server, mode(name, window) as flags:
        os.chdir(tmp)
        Path("tasks.txt").write_text("\n\n".join(f"Question {n}: take two notes, then answer." for n in
                                                 range(tasks)) + "\n")
        os.environ.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=server.url + "/v1", AGENT_MAX_TOKENS="200",
                          AGENT_MAX_RETRY_WAIT=str(window))
        start = time.perf_counter()
        main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "--concurrency", str(concurrency), "-q",
                   "--no-html", "--no-trace", *flags])
        wall = time.perf_counter() - start
        records = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines() if line.strip()]
        os.chdir(ROOT)
    return {"mode": name, "429s": server_handler.refused, "requests": server_handler.ok + server_handler.refused,
            "answered": sum(r["status"] == "answered" for r in records), "failed": sum(r["status"] != "answered"
                                                                                    for r in records),
            "wall": wall, "floor": (math.ceil(3 * tasks / LIMIT) - 1) * window}  # request LIMIT+1 waits a window


def main_() -> None:
    """Print one table row per mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10.0, help="time scale: 10 makes the minute 6 s")
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode (timings vary from run to run)")
    args = parser.parse_args()
    print(f"{args.tasks} tasks x 3 model calls, --concurrency {args.concurrency}, {LIMIT} requests per minute,"
          f" time scaled 1/{args.scale:g} (a minute is {60 / args.scale:g} s)")
    print("| mode | 429s met | requests sent | answered | failed | wall s (scaled) | lower bound s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in [m for _ in range(args.repeat) for m in ("alone", "headers", "rpm")]:
        r = run_mode(name, args.tasks, args.concurrency, args.scale)
        print(f"| {r['mode']} | {r['429s']} | {r['requests']} | {r['answered']} | {r['failed']} | {r['wall']:.1f} |"
              f" {r['floor']:.1f} |", flush=True)


if __name__ == "__main__":
    main_()
