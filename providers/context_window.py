"""The context window local servers really run with: Ollama's /api/show, vLLM's /v1/models, llama.cpp's /props,
LM Studio's /api/v1/models, a refusal's text (llama-cpp-python reports its window nowhere else), or the setting.

Ollama's OpenAI-compatible endpoint cannot set the context size (its docs say so; it runs every request at
the server default, 4096 tokens, and silently drops the start of longer prompts), so `ollama:` models go
through the native /api/chat with options.num_ctx, sized here. vLLM, llama.cpp, llama-cpp-python and LM Studio
fix the window when the model is loaded: the budget is fitted to what they report, and a window a refusal
names is kept for the rest of the process (learn_window). The reply budget of a local server is sized to its
window too (reply_tokens): a small CPU model asked for 8,192 tokens may generate past the request timeout.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from config import Settings
from core.chat import split_spec
from providers.families import MIN_REPLY
from providers.local_servers import LLAMA_CPP, LM_STUDIO, VLLM, kind_from_listing, taken_listing
from providers.pricing import load_prices, lookup

DEFAULT_LOCAL_BUDGET = 32_000  # prompt tokens when --context-budget is unset (memory.DEFAULT_BUDGET)
PROBE_TIMEOUT = 2.0
LOCAL_REPLY_TOKENS = 2048  # a local server's reply budget while its window is unknown (default --max-tokens)
_cache: dict[tuple[str, str], int | None] = {}
_kinds: dict[str, str] = {}  # base URL -> the server found there (providers/local_servers.py)
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


def lmstudio_window(listing: Any, model: str) -> int | None:
    """The context length LM Studio loaded the model with, from GET /api/v1/models (loaded_instances)."""
    items = listing.get("models") if isinstance(listing, dict) else None
    for item in items or []:
        loaded = item.get("loaded_instances") if isinstance(item, dict) else None
        if not isinstance(loaded, list) or model not in (item.get("key"), *(i.get("id") for i in loaded
                                                                             if isinstance(i, dict))):
            continue
        lengths = [i["config"].get("context_length") for i in loaded
                   if isinstance(i, dict) and isinstance(i.get("config"), dict)]
        found = [n for n in lengths if isinstance(n, int) and n > 0]
        return min(found) if found else None
    return None


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
    """The window a local OpenAI-compatible server runs the model with: vLLM max_model_len, llama.cpp n_ctx,
    LM Studio's loaded context length; which server it is is kept for the fix a refusal names (server_kind)."""
    def probe() -> int | None:
        listing = taken_listing(base_url) or _get_json(f"{base_url.rstrip('/')}/models")
        kind, window = kind_from_listing(listing), vllm_window(listing, model)
        if window is None and kind in (None, LLAMA_CPP):
            window = llamacpp_window(_get_json(f"{ollama_root(base_url)}/props"))
            kind = LLAMA_CPP if window else kind
        if window is None and kind is None:
            window = lmstudio_window(_get_json(f"{ollama_root(base_url)}/api/v1/models"), model)
            kind = LM_STUDIO if window else kind
        if kind or window:
            with _lock:
                _kinds[base_url] = kind or VLLM
        return window
    return _cached(("openai", f"{base_url}|{model}"), probe)


def known_server_window(base_url: str, model: str) -> int | None:
    """The window openai_server_window found (or a refusal named) earlier in this process, without asking."""
    with _lock:
        return _cache.get(("openai", f"{base_url}|{model}"))


def learn_window(base_url: str, model: str, window: int) -> None:
    """Keep the window a server's refusal named: the next prompts of this process are fitted to it."""
    with _lock:
        _cache[("openai", f"{base_url}|{model}")] = window


def server_kind(base_url: str | None) -> str | None:
    """Which server answered at this base URL (llama-cpp-python, llama.cpp, vLLM, LM Studio), if known."""
    with _lock:
        return _kinds.get(base_url or "")


def local_window(model_spec: str, settings: Any) -> int | None:
    """The window a local model runs with: the num_ctx sent to Ollama, or what vLLM / llama.cpp report."""
    provider, model = split_spec(model_spec)
    if settings.context_window:  # the user's word for a server that reports nothing
        return int(settings.context_window)
    if provider == "ollama":
        return ollama_num_ctx(settings.ollama_base_url, model, settings.context_budget, settings.max_tokens)
    if provider == "openai" and is_local(provider, model, settings):
        return openai_server_window(settings.openai_base_url, model)
    return None


def _priced(model_spec: str, settings: Any) -> bool:
    return lookup(model_spec, load_prices(settings.prices_file)) is not None


def is_local(provider: str, model: str, settings: Any) -> bool:
    """True for a model on a server the user runs: Ollama, or an OpenAI-compatible base URL serving a model the
    price table does not know (a known one behind a base URL is a hosted proxy)."""
    base = settings.openai_base_url
    return provider == "ollama" or (provider == "openai" and bool(base) and "api.openai.com" not in base
                                    and not _priced(f"{provider}:{model}", settings))


def kept_default_max_tokens(settings: Any) -> bool:
    """True when --max-tokens / AGENT_MAX_TOKENS was left at its default (a local server's reply is then sized)."""
    return bool(settings.max_tokens == Settings.max_tokens)


def reply_cap(requested: int, window: int | None, capped: bool) -> int:
    """The reply budget for a local server's window: with the default --max-tokens (`capped`) at most a quarter
    of the window (LOCAL_REPLY_TOKENS while it is unknown); a --max-tokens the user set is kept."""
    if not capped:
        return requested
    return min(requested, LOCAL_REPLY_TOKENS if window is None else max(window // 4, MIN_REPLY))


CHARS_PER_TOKEN = 4  # a rough prompt size for the fit warning; the server's own count comes only after the call


DROPPED_SHARE = 0.4  # a server counting under this share of the estimated prompt dropped part of it


def dropped_prompt_warning(spec: str, messages: Sequence[Any], reported: int) -> str | None:
    """A warning when a server counted far fewer prompt tokens than were sent (its chat template dropped part of
    the prompt); None when the count is plausible, unknown (0) or the prompt too small to tell."""
    sent = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
    if reported <= 0 or sent < 200 or reported >= sent * DROPPED_SHARE:
        return None
    return (f"{spec} counted {reported:,} prompt tokens for about {sent:,} sent: its chat template drops part of the "
            "prompt, likely the system message with the tools and the format; use a template that keeps system "
            "messages (llama-cpp-python's --chat_format gemma drops them)")


def reply_tokens(requested: int, window: int | None, messages: Sequence[Any], capped: bool) -> int:
    """max_tokens for one request to a local server: reply_cap, and within the window after the prompt (vLLM
    refuses a request whose prompt and max_tokens exceed it)."""
    wanted = reply_cap(requested, window, capped)
    if window is None:
        return wanted
    room = window - sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
    return max(min(wanted, room), min(wanted, 64))


def warn_if_too_long(spec: str, messages: Sequence[Any], max_tokens: int, window: int) -> None:
    """Warn (once per place) when a prompt and its reply budget exceed the window the server runs with."""
    prompt_tokens = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
    if prompt_tokens + max_tokens > window:
        warnings.warn(f"{spec}: a prompt of about {prompt_tokens:,} tokens plus {max_tokens:,} for the reply does"
                      f" not fit the {window:,}-token context the server runs with; it would drop the start of"
                      " the prompt. Lower --context-budget or --max-tokens, or use a model with a larger window.",
                      ContextWindowWarning, stacklevel=3)
