"""Research: each sub-question is a normal task (the same agent, tools, limits, caps and traces), run side by
side through the run's executor (run/execute.runner_class: threads, or Ray with --executor ray).

What a task read comes back in the agent's `sources` event (with each source's text; through a Ray node's
trace too), is kept in the run store at once, and becomes the sub-question's `Found`.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent import UNFORMATTED, Event
from config import Settings
from core.errors import ConfigError, LLMFatalError
from providers.budget import RunBudget
from report.markdown import TaskRecord
from report.research import SubQuestion
from research.pool import Found
from research.store import ResearchRun
from run.execute import runner_class
from tasks.taskfile import Task, task_key

CONTEXT = "This is one part of a larger research question: {question}\nAnswer this part only."
# What a sub-question is told of search_papers, by AGENT_PAPERS (off: nothing).
PAPERS = {"on": "For scientific claims, find peer-reviewed papers with search_papers and read their open-access "
                "PDFs; say so when a paper you cite is retracted.",
          "only": "Use scholarly sources only: find papers with search_papers (or arxiv) and read their "
                  "open-access PDFs; say so when a paper you cite is retracted."}



def task_text(sub_question: str, question: str, files: list[Path], papers: str = "off") -> str:
    """A sub-question's task: the sub-question, with the main question as context (and the files it has, and
    what it is told of search_papers)."""
    text = f"{sub_question}\n\n{CONTEXT.format(question=' '.join(question.split()))}"
    if papers in PAPERS:
        text += f"\n{PAPERS[papers]}"
    if len(files) > 1:
        text += "\n\nAttached files (in your workspace): " + ", ".join(f.name for f in files) + "."
    return text


def sub_tasks(plan: list[SubQuestion], question: str, files: list[Path], papers: str = "off") -> list[Task]:
    """One task per sub-question; its id (sub-01-<hash>) names its trace and workspace."""
    tasks = []
    for sub in plan:
        text = task_text(sub.text, question, files, papers)
        task = Task(sub.n, text, f"sub-{sub.n:02d}-{task_key(text)[:8]}",
                    file=str(files[0]) if len(files) == 1 else None)
        sub.task_id = task.id
        tasks.append(task)
    return tasks


NO_FORMAT = "the model never wrote the Thought / Action / Final Answer format: nothing was searched or read"


def unformatted(record: TaskRecord) -> bool:
    """A model's reply without the protocol's labels, given as the answer after reading nothing: not a finding."""
    return record.status == UNFORMATTED and not any(s.get("read") for s in record.sources)


def finished(record: TaskRecord | None) -> bool:
    """A sub-question whose research needs no second run: it gave an answer (a best-effort one too), not the
    unlabelled reply of a model that never followed the format and read nothing."""
    return record is not None and record.answer is not None and record.status != "error" and not unformatted(record)


@dataclass
class Gather:
    """Runs sub-question tasks through the executor; keeps each record and what it read in the research run."""

    settings: Settings
    llm: Any
    summary_llm: Any
    spec: str
    research: ResearchRun
    budget: RunBudget | None = None
    tracing: Any = None
    stop: threading.Event = field(default_factory=threading.Event)
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    on_event: Callable[[Task, Event], None] | None = None
    on_record: Callable[[TaskRecord], None] | None = None
    read: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # task id -> sources with their text

    def run(self, tasks: list[Task], files: list[Path], concurrency: int | None) -> None:
        """Run the tasks (`concurrency` at once; None: all of them); LLMFatalError propagates."""
        if not tasks:
            return
        settings = replace(self.settings, concurrency=concurrency or len(tasks))
        if len(files) > 1:
            stage_files(settings, tasks, files)
        runner = runner_class(settings)(settings, self.llm, self.spec, self._recorded, self._event, self.summary_llm,
                                        stop=self.stop, write_lock=self.write_lock, budget=self.budget,
                                        on_fatal=_say_fatal, tracing=self.tracing)
        runner.run(tasks)

    def _event(self, task: Task, event: Event) -> None:
        if event.kind == "sources":
            self.read[task.id] = list(event.data.get("sources") or [])
        if self.on_event is not None:
            self.on_event(task, event)

    def _recorded(self, record: TaskRecord) -> None:
        record.model = self.spec
        self.research.save_found(record.id, self.read.get(record.id, []))
        self.research.add_record(record)
        if self.on_record is not None:
            self.on_record(record)

    def found(self, record: TaskRecord) -> Found:
        """What a finished sub-question gave: its answer, the sources it read (text included), the failed ones."""
        read = self.read.get(record.id) or self.research.found(record.id)
        failed = [s for s in record.sources if not s.get("read")]
        return Found(record.answer if finished(record) else None, read, failed)


def stage_files(settings: Settings, tasks: list[Task], files: list[Path]) -> None:
    """Copy several attached files into each sub-question's workspace (one file travels as the task's own)."""
    if settings.executor == "ray":
        raise ConfigError("research --executor ray takes one --file (it travels with each sub-question)", "files")
    assert settings.workspace is not None  # the run store's run.apply always sets it
    for task in tasks:
        workspace = settings.workspace / task.id
        workspace.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(f, workspace / f.name)


def _say_fatal(exc: LLMFatalError) -> None:
    print(f"error: {exc} (the research was stopped: every sub-question would fail the same way)",
          file=sys.stderr, flush=True)
