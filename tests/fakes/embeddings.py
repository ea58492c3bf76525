"""A deterministic OpenAI-compatible embeddings server on loopback: `POST /v1/embeddings` with model and input.

A text's vector counts its words hashed into DIM buckets, after SYNONYMS maps words of one meaning to one
word: "staff turnover" and "employee attrition" get the same vector, so a vector search finds what BM25 (no
shared word) cannot. `state` scripts failures: `down` (HTTP 503), `dim` (another dimension), and the server
answers 404 to a model other than MODEL, as a server that does not know it.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.loopback import LoopbackServer, Request, Response

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
