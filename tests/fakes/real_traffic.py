"""Loading the recorded real API traffic in tests/fixtures/real_api as loopback responses."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tests.fakes.loopback import Response

FIXTURES = Path(__file__).parent.parent / "fixtures" / "real_api"


@functools.cache
def _load(file: str) -> dict[str, Any]:
    return json.loads((FIXTURES / file).read_text(encoding="utf-8"))


def recorded(name: str, file: str = "errors.json") -> Response:
    """The recorded status, headers and body of one entry, as a loopback Response."""
    entry = _load(file)[name]
    return Response(entry["status"], entry["body"], headers=dict(entry.get("headers") or {}))


def reply(name: str) -> Response:
    """A recorded successful (200) reply from replies.json."""
    return recorded(name, "replies.json")


def local(name: str) -> Response:
    """A recorded local-server answer (Ollama, vLLM, llama.cpp) from local_servers.json."""
    return recorded(name, "local_servers.json")


def llama_cpp_python(name: str) -> Response:
    """What llama-cpp-python's server really answered (tests/fixtures/llama_cpp_server, recorded by its record.py)."""
    entry = json.loads((FIXTURES.parent / "llama_cpp_server" / f"{name}.json").read_text(encoding="utf-8"))
    return Response(entry["status"], entry["body"], headers=dict(entry.get("headers") or {}))
