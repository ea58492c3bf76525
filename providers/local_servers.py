"""Local model servers: the models one lists (or why it lists none), which one answers (from what it lists), how
it says a prompt is too long, how to fix it.

Each server words a prompt over its window in its own way (recorded from the servers, or their sources):
- llama-cpp-python, vLLM: "This model's maximum context length is 2048 tokens. However, you requested 2534
  tokens (2518 in the messages, 16 in the completion)", code `context_length_exceeded` (vLLM's newer text:
  "... and your request has 800 input tokens");
- llama.cpp's llama-server: "request (9412 tokens) exceeds the available context size (8192 tokens)", type
  `exceed_context_size_error`, with `n_ctx` and `n_prompt_tokens` in the body;
- LM Studio: "Trying to keep the first 10136 tokens when context the overflows. However, the model is loaded with
  context length of only 7866 tokens", newer: "... greater than the context length (n_keep: 10247 >= n_ctx: 4096)".
Ollama never refuses: it drops the start of the prompt (the agent sizes num_ctx instead, context_window.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from providers.reachability import unreachable_reason

LLAMA_CPP_PYTHON, LLAMA_CPP, VLLM, LM_STUDIO, OLLAMA = "llama-cpp-python", "llama.cpp", "vLLM", "LM Studio", "Ollama"
# How to start each server with a larger window; {n} is a window that holds the prompt.
FIXES = {
    LLAMA_CPP_PYTHON: "restart llama-cpp-python's server with a larger --n_ctx (python -m llama_cpp.server "
                      "--model … --n_ctx {n})",
    LLAMA_CPP: "restart llama-server with a larger -c (llama-server -m … -c {n})",
    VLLM: "restart vLLM with a larger --max-model-len (vllm serve … --max-model-len {n})",
    LM_STUDIO: "load the model with a larger context length (lms load MODEL --context-length {n})",
    OLLAMA: "raise num_ctx: the agent asks Ollama for --context-budget plus --max-tokens (PARAMETER num_ctx {n} in a"
            " Modelfile sets the model's own), or use a model with a longer context",
}
UNKNOWN_FIX = ("start the server with a larger context window (at least {n} tokens) and tell the agent with "
               "--context-window N")
# owned_by in an OpenAI-style /v1/models listing, as each server writes it.
_OWNERS = {"me": LLAMA_CPP_PYTHON, "llamacpp": LLAMA_CPP, "vllm": VLLM}

_NUMBER = r"(\d[\d,]*)"
_WINDOW_TEXTS = (re.compile(rf"maximum context length is {_NUMBER} tokens", re.I),
                 re.compile(rf"exceeds the available context size \({_NUMBER} tokens\)", re.I),
                 re.compile(rf"context length of only {_NUMBER} tokens", re.I),
                 re.compile(rf"n_keep: \d+ >= n_ctx: {_NUMBER}", re.I))
_PROMPT_TEXTS = (re.compile(rf"\({_NUMBER} in the messages", re.I),
                 re.compile(rf"request has {_NUMBER} input tokens", re.I),
                 re.compile(rf"request \({_NUMBER} tokens\) exceeds", re.I),
                 re.compile(rf"keep the first {_NUMBER} tokens", re.I),
                 re.compile(rf"n_keep: {_NUMBER} >=", re.I))
_CODES = ("context_length_exceeded", "exceed_context_size_error")
_OVERFLOW = re.compile(r"greater than the context length|exceeds the available context size|context length of only",
                       re.I)  # the same refusals without figures (older llama-server and LM Studio)


def kind_from_listing(listing: Any) -> str | None:
    """The server behind an OpenAI-style GET /v1/models answer, from its entries' owned_by."""
    items = listing.get("data") if isinstance(listing, dict) else None
    owners = {str(m.get("owned_by")).lower() for m in items or [] if isinstance(m, dict)}
    found = [_OWNERS[o] for o in owners if o in _OWNERS]
    return found[0] if found else None


_listings: dict[str, Any] = {}  # the last listing list_models read per base URL, until the window probe takes it


def taken_listing(base_url: str) -> Any:
    """The GET /models answer list_models just read at base_url, handed over once (the window probe that follows
    choosing a model reads the same listing instead of asking again); None when there is none."""
    return _listings.pop(base_url.rstrip("/"), None)


def list_models(base_url: str, timeout: float) -> tuple[list[str], str]:
    """The chat models an OpenAI-compatible server lists at GET {base}/models (embedding models left out), or
    ([], why it listed none): it did not answer in time (a server busy with a request may not list its models
    meanwhile), refused the connection, answered an HTTP error or no model list, or lists no chat model."""
    import urllib.error  # 25 ms to import: only a probe needs it
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return [], f"answered GET /models with HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return [], _why_unlisted(exc, timeout)
    items = data.get("data") if isinstance(data, dict) else None
    ids = [str(item["id"]) for item in items or [] if isinstance(item, dict) and item.get("id")]
    chat = [i for i in ids if "embed" not in i.lower()]  # an embedding model cannot chat
    if chat:
        _listings[base_url.rstrip("/")] = data
    return chat, "" if chat else ("lists no chat model at GET /models" if ids else "answered GET /models with no "
                                  "model list")


def _why_unlisted(exc: BaseException, timeout: float) -> str:
    """list_models' reason for a failed request."""
    if isinstance(exc, ValueError):
        return "answered GET /models with no model list"
    if isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError):
        return f"did not answer GET /models within {timeout:g} s (a server busy with another request may not)"
    reason = unreachable_reason(exc)
    if reason == "connection refused":
        return "refused the connection"
    return f"could not be reached: {reason or ' '.join(str(getattr(exc, 'reason', exc)).split())[:200]}"


def _number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def context_overflow(message: str, body: Any = None, code: str | None = None) -> tuple[int | None, int | None] | None:
    """(window, prompt tokens) when an error says the prompt is over the server's window, else None."""
    error = body.get("error", body) if isinstance(body, dict) else None
    fields = error if isinstance(error, dict) else {}
    text = f"{message} {fields.get('message') or ''}"
    window = fields.get("n_ctx") if isinstance(fields.get("n_ctx"), int) else _number(_WINDOW_TEXTS, text)
    coded = code in _CODES or fields.get("code") in _CODES or fields.get("type") in _CODES
    if window is None and not coded and not _OVERFLOW.search(text):
        return None
    prompt = fields.get("n_prompt_tokens")
    return window, prompt if isinstance(prompt, int) else _number(_PROMPT_TEXTS, text)


def suggested_window(prompt_tokens: int | None, window: int | None) -> int:
    """A window to suggest: the next power of two holding the prompt and a reply (twice the window if unknown)."""
    need = (prompt_tokens or (window or 2048)) * 5 // 4 + 1024
    size = 4096
    while size < need:
        size *= 2
    return size


def overflow_message(spec: str, kind: str | None, window: int | None, prompt_tokens: int | None) -> str:
    """One line: the window, the prompt's size and the fix for this kind of server."""
    where = f"the {kind} server" if kind else "the server"
    size = f"a prompt of {prompt_tokens:,} tokens" if prompt_tokens else "the prompt"
    span = f"its {window:,}-token context window" if window else "its context window"
    fix = FIXES.get(kind or "", UNKNOWN_FIX).format(n=suggested_window(prompt_tokens, window))
    return f"{spec}: {size} does not fit {span} ({where} refused it): {fix}"
