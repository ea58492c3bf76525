"""OpenAI Chat Completions adapter: OpenAI itself, Ollama, vLLM, llama.cpp server, LM Studio."""

from __future__ import annotations

from typing import Any

from llm import Completion, EmptyCompletionError
from providers.common import (
    ChatRequest,
    ErrorContext,
    ErrorInfo,
    TransientError,
    call_stainless_sdk,
    empty_reason,
    sdk_missing,
    short,
)

MAX_STOP_SEQUENCES = 4  # the Chat Completions API rejects more
_FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter"}


def is_official(base_url: str | None) -> bool:
    """True when requests go to api.openai.com (which wants max_completion_tokens)."""
    return base_url is None or "api.openai.com" in base_url


class OpenAIBackend:
    """A model behind an OpenAI-compatible /chat/completions endpoint, through the `openai` SDK."""

    def __init__(self, spec: str, model: str, *, api_key: str, base_url: str | None, timeout: float,
                 key_env: str | None = "OPENAI_API_KEY", pull_hint: str | None = None,
                 provider: str = "OpenAI") -> None:
        try:
            import openai
        except ImportError as exc:
            raise sdk_missing("openai", exc) from exc
        self.spec = spec
        self.model = model
        self.official = is_official(base_url)
        self._openai = openai
        # The facade retries; the SDK's own retries would multiply the waits.
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url or "https://api.openai.com/v1",
                                     timeout=timeout, max_retries=0)
        self._ctx = ErrorContext(spec, model, provider, key_env=key_env,
                                 server=None if self.official else base_url, pull_hint=pull_hint)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments for chat.completions.create."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
        }
        # Local servers know max_tokens; OpenAI's reasoning models only take max_completion_tokens.
        use_new = self.official or "max_tokens" in request.omit
        body["max_completion_tokens" if use_new else "max_tokens"] = request.max_tokens
        if request.stop and "stop" not in request.omit:
            body["stop"] = list(request.stop[:MAX_STOP_SEQUENCES])
        if request.temperature is not None and "temperature" not in request.omit:
            body["temperature"] = request.temperature
        return body

    def complete(self, request: ChatRequest) -> Completion:
        """One chat completion; failures become typed LLMErrors."""
        body = self.request_body(request)
        response = call_stainless_sdk(self._openai, self._openai.OpenAIError,
                                      lambda: self._client.chat.completions.create(**body), _info, self._ctx)
        return self._parse(response)

    def _parse(self, response: Any) -> Completion:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise TransientError(f"{self.spec}: unexpected response body: {short(response, 300)}",
                                 model=self.spec)
        if not choices:
            raise EmptyCompletionError(f"{self.spec}: the reply had no choices", model=self.spec)
        choice = choices[0]
        message = getattr(choice, "message", None)
        raw_finish = getattr(choice, "finish_reason", None)
        finish = _FINISH.get(str(raw_finish), raw_finish)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise EmptyCompletionError(f"{self.spec} refused: {short(refusal, 300)}", model=self.spec)
        if finish == "content_filter":
            raise EmptyCompletionError(f"{self.spec}: the reply was blocked by the content filter",
                                       model=self.spec)
        text = getattr(message, "content", None) or ""
        if not text.strip():
            raise EmptyCompletionError(f"{self.spec}: {empty_reason(finish)}", model=self.spec)
        usage = getattr(response, "usage", None)
        return Completion(text=text, finish_reason=finish,
                          prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                          completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                          model=getattr(response, "model", None) or self.model)


def _info(exc: Any) -> ErrorInfo:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or exc.message
    else:
        message = body if isinstance(body, str) and body else exc.message
    return ErrorInfo(status=exc.status_code, message=str(message), headers=exc.response.headers, body=body,
                     param=getattr(exc, "param", None), code=getattr(exc, "code", None))
