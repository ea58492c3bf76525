"""results.md and its machine-readable twin (one JSON line per task), written atomically."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.files import atomic_write
from core.text import money, report_data, report_safe
from report.paths import records_path
from report.sources import markdown_lines, run_lines, sources_cell, without_sources
from report.stopped import is_run_line, resume_line, title

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
    sources: list[dict[str, Any]] = field(default_factory=list)  # {n, url, title, read, error} (sources/ledger.py)
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
    unsure: bool | None = None  # the scorer could not decide for sure (see tasks/scoring.py)
    correct_official: bool | None = None  # the official GAIA scorer's verdict, for comparable numbers
    model: str | None = None  # the run's --model (records of a resumed file may come from several runs)
    cached_calls: int = 0  # model calls answered by --cache/--replay: `cost` counts them as $0 ...
    cached_cost: float | None = 0.0  # ... and this is what they cost when they were recorded
    cached_tokens: int = 0  # of prompt_tokens, read from the providers' prompt caches (billed cheaper)
    cache_write_tokens: int = 0  # of prompt_tokens, written to a prompt cache (Anthropic)
    citations: list[dict[str, Any]] = field(default_factory=list)  # {n, url, claim, verdict} (sources/check.py)
    sourced: bool | None = None  # read at least one source; None: a record written before sources were tracked
    tool_failures: list[dict[str, Any]] = field(default_factory=list)  # {step, tool, error} of each failed call
    attachment: str | None = None  # the name of the task's attached file (the report says whether it was read)
    trace: str | None = None  # this task's trace file, in its own run's trace directory (run/store.py)
    notes: list[str] = field(default_factory=list)  # the notes the model kept with the notes tool (tools/notes.py)
    node: str | None = None  # --executor ray: the cluster node that ran the task
    files_cut: list[str] = field(default_factory=list)  # --executor ray: workspace files not brought back (size)
    defused: list[str] = field(default_factory=list)  # set-ID bits cleared, device nodes removed at the task's end

    def __post_init__(self) -> None:
        # Records written before sources were numbered hold plain URLs (all of them read successfully).
        if any(isinstance(s, str) for s in self.sources):
            self.sources = [{"n": i, "url": s, "title": "", "read": True, "error": None} if isinstance(s, str) else s
                            for i, s in enumerate(self.sources, start=1)]
            if self.sourced is None:
                self.sourced = True

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


def load_records(results: Path) -> dict[str, TaskRecord]:
    """Records of a previous run, keyed by task hash; unreadable lines are skipped."""
    return read_records(records_path(results))[0]


def read_records(path: Path) -> tuple[dict[str, TaskRecord], list[int]]:
    """The records of a JSON-lines file, keyed by task hash (a later line wins), and the unreadable line numbers."""
    if not path.is_file():
        return {}, []
    known = {f.name for f in fields(TaskRecord)}
    out: dict[str, TaskRecord] = {}
    skipped: list[int] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if is_run_line(data):  # a stopped run's header (report/stopped.py), not a task
                    continue
                out[data["key"]] = TaskRecord(**{k: v for k, v in data.items() if k in known})
            except (ValueError, KeyError, TypeError):
                skipped.append(number)
    return out, skipped


def record_line(record: TaskRecord) -> str:
    """One record as the records file holds it: a JSON object on one line."""
    return json.dumps(report_data(asdict(record)), ensure_ascii=False) + "\n"


def write_results(path: Path, records: list[TaskRecord], meta: dict[str, Any] | None = None) -> None:
    """Rewrite results.md and its JSON-lines record with the records, in task-file order."""
    ordered = sorted(records, key=lambda r: r.index)
    atomic_write(records_path(path), "".join(record_line(r) for r in ordered))
    atomic_write(path, render_markdown(ordered, meta or {}))


QUESTION_CHARS = 4_000  # the reports show this much of a task's text; results.jsonl keeps it whole


def plural(n: int, noun: str) -> str:
    """`1 step`, `2 steps`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _cell(text: str, width: int = 70) -> str:
    one_line = " ".join(text.split())
    if len(one_line) > width:
        one_line = one_line[: width - 1] + "…"
    return safe_markdown(one_line).replace("|", "\\|")


