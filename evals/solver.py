"""One Inspect sample run by the agent: its settings, the worker thread it runs in, and how it ends.

The agent is synchronous; Inspect's samples share one asyncio loop. Each sample's agent runs in a thread of
one pool whose threads are started only while samples run (its cap far above any `--max-samples`), so there
is a thread for every running sample whatever the eval's concurrency (the loop's default executor, 6 threads
here, deadlocked at 9 samples). The thread runs in a copy of the sample's context, with the sample bound
for `inspect:` models (providers/inspect_model.py), and does what a batch task does (run/batch.py's
BatchRunner.run_task: the agent, its tools, trace, workspace and stop flag, in a run of the run store).

However the sample ends early (a limit that Inspect's model API raised, a time limit or a cancellation that
ends the solver's await), the binding is halted: no new model call is dispatched, the one in flight is
cancelled, the agent stops at its next step boundary and the solver waits for its thread (at most STOP_WAIT
seconds: a tool call still running is cut by the agent's own deadline, TIME_OVER after the sample's time limit).
Inspect's LimitExceededError is re-raised as it is, so the sample is marked limited as Inspect marks its own
agents; a model error after Inspect's retries is re-raised as Inspect raised it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agent import ReActAgent
from config import Settings, load_settings
from core.errors import ConfigError, StopRequested
from evals.sample import (
    agent_metadata,
    record_tool_call,
    record_tool_event,
    record_turn,
    sample_files,
    sample_prompt,
    short_answer,
    stage_sample_files,
)
from providers.budget import RunBudget
from providers.inspect_model import PROVIDER, InspectModelError, SampleBinding, new_binding
from report.markdown import TaskRecord, record_line
from report.research import SOURCES_DIR, render_markdown
from research.pipeline import Progress, Research
from run.batch import BatchRunner, build_agent
from run.execute import checked_models
from run.store import RunStore
from tasks.taskfile import Task, task_key
from tools.base import ToolRegistry
from tools.mcp import configured_specs, mcp_session
from tools.web.session import web_session

T = TypeVar("T")
MAX_THREADS = 4096  # a cap, not a size: threads start only as samples run at once (and are reused)
STOP_WAIT = 30.0  # seconds a stopped sample's thread may take to end before the solver stops waiting
TIME_OVER = 1.0  # seconds after the sample's time limit that the agent's own deadline cuts a tool call still running
_POOL: ThreadPoolExecutor | None = None


@dataclass(frozen=True)
class AgentOptions:
    """The solver's `-S` arguments: settings the agent takes from them (None: from .env / the environment)."""

    tools: tuple[str, ...] = ()  # the tools the agent gets (names); (): every tool it would get on the CLI
    max_steps: int | None = None
    answer_style: str | None = None
    search: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    depth: int = 1  # research_agent: rounds
    breadth: int | None = None  # research_agent: sub-questions at most (None: research's default)

    def settings(self) -> Settings:
        """The agent's settings: .env and the environment as on the command line (trust applies), these on top."""
        flags = {"max_steps": self.max_steps, "answer_style": self.answer_style, "search": self.search,
                 "max_tokens": self.max_tokens, "temperature": self.temperature}
        return load_settings(cli=flags)


