"""What every provider adapter shares: the Backend protocol, typed errors, error classification."""

from __future__ import annotations

import email.utils
import importlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from core.chat import Completion, Message
from core.errors import ConfigError, ContextWindowError, EmptyCompletionError, LLMError, LLMFatalError
from core.text import truncate_middle
from providers.context_window import server_kind
from providers.errors import (
    REGIONS_PAGE,
    AccountBlockedError,
    billing_hint,
    blocked_reason,
    spent_reason,
    wait_in_message,
)
from providers.local_servers import context_overflow, overflow_message

# Parameters a model may reject as unsupported; the facade drops them for that model from then on.
# ("max_tokens" is not dropped but replaced by "max_completion_tokens" on OpenAI-style APIs.)
DROPPABLE_PARAMS = ("stop", "temperature", "max_tokens")
RETRY_STATUSES = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class ChatRequest:
    """One call as an adapter receives it; `omit` names parameters this model is known to reject."""

    messages: list[Message]
    max_tokens: int
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    omit: frozenset[str] = frozenset()
    timeout: float | None = None  # seconds for this request when less than the client's (task deadline)


class Backend(Protocol):
    """One provider's model behind its official SDK; raises LLMError subclasses, never retries."""

    spec: str
    model: str

    def complete(self, request: ChatRequest) -> Completion:
        """Send one request and return the reply (cost and latency are the facade's job)."""
        ...


class TransientError(LLMError):
    """A failure worth retrying (rate limit, overload, timeout, broken body); may say how long to wait."""

    def __init__(self, message: str, *, model: str = "", status: int | None = None,
                 retry_after: float | None = None, headers: Mapping[str, str] | None = None,
                 timed_out: bool = False, unusable: str = "") -> None:
        super().__init__(message, model=model, status=status)
        self.unusable = unusable  # what the server answered that no API answers (an HTML page, HTTP 500), or ""
        self.retry_after = retry_after
        self.headers = headers  # the response's headers, if any (providers/ratelimit.py learns from them)
        self.timed_out = timed_out  # no answer within the request timeout (a local server is not asked again alike)


class UnsupportedParameterError(LLMError):
    """The model rejected a request parameter (e.g. `stop` on reasoning models) with a 400."""

    def __init__(self, message: str, *, model: str = "", status: int | None = 400, param: str) -> None:
        super().__init__(message, model=model, status=status)
        self.param = param


class QuotaExhaustedError(LLMFatalError):
    """The account has no quota or credit left; retrying cannot help, another provider can."""


@dataclass(frozen=True)
class ErrorContext:
    """Who made the failing call, so error messages can say what to fix."""

    spec: str
    model: str
    provider: str
    key_env: str | None = None
    server: str | None = None
    pull_hint: str | None = None
    local: bool = False  # a server the user runs: a prompt over its window is named with the fix (local_servers.py)
    what: str = "model"  # what the model name is to the provider (Azure: a deployment)


@dataclass(frozen=True)
class ErrorInfo:
    """An SDK error reduced to what classification needs; status None means no HTTP answer."""

    status: int | None
    message: str
    headers: Mapping[str, str] | None = None
    body: Any = None
    param: str | None = None
    code: str | None = None


def request_options(request: ChatRequest) -> dict[str, Any]:
    """Per-request SDK options: a shorter timeout when the task's deadline is nearer than the client's."""
    return {} if request.timeout is None else {"timeout": request.timeout}


def sdk_missing(package: str, exc: ImportError) -> ConfigError:
    """The ConfigError for a provider SDK that is not installed, with the install command."""
    return ConfigError(f"the {package!r} package is needed for this model but cannot be imported ({exc});"
                       f" install it with: pip install {package}")


def transport_errors() -> tuple[type[BaseException], ...]:
    """httpx/httpx2 transport error classes (timeouts, refused connections), whichever are installed."""
    found: list[type[BaseException]] = []
    for module in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def short(text: object, limit: int = 600) -> str:
    """An error text cut to a readable length (proxies sometimes answer with whole HTML pages)."""
    return truncate_middle(str(text).strip(), limit)


def described(body: object) -> str:
    """A body no API answers, as a line naming it: `an HTML page titled "Welcome to nginx!"`, or its start."""
    text = body if isinstance(body, str) else str(body)
    if re.search(r"<(?:!doctype html|html|head|body)\b", text, re.IGNORECASE):
        title = re.search(r"<title[^>]*>([^<]{1,120})", text, re.IGNORECASE)
        return "an HTML page" + (f' titled "{" ".join(title.group(1).split())}"' if title else "")
    return short(" ".join(text.split()), 120) or "an empty body"


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from retry-after-ms or Retry-After (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            return max(float(value) / scale, 0.0)
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError):
            continue
        return max(when - (time.time() if now is None else now), 0.0)
    return None


