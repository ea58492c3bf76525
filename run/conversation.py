"""A conversation: questions answered one after another, each a task that carries the earlier turns.

Use (the `ask` and `chat` commands and the local web app all go through this)::

    store = RunStore.from_settings(settings)
    chat = Conversation(settings, store)                  # checks tools, paths and the model: ConfigError if not
    turn = chat.ask("Population of Lyon in 2010?", on_event=print, stop=threading.Event())
    turn.record.answer, turn.record.sources               # a TaskRecord, like a batch task's
    chat.ask("and in 2020?")                              # the prompt carries question 1, its answer, its sources
    chat.sources(); chat.cost(); chat.transcript_markdown()
    chat.turns                                            # every Turn(number, question, record, attachments)
    again = Conversation.open(store, chat.id)             # a read-only view of the stored turns
    Conversation(settings, store, kind="ui")              # the web app's conversations are listed as "ui"

Each question runs exactly as a batch task does (run/batch.py's BatchRunner.run_task): the same agent, tools,
step and time limits, spend caps and traces, in the run's one workspace (files saved by an earlier question
stay there). The earlier turns take at most prompt/history.py's share of the memory's token budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import Event
from cache.model import model_specs
from config import Settings
from core.text import money
from llm import with_default_model
from prompt.history import HISTORY_SHARE, PastTurn, conversation_sources, follow_up_prompt
from prompt.memory import TokenEstimator, default_budget
from prompt.protocol import Action, FinalAnswer, ParseError, parse_completion
from providers.budget import RunBudget
from providers.ratelimit import RateLimits
from report.html.data import read_trace
from report.markdown import DONE_STATUSES, TaskRecord, read_records, record_line, safe_markdown, total_cost
from report.sources import md_source
from run.batch import BatchRunner, attachment_name, stage_file, unstaged_record
from run.console import call_notice
from run.execute import checked_models
from run.store import Run, RunStore
from tasks.taskfile import Task, task_key
from tools.documents.detect import attachment_hint
from tools.mcp import configured_specs, mcp_session
from tools.safe_open import WorkspacePathError
from tools.web.session import web_session

if TYPE_CHECKING:  # telemetry/otel.py imports the opentelemetry SDK: only when spans are exported
    from telemetry.otel import Tracing

STOPPED = "stopped"  # the turn's status when the user stopped its answer


@dataclass
class StepEvent:
    """One thing the agent did, as someone watching it sees it; `raw` is the agent's own Event."""

    kind: str  # thought | action | observation | answer | summary | notice
    turn: int
    step: int
    text: str = ""
    tool: str | None = None
    arguments: Any = None
    raw: Event | None = None


@dataclass
class Turn:
    """One question of the conversation and its record (answer, status, sources, cost, trace)."""

    number: int
    question: str
    record: TaskRecord
    attachments: list[str] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        """True when the model gave a final answer."""
        return self.record.status in DONE_STATUSES


