"""Running a task file: loading tasks, one agent per task, concurrency, traces and resume."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import AgentResult, Event, ReActAgent
from config import Settings
from core import cancellation
from core.chat import ChatModel
from core.errors import LLMFatalError, TaskFileError
from core.secrets import SecretRedactor
from core.text import report_data
from prompt.memory import memory_for_task
from providers.budget import RunBudget
from providers.pricing import priced
from providers.ratelimit import waiting_as
from report.markdown import TaskRecord
from tasks.scoring import grade
from tasks.taskfile import Task, load_tasks, parse_text_tasks, read_task_file, task_key
from tools.base import Tool
from tools.builtin import default_tools, load_tool_factories
from tools.cached import cache_network_tools
from tools.documents.detect import attachment_hint
from tools.models import tool_model
from tools.safe_open import WorkspacePathError, replace_file
from tools.sandbox.defuse import defuse

if TYPE_CHECKING:  # telemetry/otel.py imports the opentelemetry SDK: only when a run exports traces
    from telemetry.otel import TaskTrace, Tracing

__all__ = ["Task", "TaskFileError", "load_tasks", "parse_text_tasks", "read_task_file", "task_key",
           "BatchRunner", "TraceWriter", "build_agent", "record_from_result"]


class TraceWriter:
    """Appends every event of one task to a JSONL file (model calls, tool calls, summaries)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()  # a slow call's "still waiting" events come from its heartbeat thread

    def __call__(self, event: Event) -> None:
        """Write one event as a JSON line."""
        record = {"time": time.time(), "kind": event.kind, "step": event.step, **event.data}
        line = json.dumps(report_data(record), ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


EventSink = Callable[[Task, Event], None]


def build_agent(settings: Settings, llm: ChatModel, workspace: Path, model_spec: str,
                on_event: Callable[[Event], None] | None = None, answer_style: str | None = None,
                summary_llm: ChatModel | None = None) -> ReActAgent:
    """An agent with the built-in tools and those of --tools modules, working in this task's workspace."""
    return ReActAgent(
        llm, task_tools(settings, workspace), max_steps=settings.max_steps,
        max_format_errors=settings.max_format_errors, time_limit=settings.task_timeout,
        tool_timeout=settings.tool_timeout,
        memory_factory=lambda: memory_for_task(settings, summary_llm or llm, workspace, model_spec),
        answer_style=answer_style or settings.answer_style, max_tokens=settings.max_tokens,
        temperature=settings.temperature, on_event=on_event, verify_claims=settings.verify_claims == "model",
        judge=(lambda: tool_model(settings.judge_model or "", settings)) if settings.judge_model else None,
        redact=SecretRedactor.of(settings))


def task_tools(settings: Settings, workspace: Path) -> list[Tool]:
    """The tools a task gets: the built-in ones and those of --tools modules, in this workspace."""
    tools = default_tools(settings, workspace)
    for factory in load_tool_factories(settings.tool_modules):
        tools.extend(factory(settings, workspace))
    return cache_network_tools(tools, settings)  # --cache / --replay: search and fetches from the cache


@dataclass
class BatchRunner:
    """Runs tasks (concurrently if asked) and reports each finished record in completion order."""

    settings: Settings
    llm: ChatModel
    model_spec: str
    on_record: Callable[[TaskRecord], None]
    on_event: EventSink | None = None
    summary_llm: ChatModel | None = None
    answer_style: str | None = None
    agent_factory: Callable[..., ReActAgent] = build_agent
    budget: RunBudget | None = None  # spend caps (providers/budget.py); None: no caps
    on_fatal: Callable[[LLMFatalError], None] | None = None  # told at once, before running tasks wind down
    tracing: Tracing | None = None  # OpenTelemetry export (telemetry/); None: no spans
    # Set by Ctrl-C / SIGTERM (run/stopping.py) or a fatal error: queued tasks are skipped, running ones end at
    # their next step boundary and are not recorded. on_record runs under write_lock.
    stop: threading.Event = field(default_factory=threading.Event)
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, tasks: list[Task]) -> None:
        """Run every task; an LLMFatalError stops the batch at once and propagates."""
        if not tasks:
            return
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            # Tasks are handed out as workers free up: a future per task up front costs GBs at 400,000 tasks.
            window = 2 * self.settings.concurrency
            pending: set[Future[None]] = set()
            for task in tasks:
                if len(pending) >= window:
                    pending = _raise_first_failure(pending, FIRST_COMPLETED)
                if self.stop.is_set():
                    break
                pending.add(pool.submit(self._run_one, task))
            _raise_first_failure(pending, FIRST_EXCEPTION)

    def _run_one(self, task: Task) -> None:
        if self.stop.is_set():  # stopping, or a fatal error in another task (every task would fail the same way)
            return
        if self.budget is not None and not self.budget.may_start():  # the run's cost cap is reached
            return
        with self.task_span(task) as traced:
            record = self.run_task(task, self.settings.workspace / task.id if self.settings.workspace else None,
                                   traced=traced)
        if record is not None:
            with self.write_lock:
                self.on_record(record)

    def run_task(self, task: Task, workspace: Path | None, prompt: str | None = None,
                 traced: TaskTrace | None = None) -> TaskRecord | None:
        """Run one task in `workspace` with its trace, spend caps and stop flag; None when stopped mid-task.

        `prompt` replaces the task's own text as the agent sees it (a conversation adds its earlier turns);
        the trace is <trace_dir>/<task id>.jsonl and the record names it; `traced` is the task's span (telemetry/).
        LLMFatalError sets stop and propagates.
        """
        llm, summary_llm = self._task_models(traced)
        workspace = (workspace or Path("workspace") / task.id).resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        name = attachment_name(Path(task.file), self.settings) if task.file else None
        try:
            stage_attachment(task, workspace, name)
        except WorkspacePathError as exc:
            return unstaged_record(task, workspace, name or "", exc)
        trace = TraceWriter(self.settings.trace_dir / f"{task.id}.jsonl") if self.settings.trace_dir else None
        try:
            agent = self.agent_factory(self.settings, llm, workspace, self.model_spec,
                                       self._emitter(task, trace, traced), self.answer_style, summary_llm)
            with cancellation.scope(stop=self.stop), waiting_as(task.id):  # named in the rate limiters' status
                result = agent.run(prompt if prompt is not None else task_prompt(task, name))
        except cancellation.StopRequested:
            if traced is not None:
                traced.stopped()
            return None  # abandoned mid-task: not recorded, so --resume runs it again
        except LLMFatalError as exc:
            first = not self.stop.is_set()
            self.stop.set()
            if first and self.on_fatal is not None:
                self.on_fatal(exc)
            raise
        finally:
            if trace is not None:
                trace.close()
        record = record_from_result(task, result, workspace)
        record.attachment = name
        record.defused = defuse(workspace)  # no set-ID file or device node stays in a kept workspace
        if not record.llm_calls and record.cost == 0 and not priced(self.model_spec, self.settings.prices_file):
            record.cost = None  # no call answered, at a price nobody knows: n/a, not $0.0000
        record.trace = str(trace.path.resolve()) if trace is not None else None  # report finds this run's own
        if traced is not None:
            traced.finish(record)
        return record

    def _emitter(self, task: Task, trace: TraceWriter | None, traced: TaskTrace | None) -> Callable[[Event], None]:
        """Where the agent's events go: the task's trace file, its span and the run's console."""
        def emit(event: Event) -> None:
            if trace is not None:
                trace(event)
            if traced is not None:
                traced.on_event(event)
            if self.on_event is not None:
                self.on_event(task, event)
        return emit

    def _task_models(self, traced: TaskTrace | None) -> tuple[ChatModel, ChatModel | None]:
        """The task's model and summary model: each call a span when tracing, under the spend caps (outermost,
        so the agent's tools find the task's budget on its model)."""
        llm, summary_llm = self.llm, self.summary_llm
        if traced is not None:
            summary_spec = self.settings.summary_model or self.model_spec
            llm, summary_llm = (traced.model(llm, self.model_spec),
                                traced.model(summary_llm or llm, summary_spec, "summary"))
        return self.budget.task_models(llm, summary_llm) if self.budget else (llm, summary_llm)

    @contextlib.contextmanager
    def task_span(self, task: Task) -> Iterator[TaskTrace | None]:
        """The task's span when the run exports traces; a stopped task's span says so."""
        if self.tracing is None:
            yield None
            return
        with self.tracing.task(task) as traced:
            yield traced