# A fence opens or closes code (a backtick fence's info string has no backtick); a code span is a backtick
# run (not escaped, not part of a longer run) closed by a run of the same length. Where this reader and a
# Markdown renderer could differ, the text is treated as not code: escaped, never left raw.
_FENCE = re.compile(r"^ {0,3}(?:(`{3,})[^`]*|(~{3,}).*)$")
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\n]*)\)")
_WEB_TARGET = re.compile(r'(?i)(<https?://[^\s<>]*>|https?://[^\s<>]*)(\s+"[^"\n]*")?')
_TARGET_AFTER = re.compile(r"\]([(:])(\s*<?)([^\s)>]*)")  # `](target` or `]: target`, its label perhaps lines above


def safe_markdown(text: str) -> str:
    """Untrusted Markdown (an answer, a question) that stays Markdown but holds no raw HTML and no link other than
    http(s): outside code, `<` becomes `&lt;`, a link or reference to any other target keeps only its label,
    and an image becomes a link (a viewer would load it unasked). Code spans and fenced blocks are left as
    they are: they are shown, never rendered."""
    out, fence = [], ""
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        marker = opened.group(1) or opened.group(2) if opened else ""
        if fence and marker.startswith(fence) and not line.strip().strip(fence[0]):
            fence = ""  # the closing fence
        elif not fence and marker:
            fence = marker[0] * 3
        elif not fence:
            line = _inline_safe(line)
        out.append(line)
    return "\n".join(out)


def _inline_safe(line: str) -> str:
    """One line outside a fenced block: links made safe on the whole line (a label may hold code), then `<`
    escaped outside code spans."""
    line = _LINK.sub(lambda m: f"[{m.group(1)}]({m.group(2)})" if _WEB_TARGET.fullmatch(m.group(2).strip())
                     else m.group(1), line)
    line = _TARGET_AFTER.sub(lambda m: m.group() if re.match(r"(?i)https?://", m.group(3)) else "\\" + m.group(),
                             line).replace("![", "!\\[")
    pieces, pos = [], 0
    for span in _CODE_SPAN.finditer(line):
        pieces += [line[pos:span.start()].replace("<", "&lt;"), span.group()]
        pos = span.end()
    pieces.append(line[pos:].replace("<", "&lt;"))
    return "".join(pieces)