class Conversation:
    """Questions asked one after another in one run of the store (kind chat, ask or ui)."""

    def __init__(self, settings: Settings | None, store: RunStore, *, kind: str = "chat", run: Run | None = None,
                 turns: list[Turn] | None = None, tracing: Tracing | None = None,
                 limits: RateLimits | None = None) -> None:
        """settings=None gives a read-only view (see `open`); otherwise the models are built and checked now.
        `tracing` (telemetry.setup.start_tracing) makes each question a task span; its owner shuts it down.
        `limits`: rate limiters shared with other conversations of the process (new ones when not given)."""
        settings = with_default_model(settings) if settings is not None else None  # one GET /models, not one a step
        self.settings, self.store, self.kind, self.run, self.tracing = settings, store, kind, run, tracing
        self.turns: list[Turn] = turns or []
        self._lock = threading.Lock()  # one question at a time
        self.llm: Any = None
        if settings is not None:
            self.llm, self.summary_llm = checked_models(settings, None, limits)
            self.spec = model_specs(self.llm)[0]
            self.budget = RunBudget.from_settings(settings, self.llm)
            self._history_chars: int | None = None

    @classmethod
    def open(cls, store: RunStore, ref: str | Path, settings: Settings | None = None) -> Conversation:
        """A stored conversation by id or directory: read-only without settings, continued with them."""
        run = store.open(ref)
        records = sorted(read_records(run.records)[0].values(), key=lambda r: r.index)
        turns = [Turn(r.index, r.task, r) for r in records]
        return cls(settings, store, kind=run.info.kind, run=run, turns=turns)

    @property
    def id(self) -> str | None:
        """The run's id in the store (None until the first question)."""
        return self.run.id if self.run else None

    def ask(self, question: str, attachments: Iterable[str | Path] = (),
            on_event: Callable[[StepEvent], None] | None = None,
            stop: threading.Event | None = None) -> Turn:
        """Answer one question (with files copied into the workspace); `stop.set()` ends it at the next step.

        Returns the turn (also kept as `self.turns[-1]`; `.record` is its TaskRecord), also when stopped
        (status "stopped", no answer) or refused by the run's cost cap (status "budget"); LLMFatalError
        propagates.
        """
        if self.settings is None:
            raise RuntimeError("this conversation was opened read-only; open it with settings to continue")
        with self._lock:
            run = self._run(question)
            settings = run.apply(self.settings)
            number = len(self.turns) + 1
            files = [Path(a) for a in attachments]
            names = [attachment_name(f, settings) for f in files]
            task = Task(number, question, f"turn-{number}")
            # A key per turn, not per text: asking the same question again is a new record, not a replacement.
            object.__setattr__(task, "_key", task_key(f"{run.id}/{number}/{question}"))
            prompt = follow_up_prompt(question, [self._past(t) for t in self.turns if t.record.answer],
                                      self._history_room()) + _attached(names)
            try:
                record = self._run_task(settings, task, prompt, dict(zip(files, names, strict=True)), on_event,
                                        stop or threading.Event())
            except BaseException:  # LLMFatalError (a bad key): the caller says why; a first question's run is not kept
                if not self.turns:
                    run.discard()
                    self.run = None
                else:
                    run.finish(tasks=len(self.turns), answered=sum(t.answered for t in self.turns),
                               cost=self.cost(), status="failed")
                raise
            turn = Turn(number, question, record, names)
            self.turns.append(turn)
            with run.records.open("a", encoding="utf-8") as f:
                f.write(record_line(record))
            run.finish(tasks=len(self.turns), answered=sum(t.answered for t in self.turns), cost=self.cost())
            return turn

    def _run(self, question: str) -> Run:
        if self.run is None:
            assert self.settings is not None
            self.run = self.store.create(self.kind, " ".join(question.split()), replace(self.settings,
                                                                                       model=self.spec))
        return self.run

    def _run_task(self, settings: Settings, task: Task, prompt: str, files: dict[Path, str],
                  on_event: Callable[[StepEvent], None] | None, stop: threading.Event) -> TaskRecord:
        """Run the task as a batch would; a stopped one, or one the run's cost cap refuses, still gives a record."""
        if self.budget is not None and not self.budget.may_start():
            return TaskRecord(task.key, task.id, task.index, task.text, "budget", model=self.spec, cost=0.0,
                              error=f"not started: {self.budget.exhausted}")
        sink = _event_sink(task.index, on_event)
        runner = BatchRunner(settings, self.llm, self.spec, lambda record: None, sink, self.summary_llm,
                             stop=stop, budget=self.budget, tracing=self.tracing)
        workspace = settings.workspace
        assert workspace is not None  # run.apply always sets it
        workspace.mkdir(parents=True, exist_ok=True)
        for f, name in files.items():  # the workspace is the model's: never follow what an earlier question planted
            try:
                stage_file(f, workspace, name)
            except WorkspacePathError as exc:
                return unstaged_record(task, workspace, name, exc)
        with mcp_session(configured_specs(settings)), web_session(settings), \
                runner.task_span(task) as traced:
            record = runner.run_task(task, workspace, prompt, traced=traced)
        if record is None:
            record = TaskRecord(task.key, task.id, task.index, task.text, STOPPED, error="stopped by the user",
                                **_spent(settings.trace_dir, task.id))
        record.model = self.spec
        return record

    def _history_room(self) -> int:
        """Characters the earlier turns may take: HISTORY_SHARE of the memory's token budget."""
        if self._history_chars is None:
            assert self.settings is not None
            self._history_chars = TokenEstimator().chars_for(default_budget(self.settings, self.spec) * HISTORY_SHARE)
        return self._history_chars

    @staticmethod
    def _past(turn: Turn) -> PastTurn:
        return PastTurn(turn.question, turn.record.answer, turn.record.sources)

    def sources(self) -> list[dict[str, Any]]:
        """Every source read in the conversation, once, numbered: {n, url, title, turn}."""
        return conversation_sources([self._past(t) for t in self.turns])

    def cost(self) -> float | None:
        """USD spent over every turn (a stopped one's from its trace); None when a model's price is unknown."""
        return total_cost(t.record.cost for t in self.turns)

    def transcript_markdown(self) -> str:
        """The conversation as Markdown: each question, its answer and its sources, then the cost."""
        lines = [f"# Conversation {self.id or ''}".rstrip(), ""]
        for t in self.turns:  # the model's and the pages' text as safe Markdown: no raw HTML, only web links
            lines += [f"## {t.number}. {safe_markdown(' '.join(t.question.split()))}", ""]
            if t.attachments:
                lines += [f"Attached: {safe_markdown(', '.join(t.attachments))}", ""]
            r = t.record
            missing = f"*No answer ({r.status}{': ' + r.error if r.error else ''}).*"
            lines += [safe_markdown((r.answer or missing).strip()), ""]
            read = [s for s in r.sources if s.get("read", True)]
            if read:
                lines += ["Sources:", ""] + [f"{s.get('n')}. {md_source(s)}" for s in read] + [""]
        cost = self.cost()
        lines.append(f"Cost: {money(cost)} over {len(self.turns)} question(s).")
        return "\n".join(lines) + "\n"


