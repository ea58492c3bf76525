"""The run as the HTML page shows it: records from results.jsonl joined with their JSONL traces."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from report.markdown import read_records as typed_records
from report.note import read_note
from report.stopped import read_header

_LABEL = re.compile(r"^\s*(Action\s*:|Final\s+Answer\s*:)", re.IGNORECASE | re.MULTILINE)
_FINAL = re.compile(r"^\s*Final\s+Answer\s*:", re.IGNORECASE | re.MULTILINE)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.IGNORECASE)
URL = re.compile(r"https?://[^\s\"'<>)\]]+")


@dataclass
class Call:
    """One model call made during a step."""

    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    latency: float = 0.0
    finish_reason: str = ""
    retries: int = 0
    cached: bool = False
    purpose: str = "step"  # step | summary | final


@dataclass
class Step:
    """One step of the timeline: what the model wrote, the tool it called and what came back."""

    number: int
    completion: str = ""
    thought: str = ""
    final: str = ""
    tool: str | None = None
    arguments: str = ""
    raw_arguments: Any = None  # as the trace holds them (a dict): code arguments are shown as code
    observation: str = ""
    full_chars: int = 0
    saved: str | None = None
    duration: float = 0.0
    error: str | None = None
    calls: list[Call] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        """True when the model saw a shortened observation."""
        return self.full_chars > len(self.observation)


@dataclass
class Task:
    """One task: its record (as a dict, so newer fields pass through) and its timeline."""

    record: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    source_tools: dict[str, str] = field(default_factory=dict)
    trace: Path | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the record."""
        value = self.record.get(key, default)
        return default if value is None else value


@dataclass
class Run:
    """Everything the page shows."""

    tasks: list[Task]
    meta: dict[str, Any]
    records_file: Path


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a results .jsonl file in task order (report.read_records: bad lines skipped, last wins)."""
    records = sorted(typed_records(path)[0].values(), key=lambda r: (r.index, r.id))
    return [asdict(r) for r in records]


def json_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, skipping lines that are not one (a missing file has none)."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                yield value


def load_run(records_file: Path, trace_dirs: list[Path], meta: dict[str, Any]) -> Run:
    """Read the records and, for each, the trace found in the first of trace_dirs that has it."""
    # What the run said about itself: tasks a cap skipped (the note), why it stopped (the records' run line).
    meta = {**read_note(records_file), **read_header(records_file), **meta}
    tasks = []
    for record in read_records(records_file):
        task = Task(record)
        task.trace = find_trace(record, trace_dirs)
        if task.trace is not None:
            task.steps = read_trace(task.trace, workspace=record.get("workspace"))
        task.source_tools = source_tools([str(s.get("url")) for s in record.get("sources") or []], task.steps)
        tasks.append(task)
    return Run(tasks, meta, records_file)


def find_trace(record: dict[str, Any], trace_dirs: list[Path]) -> Path | None:
    """The trace file of a record: the one it names (its own run's, None once pruned), else <dir>/<id>.jsonl in
    the first of trace_dirs that has it (records written before runs were kept apart name none)."""
    named = record.get("trace")
    if isinstance(named, str):  # never another run's trace of the same task id (it may have been pruned)
        return Path(named) if Path(named).is_file() else None
    for directory in trace_dirs:
        candidate = directory / f"{record.get('id')}.jsonl"
        if candidate.is_file():
            return candidate
    return None


def read_trace(path: Path, workspace: str | None = None) -> list[Step]:
    """The step timeline of one trace file (events of unknown kinds are ignored)."""
    steps: dict[int, Step] = {}
    for event in json_objects(path):
        _apply(event, steps, workspace)
    return [steps[n] for n in sorted(steps)]


def _apply(event: dict[str, Any], steps: dict[int, Step], workspace: str | None) -> None:
    kind, number = event.get("kind"), int(event.get("step") or 0)
    if kind not in {"llm_call", "tool_call", "summary", "final", "step_start"}:
        return
    step = steps.setdefault(number, Step(number))
    if kind == "llm_call":
        _apply_call(event, step)
    elif kind == "tool_call":
        _apply_tool(event, step, workspace)
    elif kind == "summary":
        step.summaries.append(str(event.get("summary") or event.get("text") or ""))
        if any(k in event for k in ("prompt_tokens", "completion_tokens")):
            step.calls.append(_call(event, "summary"))


def _apply_call(event: dict[str, Any], step: Step) -> None:
    completion = str(event.get("completion") or "")
    if step.completion and completion:
        step.calls.append(_call(event, "final"))
        step.completion += "\n\n" + completion
    else:
        step.calls.append(_call(event, "step"))
        step.completion = completion
    step.thought = thought_of(step.completion)
    step.final = final_of(step.completion)


def _apply_tool(event: dict[str, Any], step: Step, workspace: str | None) -> None:
    step.tool = event.get("tool")
    arguments = event.get("arguments")
    step.raw_arguments = arguments
    step.arguments = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False,
                                                                                 indent=1)
    step.observation = str(event.get("observation") or "")
    step.full_chars = int(event.get("full_observation_chars") or len(step.observation))
    step.duration = float(event.get("duration") or 0.0)
    step.error = event.get("error")
    if step.cut and workspace:
        step.saved = str(Path(workspace) / "observations" / f"step-{step.number:02d}.txt")


def _call(event: dict[str, Any], purpose: str) -> Call:
    def num(key: str) -> int:
        value = event.get(key)
        return int(value) if isinstance(value, int | float) else 0

    cost = event.get("cost")
    return Call(model=str(event.get("model") or ""), prompt_tokens=num("prompt_tokens"),
                completion_tokens=num("completion_tokens"),
                cached_tokens=num("cached_tokens") or num("cache_read_tokens"),
                cost=float(cost) if isinstance(cost, int | float) else None,
                latency=float(event.get("latency") or 0.0), finish_reason=str(event.get("finish_reason") or ""),
                retries=num("retries"), cached=bool(event.get("cached")), purpose=purpose)


def thought_of(completion: str) -> str:
    """The reasoning part of a completion: the text before its Action or Final Answer label."""
    match = _LABEL.search(completion)
    head = completion[: match.start()] if match else completion
    return _THOUGHT.sub("", head.strip(), count=1).strip()


def final_of(completion: str) -> str:
    """The answer of a completion that ends the task: the text after its last `Final Answer:` label."""
    labels = list(_FINAL.finditer(completion))
    return completion[labels[-1].end():].strip() if labels else ""


def source_tools(sources: list[str], steps: list[Step]) -> dict[str, str]:
    """For each source URL or file, the tool of the first step whose arguments or observation name it."""
    found: dict[str, str] = {}
    for source in sources:
        for step in steps:
            if step.tool and (source in step.arguments or source in step.observation[:4000]):
                found[source] = step.tool
                break
    return found


def apply_event(event: dict[str, Any], steps: dict[int, Step], workspace: str | None = None) -> Step | None:
    """Fold one trace event into a timeline being built (`main.py ui` streams live events so); the step touched."""
    _apply(event, steps, workspace)
    return steps.get(int(event.get("step") or 0))
