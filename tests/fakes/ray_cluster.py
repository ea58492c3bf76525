"""A real Ray cluster on loopback for tests and benchmarks: a head and worker nodes, each its own process group.

Each node is started with `ray start` in a new session, so every daemon it leaves behind (GCS, raylet,
workers, dashboard) shares its process group: stop() kills exactly those groups and nothing else of the
machine's. Nodes get the environment they are given (their keys), never the caller's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.loopback import Request, Response, free_port
from tests.fakes.providers import openai_models, openai_reply

RAY = str(Path(sys.executable).with_name("ray"))


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process the tests start: the basics, no key, and a private HOME (Ray keeps its
    auth token in ~/.ray, and a token there turns token auth on for every later cluster), token auth off."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: os.environ[k] for k in ("PATH", "LANG", "TMPDIR") if k in os.environ}
    return env | {"HOME": str(home), "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"} | extra


@contextmanager
def connected(address: str) -> Iterator[Any]:
    """The ray module, with this process connected to the cluster (token auth off, as its nodes have it)."""
    import ray  # heavy optional dependency: only the cluster tests need it

    old = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if old is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old


def ray_available() -> str | None:
    """None when Ray and its `ray` command are installed, else why not."""
    try:
        import ray  # noqa: F401  (heavy optional dependency: only the cluster tests need it)
    except ImportError:
        return "Ray is not installed (pip install -r requirements-ray.txt)"
    return None if Path(RAY).is_file() else f"no `ray` command beside {sys.executable}"


@dataclass
class Node:
    """One `ray start` node: its process group and temp dir."""

    pgid: int
    temp_dir: Path

    def pids(self) -> list[tuple[int, str]]:
        """(pid, command line) of every live process of this node's group."""
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) == self.pgid:
                    cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    out.append((int(entry.name), cmd))
            except (OSError, ProcessLookupError):
                continue
        return out

    def kill_raylet(self) -> None:
        """SIGKILL this node's raylet: the node dies as a crashed machine's would."""
        for pid, cmd in self.pids():
            if re.search(r"/raylet/raylet ", cmd):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Kill every process of this node's group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)


@dataclass
class LocalCluster:
    """A head node and `workers` worker nodes on 127.0.0.1, each with `cpus` CPUs; use as a context manager."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)  # what every node's environment holds besides the basics
    worker_env: dict[str, str] | None = None  # the worker nodes' own (default: env)
    workers: int = 1
    cpus: int = 1
    dashboard: bool = False  # the dashboard serves ray.util.state's listings
    nodes: list[Node] = field(default_factory=list)
    address: str = ""
    dashboard_url: str = ""

    def __enter__(self) -> LocalCluster:
        try:
            port = free_port()
            self.address = f"127.0.0.1:{port}"
            head = ["--head", f"--port={port}"]
            if self.dashboard:
                dash = free_port()
                head += ["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}"]
                self.dashboard_url = f"http://127.0.0.1:{dash}"
            else:
                head += ["--include-dashboard=false"]
            self.nodes.append(self._start("head", head, self.env))
            for i in range(self.workers):
                env = self.env if self.worker_env is None else self.worker_env
                self.nodes.append(self._start(f"worker{i}", [f"--address={self.address}"], env))
            self._wait_for_nodes(1 + self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self, name: str, args: list[str], env: dict[str, str]) -> Node:
        temp_dir = self.root / name
        temp_dir.mkdir(parents=True, exist_ok=True)
        full_env = clean_env(self.root / "home", **env)
        cmd = [RAY, "start", *args, "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}",
               f"--num-cpus={self.cpus}", "--disable-usage-stats"]
        proc = subprocess.Popen(cmd, env=full_env, cwd=self.root, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        node = Node(proc.pid, temp_dir)
        self.nodes.append(node)  # stopped even if starting fails
        out, _ = proc.communicate(timeout=120)
        self.nodes.remove(node)
        if proc.returncode != 0:
            node.stop()
            raise RuntimeError(f"ray start ({name}) failed: {out[-2000:]}")
        return node

    def _wait_for_nodes(self, count: int, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        with connected(self.address) as ray:
            while sum(1 for n in ray.nodes() if n["Alive"]) < count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {sum(1 for n in ray.nodes() if n['Alive'])} of {count} nodes joined")
                time.sleep(0.2)

    def stop(self) -> None:
        """Kill every process the cluster's nodes started (their own process groups only)."""
        for node in reversed(self.nodes):
            node.stop()
        self.nodes.clear()

    def files_holding(self, needle: bytes) -> list[str]:
        """Every file under the nodes' temp dirs (logs, session files) whose bytes hold `needle`."""
        found = []
        for path in self.root.rglob("*"):
            try:
                if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                    found.append(str(path))
            except OSError:
                continue
        return found


def short_temp_dir() -> Path:
    """A new directory with a short path: Ray's socket paths under a node's temp dir must fit in 107 bytes."""
    return Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp" if Path("/tmp").is_dir() else None))


def remove_tree(path: Path) -> None:
    """Remove a cluster's temp dirs (sockets and all)."""
    shutil.rmtree(path, ignore_errors=True)


class NumberModel:
    """A fake OpenAI-compatible model: answers `Final Answer: N` to a task saying `number N`, after `latency` s.

    It records the Authorization header of every completion call (which key each node used).
    """

    def __init__(self, latency: float = 0.0, completion_tokens: int = 5) -> None:
        self.latency, self.completion_tokens = latency, completion_tokens
        self.keys: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() of each completion request (the benchmark's clock)

    def __call__(self, req: Request) -> Response:
        if not req.path.endswith("/chat/completions"):  # the driver's start-up look at the server
            return openai_models("gpt-x")
        self.keys.append(req.headers.get("authorization", ""))
        self.arrivals.append(time.monotonic())
        body: dict[str, Any] = req.json() or {}
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
        found = re.search(r"number (\d+)", text)
        most = body.get("max_completion_tokens") or body.get("max_tokens") or self.completion_tokens
        reply = openai_reply(f"Thought: I know it.\nFinal Answer: {found.group(1) if found else 'none'}",
                             completion_tokens=min(self.completion_tokens, most))  # as a provider, within max_tokens
        reply.delay = self.latency
        return reply


def number_tasks(count: int) -> str:
    """A task file of `count` tasks the NumberModel answers."""
    return "\n\n".join(f"Task {i}: reply with the number {i}." for i in range(count)) + "\n"


def take_turns(actor: Any, count: int, pause: float = 0.0) -> list[float]:
    """On a node: `count` turns from the run's shared OpenAI limiter (--rpm 3), each answered at once, then maybe a
    429's pause."""
    from run.ray_limits import ActorLimiter

    limiter = ActorLimiter(actor, "openai", 3, None)
    waited = []
    for _ in range(count):
        waited.append(limiter.acquire(100))
        limiter.observe({}, 100)  # its reply
    if pause:
        limiter.pause_until(time.time() + pause, "openai:gpt-x answered 429")
    return waited
