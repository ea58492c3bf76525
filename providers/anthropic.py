"""Anthropic Messages API adapter, through the `anthropic` SDK."""

from __future__ import annotations

from typing import Any

from llm import Completion, EmptyCompletionError, Message
from providers.common import (
    ChatRequest,
    ErrorContext,
    ErrorInfo,
    TransientError,
    call_stainless_sdk,
    empty_reason,
    sdk_missing,
    short,
    split_system,
)

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
           "model_context_window_exceeded": "length"}


class AnthropicBackend:
    """A Claude model: top-level `system`, alternating user/assistant turns, `stop_sequences`."""

    def __init__(self, spec: str, model: str, *, api_key: str, base_url: str | None, timeout: float) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise sdk_missing("anthropic", exc) from exc
        self.spec = spec
        self.model = model
        self._anthropic = anthropic
        # The facade retries; the SDK's own retries would multiply the waits.
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url or "https://api.anthropic.com",
                                           timeout=timeout, max_retries=0)
        self._ctx = ErrorContext(spec, model, "Anthropic", key_env="ANTHROPIC_API_KEY",
                                 server=base_url)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments for messages.create.

        The installed SDK (2.x) has no `temperature` parameter, so none is sent.
        """
        system, turns = split_system(request.messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens,
                                "messages": _wire_turns(turns)}
        if system:
            body["system"] = system
        if request.stop and "stop" not in request.omit:
            body["stop_sequences"] = list(request.stop)
        return body

    def complete(self, request: ChatRequest) -> Completion:
        """One Messages call; failures become typed LLMErrors."""
        body = self.request_body(request)
        response = call_stainless_sdk(self._anthropic, self._anthropic.AnthropicError,
                                      lambda: self._client.messages.create(**body), _info, self._ctx)
        return self._parse(response)

    def _parse(self, response: Any) -> Completion:
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise TransientError(f"{self.spec}: unexpected response body: {short(response, 300)}",
                                 model=self.spec)
        stop_reason = getattr(response, "stop_reason", None)
        if stop_reason == "refusal":
            raise EmptyCompletionError(f"{self.spec} refused to answer (stop_reason refusal)",
                                       model=self.spec)
        finish = _FINISH.get(str(stop_reason), stop_reason)
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        if not text.strip():
            raise EmptyCompletionError(f"{self.spec}: {empty_reason(finish)}", model=self.spec)
        usage = getattr(response, "usage", None)
        return Completion(text=text, finish_reason=finish,
                          prompt_tokens=_prompt_tokens(usage),
                          completion_tokens=getattr(usage, "output_tokens", 0) or 0,
                          model=getattr(response, "model", None) or self.model)


def _prompt_tokens(usage: Any) -> int:
    # input_tokens leaves out cached prompt parts; the memory's calibration needs the whole prompt.
    return sum(getattr(usage, name, 0) or 0
               for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _wire_turns(turns: list[Message]) -> list[dict[str, str]]:
    # The API rejects empty text blocks and a final assistant turn ending in whitespace.
    out = [{"role": m["role"], "content": m["content"] or "(empty)"} for m in turns]
    if out and out[-1]["role"] == "assistant":
        out[-1]["content"] = out[-1]["content"].rstrip() or "(empty)"
    return out


def _info(exc: Any) -> ErrorInfo:
    body = exc.body
    message = getattr(exc, "api_message", None)
    if not message and isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
    if not message:
        message = body if isinstance(body, str) and body else exc.message
    return ErrorInfo(status=exc.status_code, message=str(message), headers=exc.response.headers, body=body,
                     code=getattr(exc, "error_code", None))
