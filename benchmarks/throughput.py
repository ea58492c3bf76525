"""Benchmark: batch throughput of `main.py` against a loopback OpenAI-compatible server with fixed latency.

Run from the project root: `python benchmarks/throughput.py` (add `--help` for the options).
Each task takes `--steps` model calls (list_files, list_files, ..., Final Answer; `--tool python` calls
python instead, which keeps a variable between its steps), each answered after `--latency` seconds. The
batch runs at each `--concurrency`, first without and then with a share of 429
replies carrying Retry-After; the tables show wall time against the ideal, and how many tasks were lost.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DONE = {"answered", "answered_unformatted"}


@dataclass
class Script:
    """How the fake server behaves."""

    steps: int = 4
    latency: float = 0.2
    share_429: float = 0.0
    retry_after: float = 0.2
    seed: int = 7
    tool: str = "list_files"  # or "python": each step adds to a variable the previous step set


@dataclass
class Counters:
    """What the fake server saw."""

    completions: int = 0
    rate_limited: int = 0
    bad_requests: int = 0
    first_request: float | None = None  # time.perf_counter() of the first chat request
    finals: list[float] = field(default_factory=list)  # time.perf_counter() of each Final Answer sent
    lock: threading.Lock = field(default_factory=threading.Lock)


def react_reply(messages: list[dict[str, Any]], steps: int, tool: str = "list_files") -> str:
    """The tool until the task has had steps - 1 observations, then a Final Answer."""
    seen = sum(1 for m in messages if m.get("role") == "user" and str(m.get("content", "")).startswith(
        "Observation:"))
    if seen < steps - 1 and tool == "python":
        code = ("n = 1" if seen == 0 else "n += 1") + "; print(n)"
        return f"Thought: count (step {seen + 1})\nAction: python\nAction Input: {json.dumps({'code': code})}"
    if seen < steps - 1:
        return f"Thought: look again (step {seen + 1})\nAction: list_files\nAction Input: {{}}"
    return f"Thought: I have looked {seen} times.\nFinal Answer: done after {seen} observations"


class _Handler(BaseHTTPRequestHandler):
    """Serves GET /v1/models and POST /v1/chat/completions for the BenchServer it belongs to."""

    protocol_version = "HTTP/1.1"
    # Headers and body leave in one write with Nagle off: separate small writes would meet the
    # client's delayed ACK and add ~40 ms to every reply, which would be the server's cost, not ours.
    wbufsize = 1 << 16

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [{"id": "bench", "object": "model"}]}, {})
        self._send(404, {"error": {"message": "not found"}}, {})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "not found"}}, {})
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        bench: BenchServer = self.server.bench  # type: ignore[attr-defined]
        self._send(*bench.answer(body if isinstance(body, dict) else {}))


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog of 5 overflows at concurrency >= 16: the client's connection
    # then waits for a kernel SYN retransmit (1 s), which would be charged to main.py.
    request_queue_size = 1024
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client killed mid-request (large_taskfile.py)
            super().handle_error(request, client_address)


class BenchServer:
    """A loopback OpenAI-compatible chat completions server; use as a context manager."""

    def __init__(self, script: Script) -> None:
        self.script, self.counters = script, Counters()
        self._rng = random.Random(script.seed)
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.bench = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> BenchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def rate_limit_now(self) -> bool:
        """Draw whether this request gets a 429 (seeded, so runs are comparable)."""
        with self.counters.lock:
            limited = self._rng.random() < self.script.share_429
            self.counters.rate_limited += limited
            return limited

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, JSON body and extra headers for one chat completions request."""
        with self.counters.lock:
            self.counters.first_request = self.counters.first_request or time.perf_counter()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            with self.counters.lock:
                self.counters.bad_requests += 1
            return 400, {"error": {"message": "messages is required", "type": "invalid_request_error"}}, {}
        if self.rate_limit_now():
            wait = self.script.retry_after
            return 429, {"error": {"message": "Rate limit reached for requests", "type": "requests",
                                   "code": "rate_limit_exceeded"}}, {
                "Retry-After": str(max(math.ceil(wait), 0)), "retry-after-ms": str(int(wait * 1000))}
        time.sleep(self.script.latency)
        text = react_reply(messages, self.script.steps, self.script.tool)
        with self.counters.lock:
            self.counters.completions += 1
            n = self.counters.completions
            if "Final Answer:" in text:
                self.counters.finals.append(time.perf_counter())
        prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4
        return 200, {
            "id": f"chatcmpl-bench-{n}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model", "bench")),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4,
                      "total_tokens": prompt + len(text) // 4},
        }, {}


@dataclass
class Row:
    """One batch run."""

    concurrency: int
    tasks: int
    seconds: float
    ideal: float
    answered: int
    exit_code: int
    completions: int
    rate_limited: int
    startup: float
    finals: list[float] = field(default_factory=list)

    @property
    def lost(self) -> int:
        """Tasks without an answered record in results.jsonl."""
        return self.tasks - self.answered