def _raise_first_failure(futures: set[Future[None]], when: str) -> set[Future[None]]:
    """Wait for futures; re-raise the first failure (cancelling what has not started); return those still running."""
    done, pending = wait(futures, return_when=when)
    failed = [f for f in done if f.exception() is not None]
    if failed:
        for f in pending:
            f.cancel()
        raise failed[0].exception()  # type: ignore[misc]
    return pending


def attachment_name(path: Path, settings: Settings) -> str:
    """The name an attached file is staged, shown to the model and recorded under: its own, with any configured
    key in it taken out (a file name reaches the task prompt as a page's text reaches an observation)."""
    return SecretRedactor.of(settings)(path.name)


def task_prompt(task: Task, name: str | None = None) -> str:
    """The text the agent receives: the task, plus the attachment's name (`name`: as staged) when there is one."""
    if task.file:
        name = name or Path(task.file).name
        return f"{task.text}\n\nAttached file: {name} (in your workspace; {attachment_hint(name)})."
    return task.text


def stage_attachment(task: Task, workspace: Path, name: str | None = None) -> None:
    """Copy a task's attached file into its workspace, under `name` when given (WorkspacePathError when it
    cannot be placed there)."""
    if task.file and Path(task.file).is_file():
        stage_file(Path(task.file), workspace, name)


