"""Benchmark: how long main.py takes to give up or stop when the model server cannot work (issue #10, 8-10).

Run from the project root: `python benchmarks/fail_fast.py`. Each row runs main.py as a subprocess against
a loopback server (or a closed port) and prints the wall time and exit code:
- a server that never answers, with --task-timeout 10 (per task; before the deadline reached the model
  calls, this took 7 attempts x the request timeout plus backoff, about 365 s);
- nothing listening at the base URL (before: about 66 s per task of silent retrying, for every task);
- Ctrl-C during a batch whose running task waits on the model: the first Ctrl-C, and a second one;
- a server that answers two tasks and then goes away (shut down): seconds from its last answer to the line
  that names it (before: 3 model calls in a row of 7 attempts each, about 60 s per call of silent retrying).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.loopback import LoopbackServer, Response  # noqa: E402 (needs the root on sys.path)
from tests.fakes.providers import openai_reply  # noqa: E402


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=base_url, AGENT_ENV_FILE="/nonexistent.env")
    return env


def _run(folder: Path, base_url: str, *flags: str) -> tuple[float, int]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:m", "-q",
                           *flags], cwd=folder, env=_env(base_url), capture_output=True, text=True)
    return time.monotonic() - start, proc.returncode


def _hang(req: object) -> Response:
    return Response(200, {}, delay=600 if getattr(req, "method", "") == "POST" else 0)


def hanging_server(folder: Path) -> tuple[float, int]:
    """Two tasks, --task-timeout 10, a server that accepts and never answers."""
    (folder / "tasks.txt").write_text("one\n\ntwo\n")
    with LoopbackServer(_hang) as server:
        return _run(folder, server.url + "/v1", "--task-timeout", "10")


def refused(folder: Path) -> tuple[float, int]:
    """Five tasks against a port nothing listens on."""
    (folder / "tasks.txt").write_text("\n\n".join(f"task {n}" for n in range(5)) + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return _run(folder, f"http://127.0.0.1:{port}/v1")


def ctrl_c(folder: Path, presses: int) -> tuple[float, int]:
    """A quick task, then a task whose model call hangs; seconds from the first Ctrl-C to the exit."""
    (folder / "tasks.txt").write_text("quick\n\nslow\n\nslow 2\n")

    def handle(req: object) -> Response:
        body = getattr(req, "body", b"")
        return openai_reply("Final Answer: ok") if b"quick" in body else _hang(req)

    with LoopbackServer(handle) as server:
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:m",
                                 "-q", "--task-timeout", "60"], cwd=folder, env=_env(server.url + "/v1"),
                                stderr=subprocess.DEVNULL, start_new_session=True)
        while not any(b"slow" in r.body for r in server.requests):
            time.sleep(0.05)
        start = time.monotonic()
        for _ in range(presses):
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.5)
        code = proc.wait()
        return time.monotonic() - start, code


def dies_mid_run(folder: Path) -> tuple[float, int]:
    """Five tasks; the server shuts down after answering the second: seconds from then to the `error:` line."""
    (folder / "tasks.txt").write_text("\n\n".join(f"task {n}" for n in range(1, 6)) + "\n")
    died: dict[str, Any] = {}

    def handle(req: object) -> Response:
        if getattr(req, "method", "") != "POST":
            return Response(404, "not found")
        if b"task 2" in getattr(req, "body", b""):
            server, died["at"] = died["server"], time.monotonic()
            threading.Thread(target=lambda: (server.httpd.shutdown(), server.httpd.server_close())).start()
            return Response(**{**openai_reply("Final Answer: ok").__dict__, "headers": {"Connection": "close"}})
        return openai_reply("Final Answer: ok")

    died["server"] = LoopbackServer(handle)
    with died["server"] as server:
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:m"],
                                cwd=folder, env=_env(server.url + "/v1"), stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        named = next((time.monotonic() for line in proc.stderr if line.startswith("error:")), time.monotonic())
        code = proc.wait()
    return named - died.get("at", named), code


def main() -> None:
    """Print one row per scenario."""
    rows = [("server never answers, 2 tasks, --task-timeout 10", hanging_server),
            ("connection refused, 5 tasks", refused),
            ("Ctrl-C once, running task waits on a hung model (ends at its task deadline)", lambda f: ctrl_c(f, 1)),
            ("Ctrl-C twice", lambda f: ctrl_c(f, 2)),
            ("server goes away mid-run: from its last answer to the line naming it", dies_mid_run)]
    print(f"{'scenario':<80} {'seconds':>8} {'exit':>5}")
    for name, scenario in rows:
        with tempfile.TemporaryDirectory() as tmp:
            seconds, code = scenario(Path(tmp))
        print(f"{name:<80} {seconds:>8.1f} {code:>5}")


if __name__ == "__main__":
    main()