def child_env(tmp: Path) -> dict[str, str]:
    """The environment of the main.py run: a dummy key and none of the developer's own settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "OPENAI_", "ANTHROPIC_",
                                                                     "GEMINI_", "GOOGLE_", "SERPER_"))}
    env.update({"OPENAI_API_KEY": "dummy", "AGENT_ENV_FILE": str(tmp / "no.env")})
    return env


def run_batch(script: Script, tasks: int, concurrency: int, tmp: Path, main_py: Path = ROOT / "main.py") -> Row:
    """One `main.py` run of `tasks` tasks against a fresh server; counts answered records."""
    run_dir = tmp / f"c{concurrency}-{int(script.share_429 * 100)}-t{tasks}"
    while run_dir.exists():  # the same batch again (e.g. --share-429 0: two runs alike)
        run_dir = run_dir.with_name(run_dir.name + "+")
    run_dir.mkdir(parents=True)
    task_file = run_dir / "tasks.txt"
    task_file.write_text("\n\n".join(f"Benchmark task {i}: look at the workspace, then say you are done."
                                     for i in range(1, tasks + 1)) + "\n", encoding="utf-8")
    with BenchServer(script) as server:
        cmd = [sys.executable, str(main_py), str(task_file), "--model", "openai:bench",
               "--base-url", server.url, "--concurrency", str(concurrency), "-q",
               "-o", str(run_dir / "results.md"), "--workspace", str(run_dir / "workspace"),
               "--trace-dir", str(run_dir / "traces"), "--max-steps", str(script.steps + 2)]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=run_dir, env=child_env(tmp), capture_output=True, text=True)
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        print(f"  main.py exited {proc.returncode}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
    records = run_dir / "results.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines() if records.is_file() else []
    answered = sum(1 for line in lines if json.loads(line).get("status") in DONE)
    ideal = tasks * script.steps * script.latency / concurrency
    first = server.counters.first_request
    return Row(concurrency, tasks, seconds, ideal, answered, proc.returncode, server.counters.completions,
               server.counters.rate_limited, (first - started) if first else math.nan, server.counters.finals)


def quarter_ms(finals: list[float], which: int) -> float:
    """Milliseconds per task within one quarter (0 = first, 3 = last) of the batch, from answer times."""
    n = len(finals) // 4
    if n < 2:
        return math.nan
    part = finals[which * n:(which + 1) * n]
    return (part[-1] - part[0]) / (len(part) - 1) * 1000


def print_scale_table(rows: list[Row]) -> None:
    """Time per task in the first and last quarter of a long batch: flat means no per-task cost growth."""
    print("\n### Cost per task as the batch grows\n")
    print("| tasks | concurrency | wall s | ms/task, first quarter | ms/task, last quarter | last / first "
          "| tasks lost | exit |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        first, last = quarter_ms(r.finals, 0), quarter_ms(r.finals, 3)
        print(f"| {r.tasks} | {r.concurrency} | {r.seconds:.2f} | {first:.1f} | {last:.1f} | {last / first:.2f} "
              f"| {r.lost} | {r.exit_code} |")


def print_table(title: str, rows: list[Row]) -> None:
    """One Markdown table."""
    print(f"\n### {title}\n")
    print("| concurrency | tasks | wall s | ideal s | efficiency | to 1st request s | efficiency after it "
          "| tasks lost | completions | 429s | exit |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r.concurrency} | {r.tasks} | {r.seconds:.2f} | {r.ideal:.2f} | {r.ideal / r.seconds:.0%} "
              f"| {r.startup:.2f} | {r.ideal / (r.seconds - r.startup):.0%} | {r.lost} | {r.completions} "
              f"| {r.rate_limited} | {r.exit_code} |")


def main(argv: list[str] | None = None) -> int:
    """Run both tables; exit 1 if any task was lost."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=32)
    p.add_argument("--steps", type=int, default=4, help="model calls per task, the last one answers")
    p.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per completion")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    p.add_argument("--share-429", type=float, default=0.1, help="share of 429 replies in the second table")
    p.add_argument("--retry-after", type=float, default=0.2, help="seconds the 429 replies ask to wait")
    p.add_argument("--scale-tasks", type=int, default=2000, help="tasks of the cost-per-task run (0: skip)")
    p.add_argument("--scale-concurrency", type=int, nargs="+", default=[1, 8])
    p.add_argument("--only-scale", action="store_true", help="run only the cost-per-task table")
    p.add_argument("--main", type=Path, default=ROOT / "main.py", help="main.py to measure (e.g. an older copy)")
    p.add_argument("--tool", choices=["list_files", "python"], default="list_files",
                   help="the tool each step calls (python: one session per task, a variable kept)")
    args = p.parse_args(argv)
    lost = 0
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        if args.scale_tasks:
            # 2 steps and no server latency: what is left is main.py's own cost per task.
            scale = Script(steps=2, latency=0.0)
            rows = [run_batch(scale, args.scale_tasks, n, Path(tmp), args.main) for n in args.scale_concurrency]
            print_scale_table(rows)
            lost += sum(r.lost for r in rows)
        if args.only_scale:
            return 1 if lost else 0
        for share in (0.0, args.share_429):
            script = Script(args.steps, args.latency, share, args.retry_after, tool=args.tool)
            rows = [run_batch(script, args.tasks, n, Path(tmp), args.main) for n in args.concurrency]
            title = (f"{args.tasks} tasks × {args.steps} steps, {args.latency * 1000:.0f} ms per completion"
                     + (f", {share:.0%} 429s (Retry-After {args.retry_after:g} s)" if share else ""))
            print_table(title, rows)
            lost += sum(r.lost for r in rows)
    print("\nideal = tasks × steps × latency / concurrency; efficiency = ideal / wall; 'after it' leaves out "
          f"the time from launch to the first model request (interpreter, imports). Tasks lost: {lost}.")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
