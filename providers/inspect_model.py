"""The model an Inspect eval is evaluating (`inspect:MODEL`), reached through Inspect's model API.

Inside `inspect eval ... --solver inspect_agent.py@react_agent` the agent runs in a worker thread while the
eval's asyncio loop serves every sample. Each of the agent's model calls is handed to that loop with
`asyncio.run_coroutine_threadsafe` in the sample's context (a copy of it per call, so the calls of a research's
sub-questions, made from other threads, count too): `get_model().generate()` runs there, so Inspect records
the call and its tokens, applies its own retries, rate limits and the sample's limits. This adapter never
retries (the facade retries only TransientError, which it never raises): a failure after Inspect's retries is
the original exception carried by `InspectModelError` (fatal: the sample ends with Inspect's own error), and
Inspect's `LimitExceededError` is re-raised as it is, so the sample is marked limited. Once the sample is
stopped (a limit, a time limit, a cancellation) no further call is dispatched and the one in flight is cancelled.

The loop serves every sample, so the worker does on its own thread what it can (the messages converted, the
config built) and hands the loop only what must run there: a model call is one round trip (on_loop), and what
the agent records in the sample's transcript (its turns and tool events) is posted without waiting (post), in
order, ahead of the next call.

inspect_ai is imported only inside the functions that call it (an optional dependency, requirements-inspect.txt).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from core.chat import Completion, Message
from core.errors import ConfigError, LLMError, LLMFatalError, StopRequested
from providers.common import ChatRequest, billed_empty, empty_reason, short

T = TypeVar("T")
PROVIDER = "inspect"
_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter",
           "tool_calls": "tool_calls"}


class InspectModelError(LLMFatalError):
    """Inspect's model call failed after its own retries; `original` is its exception (the solver re-raises it,
    so the sample ends with the error Inspect itself would record)."""

    def __init__(self, message: str, original: BaseException, *, model: str = "") -> None:
        super().__init__(message, model=model)
        self.original = original


@dataclass
class SampleBinding:
    """One running sample: the eval's loop, the sample's context, its stop flag and the calls in flight."""

    loop: asyncio.AbstractEventLoop
    context: contextvars.Context
    stop: threading.Event = field(default_factory=threading.Event)
    inflight: set[concurrent.futures.Future[Any]] = field(default_factory=set)
    limit: BaseException | None = None  # the Inspect limit that ended the sample, once one fired
    generate_seconds: float = 0.0  # time spent inside Inspect's generate() (benchmarks/inspect_overhead.py)
    prompt_tokens: int = 0  # the usage of every call this sample made through Inspect (research's total)
    completion_tokens: int = 0
    calls: int = 0
    failed: Exception | None = None  # what a posted call raised (not a limit): raised in the worker's next hand-over
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the eval's loop in the sample's context and wait for it (from a worker thread);
        StopRequested when the sample stops meanwhile (the coroutine is cancelled). It starts after every call
        posted before it from this thread, and not at all when one of them stopped the sample."""
        try:
            self._check()
        except BaseException:
            coro.close()
            raise
        future = self.context.copy().run(asyncio.run_coroutine_threadsafe, self._checked(coro), self.loop)
        with self._lock:
            self.inflight.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError as exc:
            raise StopRequested("the sample was stopped") from exc
        finally:
            with self._lock:
                self.inflight.discard(future)

    async def _checked(self, coro: Coroutine[Any, Any, T]) -> T:
        """The coroutine, on the loop, unless the sample stopped since it was handed over (a limit a posted call
        raised: the posted calls before it have run by now)."""
        try:
            self._check()
        except BaseException:
            coro.close()
            raise
        return await coro

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)`, a quick synchronous call (a transcript event), on the eval's loop in the sample's
        context without waiting for it (from a worker thread): the calls posted from one thread run in order,
        each before any hand-over (on_loop) made after it. An Inspect limit it raises stops the sample as a model
        call's does (the limit is raised by the next call); another error is raised by the next post or on_loop."""
        self._check()
        self.loop.call_soon_threadsafe(self._posted, fn, args, context=self.context.copy())

    def _posted(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """A posted call, on the loop: nothing it raises may escape into the loop (Inspect's samples share it)."""
        try:
            fn(*args)
        except Exception as exc:
            from inspect_ai.util import LimitExceededError

            if isinstance(exc, LimitExceededError):
                self.limit = self.limit or exc
                self.halt()
            else:
                with self._lock:
                    self.failed = self.failed or exc

    def _check(self) -> None:
        """StopRequested once the sample is stopped; what a posted call raised, once."""
        if self.stop.is_set():
            raise StopRequested("the sample was stopped")
        with self._lock:
            failed, self.failed = self.failed, None
        if failed is not None:
            raise failed

    def halt(self) -> None:
        """Stop the sample's agent: no new call, the ones in flight cancelled (from any thread)."""
        self.stop.set()
        with self._lock:
            futures = list(self.inflight)
        for future in futures:
            future.cancel()


_BINDING: contextvars.ContextVar[SampleBinding] = contextvars.ContextVar("inspect_sample")


def new_binding() -> SampleBinding:
    """The binding of the sample whose coroutine calls this (on the eval's loop): `inspect:` models built in a
    copy of its context (the agent's worker thread runs in one) serve this sample."""
    binding = SampleBinding(asyncio.get_running_loop(), contextvars.Context())
    token = _BINDING.set(binding)
    try:
        binding.context = contextvars.copy_context()
    finally:
        _BINDING.reset(token)
    return binding


def current_binding() -> SampleBinding | None:
    """The sample this context serves, or None outside an Inspect eval."""
    return _BINDING.get(None)


class InspectBackend:
    """The Backend for `inspect:MODEL`: MODEL is the model Inspect evaluates (its active model) or another one
    Inspect can build by name."""

    local = False

    def __init__(self, spec: str, model: str, binding: SampleBinding) -> None:
        self.spec, self.model, self.binding = spec, model, binding
        self._resolved: Any = None  # Inspect's Model, found at the first call (in the sample's context)

    def complete(self, request: ChatRequest) -> Completion:
        """One call through Inspect's model API, waited for in this (worker) thread."""
        from inspect_ai.model import GenerateConfig

        b = self.binding
        # Built here, in the worker's thread: the eval's loop, which every sample shares, only makes the call.
        messages = inspect_messages(request.messages)
        config = GenerateConfig(
            max_tokens=None if "max_tokens" in request.omit else request.max_tokens,
            temperature=None if "temperature" in request.omit else request.temperature,
            stop_seqs=list(request.stop) if request.stop and "stop" not in request.omit else None)
        try:
            return b.on_loop(self._generate(messages, config))
        except StopRequested:
            if b.limit is not None:  # another call of this sample hit the limit: this one ends the same way
                raise b.limit from None
            raise
        except Exception as exc:
            from inspect_ai.util import LimitExceededError

            if isinstance(exc, LimitExceededError):  # the sample is limited: no further call, Inspect marks it
                b.limit = exc
                b.halt()
                raise
            if isinstance(exc, LLMError | ConfigError):  # the reply was empty (billed_empty): the facade's to tell
                raise
            raise InspectModelError(f"{self.spec}: {type(exc).__name__}: {short(exc)}", exc, model=self.spec) from exc

    async def _generate(self, messages: list[Any], config: Any) -> Completion:
        from inspect_ai.model import get_model

        if self._resolved is None:
            active = get_model()
            self._resolved = active if self.model in ("", str(active)) else get_model(self.model)
        model = self._resolved
        started = time.perf_counter()
        try:
            output = await model.generate(messages, config=config)
        finally:
            self.binding.generate_seconds += time.perf_counter() - started
        reply = self._completion(output)
        self.binding.prompt_tokens += reply.prompt_tokens  # on the loop's one thread: no two at once
        self.binding.completion_tokens += reply.completion_tokens
        self.binding.calls += 1
        if not reply.text.strip():
            raise billed_empty(f"{self.spec}: {empty_reason(reply.finish_reason, reply.completion_tokens)}", reply,
                               reply.finish_reason)
        return reply

    def _completion(self, output: Any) -> Completion:
        usage = output.usage
        read = (usage.input_tokens_cache_read or 0) if usage else 0
        written = (usage.input_tokens_cache_write or 0) if usage else 0
        # The project's prompt tokens hold the cached ones; Inspect's input_tokens do not.
        prompt = (usage.input_tokens + read + written) if usage else 0
        reply = Completion(text=output.completion or "", finish_reason=_finish(output),
                           prompt_tokens=prompt, completion_tokens=usage.output_tokens if usage else 0,
                           model=output.model or self.model.rsplit("/", 1)[-1], cost=getattr(usage, "total_cost", None),
                           cached_tokens=read, cache_write_tokens=written)
        return reply


def _finish(output: Any) -> str | None:
    reason = output.stop_reason if output.choices else None
    return _FINISH.get(str(reason), str(reason)) if reason else None


def inspect_messages(messages: list[Message]) -> list[Any]:
    """The agent's messages as Inspect's chat messages (images as data URLs)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ContentImage, ContentText

    out: list[Any] = []
    for m in messages:
        if m["role"] == "system":
            out.append(ChatMessageSystem(content=m["content"]))
        elif m["role"] == "assistant":
            out.append(ChatMessageAssistant(content=m["content"]))
        elif m.get("images"):
            parts: list[Any] = [ContentText(text=m["content"])]
            parts += [ContentImage(image=image.data_url()) for image in m.get("images", [])]
            out.append(ChatMessageUser(content=parts))
        else:
            out.append(ChatMessageUser(content=m["content"]))
    return out


def inspect_backend(spec: str, model: str) -> InspectBackend:
    """The backend of `inspect:MODEL` for the sample this context serves; ConfigError outside an eval."""
    binding = current_binding()
    if binding is None:
        raise ConfigError(f"model {spec} is the model of an Inspect eval: it is served only inside `inspect eval"
                          " TASK --solver inspect_agent.py@react_agent --model M` (docs/inspect.md)", "model")
    return InspectBackend(spec, model, binding)
