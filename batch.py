"""Running a task file: loading tasks, one agent per task, concurrency, traces and resume."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import AgentResult, Event, ReActAgent
from config import Settings
from llm import ChatModel, LLMFatalError
from memory import memory_for_task
from report import TaskRecord, load_records


class TaskFileError(Exception):
    """The task file is missing, unreadable, binary or empty (exit code 2)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Task:
    """One task from the task file."""

    index: int
    text: str
    id: str
    expected: str | None = None
    file: str | None = None
    level: str | None = None

    @property
    def key(self) -> str:
        """A stable key for --resume: a hash of the task text."""
        return task_key(self.text)


def task_key(text: str) -> str:
    """Hash of a task's text, used to match results across runs."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:16]


def read_task_file(path: Path) -> str:
    """The task file's text, or TaskFileError for a missing, unreadable, binary or empty file."""
    if not path.exists():
        raise TaskFileError(path, "no such file")
    if not path.is_file():
        raise TaskFileError(path, "not a regular file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFileError(path, f"cannot read it ({exc.strerror})") from exc
    if b"\x00" in data[:8192]:
        raise TaskFileError(path, "looks like a binary file, expected text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFileError(path, "is not UTF-8 text") from exc
    if not text.strip():
        raise TaskFileError(path, "contains no tasks")
    return text


def parse_text_tasks(text: str) -> list[Task]:
    """Tasks separated by blank lines; a task may span several lines; `#` lines are comments."""
    tasks: list[Task] = []
    for block in _blocks(text):
        tasks.append(Task(len(tasks) + 1, block, f"task-{len(tasks) + 1:03d}-{task_key(block)[:8]}"))
    return tasks


def _blocks(text: str) -> list[str]:
    blocks, current = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.lstrip().startswith("#"):
            continue
        if line.strip():
            current.append(line.rstrip())
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def load_tasks(path: Path) -> list[Task]:
    """Read and parse a task file (.txt blocks; .jsonl question sets are handled by eval)."""
    text = read_task_file(path)
    if path.suffix.lower() == ".jsonl":
        from evaluation import parse_jsonl_tasks

        tasks = parse_jsonl_tasks(text, path)
    else:
        tasks = parse_text_tasks(text)
    if not tasks:
        raise TaskFileError(path, "contains no tasks")
    return tasks


class TraceWriter:
    """Appends every event of one task to a JSONL file (model calls, tool calls, summaries)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("w", encoding="utf-8")

    def __call__(self, event: Event) -> None:
        """Write one event as a JSON line."""
        record = {"time": time.time(), "kind": event.kind, "step": event.step, **event.data}
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


EventSink = Callable[[Task, Event], None]


def build_agent(settings: Settings, llm: ChatModel, workspace: Path, model_spec: str,
                on_event: Callable[[Event], None] | None = None, answer_style: str | None = None,
                summary_llm: ChatModel | None = None) -> ReActAgent:
    """An agent with the built-in tools and those of --tools modules, working in this task's workspace."""
    from tools.builtin import default_tools, load_tool_factories

    tools = default_tools(settings, workspace)
    for factory in load_tool_factories(settings.tool_modules):
        tools.extend(factory(settings, workspace))
    return ReActAgent(
        llm, tools, max_steps=settings.max_steps,
        max_format_errors=settings.max_format_errors, time_limit=settings.task_timeout,
        memory_factory=lambda: memory_for_task(settings, summary_llm or llm, workspace, model_spec),
        answer_style=answer_style or settings.answer_style, max_tokens=settings.max_tokens,
        temperature=settings.temperature, on_event=on_event)


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

    def run(self, tasks: list[Task]) -> None:
        """Run every task; an LLMFatalError stops the batch at once and propagates."""
        if not tasks:
            return
        lock = threading.Lock()
        self._stop = threading.Event()
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            futures = [pool.submit(self._run_one, task, lock) for task in tasks]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for f in pending:
                    f.cancel()
                raise failed[0].exception()  # type: ignore[misc]

    def _run_one(self, task: Task, lock: threading.Lock) -> None:
        if self._stop.is_set():  # a fatal error in another task: every task would fail the same way
            return
        workspace = (self.settings.workspace / task.id).resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        stage_attachment(task, workspace)
        trace = TraceWriter(self.settings.trace_dir / f"{task.id}.jsonl") if self.settings.trace_dir else None

        def emit(event: Event) -> None:
            if trace is not None:
                trace(event)
            if self.on_event is not None:
                self.on_event(task, event)

        try:
            agent = self.agent_factory(self.settings, self.llm, workspace, self.model_spec, emit,
                                       self.answer_style, self.summary_llm)
            result = agent.run(task_prompt(task))
        except LLMFatalError:
            self._stop.set()
            raise
        finally:
            if trace is not None:
                trace.close()
        record = record_from_result(task, result, workspace)
        with lock:
            self.on_record(record)


def task_prompt(task: Task) -> str:
    """The text the agent receives: the task, plus the attachment's name when there is one."""
    if task.file:
        name = Path(task.file).name
        return f"{task.text}\n\nAttached file: {name} (in your workspace; open it with read_file or python)."
    return task.text


def stage_attachment(task: Task, workspace: Path) -> None:
    """Copy a task's attached file into its workspace."""
    if task.file:
        import shutil

        src = Path(task.file)
        if src.is_file():
            shutil.copy2(src, workspace / src.name)


def record_from_result(task: Task, result: AgentResult, workspace: Path | None = None) -> TaskRecord:
    """The results-file record of one finished task."""
    u = result.usage
    extra: dict[str, Any] = {}
    if task.expected is not None:
        from evaluation import score_answer

        extra = {"expected": task.expected, "correct": score_answer(result.answer or "", task.expected)}
    return TaskRecord(
        key=task.key, id=task.id, index=task.index, task=task.text, status=result.status,
        answer=result.answer, sources=list(result.sources), steps=len(result.steps),
        prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens, llm_calls=u.calls,
        cost=u.cost, seconds=round(result.elapsed, 2), models=list(u.models), error=result.error,
        level=task.level, workspace=str(workspace) if workspace else None, **extra)


def finished_records(results: Path, tasks: list[Task]) -> dict[str, TaskRecord]:
    """For --resume: the previous run's records of these tasks that did not end in error."""
    previous = load_records(results)
    kept: dict[str, TaskRecord] = {}
    for t in tasks:
        record = previous.get(t.key)
        if record is not None and record.status != "error":
            record.index = t.index  # the task file may have been reordered since
            kept[t.key] = record
    return kept