def google_retry_delay(body: Any) -> float | None:
    """The retryDelay ("7s", "1.5s") of a google.rpc.RetryInfo in a Google API error body, if any."""
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for item in details if isinstance(details, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", str(delay)) if delay is not None else None
        if match:
            return float(match.group(1))
    return None


def unsupported_param(message: str, param: str | None = None) -> str | None:
    """Which droppable parameter a 400 message says the model does not support, if any."""
    text = message.lower()
    # Anthropic's newer models: "`temperature` is deprecated for this model." (a 400 on every call)
    if not any(p in text for p in ("unsupported", "not supported", "does not support", "not support",
                                   "deprecated for this model")):
        return None
    if param in DROPPABLE_PARAMS:
        return param
    for name in DROPPABLE_PARAMS:
        if re.search(rf"['\"`]{name}['\"`]", text):
            return name
    return None


def classify(info: ErrorInfo, ctx: ErrorContext) -> LLMError:
    """Turn an HTTP failure into the typed error the facade acts on (retry, drop a param, stop, fail)."""
    status, msg = info.status, short(info.message or "no error message").rstrip(". ")
    if status is None:
        return TransientError(f"{ctx.spec}: {msg}", model=ctx.spec)
    param = unsupported_param(msg, info.param) if status in (400, 422) else None
    if param:
        return UnsupportedParameterError(f"{ctx.spec} does not support {param!r}: {msg}",
                                         model=ctx.spec, status=status, param=param)
    overflow = context_overflow(info.message, info.body, info.code) if status in (400, 413) and ctx.local else None
    if overflow is not None:  # a server the user runs: its window, the prompt's size, the fix
        window, prompt = overflow
        return ContextWindowError(overflow_message(ctx.spec, server_kind(ctx.server), window, prompt),
                                  model=ctx.spec, status=status, window=window, prompt_tokens=prompt)
    if status in (401, 403) or (status == 400 and _bad_key(info)):
        return LLMFatalError(_auth_message(ctx, status, msg), model=ctx.spec, status=status)
    if status == 404 or (status == 400 and _model_missing(msg, ctx.model)):
        return LLMFatalError(_not_found_message(ctx, status, msg), model=ctx.spec, status=status)
    account_error = account_level_error(info, ctx, msg)
    if account_error is not None:
        return account_error
    if status in RETRY_STATUSES or status >= 500:
        wait = parse_retry_after(info.headers)
        if wait is None:
            wait = google_retry_delay(info.body)
        if wait is None:
            wait = wait_in_message(info.message)  # OpenAI puts its wait in the text: "try again in 1m2.6s"
        return TransientError(f"{ctx.spec}: HTTP {status}: {msg}", model=ctx.spec, status=status,
                              retry_after=wait, headers=info.headers,
                              unusable=_broken(status, info))
    return LLMError(f"{ctx.spec} rejected the request ({status}): {msg}", model=ctx.spec, status=status)


def _broken(status: int, info: ErrorInfo) -> str:
    """`HTTP 500 (what it said)` for a server error that is no passing overload (503, 529: come back later), else ""."""
    if status < 500 or status in (503, 529):
        return ""
    return f"HTTP {status} ({described(info.body if isinstance(info.body, str) and info.body else info.message)})"


def _bad_key(info: ErrorInfo) -> bool:
    # Gemini answers an invalid key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    text = f"{info.message} {info.body}"
    return "API_KEY_INVALID" in text or "api key not valid" in text.lower()


def _model_missing(msg: str, model: str) -> bool:
    text = msg.lower()
    return "model" in text and any(p in text for p in ("not found", "does not exist", "unknown model"))


def account_level_error(info: ErrorInfo, ctx: ErrorContext, msg: str) -> LLMError | None:
    """A QuotaExhaustedError or AccountBlockedError when every request of this account would fail alike."""
    spent = spent_reason(info.status, info.message, info.code, info.body)
    if spent:
        return QuotaExhaustedError(f"{ctx.spec}: the {ctx.provider} account's quota or spend limit is exhausted"
                                   f" ({spent}; HTTP {info.status}): {msg}. {billing_hint(ctx.provider)},"
                                   " or use another --model / --fallback-model.",
                                   model=ctx.spec, status=info.status)
    blocked = blocked_reason(info.status, info.message)
    if blocked:
        return AccountBlockedError(f"{ctx.spec}: {blocked} (HTTP {info.status}): {msg}. See {REGIONS_PAGE},"
                                   " or use another --model / --fallback-model.",
                                   model=ctx.spec, status=info.status)
    return None


def _auth_message(ctx: ErrorContext, status: int, msg: str) -> str:
    what = "rejected" if status != 403 else "refused access"
    if ctx.key_env:  # a custom base URL's server is not the provider: name the server that said no
        by = f"the server at {ctx.server}" if ctx.server else ctx.provider
        return (f"{ctx.key_env} was {what} ({status}) by {by}: {msg}. "
                f"Check {ctx.key_env} in your environment or .env file.")
    return (f"the server at {ctx.server} {what} the request ({status}): {msg}. "
            "If it needs an API key, set OPENAI_API_KEY.")


def _not_found_message(ctx: ErrorContext, status: int, msg: str) -> str:
    text = f"{ctx.what} {ctx.model} not found ({status}) at {ctx.server or ctx.provider}: {msg}."
    if ctx.pull_hint:
        return f"{text} {ctx.pull_hint}"
    if ctx.server and "model" not in msg.lower():
        return f"{text} Check the base URL (OpenAI-compatible servers usually end in /v1) and the model name."
    return f"{text} Check the model name in --model / AGENT_MODEL (format provider:model)."


def call_stainless_sdk(sdk: Any, base_error: type[Exception], create: Callable[[], Any],
                       info: Callable[[Any], ErrorInfo], ctx: ErrorContext) -> Any:
    """Call an OpenAI- or Anthropic-style SDK (same exception classes), turning failures into typed LLMErrors."""
    try:
        return create()
    except sdk.APIStatusError as exc:
        raise classify(info(exc), ctx) from exc
    except sdk.APITimeoutError as exc:
        raise TransientError(f"{ctx.spec}: no answer within the request timeout ({short(exc)})", model=ctx.spec,
                             timed_out=True) from exc
    except sdk.APIConnectionError as exc:
        raise TransientError(f"{ctx.spec}: {type(exc).__name__}: {short(exc)}", model=ctx.spec) from exc
    except (sdk.APIResponseValidationError, ValueError) as exc:  # ValueError: a body that is not valid JSON
        raise TransientError(f"{ctx.spec}: {type(exc).__name__}: {short(exc)}", model=ctx.spec,
                             unusable="a body that is not JSON") from exc
    except base_error as exc:
        raise LLMError(f"{ctx.spec}: {short(exc)}", model=ctx.spec) from exc


def split_system(messages: list[Message]) -> tuple[str, list[Message]]:
    """Leading system messages become the system prompt; later ones become user turns; same roles merge."""
    system: list[str] = []
    rest: list[Message] = []
    for m in messages:
        if m["role"] == "system" and not rest:
            system.append(m["content"])
        else:
            turn = m.copy()  # keeps attached images
            turn["role"] = "user" if m["role"] == "system" else m["role"]
            rest.append(turn)
    joined = "\n\n".join(part for part in system if part)
    if not rest:
        # Chat APIs need at least one user turn: a system-only prompt is sent as the user's message.
        return "", [{"role": "user", "content": joined}]
    if rest[0]["role"] != "user":
        rest.insert(0, {"role": "user", "content": "(conversation so far)"})
    return joined, merge_consecutive(rest)


def merge_consecutive(messages: list[Message]) -> list[Message]:
    """Join consecutive messages of the same role (APIs that need user/assistant alternation)."""
    out: list[Message] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            merged = out[-1].copy()
            merged["content"] = f"{out[-1]['content']}\n\n{m['content']}"
            if m.get("images"):
                merged["images"] = [*out[-1].get("images", []), *m["images"]]
            if m.get("files"):
                merged["files"] = [*out[-1].get("files", []), *m["files"]]
            out[-1] = merged
        else:
            out.append(m.copy())
    return out


def billed_empty(message: str, usage: Completion, finish_reason: str | None = None) -> EmptyCompletionError:
    """An EmptyCompletionError that still carries the tokens the provider billed for the empty reply."""
    error = EmptyCompletionError(message, model=usage.model)
    error.finish_reason = finish_reason
    if usage.prompt_tokens or usage.completion_tokens:
        error.billed = (usage,)
    return error


SILENT_MODEL = ("a base model that was not trained to chat, or a chat template the server applies wrongly to "
                "it (llama-cpp-python: --chat_format; llama-server: --jinja); try an instruction-tuned model")


def empty_reason(finish_reason: str | None, completion_tokens: int | None = None) -> str:
    """Why a completion came back empty, in words a user can act on."""
    if finish_reason == "length":
        return ("the model used its whole output budget without visible text (reasoning models count"
                " thinking tokens); raise --max-tokens or AGENT_MAX_TOKENS")
    if finish_reason == "stop" and completion_tokens == 0:  # ended at once: nothing was thought, nothing written
        return f"the model ended its reply at once without any text (finish reason stop): {SILENT_MODEL}"
    return f"the model returned no text (finish reason {finish_reason or 'unknown'})"