def stage_file(src: Path, workspace: Path, name: str | None = None) -> None:
    """Copy a file the user gave into the workspace under its own name (or `name`), never through what the model
    may have planted there: a temp file renamed into place through a handle of the workspace (tools/safe_open.py),
    so a symbolic link at that name is replaced, not followed; a directory there is a WorkspacePathError."""
    with src.open("rb") as data:
        replace_file(workspace, name or src.name, data)


def unstaged_record(task: Task, workspace: Path, name: str, exc: WorkspacePathError) -> TaskRecord:
    """The record of a task whose attachment could not be placed in its workspace (the task did not start)."""
    return TaskRecord(task.key, task.id, task.index, task.text, "error", workspace=str(workspace), attachment=name,
                      error=f"the attachment {name!r} could not be placed in the workspace: {exc}")


def record_from_result(task: Task, result: AgentResult, workspace: Path | None = None) -> TaskRecord:
    """The results-file record of one finished task."""
    u = result.usage
    extra: dict[str, Any] = {}
    if task.expected is not None:
        verdict = grade(result.answer or "", task.expected)
        extra = {"expected": task.expected, "correct": verdict.correct, "unsure": verdict.unsure,
                 "correct_official": verdict.correct_official}
    return TaskRecord(
        key=task.key, id=task.id, index=task.index, task=task.text, status=result.status,
        answer=result.answer, sources=result.ledger.records(), steps=len(result.steps),
        prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens, llm_calls=u.calls,
        cost=u.cost, seconds=round(result.elapsed, 2), models=list(u.models), error=result.error,
        level=task.level, workspace=str(workspace) if workspace else None,
        cached_tokens=u.cached_tokens, cache_write_tokens=u.cache_write_tokens,
        cached_calls=u.cached_calls, cached_cost=u.cached_cost, citations=[c.record() for c in result.citations],
        sourced=result.sourced, tool_failures=result.tool_failures, notes=list(result.notes),
        attachment=Path(task.file).name if task.file else None, **extra)
