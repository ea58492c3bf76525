"""What the page shows, as JSON: a step, an answer, a past session, the history list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report.html.data import Step, read_trace
from report.markdown import DONE_STATUSES, TaskRecord, read_records
from run.store import Run, RunStore


def readable_input(arguments: str) -> str:
    """A tool's input as lines of `key: value`, code with its real line breaks; plain text as it is."""
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return arguments
    if not isinstance(value, dict):
        return value if isinstance(value, str) else arguments
    lines = []
    for key, item in value.items():
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        lines.append(f"{key}:\n{text}" if "\n" in text else f"{key}: {text}")
    return "\n".join(lines)


def step_json(step: Step) -> dict[str, Any] | None:
    """One step as the page draws it; None for a step with nothing to show yet."""
    thought = step.thought if step.thought != step.final else ""
    if not (thought or step.tool or step.observation):
        return None
    return {"number": step.number, "thought": thought, "tool": step.tool,
            "input": readable_input(step.arguments) if step.tool else "", "observation": step.observation,
            "error": step.error}


def answer_json(record: TaskRecord) -> dict[str, Any]:
    """The answer with its numbered sources and the citation check's verdicts."""
    return {"answered": record.status in DONE_STATUSES, "status": record.status, "answer": record.answer,
            "error": record.error, "sources": record.sources, "citations": record.citations,
            "tokens": record.tokens, "cost": record.cost, "steps": record.steps}


def turn_json(record: TaskRecord, trace_dir: Path | None) -> dict[str, Any]:
    """A stored question with its steps (from its trace) and its answer."""
    own = trace_dir is not None and Path(record.id).name == record.id  # an id from results.jsonl names no folder
    trace = trace_dir / f"{record.id}.jsonl" if own and trace_dir else None
    steps = read_trace(trace, record.workspace) if trace and trace.is_file() and not trace.is_symlink() else []
    shown = [s for s in (step_json(step) for step in steps) if s is not None]
    return {"question": record.task, "attachment": None, "steps": shown, "answer": answer_json(record)}


def past_session(run: Run) -> dict[str, Any]:
    """A stored conversation (or ask), read-only: every question with its steps and answer."""
    kept = {} if run.records.is_symlink() else read_records(run.records)[0]  # the store's own file only
    records = sorted(kept.values(), key=lambda r: r.index)
    return {"id": run.id, "kind": run.info.kind, "turns": [turn_json(r, run.trace_dir) for r in records],
            "tokens": sum(r.tokens for r in records), "cost": run.info.cost}


def history(store: RunStore) -> list[dict[str, Any]]:
    """Every run in the store, newest first: date, title (first question or task file), answers, cost."""
    items = []
    for run in store.list_runs():
        info = run.info
        item = {"id": run.id, "kind": info.kind, "title": info.title, "when": info.started.replace("T", " ")[:16],
                "tasks": info.tasks, "answered": info.answered, "cost": info.cost, "status": info.status}
        if info.kind == "batch":
            item["results"] = f"/runs/{run.id}/results.html"
        elif info.kind == "research":
            item["results"] = f"/runs/{run.id}/report.html"
        items.append(item)
    return items
