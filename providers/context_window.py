"""The context window local servers really run with: Ollama's /api/show, vLLM's /v1/models, llama.cpp's /props.

Ollama's OpenAI-compatible endpoint cannot set the context size (its docs say so; it runs every request at
the server default, 4096 tokens, and silently drops the start of longer prompts), so `ollama:` models go
through the native /api/chat with options.num_ctx, sized here. vLLM and llama.cpp fix the window when the
server starts: the budget is fitted to what they report.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from core.chat import split_spec
from providers.pricing import load_prices, lookup

DEFAULT_LOCAL_BUDGET = 32_000  # prompt tokens when --context-budget is unset (memory.DEFAULT_BUDGET)
PROBE_TIMEOUT = 2.0
_cache: dict[tuple[str, str], int | None] = {}
_lock = threading.Lock()


class ContextWindowWarning(UserWarning):
    """A prompt will not fit the context window the local server runs with."""


def ollama_root(base_url: str) -> str:
    """http://host:11434/v1 -> http://host:11434 (the native API lives at the root)."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def _get_json(url: str, body: dict[str, Any] | None = None, timeout: float = PROBE_TIMEOUT) -> Any:
    import urllib.request  # 25 ms to import: only a probe needs it

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def ollama_show_window(show: Any) -> int | None:
    """The model's trained context length from an /api/show answer (model_info "<arch>.context_length")."""
    info = show.get("model_info") if isinstance(show, dict) else None
    lengths = [v for k, v in (info or {}).items() if k.endswith(".context_length") and isinstance(v, int)]
    return max(lengths) if lengths else None


def vllm_window(models: Any, model: str) -> int | None:
    """max_model_len of the model in a vLLM GET /v1/models answer (the only model when the id differs)."""
    items = [m for m in (models or {}).get("data") or [] if isinstance(m, dict)] if isinstance(models, dict) else []
    match = [m for m in items if m.get("id") == model] or (items if len(items) == 1 else [])
    value = match[0].get("max_model_len") if match else None
    return value if isinstance(value, int) else None


def llamacpp_window(props: Any) -> int | None:
    """n_ctx of a llama.cpp server's GET /props answer (the window of each slot)."""
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    return value if isinstance(value, int) and value > 0 else None


def _cached(key: tuple[str, str], probe: Any) -> int | None:
    with _lock:
        if key in _cache:
            return _cache[key]
    value = probe()
    with _lock:
        _cache[key] = value
    return value


def ollama_model_window(base_url: str, model: str) -> int | None:
    """The most context the Ollama model supports, from /api/show; None when the server does not say."""
    return _cached(("ollama", f"{base_url}|{model}"),
                   lambda: ollama_show_window(_get_json(f"{ollama_root(base_url)}/api/show", {"model": model})))


def ollama_num_ctx(base_url: str, model: str, budget: int | None, max_tokens: int) -> int:
    """The num_ctx to run an Ollama model with: room for the prompt budget and the reply, within the model."""
    wanted = (budget or DEFAULT_LOCAL_BUDGET) + max_tokens
    window = ollama_model_window(base_url, model)
    return min(wanted, window) if window else wanted


def openai_server_window(base_url: str, model: str) -> int | None:
    """The window a local OpenAI-compatible server runs the model with: vLLM max_model_len, llama.cpp n_ctx."""
    def probe() -> int | None:
        window = vllm_window(_get_json(f"{base_url.rstrip('/')}/models"), model)
        return window or llamacpp_window(_get_json(f"{ollama_root(base_url)}/props"))
    return _cached(("openai", f"{base_url}|{model}"), probe)


def known_server_window(base_url: str, model: str) -> int | None:
    """The window openai_server_window found earlier in this process, without asking the server."""
    with _lock:
        return _cache.get(("openai", f"{base_url}|{model}"))


def local_window(model_spec: str, settings: Any) -> int | None:
    """The window a local model runs with: the num_ctx sent to Ollama, or what vLLM / llama.cpp report."""
    provider, model = split_spec(model_spec)
    if provider == "ollama":
        return ollama_num_ctx(settings.ollama_base_url, model, settings.context_budget, settings.max_tokens)
    base = settings.openai_base_url
    if provider == "openai" and base and "api.openai.com" not in base and not _priced(model_spec, settings):
        return openai_server_window(base, model)  # a model the price table knows is a hosted one (a proxy)
    return None


def _priced(model_spec: str, settings: Any) -> bool:
    return lookup(model_spec, load_prices(settings.prices_file)) is not None


CHARS_PER_TOKEN = 4  # a rough prompt size for the fit warning; the server's own count comes only after the call


def warn_if_too_long(spec: str, messages: Sequence[Any], max_tokens: int, window: int) -> None:
    """Warn (once per place) when a prompt and its reply budget exceed the window the server runs with."""
    prompt_tokens = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
    if prompt_tokens + max_tokens > window:
        warnings.warn(f"{spec}: a prompt of about {prompt_tokens:,} tokens plus {max_tokens:,} for the reply does"
                      f" not fit the {window:,}-token context the server runs with; it would drop the start of"
                      " the prompt. Lower --context-budget or --max-tokens, or use a model with a larger window.",
                      ContextWindowWarning, stacklevel=3)
