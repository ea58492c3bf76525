"""results.md and its machine-readable twin (one JSON line per task), written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DONE_STATUSES = {"answered", "answered_unformatted"}


@dataclass
class TaskRecord:
    """Everything results.md shows about one task."""

    key: str
    id: str
    index: int
    task: str
    status: str
    answer: str | None = None
    sources: list[str] = field(default_factory=list)
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    cost: float | None = None
    seconds: float = 0.0
    models: list[str] = field(default_factory=list)
    error: str | None = None
    level: str | None = None
    workspace: str | None = None
    expected: str | None = None
    correct: bool | None = None

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


def records_path(results: Path) -> Path:
    """Where the JSON-lines record of a results file lives (results.md -> results.jsonl)."""
    return results.with_suffix(".jsonl") if results.suffix != ".jsonl" else results.with_suffix(".records.jsonl")


def load_records(results: Path) -> dict[str, TaskRecord]:
    """Records of a previous run, keyed by task hash; unreadable lines are skipped."""
    path = records_path(results)
    if not path.is_file():
        return {}
    known = {f.name for f in fields(TaskRecord)}
    out: dict[str, TaskRecord] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            out[data["key"]] = TaskRecord(**{k: v for k, v in data.items() if k in known})
        except (ValueError, KeyError, TypeError):
            continue
    return out


def atomic_write(path: Path, text: str) -> None:
    """Write text to path through a temp file and a rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(path: Path, records: list[TaskRecord], meta: dict[str, Any] | None = None) -> None:
    """Rewrite results.md and its JSON-lines record with the records, in task-file order."""
    ordered = sorted(records, key=lambda r: r.index)
    atomic_write(records_path(path), "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n"
                                             for r in ordered))
    atomic_write(path, render_markdown(ordered, meta or {}))


def _money(cost: float | None) -> str:
    if cost is None:
        return "n/a"
    return f"${cost:.4f}" if cost < 10 else f"${cost:,.2f}"


def _cell(text: str, width: int = 70) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > width:
        one_line = one_line[: width - 1] + "…"
    return one_line.replace("|", "\\|")


def _total_cost(records: list[TaskRecord]) -> float | None:
    costs = [r.cost for r in records]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def render_markdown(records: list[TaskRecord], meta: dict[str, Any]) -> str:
    """The Markdown report: a summary table, then one section per task."""
    scored = any(r.correct is not None for r in records)
    lines = ["# Research results", ""]
    lines += _summary_lines(records, meta, scored)
    header = "| # | Task | Status | Steps | Tokens | Cost | Seconds |" + (" Correct |" if scored else "")
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    for r in records:
        row = (f"| {r.index} | {_cell(r.task)} | {r.status} | {r.steps} | {r.tokens:,} | {_money(r.cost)} "
               f"| {r.seconds:.1f} |")
        if scored:
            row += f" {'—' if r.correct is None else ('✓' if r.correct else '✗')} |"
        lines.append(row)
    lines.append("")
    for r in records:
        lines += _section(r)
    return "\n".join(lines).rstrip() + "\n"


def _summary_lines(records: list[TaskRecord], meta: dict[str, Any], scored: bool) -> list[str]:
    by_status: dict[str, int] = {}
    for r in records:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    when = meta.get("finished") or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"{len(records)} tasks"] + [f"{n} {s}" for s, n in sorted(by_status.items())]
    parts += [f"{sum(r.tokens for r in records):,} tokens", f"cost {_money(_total_cost(records))}"]
    lines = [f"Run finished {when}" + (f" · model `{meta['model']}`" if meta.get("model") else ""),
             "", " · ".join(parts), ""]
    if scored:
        lines += [accuracy_line(records), ""]
    return lines


def accuracy_line(records: list[TaskRecord]) -> str:
    """Overall accuracy and, when tasks have a level, accuracy per level."""
    graded = [r for r in records if r.correct is not None]
    right = sum(1 for r in graded if r.correct)
    line = f"**Accuracy: {right}/{len(graded)} = {right / len(graded):.1%}**" if graded else "**Accuracy: n/a**"
    levels = sorted({r.level for r in graded if r.level is not None})
    for level in levels:
        group = [r for r in graded if r.level == level]
        ok = sum(1 for r in group if r.correct)
        line += f" · level {level}: {ok}/{len(group)} = {ok / len(group):.1%}"
    return line


def _section(r: TaskRecord) -> list[str]:
    title = _cell(r.task.splitlines()[0], 90)
    out = [f"## {r.index}. {title}", "", "**Question**", ""]
    out += ["> " + line if line else ">" for line in r.task.splitlines()]
    out += ["", "**Answer**", "", r.answer.strip() if r.answer else f"_No answer ({r.status})._", ""]
    if r.expected is not None:
        out += [f"**Expected:** {r.expected} — {'correct' if r.correct else 'incorrect'}", ""]
    if r.error:
        out += [f"**Error:** {r.error}", ""]
    out += ["**Sources**", ""]
    out += [f"- {url}" for url in r.sources] or ["_none fetched_"]
    models = ", ".join(r.models) or "n/a"
    out += ["", f"**Stats:** {r.status} · {r.steps} steps · {r.llm_calls} model calls · {r.tokens:,} tokens "
            f"({r.prompt_tokens:,} prompt + {r.completion_tokens:,} completion) · {_money(r.cost)} · "
            f"{r.seconds:.1f} s · model {models}", ""]
    return out
