"""The spans of a run: run -> task -> step -> model call / tool call, exported through the OTLP exporter given.

Imported only when an endpoint is set (telemetry/setup.py): this module imports the opentelemetry SDK.
The tracer provider is the run's own, not the global one, so nothing else in the process is traced by it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.re import parse_env_headers

from agent import Event
from config import Settings, project_version
from core.chat import ChatModel, Completion, Message
from core.errors import ConfigError
from report.markdown import DONE_STATUSES, TaskRecord
from tasks.taskfile import Task
from telemetry.attributes import (
    AGENT_NAME,
    PROJECT,
    Redactor,
    completion_attributes,
    request_attributes,
    tool_outcome,
    usage_attributes,
)

SHUTDOWN_WAIT = 10.0  # seconds the last export may take at exit (an unreachable collector must not hang it)


class Tracing:
    """The run's tracer: one root span for the run, a TaskTrace per task; shutdown() flushes every span."""

    def __init__(self, exporter: SpanExporter, redact: Redactor, service_name: str | None = None) -> None:
        # The exporter logs each retry against an unreachable collector; its final failure (an error) is enough.
        logging.getLogger("opentelemetry.exporter").setLevel(logging.ERROR)
        resource = Resource.create({"service.name": service_name or AGENT_NAME,
                                    "service.version": project_version()})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000))
        self.tracer = self.provider.get_tracer(AGENT_NAME, project_version())
        self.redact = redact
        self.run_span: Span | None = None
        self._closed = threading.Lock()

    def start_run(self, model_spec: str, tasks: int) -> None:
        """Open the run's root span."""
        self.run_span = self.tracer.start_span("run", attributes={
            "gen_ai.agent.name": AGENT_NAME, f"{PROJECT}.model": model_spec, f"{PROJECT}.tasks": tasks})

    @contextlib.contextmanager
    def task(self, task: Task) -> Iterator[TaskTrace]:
        """A task's span around its run; a task abandoned by Ctrl-C ends as `stopped`."""
        parent = trace.set_span_in_context(self.run_span) if self.run_span is not None else None
        span = self.tracer.start_span(f"task {task.id}", context=parent, kind=SpanKind.INTERNAL, attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME,
            f"{PROJECT}.task.id": task.id, f"{PROJECT}.task.index": task.index})
        traced = TaskTrace(self, span)
        try:
            yield traced
        except BaseException as exc:
            span.set_attribute(f"{PROJECT}.task.status", "stopped" if _is_stop(exc) else "error")
            span.set_status(Status(StatusCode.ERROR, self.redact(f"{type(exc).__name__}: {exc}")))
            raise
        finally:
            traced.close()

    def end_run(self, exit_code: int | None) -> None:
        """Close the run's span with the exit code (None: the run failed before one)."""
        if self.run_span is None:
            return
        if exit_code is not None:
            self.run_span.set_attribute(f"{PROJECT}.exit_code", exit_code)
        if exit_code not in (0, None):
            self.run_span.set_status(Status(StatusCode.ERROR, f"exit code {exit_code}"))
        self.run_span.end()
        self.run_span = None

    def flush(self, timeout: float = SHUTDOWN_WAIT) -> None:
        """Send every finished span now (the second Ctrl-C calls this before leaving at once)."""
        self.provider.force_flush(int(timeout * 1000))

    def shutdown(self, exit_code: int | None = None) -> None:
        """End the run's span, send what is left and stop the exporter (once; later calls do nothing)."""
        if not self._closed.acquire(blocking=False):
            return
        self.end_run(exit_code)
        self.flush()
        self.provider.shutdown()


def _is_stop(exc: BaseException) -> bool:
    return type(exc).__name__ in {"StopRequested", "KeyboardInterrupt"}