def tasks_count(done: int, total: Any = None) -> str:
    """`5 tasks`, or `2 of 5 tasks` when the run had more tasks than the report holds (a stopped run)."""
    known = int(total) if str(total or "").isascii() and str(total or "").isdigit() else 0
    return f"{done:,} of {plural(known, 'task')}" if known > done else plural(done, "task")


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of these costs, or None (shown `n/a`) when any of them is unknown."""
    known = list(costs)
    return None if any(c is None for c in known) else float(sum(c for c in known if c is not None))


def render_markdown(records: list[TaskRecord], meta: dict[str, Any]) -> str:
    """The Markdown report: a summary table, then one section per task."""
    scored = any(r.correct is not None for r in records)
    lines = ["# Research results", ""]
    lines += _summary_lines(records, meta, scored)
    header = ("| # | Task | Answer | Status | Steps | Tokens | Cost | Seconds | Sources |"
              + (" Expected | Correct |" if scored else ""))
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    for r in records:
        sources = sources_cell(r.sources, without_sources(r.sourced, r.status in DONE_STATUSES))
        answer = _cell(r.answer, 50) if r.answer else "—"
        row = (f"| {r.index} | {_cell(r.task)} | {answer} | {r.status} | {r.steps} | {r.tokens:,} | {money(r.cost)} "
               f"| {r.seconds:.1f} | {sources} |")
        if scored:
            expected = _cell(r.expected, 40) if r.expected is not None else "—"
            row += f" {expected} | {'—' if r.correct is None else ('✓' if r.correct else '✗')} |"
        lines.append(row)
    lines.append("")
    for r in records:
        lines += _section(r)
    return report_safe("\n".join(lines).rstrip() + "\n")


def _summary_lines(records: list[TaskRecord], meta: dict[str, Any], scored: bool) -> list[str]:
    by_status: dict[str, int] = {}
    for r in records:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    when = meta.get("finished") or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [tasks_count(len(records), meta.get("total"))] + [f"{n} {s}" for s, n in sorted(by_status.items())]
    parts += [f"{sum(r.tokens for r in records):,} tokens", f"cost {money(total_cost(r.cost for r in records))}"]
    models = list(dict.fromkeys(m for m in [meta.get("model"), *(r.model for r in records)] if m))
    used = (" · model " if len(models) == 1 else " · models ") + ", ".join(f"`{m}`" for m in models)
    lines = [title(meta, when) + (used if models else ""), "", " · ".join(parts), ""]
    if resume_line(meta):
        lines += [f"Resume with: `{resume_line(meta)}`", ""]
    if meta.get("note"):
        lines += [str(meta["note"]), ""]
    if meta.get("skipped"):  # tasks a spend cap kept from starting (providers/budget.py)
        lines += [f"**{meta['skipped']}**", ""]
    if scored:
        lines += [accuracy_line(records), ""]
    return lines + run_lines(records, DONE_STATUSES)  # citations by verdict, answers without sources


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
    official = [r for r in graded if r.correct_official is not None]
    if official:
        ok = sum(1 for r in official if r.correct_official)
        line += f" · official GAIA scorer: {ok}/{len(official)} = {ok / len(official):.1%}"
    unsure = sum(1 for r in graded if r.unsure)
    if unsure:
        line += f" · {unsure} verdict{'s' if unsure != 1 else ''} unsure"
    return line


def _from_cache(r: TaskRecord) -> str:
    if not r.cached_calls:
        return ""
    return f" · {plural(r.cached_calls, 'call')} from the cache ({money(r.cached_cost)} when recorded)"


def shown_task(text: str) -> str:
    """A task's text as results.md and results.html show it: cut after QUESTION_CHARS (a 1 MB question is kept
    whole once, in results.jsonl, not copied into every report)."""
    if len(text) <= QUESTION_CHARS:
        return text
    return f"{text[:QUESTION_CHARS]} … [{len(text) - QUESTION_CHARS:,} more characters: the whole task is in the " \
           "records file, results.jsonl]"


def _section(r: TaskRecord) -> list[str]:
    title = _cell((r.task.splitlines() or [""])[0], 90)
    out = [f"## {r.index}. {title}", "", "**Question**", ""]
    out += ["> " + line if line else ">" for line in safe_markdown(shown_task(r.task)).splitlines()]
    out += ["", "**Answer**", "", safe_markdown(r.answer.strip()) if r.answer else f"_No answer ({r.status})._", ""]
    if r.expected is not None:
        out += [f"**Expected:** {safe_markdown(r.expected)} — {'correct' if r.correct else 'incorrect'}", ""]
    if r.error:
        out += [f"**Error:** {safe_markdown(r.error)}", ""]
    out += markdown_lines(r.sources, r.citations, r.tool_failures,
                          without_sources(r.sourced, r.status in DONE_STATUSES), r.attachment)  # report/sources.py
    models = ", ".join(r.models) or "n/a"
    out += ["", f"**Stats:** {r.status} · {plural(r.steps, 'step')} · {plural(r.llm_calls, 'model call')} · "
            f"{r.tokens:,} tokens "
            f"({r.prompt_tokens:,} prompt{_cache_note(r)} + {r.completion_tokens:,} completion) · {money(r.cost)} · "
            f"{r.seconds:.1f} s · model {models}" + _from_cache(r), ""]
    return out


def _cache_note(r: TaskRecord) -> str:
    """The note after the prompt tokens, e.g. ' (1,200 cached)', when prompts were partly cached."""
    parts = [f"{r.cached_tokens:,} cached"] if r.cached_tokens else []
    parts += [f"{r.cache_write_tokens:,} written to cache"] if r.cache_write_tokens else []
    return f" ({', '.join(parts)})" if parts else ""
