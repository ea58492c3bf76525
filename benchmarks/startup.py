"""Benchmark: from launching `main.py` to its first model request, for `ask` and for a batch.

Run from the project root: `python benchmarks/startup.py` (add `--help` for the options).
Each run starts `main.py` against a fresh loopback OpenAI-compatible server (benchmarks/throughput.py's);
when the first chat request arrives the server notes the wall time since launch and the CPU time
(user + sys) the command's processes have used so far: main.py and every process it started (read
from /proc, so Linux only; elsewhere the CPU column is n/a). CPU time is what a busy machine changes least.
The table shows the median of --runs runs of each command, and their range. Python's compiled bytecode is kept
between the runs (in a folder of their own, also when PYTHONDONTWRITEBYTECODE is set), after one run that is
not counted: what a user waits for every time. --cold compiles every module of the project in each run instead
(a first run after an install or an update, or PYTHONDONTWRITEBYTECODE=1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.sandbox import tree_cpu  # noqa: E402
from benchmarks.throughput import BenchServer, Script, child_env  # noqa: E402


class StartServer(BenchServer):
    """The throughput benchmark's server, which also notes the client's CPU time at the first request."""

    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self.pid: int | None = None
        self.cpu: float | None = None

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.counters.first_request is None and self.pid and os.path.isdir("/proc"):
            self.cpu = tree_cpu(self.pid)
        return super().answer(body)


def command(kind: str, url: str, tmp: Path, main_py: Path) -> list[str]:
    """The main.py command line of one run: `ask` one question, or a batch of one task."""
    common = ["--model", "openai:bench", "--base-url", url, "--max-steps", "3", "-q"]
    if kind == "ask":
        return [sys.executable, str(main_py), "ask", "Look at the workspace, then say you are done.",
                *common, "--runs-dir", str(tmp / "runs")]
    tasks = tmp / "tasks.txt"
    tasks.write_text("Look at the workspace, then say you are done.\n", encoding="utf-8")
    return [sys.executable, str(main_py), str(tasks), "-o", str(tmp / "results.md"), *common,
            "--workspace", str(tmp / "workspace"), "--trace-dir", str(tmp / "traces")]


def bytecode_env(tmp: Path, cache: Path | None) -> dict[str, str]:
    """child_env, with compiled bytecode kept in `cache` (None: never written, so every run compiles)."""
    env = {k: v for k, v in child_env(tmp).items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    return {**env, "PYTHONPYCACHEPREFIX": str(cache)} if cache else {**env, "PYTHONDONTWRITEBYTECODE": "1"}


def one_run(kind: str, tmp: Path, main_py: Path, cache: Path | None) -> tuple[float, float | None]:
    """Wall seconds and CPU seconds from launch to the first model request of one run."""
    server = StartServer(Script(steps=2, latency=0.0))
    with server:
        cmd = command(kind, server.url, tmp, main_py)
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, env=bytecode_env(tmp, cache), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        server.pid = proc.pid
        _, err = proc.communicate(timeout=300)
        first = server.counters.first_request
    if proc.returncode != 0 or first is None:
        raise SystemExit(f"{kind}: main.py exited {proc.returncode} with no model request: {err.strip()[-500:]}")
    return first - started, server.cpu


def row(label: str, runs: list[tuple[float, float | None]]) -> str:
    """One Markdown table row: medians and ranges."""
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs if c is not None]
    cpu_text = f"{statistics.median(cpu):.2f} | {min(cpu):.2f}-{max(cpu):.2f}" if cpu else "n/a | n/a"
    return (f"| {label} | {len(runs)} | {statistics.median(wall):.2f} | {min(wall):.2f}-{max(wall):.2f} "
            f"| {cpu_text} |")


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="runs of each command (the median is shown)")
    p.add_argument("--commands", nargs="+", choices=["ask", "batch"], default=["ask", "batch"])
    p.add_argument("--main", type=Path, nargs="+", default=[ROOT / "main.py"],
                   help="main.py to measure; several (e.g. an older checkout's) take turns, run by run, so that "
                        "a busy machine weighs on each alike")
    p.add_argument("--cold", action="store_true", help="no compiled bytecode kept: every run compiles the project")
    args = p.parse_args(argv)
    print("| command | runs | to 1st request s (median) | range s | CPU to 1st request s (median) | range s |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="startup-bytecode-") as bytecode:
        cache = None if args.cold else Path(bytecode)
        for kind in args.commands:
            runs: dict[Path, list[tuple[float, float | None]]] = {m.resolve(): [] for m in args.main}
            for i in range(-1 if cache else 0, args.runs):  # run -1 fills the bytecode cache: not counted
                for main_py in runs:
                    with tempfile.TemporaryDirectory(prefix=f"startup-{kind}-{i}-") as tmp:
                        found = one_run(kind, Path(tmp), main_py, cache)
                    runs[main_py] += [found] if i >= 0 else []
            for main_py, found_runs in runs.items():
                print(row(kind if len(args.main) == 1 else f"{kind} ({main_py})", found_runs), flush=True)
    print("\nCPU = user + sys of main.py and the processes it started, when the first request arrived.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
