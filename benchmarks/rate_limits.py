"""Benchmark: 64 concurrent tasks against a model server that holds 120 requests a minute per second (2 a
second), with and without the shared rate limiter (providers/ratelimit.py).

Run from the project root: `python benchmarks/rate_limits.py [--scale 1] [--server openai|anthropic|both]
[--modes alone,headers,rpm] [--tasks 64] [--concurrency 32] [--repeat 1]`. The loopback server
(tests/fakes/quota_server.py) speaks OpenAI's Chat Completions or Anthropic's Messages API and holds its quota
as each provider documents it may: OpenAI's "quantized" limit (2 requests in each second) or Anthropic's token
bucket (2 requests, refilled at 2 a second); it answers 429 with retry-after and sends the provider's
rate-limit headers (which report the minute's quota) on every reply. Each task takes two tool steps and
answers on its third call: 192 requests, which the quota lets through in 95 s at the earliest (the time from
the first request to the last is compared with that; the wall time adds the run's start-up, mostly importing
the SDK). --scale 10 shortens the minute (and the limiter's) to 6 s: loopback jitter then weighs ten times
more against the quantum than it would against a real provider's. Modes: each task retrying alone (no shared
limiter), the limiter with the headers only (the default: it paces at the limit they state), and the limiter
with --rpm 120 set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
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
from tests.fakes.loopback import LoopbackServer, Request  # noqa: E402
from tests.fakes.quota_server import QuotaServer  # noqa: E402

LIMIT = 120  # requests a minute
ACTION = 'Thought: note it\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "x"}'
MODELS = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-haiku-4-5"}


def task_of(req: Request) -> str:
    """The task's question: the first user message (a string, or Anthropic's text blocks)."""
    content = next(m["content"] for m in req.json()["messages"] if m["role"] == "user")
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


class ThreeSteps:
    """The model's side: two tool steps, then the answer, per task."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __call__(self, req: Request) -> str:
        task = task_of(req)
        self.calls[task] += 1
        return "Final Answer: done" if self.calls[task] >= 3 else ACTION


@contextlib.contextmanager
def mode(name: str, window: float) -> Iterator[list[str]]:
    """The run's flags for a mode, with the limiter switched off or its window scaled."""
    with mock.patch.object(ratelimit, "WINDOW", window):
        if name == "alone":
            with mock.patch.object(run.execute, "RateLimits", lambda *a, **k: None):
                yield []
        else:
            yield ["--rpm", str(LIMIT)] if name == "rpm" else []


def run_mode(server: str, name: str, tasks: int, concurrency: int, scale: float) -> dict[str, Any]:
    """One run of `tasks` tasks in a fresh folder; the server's counts and the records' statuses."""
    window = 60.0 / scale
    quota = QuotaServer(LIMIT, server, window, answer=ThreeSteps())
    keys = {"openai": {"OPENAI_API_KEY": "sk-bench"}, "anthropic": {"ANTHROPIC_API_KEY": "sk-ant-bench"}}[server]
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(quota) as loop, mode(name, window) as flags:
        os.chdir(tmp)
        Path("tasks.txt").write_text("\n\n".join(f"Question {n}: take two notes, then answer." for n in
                                                 range(tasks)) + "\n")
        os.environ.update(keys, OPENAI_BASE_URL=loop.url + "/v1", ANTHROPIC_BASE_URL=loop.url,
                          AGENT_MAX_TOKENS="200", AGENT_MAX_RETRY_WAIT=str(window))
        start = time.perf_counter()
        main.main(["tasks.txt", "--model", MODELS[server], "--concurrency", str(concurrency), "-q",
                   "--no-html", "--no-trace", *flags])
        wall = time.perf_counter() - start
        records = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines() if line.strip()]
        os.chdir(ROOT)
    sent = [a.at for a in quota.arrivals]
    return {"server": server, "mode": name, "429s": quota.refused, "requests": len(sent),
            "span": max(sent) - min(sent) if sent else 0.0,
            "answered": sum(r["status"] == "answered" for r in records),
            "failed": sum(r["status"] != "answered" for r in records), "wall": wall,
            "floor": (3 * tasks - quota.per_quantum) / quota.rate}  # the last request's earliest turn


def main_() -> None:
    """Print one table row per server and mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="time scale: 10 makes the minute 6 s")
    parser.add_argument("--server", choices=["openai", "anthropic", "both"], default="both")
    parser.add_argument("--modes", default="alone,headers,rpm", help="comma-separated: alone, headers, rpm")
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode (timings vary from run to run)")
    args = parser.parse_args()
    servers = ["openai", "anthropic"] if args.server == "both" else [args.server]
    print(f"{args.tasks} tasks x 3 model calls, --concurrency {args.concurrency}, {LIMIT} requests a minute held"
          f" per second, time scaled 1/{args.scale:g} (a minute is {60 / args.scale:g} s)")
    print("| server | mode | 429s met | requests sent | answered | failed | wall s | first to last request s |"
          " quota allows s | span / quota |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for _ in range(args.repeat):
        for server in servers:
            for name in args.modes.split(","):
                r = run_mode(server, name, args.tasks, args.concurrency, args.scale)
                print(f"| {r['server']} | {r['mode']} | {r['429s']} | {r['requests']} | {r['answered']} |"
                      f" {r['failed']} | {r['wall']:.1f} | {r['span']:.1f} | {r['floor']:.1f} |"
                      f" {r['span'] / r['floor']:.2f} |", flush=True)


if __name__ == "__main__":
    main_()