def names(value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """`-S tools=python,read_file` or a list: the names, trimmed."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(n.strip() for n in items if n.strip())


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="inspect-agent")
    return _POOL


def sample_settings(base: Settings, model: str) -> Settings:
    """The sample's settings: the eval's model through Inspect, the agent's deadline within the sample's time."""
    from inspect_ai.util import sample_limits

    settings = dataclasses.replace(base, model=f"{PROVIDER}:{model}", fallback_models=())
    try:
        left = sample_limits().time.remaining
    except (LookupError, RuntimeError):
        left = None
    if left is not None:
        # Inspect's limit fires first (the sample is marked limited and the agent told to stop); the agent's own
        # deadline, just after it, cuts the tool call it may be waiting for, so its thread ends at once.
        settings = dataclasses.replace(settings, task_timeout=min(settings.task_timeout, left + TIME_OVER))
    return settings


async def in_worker(binding: SampleBinding, work: Callable[[], T]) -> T:
    """Run `work` in a pool thread in the sample's context; however the await ends, the thread is stopped and
    waited for before the solver goes on. A limit that fired while it ran (in a model call or a posted event,
    which the agent may have seen only as the stop) is raised here, as is a posted event's failure."""
    import anyio
    from inspect_ai.util import LimitExceededError

    future = _pool().submit(binding.context.copy().run, work)
    try:
        result = await asyncio.wrap_future(future)
    except BaseException as exc:
        if isinstance(exc, LimitExceededError):
            binding.limit = binding.limit or exc
        binding.halt()
        with anyio.CancelScope(shield=True):
            ends = time.monotonic() + STOP_WAIT
            while not future.done() and time.monotonic() < ends:
                await anyio.sleep(0.02)
        raise
    finally:
        binding.halt()  # the agent's tools and threads have ended with it; nothing is dispatched any more
    if binding.limit is not None:
        raise binding.limit
    if binding.failed is not None:  # a transcript event posted after the agent's last call failed on the loop
        raise binding.failed
    return result


async def run_react(state: Any, base: Settings, options: AgentOptions) -> Any:
    """One sample through the ReAct agent: state.output is its answer, state.metadata["agent"] how it went.

    The eval's loop serves every sample: all but what must run there (the sample's files, Inspect's model calls,
    the transcript) is done in the sample's worker thread, the run store's files with the rest."""
    from inspect_ai.model import ModelOutput, get_model

    model = str(get_model())
    settings = sample_settings(base, model)
    title, text = f"{state.sample_id}: {state.input_text}", state.input_text
    task = Task(0, text, f"sample-{task_key(str(state.sample_id))[:12]}")
    given = sample_files()  # read here, so a sample without files needs no hand-over to stage them
    binding = new_binding()

    def on_event(_task: Task, event: Any) -> None:  # in the worker: posted to the loop, in order, not waited for
        if event.kind == "llm_call":
            binding.post(record_turn, state, event.data.get("completion", ""), event.data.get("model", ""))
        elif event.kind == "tool_call":
            binding.post(record_tool_call, state, event.data)

    def work() -> tuple[TaskRecord | None, list[str], str]:
        run = RunStore.from_settings(settings).create("inspect", title, settings)
        try:
            record, files = _react_in_run(run.apply(settings), binding, task, options, on_event, given)
        except BaseException as exc:  # a limit or a stop ended it; anything else failed
            stopped = binding.limit is not None or isinstance(exc, StopRequested) or not isinstance(exc, Exception)
            run.finish(tasks=1, answered=0, cost=None, status="stopped" if stopped else "failed")
            raise
        if record is None:  # stopped without a limit: Inspect cancelled the sample
            run.finish(tasks=1, answered=0, cost=None, status="stopped")
            return None, files, run.id
        with run.records.open("a", encoding="utf-8") as f:  # `main.py runs`, `report RUN` and the web app show it
            f.write(record_line(record))
        run.finish(tasks=1, answered=int(record.answer is not None), cost=record.cost, status="finished")
        return record, files, run.id

    try:
        record, files, run_id = await in_worker(binding, work)
    except InspectModelError as exc:
        raise exc.original from None
    if record is None:
        return state
    state.output = ModelOutput.from_content(model=model, content=record.answer or "")
    state.metadata["agent"] = agent_metadata(record, files, run_id)
    return state


def _react_in_run(settings: Settings, binding: SampleBinding, task: Task, options: AgentOptions,
                  on_event: Callable[[Task, Any], None], given: dict[str, str]) -> tuple[TaskRecord | None, list[str]]:
    """The sample's agent in its run (in the worker thread): the sample's files staged, then the task run."""
    workspace = (settings.workspace or Path("workspace")).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    files = binding.on_loop(stage_sample_files(workspace, given)) if given else []
    llm, summary_llm = checked_models(settings, None)  # tools, paths and the OS sandbox checked as on the CLI
    runner = BatchRunner(settings, llm, settings.model or "", on_record=lambda _record: None, on_event=on_event,
                         summary_llm=summary_llm, agent_factory=_agent_factory(options.tools),
                         budget=RunBudget.from_settings(settings, llm),  # AGENT_MAX_COST and the like
                         stop=binding.stop)
    with mcp_session(configured_specs(settings)), web_session(settings):
        return runner.run_task(task, workspace, prompt=sample_prompt(task.text, files)), files


def _agent_factory(keep: tuple[str, ...]) -> Callable[..., ReActAgent]:
    """build_agent, with only the tools named by `-S tools=...` when given."""
    def factory(*args: Any, **kwargs: Any) -> ReActAgent:
        agent = build_agent(*args, **kwargs)
        if keep:
            available = agent.tools.names()
            unknown = [n for n in keep if n not in available]
            if unknown:
                raise ConfigError(f"-S tools names {', '.join(unknown)}, which this agent does not have here;"
                                  f" its tools: {', '.join(available)}", "tools")
            agent.tools = ToolRegistry([t for t in agent.tools if t.name in keep])
        return agent
    return factory


async def run_research(state: Any, base: Settings, options: AgentOptions) -> Any:
    """One sample through the deep research pipeline: state.output is the report's short answer (a sentence with
    its `[n]`), state.metadata["report"] the whole report's Markdown with its `## Sources`."""
    from inspect_ai.model import ModelOutput, get_model

    model = str(get_model())
    settings = sample_settings(base, model)
    store = RunStore.from_settings(settings)
    binding = new_binding()
    with tempfile.TemporaryDirectory(prefix="inspect-files-") as staging:  # the research copies them to its tasks
        files = [Path(staging) / name for name in await stage_sample_files(Path(staging), sample_files())]
        extra: dict[str, Any] = {"breadth": options.breadth} if options.breadth else {}
        steps = _Steps(binding)
        research = Research(settings, state.input_text, store, files=files, depth=options.depth, stop=binding.stop,
                            progress=steps, **extra)

        def work() -> Any:
            report = research.run()
            assert research.run_dir is not None
            return report, render_markdown(report, research.run_dir / SOURCES_DIR)

        try:
            report, markdown = await in_worker(binding, work)
        except InspectModelError as exc:
            raise exc.original from None
    answer = short_answer(report.body)
    state.output = ModelOutput.from_content(model=model, content=answer)
    state.metadata["report"] = markdown
    state.metadata["agent"] = {
        "status": "partial" if report.partial else "answered", "partial": report.partial,
        "steps": steps.steps, "sub_questions": len(report.plan),
        "prompt_tokens": binding.prompt_tokens, "completion_tokens": binding.completion_tokens,
        "llm_calls": binding.calls, "cost": report.cost, "answer": answer, "sources": report.sources,
        "citations": report.citations, "files": [f.name for f in files], "run": report.run_id}
    return state


class _Steps(Progress):
    """A research's progress: its sub-questions' tool calls as Inspect tool events, and their steps counted."""

    def __init__(self, binding: SampleBinding) -> None:
        self.binding, self.steps = binding, 0

    def on_event(self, task: Task, event: Any) -> None:
        if event.kind == "tool_call":
            self.binding.post(record_tool_event, event.data)

    def on_record(self, record: TaskRecord) -> None:
        self.steps += record.steps
