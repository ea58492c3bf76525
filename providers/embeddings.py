"""Text to vectors: the embeddings endpoint a model string or a models-file alias names (AGENT_EMBEDDINGS_MODEL).

Every provider is reached the one plain way, OpenAI's `POST {base_url}/embeddings` with `model` and `input`:
OpenAI and the named OpenAI-compatible hosts (hosts.py), Ollama's `/v1` (OLLAMA_BASE_URL), Gemini's
OpenAI-compatible endpoint, and an alias of the models file with its own `base_url` (TEI, llama.cpp, vLLM, a
loopback server with no key). An alias's base URL from a folder the user has not trusted never gets here: the
models file's layer leaves such an alias out (core/models_file.models_layer), so its name is then unknown.
The reply's vectors come back as lists of floats (the caller stores them); its token count prices the call
(pricing.py's table, an alias's input_price; a loopback or Ollama server costs nothing).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from config import Settings
from core.chat import Completion, split_spec
from core.errors import ConfigError
from providers.budget import charge_running_task
from providers.hosts import HOSTS, openai_endpoint
from providers.pricing import cost_usd, settings_prices

GEMINI_OPENAI = "https://generativelanguage.googleapis.com/v1beta/openai"
_DEFAULT_OPENAI = "https://api.openai.com/v1"


class EmbeddingsFailed(Exception):  # noqa: N818 - the endpoint's answer, shown as one line
    """The endpoint did not give one vector per text (down, refused, wrong model, wrong dimension): one line."""


@dataclass
class Spend:
    """What the embeddings requests of one command cost: requests, tokens, USD (None: the price is unknown)."""

    requests: int = 0
    tokens: int = 0
    cost: float | None = 0.0
    seconds: float = 0.0


@dataclass
class Embedder:
    """One embeddings model at its endpoint: `embed` turns texts into vectors, counting what it spent."""

    spec: str  # as the user named it: `openai:text-embedding-3-small` or an alias
    model: str  # the name the server knows
    url: str  # the base URL; requests go to {url}/embeddings
    key: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = 120.0
    price: str | None = None  # the name cost_usd prices it by ('' when free, None when unknown)
    table: dict[str, tuple[float, float, int | None]] = field(default_factory=dict, repr=False)
    spend: Spend = field(default_factory=Spend)

    @property
    def host(self) -> str:
        """Where the requests go, for messages: `api.openai.com`, `127.0.0.1:8000`."""
        return urlsplit(self.url).netloc or self.url

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One request: a vector per text, all of one dimension; EmbeddingsFailed (one line) otherwise."""
        import urllib.error
        import urllib.request  # 25 ms to import: only a command with an embeddings model needs it

        body = json.dumps({"model": self.model, "input": texts}).encode()
        headers = {"Content-Type": "application/json", **dict(self.headers)}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(f"{self.url.rstrip('/')}/embeddings", data=body, headers=headers)
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                reply = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise EmbeddingsFailed(f"{self.spec} at {self.host} answered HTTP {exc.code}{_said(exc)}") from exc
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise EmbeddingsFailed(f"{self.spec} at {self.host} did not answer ({reason})") from exc
        finally:
            self.spend.seconds += time.perf_counter() - started
        vectors = _vectors(reply, len(texts), self.spec)
        tokens = _tokens(reply, texts)
        self.spend.requests += 1
        self.spend.tokens += tokens
        cost = 0.0 if self.price == "" else None if self.price is None else cost_usd(self.price, tokens, 0, self.table)
        self.spend.cost = None if cost is None or self.spend.cost is None else self.spend.cost + cost
        charge_running_task(Completion("", prompt_tokens=tokens, model=self.spec, cost=cost))
        return vectors

    def estimate(self, texts: list[str]) -> float:
        """The most a request for these texts may cost (USD; ~3 characters a token, as the chat caps reckon)."""
        if not self.price:
            return 0.0
        return cost_usd(self.price, sum(len(t) for t in texts) // 3 + 1, 0, self.table) or 0.0


def _said(exc: Any) -> str:
    """The error message of an HTTP error's JSON body (`: model not found`), short; '' when there is none."""
    try:
        detail = json.loads(exc.read() or b"{}").get("error")
    except (OSError, ValueError, AttributeError):
        return ""
    message = detail.get("message") if isinstance(detail, dict) else detail
    return f": {' '.join(str(message).split())[:160]}" if message else ""


def _vectors(reply: Any, count: int, spec: str) -> list[list[float]]:
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingsFailed(f"{spec}: the reply does not hold one vector per text")
    ordered = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    vectors = [d.get("embedding") if isinstance(d, dict) else None for d in ordered]
    if not all(isinstance(v, list) and v for v in vectors):
        raise EmbeddingsFailed(f"{spec}: the reply's vectors are not lists of numbers")
    if len({len(v) for v in vectors if v}) != 1:
        raise EmbeddingsFailed(f"{spec}: the reply's vectors differ in dimension")
    return [[float(x) for x in v] for v in vectors if v]


def _tokens(reply: dict[str, Any], texts: list[str]) -> int:
    usage = reply.get("usage")
    tokens = usage.get("prompt_tokens") or usage.get("total_tokens") if isinstance(usage, dict) else None
    return int(tokens) if isinstance(tokens, int) else sum(len(t) for t in texts) // 4


def embedder_of(spec: str, settings: Settings) -> Embedder:
    """The endpoint of an embeddings model string or alias; ConfigError (one line) for one that has none here."""
    alias = settings.alias(spec)
    provider, model = (alias.provider, alias.model) if alias else split_spec(spec)
    table = settings_prices(settings)
    local = alias is not None and alias.base_url is not None and _loopback(alias.base_url)
    price: str | None = "" if local or provider == "ollama" else spec
    if price and cost_usd(price, 1, 0, table) is None:
        price = None  # not in the table: the cost shows n/a
    common: dict[str, Any] = {"spec": spec, "model": model, "timeout": settings.request_timeout, "price": price,
                              "table": table, "headers": alias.headers if alias else ()}
    hosted = openai_endpoint(spec, settings)
    if hosted is not None:
        return Embedder(url=hosted[2], key=hosted[3], **common)
    if provider == "openai":  # an alias with its own base_url was answered above
        key = settings.provider_env(alias.api_key_env) if alias and alias.api_key_env else settings.openai_api_key
        if not key and not settings.openai_base_url:
            raise ConfigError(f"embeddings model {spec} needs OPENAI_API_KEY (or an alias with the base_url of a "
                              "local OpenAI-compatible server)", "embeddings_model")
        return Embedder(url=settings.openai_base_url or _DEFAULT_OPENAI, key=key, **common)
    if provider == "ollama":
        return Embedder(url=(alias.base_url if alias else None) or settings.ollama_base_url, **common)
    if provider == "gemini":
        key = settings.provider_env(alias.api_key_env) if alias and alias.api_key_env else settings.gemini_api_key
        if not key:
            raise ConfigError(f"embeddings model {spec} needs GEMINI_API_KEY", "embeddings_model")
        return Embedder(url=(alias.base_url if alias else None) or GEMINI_OPENAI, key=key, **common)
    if not provider:
        raise ConfigError(f"embeddings model {spec!r}: name it provider:model (openai:text-embedding-3-small, "
                          "ollama:nomic-embed-text) or an alias of the models file (an alias with a base_url from a "
                          "folder you have not trusted is left out)", "embeddings_model")
    served = "Azure embeddings deployments" if provider == "azure" else f"{provider}"
    raise ConfigError(f"embeddings model {spec}: {served} are not served here; use an OpenAI-compatible endpoint "
                      f"(openai:, ollama:, gemini:, {', '.join(sorted(HOSTS))}, or an alias with a base_url)",
                      "embeddings_model")


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
