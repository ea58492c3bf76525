"""Ollama through its native /api/chat, the only Ollama API that sets the context size (options.num_ctx)."""

from __future__ import annotations

from typing import Any

from core.chat import Completion
from providers.common import (
    ChatRequest,
    ErrorContext,
    ErrorInfo,
    TransientError,
    billed_empty,
    classify,
    described,
    empty_reason,
    sdk_missing,
    short,
    transport_errors,
)
from providers.context_window import ollama_num_ctx, ollama_root, warn_if_too_long
from providers.images import ollama_message

_FINISH = {"stop": "stop", "length": "length"}


class OllamaBackend:
    """A local Ollama model, run with a num_ctx that holds the prompt budget and the reply."""

    def __init__(self, spec: str, model: str, *, base_url: str, timeout: float, budget: int | None,
                 max_tokens: int) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise sdk_missing("httpx", exc) from exc
        self.spec = spec
        self.model = model
        self.local = True  # the facade sizes its replies and does not repeat a request that timed out
        self.base_url = base_url
        self._httpx = httpx
        self._client = httpx.Client(base_url=ollama_root(base_url), timeout=timeout)
        self._budget, self._max_tokens = budget, max_tokens
        self._num_ctx: int | None = None
        self._ctx = ErrorContext(spec, model, "Ollama", server=base_url,
                                 pull_hint=f"Download it with: ollama pull {model}", local=True)

    @property
    def num_ctx(self) -> int:
        """The context window this model runs with (asked of /api/show once)."""
        if self._num_ctx is None:
            self._num_ctx = ollama_num_ctx(self.base_url, self.model, self._budget, self._max_tokens)
        return self._num_ctx

    def window(self) -> int:
        """The context window requests run with (num_ctx)."""
        return self.num_ctx

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of POST /api/chat."""
        options: dict[str, Any] = {"num_ctx": self.num_ctx, "num_predict": request.max_tokens}
        if request.stop and "stop" not in request.omit:
            options["stop"] = list(request.stop)
        if request.temperature is not None and "temperature" not in request.omit:
            options["temperature"] = request.temperature
        messages = [ollama_message(m) for m in request.messages]
        return {"model": self.model, "messages": messages, "stream": False, "options": options}

    def complete(self, request: ChatRequest) -> Completion:
        """One native chat call; failures become typed LLMErrors."""
        body = self.request_body(request)
        warn_if_too_long(self.spec, request.messages, request.max_tokens, self.num_ctx)
        try:
            response = self._client.post("/api/chat", json=body, timeout=request.timeout or self._client.timeout)
        except transport_errors() as exc:
            raise TransientError(f"{self.spec}: {type(exc).__name__}: {short(exc)}", model=self.spec,
                                 timed_out=isinstance(exc, self._httpx.TimeoutException)) from exc
        if response.status_code >= 400:
            raise classify(_info(response), self._ctx)
        try:
            data = response.json()
        except ValueError as exc:
            raise TransientError(f"{self.spec}: the reply was not JSON: {short(response.text, 300)}",
                                 model=self.spec, unusable=described(response.text)) from exc
        return self._parse(data)

    def _parse(self, data: Any) -> Completion:
        if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
            raise TransientError(f"{self.spec}: unexpected response body: {short(data, 300)}", model=self.spec,
                                 unusable=described(data))
        usage = Completion(text="", prompt_tokens=int(data.get("prompt_eval_count") or 0),
                           completion_tokens=int(data.get("eval_count") or 0), model=self.spec)
        finish = _FINISH.get(str(data.get("done_reason")), data.get("done_reason") or "stop")
        text = str(data["message"].get("content") or "")
        if not text.strip():
            raise billed_empty(f"{self.spec}: {empty_reason(finish, usage.completion_tokens)}", usage, finish)
        return Completion(text=text, finish_reason=finish, prompt_tokens=usage.prompt_tokens,
                          completion_tokens=usage.completion_tokens, model=str(data.get("model") or self.model))


def _info(response: Any) -> ErrorInfo:
    try:
        body = response.json()
    except ValueError:
        body = response.text
    message = body.get("error") if isinstance(body, dict) else body
    return ErrorInfo(status=response.status_code, message=str(message or response.reason_phrase),
                     headers=response.headers, body=body)
