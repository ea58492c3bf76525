"""OpenAI Chat Completions adapter: OpenAI itself, vLLM, llama.cpp server, LM Studio, and (given their client or
base URL and key, providers/hosts.py) Azure OpenAI, OpenRouter and the hosted OpenAI-compatible APIs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from core.chat import Completion
from core.errors import ContextWindowError
from providers.common import (
    ChatRequest,
    ErrorContext,
    ErrorInfo,
    TransientError,
    billed_empty,
    call_stainless_sdk,
    described,
    empty_reason,
    request_options,
    sdk_missing,
    short,
)
from providers.context_window import learn_window, warn_if_too_long
from providers.images import openai_content
from providers.rate_headers import parsed

MAX_STOP_SEQUENCES = 4  # the Chat Completions API rejects more
_FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter"}


def is_official(base_url: str | None) -> bool:
    """True when requests go to api.openai.com (which wants max_completion_tokens)."""
    return base_url is None or "api.openai.com" in base_url


class OpenAIBackend:
    """A model behind an OpenAI-compatible /chat/completions endpoint, through the `openai` SDK."""

    def __init__(self, spec: str, model: str, *, api_key: str, base_url: str | None, timeout: float,
                 key_env: str | None = "OPENAI_API_KEY", pull_hint: str | None = None,
                 provider: str = "OpenAI", window: Callable[[], int | None] | None = None,
                 local: bool = False, client: Any = None, hosted: bool = False, headers: dict[str, str] | None = None,
                 reports_cost: bool = False, what: str = "model") -> None:
        try:
            import openai
        except ImportError as exc:
            raise sdk_missing("openai", exc) from exc
        self.spec = spec
        self.model = model
        # api.openai.com and Azure want max_completion_tokens; other servers know max_tokens
        self.official = is_official(base_url) or provider == "Azure OpenAI"
        self._window = window  # the context window a local server reported (vLLM, llama.cpp), if known
        self.local = local  # a server the user runs: the facade sizes its replies to its window
        self.base_url = base_url
        self._openai = openai
        self._reports_cost = reports_cost  # OpenRouter: the reply's usage.cost is what the call cost
        # The facade retries; the SDK's own retries would multiply the waits. `client`: Azure's (providers/hosts.py).
        self._client = client or openai.OpenAI(api_key=api_key, base_url=base_url or "https://api.openai.com/v1",
                                               timeout=timeout, max_retries=0, default_headers=headers)
        # A hosted API (Groq, OpenRouter, Azure ...) is named by its provider in errors, a server the user runs by URL.
        self._ctx = ErrorContext(spec, model, provider, key_env=key_env,
                                 server=None if self.official or hosted else base_url, pull_hint=pull_hint,
                                 local=local, what=what)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments for chat.completions.create."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": openai_content(m)} for m in request.messages],
        }
        # Local servers know max_tokens; OpenAI's reasoning models only take max_completion_tokens.
        use_new = self.official or "max_tokens" in request.omit
        body["max_completion_tokens" if use_new else "max_tokens"] = request.max_tokens
        if request.stop and "stop" not in request.omit:
            body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
        if request.temperature is not None and "temperature" not in request.omit:
            body["temperature"] = request.temperature
        return body

    def window(self) -> int | None:
        """The context window the server runs the model with, when it said (or a refusal named it)."""
        return self._window() if self._window is not None else None

    def complete(self, request: ChatRequest) -> Completion:
        """One chat completion; failures become typed LLMErrors."""
        body = self.request_body(request)
        window = self.window()
        if window:  # a local server drops the start of a prompt that does not fit: say so
            warn_if_too_long(self.spec, request.messages, request.max_tokens, window)
        create = self._client.chat.completions.with_raw_response.create  # the headers carry the rate limits
        try:
            response, headers = call_stainless_sdk(self._openai, self._openai.OpenAIError,
                                                   lambda: parsed(create(**body, **request_options(request))),
                                                   _info, self._ctx)
        except ContextWindowError as exc:
            if exc.window and self.base_url:  # llama-cpp-python says its window only here: kept for the next prompts
                learn_window(self.base_url, self.model, exc.window)
            raise
        return replace(self._parse(response), rate_headers=headers)

    def _parse(self, response: Any) -> Completion:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise TransientError(f"{self.spec}: unexpected response body: {short(response, 300)}",
                                 model=self.spec, unusable=described(response))
        usage = self._usage(response)
        if not choices:
            raise billed_empty(f"{self.spec}: the reply had no choices", usage)
        choice = choices[0]
        message = getattr(choice, "message", None)
        raw_finish = getattr(choice, "finish_reason", None)
        finish = _FINISH.get(str(raw_finish), raw_finish)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise billed_empty(f"{self.spec} refused: {short(refusal, 300)}", usage)
        if finish == "content_filter":
            raise billed_empty(f"{self.spec}: the reply was blocked by the content filter", usage)
        text = getattr(message, "content", None) or ""
        if not text.strip():
            raise billed_empty(f"{self.spec}: {empty_reason(finish, usage.completion_tokens)}", usage, finish)
        return replace(usage, text=text, finish_reason=finish,
                       model=getattr(response, "model", None) or self.model)

    def _usage(self, response: Any) -> Completion:
        """The billed tokens of a reply (prompt_tokens includes the cached part)."""
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        cost = getattr(usage, "cost", None) if self._reports_cost else None
        return Completion(text="", prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
                          completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          cached_tokens=getattr(details, "cached_tokens", 0) or 0,
                          cache_write_tokens=getattr(details, "cache_write_tokens", 0) or 0, model=self.spec)


def _info(exc: Any) -> ErrorInfo:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or exc.message
    else:
        message = body if isinstance(body, str) and body else exc.message
    return ErrorInfo(status=exc.status_code, message=str(message), headers=exc.response.headers, body=body,
                     param=getattr(exc, "param", None), code=getattr(exc, "code", None))
