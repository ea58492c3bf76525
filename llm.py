"""The model interface the agent calls: messages in, a Completion out, typed errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from config import Settings
from core import cancellation
from core.chat import PROVIDERS, Completion, Message, split_spec
from core.errors import (
    ConfigError,
    ContextWindowError,
    EmptyCompletionError,
    LLMError,
    LLMFatalError,
    TaskDeadlineExceeded,
)
from core.notices import tell
from core.secrets import SecretRedactor
from providers.breaker import ModelBreaker
from providers.common import Backend, ChatRequest, QuotaExhaustedError, TransientError, UnsupportedParameterError
from providers.context_window import dropped_prompt_warning, kept_default_max_tokens, local_window, reply_tokens
from providers.errors import AccountBlockedError
from providers.families import request_temperature
from providers.local_servers import list_models
from providers.pricing import context_window as lookup
from providers.pricing import cost_usd, priced_by_name_only, settings_prices
from providers.ratelimit import RateLimits
from providers.reachability import REFUSED_RETRY, Reachability, unreachable_reason
from providers.registry import make_backend

# The facade: provider:model specs, retries, the unsupported-parameter memory, fallback models, cost.
# Provider SDKs and tenacity are imported when first used (CLI start-up time matters).

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
    provider, model = split_spec(spec)
    if provider and model:
        return provider, model
    guess = next((p for prefix, p in _GUESSES if spec.strip().lower().startswith(prefix)), None)
    hint = f" (did you mean {guess}:{spec.strip()}?)" if guess and ":" not in spec else ""
    raise ConfigError(f"model {spec!r} has no known provider prefix{hint} and is no alias of a models file"
                      f" (AGENT_MODELS_FILE or ./models.toml): write provider:model, with provider one of"
                      f" {', '.join(PROVIDERS)} (e.g. openai:gpt-5.4-mini)", "model")


def backend_for(spec: str, settings: Settings) -> Backend:
    """The adapter for a model string: an alias of the models file, else provider:model."""
    alias = settings.alias(spec)
    if alias is not None:
        return make_backend(alias.provider, alias.model, settings, alias)
    left = next((file for name, file in settings.left_out if name.startswith(f"alias {spec.strip()} (")), None)
    if left is not None:
        raise ConfigError(f"model {spec.strip()!r} is an alias of {left}, left out because you have not trusted that "
                          "file (the alias sends requests and a key to a server the file chooses); read it, then "
                          "trust it (the warning above names the command)", "model")
    return make_backend(*parse_spec(spec), settings)


def default_model(settings: Settings,
                  probe: Callable[[str, float], tuple[list[str], str]] = list_models) -> str:
    """settings.model, else the first provider with a key, else a local server's first model; ConfigError naming
    why each server listed none (the one at OPENAI_BASE_URL first: it is the one the user set)."""
    if settings.model:
        return settings.model
    for provider, model in DEFAULT_MODELS:
        if settings.api_key_for(provider):
            return f"{provider}:{model}"
    named = ""
    if settings.openai_base_url:
        served, why = probe(settings.openai_base_url, PROBE_TIMEOUT)
        if served:
            return f"openai:{served[0]}"
        named = (f"the server at OPENAI_BASE_URL ({settings.openai_base_url}) {why}, so its model is not known: "
                 "name it with --model openai:MODEL (or AGENT_MODEL), which needs no listing. Or ")
    served, why = probe(settings.ollama_base_url, PROBE_TIMEOUT)
    if served:
        return f"ollama:{served[0]}"
    raise ConfigError(
        f"no model is configured: {named}set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY (in the environment"
        " or a .env file), or run a local model with `ollama serve` and pass `--model ollama:llama3.1`"
        f" (Ollama at {settings.ollama_base_url} {why}).", "model")


def with_default_model(settings: Settings) -> Settings:
    """The settings with the model a run uses named: --model, or the one default_model() chooses, asked for once
    (a local server's GET /models), so that the run's checks, tools and tasks do not each ask again. Unchanged when
    none can be chosen: building the model says why, after the checks that come first."""
    if settings.model:
        return settings
    try:
        return replace(settings, model=default_model(settings))
    except ConfigError:
        return settings


def build_llm(settings: Settings, **kwargs: Any) -> LLMInterface:
    """The facade for settings.model (or the default model) with settings.fallback_models behind it."""
    primary = default_model(settings)
    fallbacks = tuple(spec for spec in dict.fromkeys(settings.fallback_models) if spec != primary)
    return LLMInterface.from_spec(primary, settings, fallbacks=fallbacks, **kwargs)


def context_window(model_spec: str, prices_file: Path | None = None, settings: Settings | None = None) -> int | None:
    """The model's context window in tokens from the price table (with settings: the run's, its models file's
    aliases included), or None when unknown."""
    return lookup(model_spec, prices_file, settings)


def local_context_window(model_spec: str, settings: Settings) -> int | None:
    """The window a local server runs the model with (the num_ctx sent to Ollama, vLLM's max_model_len,
    llama.cpp's n_ctx), or None for hosted models and servers that do not say (the cache records it:
    cache/probes.py)."""
    return local_window(model_spec, settings)


class LLMInterface:
    """What the agent calls: one complete() with retries, fallback models, usage and cost."""

    def __init__(self, backends: Sequence[Backend], settings: Settings, *,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 rejected: RejectedParams | None = None, limits: RateLimits | None = None) -> None:
        if not backends:
            raise ValueError("LLMInterface needs at least one backend")
        # The run's shared rate limits (--rpm, --tpm, the providers' headers, 429 pauses) around each request.
        self.backends = [limits.wrap(b) for b in backends] if limits is not None else list(backends)
        self.settings = settings
        self._sleep = sleep
        self._clock = clock
        self._rejected = _REJECTED if rejected is None else rejected
        self._reach = Reachability(clock=clock)
        self._breaker = ModelBreaker()  # per run: exhausted or persistently failing models are skipped
        self._prices = settings_prices(settings)
        self._warned: set[str] = set()  # models whose server was seen dropping part of the prompt
        self._redact = SecretRedactor.of(settings)  # a provider's error that echoes a key never shows it

    @classmethod
    def from_spec(cls, spec: str, settings: Settings, *, fallbacks: Sequence[str] = (),
                  **kwargs: Any) -> LLMInterface:
        """Build the adapters for "provider:model" and its fallbacks; ConfigError on a bad spec or key."""
        backends = [backend_for(s, settings) for s in (spec, *fallbacks)]
        return cls(backends, settings, **kwargs)

    @property
    def model(self) -> str:
        """The primary model's spec."""
        return self.backends[0].spec

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The first model's reply, or the next model's when one fails for a non-auth reason."""
        cancellation.check()  # stopping, or the task's time is up: no new call
        request = ChatRequest(messages=list(messages), max_tokens=max_tokens or self.settings.max_tokens,
                              stop=tuple(stop or ()))
        start = self._clock()
        failures: list[LLMError] = []
        for backend in self.backends:
            skipped = self._skipped(backend)
            if skipped is not None:
                failures.append(skipped)
                continue
            try:
                tuned = replace(request, temperature=request_temperature(backend.model, self.settings.temperature,
                                                                          temperature))
                reply = self._with_retries(backend, self._sized(backend, tuned))
            except (QuotaExhaustedError, AccountBlockedError) as exc:
                self._breaker.trip(backend.spec, exc)  # no more calls to it this run; another provider may work
                failures.append(exc)
                continue
            except LLMFatalError:
                raise
            except LLMError as exc:
                self._reach.check_call(exc, backend.spec)  # many calls in a row that cannot connect: stop
                if not isinstance(exc, EmptyCompletionError):
                    self._breaker.failed(backend.spec)
                failures.append(exc)
                continue
            self._reach.succeeded()
            self._breaker.succeeded(backend.spec)
            self._check_count(backend, messages, reply)
            return self._finish(backend, reply, start, failures)
        self._reach.check_first_call(failures, self.model, getattr(self.backends[0], "base_url", None))
        raise self._priced_failure(_all_failed(failures), failures)

    def _check_count(self, backend: Backend, messages: list[Message], reply: Completion) -> None:
        """Tell (once per model) when a local server counted far fewer prompt tokens than were sent."""
        warning = dropped_prompt_warning(backend.spec, messages, reply.prompt_tokens) \
            if getattr(backend, "local", False) and backend.spec not in self._warned else None
        if warning:
            self._warned.add(backend.spec)
            tell("warning", warning=warning)

    def _sized(self, backend: Backend, request: ChatRequest) -> ChatRequest:
        """A local server's request with its reply budget fitted to the server's window (context_window.py)."""
        if not getattr(backend, "local", False):
            return request
        window_of = getattr(backend, "window", None)  # the local adapters say what window they run with
        window = window_of() if callable(window_of) else None
        return replace(request, max_tokens=reply_tokens(request.max_tokens, window, request.messages,
                                                        kept_default_max_tokens(self.settings)))

    def _skipped(self, backend: Backend) -> LLMError | None:
        """Why this model is not called now: dead for the run, or failing while another model may answer."""
        dead = self._breaker.dead(backend.spec)
        if dead is not None:
            return dead
        others = [b for b in self.backends if b is not backend and self._breaker.dead(b.spec) is None
                  and not self._breaker.failing(b.spec)]
        if self._breaker.failing(backend.spec) and others:
            return LLMError(f"{backend.spec} skipped: its last {self._breaker.limit} calls failed",
                            model=backend.spec)
        return None

    def _price(self, spec: str, reply: Completion) -> float | None:
        if reply.cost is not None:  # the provider's own figure for the call (OpenRouter's usage.cost)
            return reply.cost
        cost = cost_usd(spec, reply.prompt_tokens, reply.completion_tokens, self._prices,
                        cached_tokens=reply.cached_tokens, cache_write_tokens=reply.cache_write_tokens)
        if cost is None and reply.model and not priced_by_name_only(spec, self.settings):
            cost = cost_usd(reply.model, reply.prompt_tokens, reply.completion_tokens, self._prices,
                            cached_tokens=reply.cached_tokens, cache_write_tokens=reply.cache_write_tokens)
        return cost

    def _billed(self, failures: list[LLMError]) -> tuple[Completion, ...]:
        """The replies the providers billed although they became errors (empty, blocked), priced."""
        return tuple(replace(c, cost=self._price(c.model, c)) for f in failures for c in f.billed)

    def _priced_failure(self, error: LLMError, failures: list[LLMError]) -> LLMError:
        error.billed = self._billed(failures)
        return error

    def _finish(self, backend: Backend, reply: Completion, start: float,
                failures: list[LLMError] | None = None) -> Completion:
        return replace(reply, model=backend.spec, latency=self._clock() - start,
                       cost=self._price(backend.spec, reply), billed_before=self._billed(failures or []))

    def _with_retries(self, backend: Backend, request: ChatRequest) -> Completion:
        import tenacity  # imported at the first model call (CLI start-up time)

        s = self.settings
        task_left = cancellation.remaining()  # the task's deadline also ends the retries
        deadline = self._clock() + (s.retry_deadline if task_left is None else min(s.retry_deadline, task_left))
        wait_for, stop = self._retry_policy(deadline)
        attempts = 0

        def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            bounded = _bounded(request, s.request_timeout, cancellation.remaining())
            try:
                return self._attempt(backend, bounded)
            except TransientError as exc:
                self._reach.check_attempt(exc, backend.spec)  # nothing ever answered there: a config error
                if exc.timed_out:
                    seconds = float(f"{bounded.timeout or s.request_timeout:.3g}")
                    tell("llm_timeout", model=backend.spec, seconds=seconds, max_tokens=request.max_tokens)
                    if getattr(backend, "local", False) and bounded.timeout is None:  # not the task's deadline
                        raise _not_asked_again(backend.spec, request.max_tokens, seconds) from exc
                raise

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(TransientError), wait=wait_for,
                                     stop=stop, sleep=cancellation.waiter(self._sleep), reraise=True,
                                     before_sleep=lambda state: _tell_retry(backend.spec, state, request))
        try:
            return retrying(attempt)
        except TransientError as exc:
            cancellation.check_stop()
            raise self._gave_up(backend, exc, attempts, task_left) from exc
        except LLMError as exc:
            exc.attempts = attempts
            raise

    def _retry_policy(self, deadline: float) -> tuple[Callable[[Any], float], Callable[[Any], bool]]:
        """tenacity's wait and stop for one call: server hints kept as given, backoff capped, deadline kept."""
        import tenacity  # imported at the first model call (CLI start-up time)

        s = self.settings
        backoff = tenacity.wait_exponential_jitter(initial=1.0, max=s.max_retry_wait, jitter=1.0)
        planned: dict[int, float] = {}

        def wait_for(state: tenacity.RetryCallState) -> float:
            # Computed once per attempt, whichever of stop/wait tenacity asks first.
            if state.attempt_number not in planned:
                exc = state.outcome.exception() if state.outcome else None
                hinted = getattr(exc, "retry_after", None)
                # A server-given wait is kept as is: a longer one than the cap fails the call (see stop).
                planned[state.attempt_number] = min(backoff(state), s.max_retry_wait) if hinted is None else hinted
                if exc is not None and unreachable_reason(exc):  # refused: a restart is found at once, a dead
                    planned[state.attempt_number] = min(planned[state.attempt_number], REFUSED_RETRY)  # server soon
            return planned[state.attempt_number]

        def stop(state: tenacity.RetryCallState) -> bool:
            return (state.attempt_number > s.max_retries or wait_for(state) > s.max_retry_wait
                    or self._clock() + wait_for(state) > deadline or cancellation.stopping())

        return wait_for, stop

    def _gave_up(self, backend: Backend, exc: Any, attempts: int, task_left: float | None) -> Exception:
        """The error for a call whose retries ended: a wait hint over the cap, the task's deadline, or too many."""
        s = self.settings
        if exc.retry_after is not None and exc.retry_after > s.max_retry_wait:
            return LLMError(f"{backend.spec} asked to wait {exc.retry_after:.0f} s before retrying, more than"
                            f" AGENT_MAX_RETRY_WAIT ({s.max_retry_wait:g} s); not retried: {exc}",
                            model=backend.spec, status=exc.status, attempts=attempts)
        if task_left is not None and task_left < s.retry_deadline and attempts <= s.max_retries:
            return TaskDeadlineExceeded(
                f"{backend.spec} gave no answer before the task's deadline ({attempts} attempt(s);"
                f" last error: {exc})")
        return LLMError(f"{backend.spec} failed after {attempts} attempt(s): {exc}", model=backend.spec,
                        status=exc.status, attempts=attempts)

    def _attempt(self, backend: Backend, request: ChatRequest) -> Completion:
        refitted = False
        while True:
            omit = self._rejected.get(backend.spec)
            try:
                try:
                    return backend.complete(replace(request, omit=omit))
                except LLMError as exc:  # no configured key in its text before it is retried, told, stored or traced
                    self._redact.error(exc)
                    raise
            except ContextWindowError as exc:
                # The prompt fits, only the reply budget did not (vLLM): once more within the window it named.
                if refitted or not (exc.window and exc.prompt_tokens and exc.prompt_tokens < exc.window):
                    raise
                refitted = True
                request = replace(request, max_tokens=max(min(request.max_tokens, exc.window - exc.prompt_tokens), 1))
            except UnsupportedParameterError as exc:
                if exc.param in omit:
                    raise LLMError(str(exc), model=backend.spec, status=exc.status) from exc
                # Same call again without the parameter, and never send it to this model again.
                self._rejected.add(backend.spec, exc.param)


def _not_asked_again(spec: str, max_tokens: int, seconds: float) -> LLMError:
    """A local server that timed out is not asked again: it goes on generating the reply nobody waits for any more
    (llama-cpp-python does), so the same request would only queue behind it and take as long again."""
    return LLMError(f"{spec} gave no answer within {seconds:g} s for a reply of up to {max_tokens:,} tokens; not asked "
                    "again (a local server may still be generating it): raise --request-timeout "
                    "(AGENT_REQUEST_TIMEOUT), lower --max-tokens, or use a faster model", model=spec)


def _tell_retry(spec: str, state: Any, request: ChatRequest) -> None:
    """The notice of a retry about to wait: which model, why, how long, and the reply budget it asks for."""
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    tell("llm_retry", model=spec, attempt=state.attempt_number + 1, wait=round(float(wait), 1),
         error=str(exc).splitlines()[0][:300] if exc else "", max_tokens=request.max_tokens)


def _bounded(request: ChatRequest, request_timeout: float, task_left: float | None) -> ChatRequest:
    """The request with its timeout cut to what is left of the task's time (at least 1 s)."""
    if task_left is None or task_left >= request_timeout:
        return request
    return replace(request, timeout=max(task_left, 1.0))


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
