"""What a span may carry: GenAI semantic-convention attributes, counts and outcomes, never content or secrets.

Spans go to a third party (Langfuse, Phoenix, a collector), so they carry no prompt, completion, tool
argument, observation or task text, and every text they do carry (an error line) passes `Redactor`: the
values of the run's secrets (API keys, the OTLP headers, credentials in base URLs, secret-looking variables of
the environment) are replaced and URLs are cut to their origin, so a key a page or the model put in a URL
does not leave through the traces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from config import Settings
from core.chat import Completion, split_spec
from core.secrets import MIN_SECRET_CHARS, header_values, named_secrets

PROJECT = "research_agent"  # the namespace of this project's own attributes
AGENT_NAME = "react-research-agent"
MAX_TEXT = 300  # an error line in a span: enough to see what failed
_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|credential|cookie|session", re.IGNORECASE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini", "ollama": "ollama",
              "azure": "azure.ai.openai", "mistral": "mistral_ai", "xai": "x_ai"}  # others: their own name


def secret_values(settings: Settings, environ: Mapping[str, str]) -> list[str]:
    """Every value a span must never hold: the settings' keys, OTLP headers, URL credentials, secret variables."""
    found = [*named_secrets(settings), *header_values(settings.otel_headers)]
    found += [v for k, v in environ.items() if _SECRET_NAME.search(k)]
    return sorted({v for v in found if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


class Redactor:
    """Makes a text safe for a span: secrets replaced, URLs cut to their origin, the length bounded."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if s]

    def __call__(self, text: str) -> str:
        """The text as a span may carry it."""
        for secret in self.secrets:
            text = re.sub(re.escape(secret), "[redacted]", text, flags=re.IGNORECASE)
        text = _URL.sub(_origin, text)
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _origin(match: re.Match[str]) -> str:
    try:
        parts = urlsplit(match.group(0))
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "[url]"
    return f"{parts.scheme}://{host}{port}/…"


def provider_of(spec: str) -> str:
    """gen_ai.system / gen_ai.provider.name for a `provider:model` spec (openai, anthropic, gcp.gemini...)."""
    provider = split_spec(spec)[0]
    return _PROVIDERS.get(provider, provider or "unknown")


def model_name(spec: str) -> str:
    """The model of a `provider:model` spec."""
    return split_spec(spec)[1]


def request_attributes(spec: str, purpose: str) -> dict[str, Any]:
    """A model call's attributes known before it runs."""
    provider = provider_of(spec)
    return {"gen_ai.operation.name": "chat", "gen_ai.system": provider, "gen_ai.provider.name": provider,
            "gen_ai.request.model": model_name(spec), f"{PROJECT}.call.purpose": purpose}


def usage_attributes(completions: Iterable[Completion]) -> dict[str, Any]:
    """Tokens and cost of one or more completions (those billed before a retry included)."""
    flat = [b for c in completions for b in (*c.billed_before, c)]
    costs = [c.cost for c in flat]
    out: dict[str, Any] = {"gen_ai.usage.input_tokens": sum(c.prompt_tokens for c in flat),
                           "gen_ai.usage.output_tokens": sum(c.completion_tokens for c in flat)}
    if flat and all(c is not None for c in costs):
        out[f"{PROJECT}.cost_usd"] = out["gen_ai.usage.cost"] = float(sum(c for c in costs if c is not None))
    cached = sum(c.cached_tokens for c in flat)
    if cached:
        out["gen_ai.usage.cache_read.input_tokens"] = cached
    return out


def completion_attributes(completion: Completion) -> dict[str, Any]:
    """A finished model call: the model that answered, why it stopped, usage, cost, whether --cache answered."""
    out = usage_attributes([completion])
    if completion.model:
        out["gen_ai.response.model"] = completion.model
    if completion.finish_reason:
        out["gen_ai.response.finish_reasons"] = [completion.finish_reason]
    out[f"{PROJECT}.cached"] = completion.cached
    return out


def tool_outcome(error: str | None) -> str:
    """ok, error (the tool failed) or format_error (the model's Action could not be run)."""
    return {None: "ok", "tool": "error", "format": "format_error"}.get(error, "error")
