"""`main.py serve-mcp --http` as a subprocess, as its users meet it: the token it prints at start, the SDK's client
sending it, and plain JSON-RPC over HTTP (httpx) with whatever headers a test chooses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.loopback import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "plain", "version": "1"}}}


def model_env(tmp_path: Path, model_url: str, **extra: str) -> dict[str, str]:
    """serve-mcp's environment: the scripted model at model_url, no key or setting of the user's."""
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model_url + "/v1", "AGENT_MODEL": "openai:gpt-4.1-mini",
            "AGENT_ENV_FILE": str(tmp_path / "none.env"), "PATH": os.environ.get("PATH", ""), **extra}


def printed_token(proc: subprocess.Popen[str], said: list[str] | None = None) -> str:
    """The token serve-mcp prints on stderr at start ('' if it ended first); the rest of stderr is kept in `said`
    by a thread, so the server never blocks on a full pipe."""
    said = [] if said is None else said
    assert proc.stderr is not None
    token = ""
    for line in proc.stderr:
        said.append(line)
        if found := re.search(r"Authorization: Bearer (\S+)", line):
            token = found.group(1)
            break
    threading.Thread(target=lambda: said.extend(proc.stderr or ()), daemon=True).start()
    return token


def with_token(url: str, token: str) -> Any:
    """A Streamable HTTP transport for the SDK's Client that sends the token."""
    import httpx2  # the SDK's own HTTP client package
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}))


@dataclass
class Served:
    """A running serve-mcp --http: its URL, port, printed token and stderr so far."""

    url: str
    port: int
    token: str
    stderr: list[str] = field(default_factory=list)


@contextmanager
def serving(cwd: Path, env: dict[str, str], *flags: str) -> Iterator[Served]:
    """`main.py serve-mcp --http PORT *flags` in cwd until the block ends (then SIGTERM)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "serve-mcp", "--http", str(port), *flags],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    served = Served(f"http://127.0.0.1:{port}/mcp", port, "")
    try:
        served.token = printed_token(proc, served.stderr)
        assert served.token, "".join(served.stderr)
        wait_for_port(port)
        yield served
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    """One JSON-RPC message POSTed as an MCP client sends it, with these extra headers."""
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=120)


def call_tool(url: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """initialize, initialized, then tools/call over plain HTTP with the token; the call's JSON-RPC result."""
    auth = {"Authorization": f"Bearer {token}"}
    opened = post(url, INITIALIZE, **auth)
    assert opened.status_code == 200, opened.text
    session = {**auth, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session).status_code == 202
    answer = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}}, **session)
    assert answer.status_code == 200, answer.text
    (data,) = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    return dict(data["result"])
