"""Shared fixtures: no API key from the developer's environment ever reaches a test."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.loopback import LoopbackServer, Response  # noqa: E402 (needs the root on sys.path)

SECRET_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "SERPER_API_KEY", "SERPER_BASE_URL",
    "AGENT_MODEL", "AGENT_FALLBACK_MODELS", "AGENT_SUMMARY_MODEL", "OLLAMA_BASE_URL",
    "AGENT_CONTEXT_BUDGET", "AGENT_WORKSPACE", "AGENT_TRACE_DIR", "SCRAPE_ALLOW_PRIVATE_URLS",
    "AGENT_RUNS_DIR", "AGENT_KEEP_WORKSPACES", "AGENT_CONTEXT_WINDOW",
    "AGENT_PAPERS", "OPENALEX_MAILTO", "OPENALEX_API_KEY", "OPENALEX_BASE_URL", "SEMANTIC_SCHOLAR_API_KEY",
    "SEMANTIC_SCHOLAR_BASE_URL", "CROSSREF_MAILTO", "CROSSREF_BASE_URL",
)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Remove API keys and agent settings from the environment; run each test in its own cwd."""
    for var in SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    # A developer's own .env must not leak into tests either, nor the folders they trusted (core/trust.py).
    monkeypatch.setenv("AGENT_ENV_FILE", str(tmp_path / "no.env"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


_real_connect = socket.socket.connect


def _loopback_only_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and not (str(host).startswith("127.") or host in ("::1", "localhost")):
        raise ConnectionRefusedError(f"tests may not reach the network ({host})")
    _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection that is not to loopback, so no test can reach a real service."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_only_connect)


@pytest.fixture(scope="module")
def _module_loopback() -> Iterator[LoopbackServer]:
    """One loopback server per test module; tests swap its handler."""
    with LoopbackServer(lambda req: Response(599, "no script")) as server:
        yield server


@pytest.fixture
def server(_module_loopback: LoopbackServer) -> LoopbackServer:
    """The module's loopback server with its request log cleared (set `.handler` to script it)."""
    _module_loopback.requests.clear()
    return _module_loopback
