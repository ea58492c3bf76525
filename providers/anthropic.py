"""Anthropic Messages API adapter, through the `anthropic` SDK."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.chat import Completion, Message
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
    split_system,
)
from providers.images import anthropic_with_images
from providers.rate_headers import parsed

EPHEMERAL = {"type": "ephemeral"}  # the default 5-minute prompt cache
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
        """The keyword arguments for messages.create, with prompt-cache breakpoints.

        The installed SDK (2.x) has no `temperature` argument, but the API takes it: it goes in extra_body.
        """
        system, turns = split_system(request.messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens,
                                "messages": anthropic_with_images(cache_breakpoints(_wire_turns(turns)), turns)}
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
        if request.stop and "stop" not in request.omit:
            body["stop_sequences"] = list(request.stop)
        if request.temperature is not None and "temperature" not in request.omit:
            body["extra_body"] = {"temperature": request.temperature}
        return body

    def complete(self, request: ChatRequest) -> Completion:
        """One Messages call; failures become typed LLMErrors."""
        body = self.request_body(request)
        create = self._client.messages.with_raw_response.create  # the headers carry the rate limits
        response, headers = call_stainless_sdk(self._anthropic, self._anthropic.AnthropicError,
                                               lambda: parsed(create(**body, **request_options(request))),
                                               _info, self._ctx)
        return replace(self._parse(response), rate_headers=headers)

    def _parse(self, response: Any) -> Completion:
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise TransientError(f"{self.spec}: unexpected response body: {short(response, 300)}",
                                 model=self.spec, unusable=described(response))
        usage = _usage(getattr(response, "usage", None), self.spec)
        stop_reason = getattr(response, "stop_reason", None)
        if stop_reason == "refusal":
            raise billed_empty(f"{self.spec} refused to answer (stop_reason refusal)", usage)
        finish = _FINISH.get(str(stop_reason), stop_reason)
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        if not text.strip():
            raise billed_empty(f"{self.spec}: {empty_reason(finish)}", usage)
        return replace(usage, text=text, finish_reason=finish,
                       model=getattr(response, "model", None) or self.model)


def _usage(usage: Any, spec: str) -> Completion:
    # input_tokens leaves out cached prompt parts; the memory's calibration needs the whole prompt.
    read = getattr(usage, "cache_read_input_tokens", 0) or 0
    written = getattr(usage, "cache_creation_input_tokens", 0) or 0
    return Completion(text="", prompt_tokens=(getattr(usage, "input_tokens", 0) or 0) + read + written,
                      completion_tokens=getattr(usage, "output_tokens", 0) or 0, cached_tokens=read,
                      cache_write_tokens=written, model=spec)


def cache_breakpoints(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark the last two turns as prompt-cache breakpoints (with the system prompt: 3 of the 4 allowed).

    A ReAct loop resends the same growing prefix each step: the breakpoint on the newest turn writes the
    cache for the whole prompt, and the next step reads it back at a tenth of the input price. The one
    before it still hits when the newest turn is later changed (a note appended to the last message).
    """
    out = [dict(t) for t in turns]
    for turn in out[-2:]:
        turn["content"] = [{"type": "text", "text": turn["content"], "cache_control": EPHEMERAL}]
    return out


def _wire_turns(turns: list[Message]) -> list[dict[str, Any]]:
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