def _spent(trace_dir: Path | None, task_id: str) -> dict[str, Any]:
    """What a question stopped mid-way spent, from its trace (the batch keeps no record of such a task)."""
    if trace_dir is None:
        return {}  # no trace: the cost stays unknown (None)
    calls = [c for step in read_trace(trace_dir / f"{task_id}.jsonl") for c in step.calls]
    costs = [c.cost for c in calls]
    return {"prompt_tokens": sum(c.prompt_tokens for c in calls), "llm_calls": len(calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "cost": None if None in costs else float(sum(c for c in costs if c is not None))}


def _attached(names: list[str]) -> str:
    """The prompt's note naming the attached files."""
    if not names:
        return ""
    return "\n\nAttached files (in your workspace): " + "; ".join(
        f"{name} ({attachment_hint(name)})" for name in names) + "."


def _event_sink(turn: int, on_event: Callable[[StepEvent], None] | None) -> Callable[[Task, Event], None] | None:
    """Turn the agent's events into StepEvents: thought, action (+ input), observation, summary, answer."""
    if on_event is None:
        return None
    callback = on_event

    def sink(task: Task, event: Event) -> None:
        for step_event in step_events(turn, event):
            callback(step_event)

    return sink


def step_events(turn: int, event: Event) -> list[StepEvent]:
    """The StepEvents one agent Event stands for (a model reply is a thought and an action, or a thought)."""
    d, step = event.data, event.step
    notice = "" if event.kind == "llm_error" else call_notice(event)  # a failed answer is said once, at its end
    notice = notice or (str(d.get("warning") or "") if event.kind == "warning" else "")
    if notice:  # a model call's retry, timeout or long wait; a warning
        return [StepEvent("notice", turn, step, notice, raw=event)]
    if event.kind == "llm_call":
        try:
            parsed: Action | FinalAnswer | None = parse_completion(str(d.get("completion") or ""))
        except ParseError:
            parsed = None
        if parsed is None:
            return [StepEvent("thought", turn, step, str(d.get("completion") or "").strip(), raw=event)]
        out = [StepEvent("thought", turn, step, parsed.thought, raw=event)] if parsed.thought else []
        if isinstance(parsed, Action):
            out.append(StepEvent("action", turn, step, parsed.tool, parsed.tool, parsed.arguments, raw=event))
        return out
    if event.kind == "tool_call":
        return [StepEvent("observation", turn, step, str(d.get("observation") or ""), d.get("tool"),
                          d.get("arguments"), raw=event)]
    if event.kind == "summary":
        return [StepEvent("summary", turn, step, "older steps folded into a running summary", raw=event)]
    if event.kind == "final":
        return [StepEvent("answer", turn, step, str(d.get("answer") or ""), raw=event)]
    return []
