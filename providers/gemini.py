"""Gemini adapter through the `google-genai` SDK (not the retired google-generativeai)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.chat import Completion
from providers.common import (
    ChatRequest,
    ErrorContext,
    ErrorInfo,
    TransientError,
    billed_empty,
    classify,
    empty_reason,
    sdk_missing,
    short,
    split_system,
    transport_errors,
)
from providers.images import gemini_parts

MAX_STOP_SEQUENCES = 5  # the API rejects more
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
            "MODEL_ARMOR", "LANGUAGE"}
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def _value(enum_or_str: Any) -> str | None:
    if enum_or_str is None:
        return None
    return str(getattr(enum_or_str, "value", enum_or_str))


class GeminiBackend:
    """A Gemini model: `system_instruction`, `user`/`model` turns, stop sequences in the config."""

    def __init__(self, spec: str, model: str, *, api_key: str, base_url: str | None, timeout: float) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError as exc:
            raise sdk_missing("google-genai", exc) from exc
        self.spec = spec
        self.model = model
        self._errors = errors
        self._types = types
        # HttpOptions.timeout is in milliseconds; attempts=1: the facade retries, the SDK must not.
        options = types.HttpOptions(base_url=base_url, timeout=max(1, int(timeout * 1000)),
                                    retry_options=types.HttpRetryOptions(attempts=1))
        self._client = genai.Client(vertexai=False, api_key=api_key, http_options=options)
        self._ctx = ErrorContext(spec, model, "Gemini", key_env="GEMINI_API_KEY", server=base_url)

    def request_args(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments for models.generate_content."""
        types = self._types
        system, turns = split_system(request.messages)
        contents = [types.Content(role="model" if m["role"] == "assistant" else "user",
                                  parts=gemini_parts(m, types)) for m in turns]
        stop = list(request.stop[:MAX_STOP_SEQUENCES]) if "stop" not in request.omit else []
        temperature = None if "temperature" in request.omit else request.temperature
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=request.max_tokens,
            stop_sequences=stop or None,
            temperature=temperature,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            # A shorter timeout (ms) when the task's deadline is nearer; merged into the client's options.
            http_options=None if request.timeout is None else types.HttpOptions(
                timeout=max(1, int(request.timeout * 1000))),
        )
        return {"model": self.model, "contents": contents, "config": config}

    def complete(self, request: ChatRequest) -> Completion:
        """One generateContent call; failures become typed LLMErrors."""
        errors = self._errors
        broken: tuple[type[BaseException], ...] = (*transport_errors(), ValueError)
        try:
            response = self._client.models.generate_content(**self.request_args(request))
        except errors.APIError as exc:
            raise classify(_info(exc), self._ctx) from exc
        except broken as exc:
            # ValueError: a body that is not valid JSON (or not the expected shape).
            raise TransientError(f"{self.spec}: {type(exc).__name__}: {short(exc)}", model=self.spec) from exc
        return self._parse(response)

    def _parse(self, response: Any) -> Completion:
        usage = _usage(getattr(response, "usage_metadata", None), self.spec)
        feedback = getattr(response, "prompt_feedback", None)
        blocked = _value(getattr(feedback, "block_reason", None))
        if blocked:
            raise billed_empty(f"{self.spec}: the prompt was blocked ({blocked})", usage)
        candidates = getattr(response, "candidates", None) or []
        if not candidates:
            raise billed_empty(f"{self.spec}: the reply had no candidates", usage)
        candidate = candidates[0]
        raw_finish = _value(getattr(candidate, "finish_reason", None))
        if raw_finish in _BLOCKED:
            raise billed_empty(f"{self.spec}: the reply was blocked (finish reason {raw_finish})", usage)
        finish = _FINISH.get(str(raw_finish), raw_finish.lower() if raw_finish else None)
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
        if not text.strip():
            raise billed_empty(f"{self.spec}: {empty_reason(finish)}", usage)
        return replace(usage, text=text, finish_reason=finish,
                       model=getattr(response, "model_version", None) or self.model)


def _usage(usage: Any, spec: str) -> Completion:
    # Thinking tokens are billed as output, so they count as completion tokens; promptTokenCount
    # includes the implicitly cached part (cachedContentTokenCount).
    completion_tokens = ((getattr(usage, "candidates_token_count", 0) or 0)
                         + (getattr(usage, "thoughts_token_count", 0) or 0))
    return Completion(text="", prompt_tokens=getattr(usage, "prompt_token_count", 0) or 0,
                      completion_tokens=completion_tokens,
                      cached_tokens=getattr(usage, "cached_content_token_count", 0) or 0, model=spec)


def _info(exc: Any) -> ErrorInfo:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    status = exc.code if isinstance(exc.code, int) else None
    message = exc.message or str(exc)
    if exc.status:
        message = f"{exc.status}: {message}"
    return ErrorInfo(status=status, message=str(message), headers=headers, body=exc.details)