class TaskTrace:
    """One task's spans: steps from the agent's events, model calls from the TracedModel wrapper."""

    def __init__(self, tracing: Tracing, span: Span) -> None:
        self.tracing, self.span = tracing, span
        self.step: Span | None = None
        self._lock = threading.Lock()  # a tool's own model call may run in the tool's thread

    def parent(self) -> Any:
        """The context a new model-call span hangs under: the running step, else the task."""
        with self._lock:
            return trace.set_span_in_context(self.step or self.span)

    def model(self, llm: ChatModel, spec: str, purpose: str = "step") -> ChatModel:
        """The task's model wrapped so each call is a span under the running step."""
        return TracedModel(llm, self, spec, purpose)

    def on_event(self, event: Event) -> None:
        """Steps open and close on step_start / final; a tool call becomes a span under its step."""
        if event.kind == "step_start":
            self._end_step()
            with self._lock:
                self.step = self.tracing.tracer.start_span(
                    f"step {event.step}", context=trace.set_span_in_context(self.span),
                    attributes={f"{PROJECT}.step": event.step})
        elif event.kind == "tool_call":
            self._tool_span(event)
        elif event.kind == "final":
            self._end_step()

    def _tool_span(self, event: Event) -> None:
        data = event.data
        name = str(data.get("tool") or "unknown")
        now = time.time_ns()
        start = now - int(float(data.get("duration") or 0.0) * 1e9)
        outcome = tool_outcome(data.get("error"))
        chars = data.get("full_observation_chars") or len(str(data.get("observation") or ""))
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                      f"{PROJECT}.tool.outcome": outcome, f"{PROJECT}.step": event.step,
                                      f"{PROJECT}.tool.observation_chars": int(chars)}
        usage = [Completion("", **c) for c in data.get("usage") or []]
        if usage:  # the tool's own model calls (look, transcribe, watch): each a chat span under the tool's
            attributes[f"{PROJECT}.tool.model_calls"] = len(usage)
        span = self.tracing.tracer.start_span(f"execute_tool {name}", context=self.parent(), start_time=start,
                                              attributes=attributes)
        self._tool_model_spans(span, usage, start)
        if outcome != "ok":
            first = str(data.get("observation") or "").strip().splitlines()
            span.set_status(Status(StatusCode.ERROR, self.tracing.redact(first[0] if first else outcome)))
        span.end(end_time=now)

    def _tool_model_spans(self, tool: Span, usage: list[Completion], start: int) -> None:
        """A tool's model calls as chat spans inside its span, one after another by their latencies."""
        cursor = start
        for completion in usage:
            attributes = {**request_attributes(completion.model, "tool"), **completion_attributes(completion)}
            span = self.tracing.tracer.start_span(f"chat {attributes['gen_ai.request.model']}", start_time=cursor,
                                                  context=trace.set_span_in_context(tool), kind=SpanKind.CLIENT,
                                                  attributes=attributes)
            cursor += int(completion.latency * 1e9)
            span.end(end_time=cursor)

    def finish(self, record: TaskRecord) -> None:
        """The task's outcome on its span: status, tokens, cost, steps; an unanswered task is an error."""
        # The task's totals in the project's names: gen_ai.usage.* on it would count its calls twice in a backend
        # that sums usage over a trace (Langfuse does); the chat spans carry those.
        attributes: dict[str, Any] = {f"{PROJECT}.task.status": record.status, f"{PROJECT}.steps": record.steps,
                                      f"{PROJECT}.usage.input_tokens": record.prompt_tokens,
                                      f"{PROJECT}.usage.output_tokens": record.completion_tokens,
                                      f"{PROJECT}.llm_calls": record.llm_calls,
                                      f"{PROJECT}.sourced": bool(record.sourced)}
        if record.cost is not None:
            attributes[f"{PROJECT}.usage.cost_usd"] = float(record.cost)
        if record.correct is not None:
            attributes[f"{PROJECT}.correct"] = record.correct
        self.span.set_attributes(attributes)
        if record.status not in DONE_STATUSES:
            self.span.set_status(Status(StatusCode.ERROR, self.tracing.redact(record.error or record.status)))

    def stopped(self) -> None:
        """The task was abandoned by Ctrl-C or SIGTERM: not recorded, --resume runs it again."""
        self.span.set_attribute(f"{PROJECT}.task.status", "stopped")

    def close(self) -> None:
        """End the running step and the task's span."""
        self._end_step()
        self.span.end()

    def _end_step(self) -> None:
        with self._lock:
            step, self.step = self.step, None
        if step is not None:
            step.end()


class TracedModel:
    """A ChatModel that makes each call a span (a wrapper, not a subclass: it wraps any model)."""

    def __init__(self, inner: ChatModel, task: TaskTrace, spec: str, purpose: str) -> None:
        self.inner, self.task, self.spec, self.purpose = inner, task, spec, purpose

    def complete(self, messages: list[Message], stop: list[str] | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> Completion:
        """Call the wrapped model inside a `chat MODEL` span with its usage, cost and outcome."""
        attributes = request_attributes(self.spec, self.purpose)
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        tracer = self.task.tracing.tracer
        span = tracer.start_span(f"chat {attributes['gen_ai.request.model']}", context=self.task.parent(),
                                 kind=SpanKind.CLIENT, attributes=attributes)
        try:
            completion = self.inner.complete(messages, stop=stop, max_tokens=max_tokens, temperature=temperature)
        except BaseException as exc:
            billed = list(getattr(exc, "billed", ()))
            if billed:
                span.set_attributes(usage_attributes(billed))
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, self.task.tracing.redact(f"{type(exc).__name__}: {exc}")))
            span.end()
            raise
        span.set_attributes(completion_attributes(completion))
        span.end()
        return completion

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # backends, model, ... as the wrapped model has them


def make_exporter(settings: Settings) -> SpanExporter:
    """The OTLP exporter the settings ask for: HTTP/protobuf (base endpoint + /v1/traces) or gRPC."""
    headers = parse_env_headers(settings.otel_headers or "", liberal=True)
    if settings.otel_protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # optional: grpcio is large
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError as exc:
            raise ConfigError("OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the gRPC exporter: pip install "
                              "opentelemetry-exporter-otlp-proto-grpc", "otel_protocol") from exc
        return GrpcExporter(endpoint=settings.otel_traces_endpoint or settings.otel_endpoint,
                            headers=tuple(headers.items()))
    endpoint = settings.otel_traces_endpoint or f"{(settings.otel_endpoint or '').rstrip('/')}/v1/traces"
    return OTLPSpanExporter(endpoint=endpoint, headers=headers)
