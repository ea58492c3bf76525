"""The model interface the agent calls: messages in, a Completion out, typed errors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

from config import ConfigError, Settings

if TYPE_CHECKING:
    from providers.common import Backend, ChatRequest


class Message(TypedDict):
    """One chat message; adapters map these onto each provider's API."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    """One model reply with its usage; cost is None when the model's price is unknown."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    latency: float = 0.0
    cost: float | None = None


class ChatModel(Protocol):
    """Anything that can complete a list of messages (the facade, an adapter, a test fake)."""

    def complete(
        self,
        messages: list[Message],
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """Return the model's reply to the messages."""
        ...


class LLMError(Exception):
    """A model call failed after retries: the task fails, the batch goes on."""

    def __init__(self, message: str, *, model: str = "", status: int | None = None,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.model = model
        self.status = status
        self.attempts = attempts


class LLMFatalError(LLMError):
    """A failure every task would hit (rejected key, unknown model): the run stops."""


class EmptyCompletionError(LLMError):
    """The model returned nothing usable (empty text, safety block, refusal)."""


# ---------------------------------------------------------------------------------------------------
# The facade: provider:model specs, retries, the unsupported-parameter memory, fallback models, cost.
# Provider SDKs, tenacity and the adapters are imported inside functions (CLI startup time matters).

DEFAULT_MODELS = (
    ("anthropic", "claude-sonnet-5-5"),
    ("openai", "gpt-5.4-mini"),
    ("gemini", "gemini-3.8-flash"),
)
PROBE_TIMEOUT = 1.0
_GUESSES = (("claude", "anthropic"), ("gemini", "gemini"), ("gpt", "openai"), ("o1", "openai"),
            ("o3", "openai"), ("o4", "openai"), ("llama", "ollama"), ("qwen", "ollama"),
            ("mistral", "ollama"))


class RejectedParams:
    """Thread-safe memory of the request parameters each model rejected (shared by all facades)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[str, set[str]] = {}

    def get(self, spec: str) -> frozenset[str]:
        """The parameters never to send to this model."""
        with self._lock:
            return frozenset(self._by_model.get(spec, ()))

    def add(self, spec: str, param: str) -> None:
        """Remember that this model rejects this parameter."""
        with self._lock:
            self._by_model.setdefault(spec, set()).add(param)


_REJECTED = RejectedParams()


def parse_spec(spec: str) -> tuple[str, str]:
    """Split "provider:model" (the model may contain ':'); ConfigError for an unknown provider."""
    from providers import PROVIDERS

    provider, sep, model = spec.strip().partition(":")
    if sep and provider.lower() in PROVIDERS and model.strip():
        return provider.lower(), model.strip()
    guess = next((p for prefix, p in _GUESSES if spec.strip().lower().startswith(prefix)), None)
    hint = f" (did you mean {guess}:{spec.strip()}?)" if guess and not sep else ""
    raise ConfigError(f"model {spec!r} has no known provider prefix{hint}: write provider:model,"
                      f" with provider one of {', '.join(PROVIDERS)} (e.g. openai:gpt-5.4-mini)", "model")


def probe_models(base_url: str, timeout: float = PROBE_TIMEOUT) -> list[str]:
    """The chat models an OpenAI-compatible server lists at GET {base}/models; [] if it does not answer."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError):
        return []
    items = data.get("data") if isinstance(data, dict) else None
    ids = [str(item["id"]) for item in items or [] if isinstance(item, dict) and item.get("id")]
    return [i for i in ids if "embed" not in i.lower()]  # an embedding model cannot chat


def default_model(settings: Settings, probe: Callable[[str, float], list[str]] = probe_models) -> str:
    """settings.model, else the first provider with a key, else a local server's first model."""
    if settings.model:
        return settings.model
    for provider, model in DEFAULT_MODELS:
        if settings.api_key_for(provider):
            return f"{provider}:{model}"
    if settings.openai_base_url:
        served = probe(settings.openai_base_url, PROBE_TIMEOUT)
        if served:
            return f"openai:{served[0]}"
    served = probe(settings.ollama_base_url, PROBE_TIMEOUT)
    if served:
        return f"ollama:{served[0]}"
    raise ConfigError(
        "no model is configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY (in the environment"
        " or a .env file), or run a local model with `ollama serve` and pass `--model ollama:llama3.1`"
        f" (no Ollama server answered at {settings.ollama_base_url}).", "model")


def build_llm(settings: Settings, **kwargs: Any) -> LLMInterface:
    """The facade for settings.model (or the default model) with settings.fallback_models behind it."""
    primary = default_model(settings)
    fallbacks = tuple(spec for spec in dict.fromkeys(settings.fallback_models) if spec != primary)
    return LLMInterface.from_spec(primary, settings, fallbacks=fallbacks, **kwargs)


def context_window(model_spec: str, prices_file: Path | None = None) -> int | None:
    """The model's context window in tokens from the price table, or None when unknown."""
    from pricing import context_window as lookup

    return lookup(model_spec, prices_file)


class LLMInterface:
    """What the agent calls: one complete() with retries, fallback models, usage and cost."""

    def __init__(self, backends: Sequence[Backend], settings: Settings, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 rejected: RejectedParams | None = None) -> None:
        from pricing import load_prices

        if not backends:
            raise ValueError("LLMInterface needs at least one backend")
        self.backends = list(backends)
        self.settings = settings
        self._sleep = sleep
        self._clock = clock
        self._rejected = _REJECTED if rejected is None else rejected
        self._prices = load_prices(settings.prices_file)

    @classmethod
    def from_spec(cls, spec: str, settings: Settings, *, fallbacks: Sequence[str] = (),
                  **kwargs: Any) -> LLMInterface:
        """Build the adapters for "provider:model" and its fallbacks; ConfigError on a bad spec or key."""
        from providers import make_backend

        backends = [make_backend(*parse_spec(s), settings) for s in (spec, *fallbacks)]
        return cls(backends, settings, **kwargs)

    @property
    def model(self) -> str:
        """The primary model's spec."""
        return self.backends[0].spec

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The first model's reply, or the next model's when one fails for a non-auth reason."""
        from providers.common import ChatRequest, QuotaExhaustedError

        request = ChatRequest(messages=list(messages), max_tokens=max_tokens or self.settings.max_tokens,
                              temperature=self.settings.temperature if temperature is None else temperature,
                              stop=tuple(stop or ()))
        start = self._clock()
        failures: list[LLMError] = []
        for backend in self.backends:
            try:
                reply = self._with_retries(backend, request)
            except QuotaExhaustedError as exc:
                failures.append(exc)  # another provider's quota may be fine
                continue
            except LLMFatalError:
                raise
            except LLMError as exc:
                failures.append(exc)
                continue
            return self._finish(backend, reply, start)
        raise _all_failed(failures)

    def _finish(self, backend: Backend, reply: Completion, start: float) -> Completion:
        from pricing import cost_usd

        cost = cost_usd(backend.model, reply.prompt_tokens, reply.completion_tokens, self._prices)
        if cost is None and reply.model:
            cost = cost_usd(reply.model, reply.prompt_tokens, reply.completion_tokens, self._prices)
        return replace(reply, model=backend.spec, latency=self._clock() - start, cost=cost)

    def _with_retries(self, backend: Backend, request: ChatRequest) -> Completion:
        import tenacity

        from providers.common import TransientError

        s = self.settings
        deadline = self._clock() + s.retry_deadline
        backoff = tenacity.wait_exponential_jitter(initial=1.0, max=s.max_retry_wait, jitter=1.0)
        planned: dict[int, float] = {}
        attempts = 0

        def wait_for(state: tenacity.RetryCallState) -> float:
            # Computed once per attempt, whichever of stop/wait tenacity asks first.
            if state.attempt_number not in planned:
                exc = state.outcome.exception() if state.outcome else None
                hinted = getattr(exc, "retry_after", None)
                planned[state.attempt_number] = min(backoff(state) if hinted is None else hinted,
                                                    s.max_retry_wait)
            return planned[state.attempt_number]

        def stop(state: tenacity.RetryCallState) -> bool:
            return state.attempt_number > s.max_retries or self._clock() + wait_for(state) > deadline

        def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            return self._attempt(backend, request)

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(TransientError), wait=wait_for,
                                     stop=stop, sleep=self._sleep, reraise=True)
        try:
            return retrying(attempt)
        except TransientError as exc:
            raise LLMError(f"{backend.spec} failed after {attempts} attempt(s): {exc}", model=backend.spec,
                           status=exc.status, attempts=attempts) from exc
        except LLMError as exc:
            exc.attempts = attempts
            raise

    def _attempt(self, backend: Backend, request: ChatRequest) -> Completion:
        from providers.common import UnsupportedParameterError

        while True:
            omit = self._rejected.get(backend.spec)
            try:
                return backend.complete(replace(request, omit=omit))
            except UnsupportedParameterError as exc:
                if exc.param in omit:
                    raise LLMError(str(exc), model=backend.spec, status=exc.status) from exc
                # Same call again without the parameter, and never send it to this model again.
                self._rejected.add(backend.spec, exc.param)


def _all_failed(failures: list[LLMError]) -> LLMError:
    last = failures[-1]
    if len(failures) == 1:
        return last
    kind: type[LLMError] = LLMError
    if isinstance(last, LLMFatalError):
        kind = LLMFatalError
    elif isinstance(last, EmptyCompletionError):
        kind = EmptyCompletionError
    detail = "; ".join(str(f) for f in failures)
    error = kind(f"all {len(failures)} models failed: {detail}", model=last.model, status=last.status,
                 attempts=sum(f.attempts for f in failures))
    error.__cause__ = last
    return error
