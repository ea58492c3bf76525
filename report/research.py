"""A research report (`main.py research`): its data as report.json keeps it, and report.md written from it.

The report is plain data (ResearchReport) so that `main.py report RUN` rebuilds report.md and report.html
from the run store without the pipeline (research/) that made it. Its body is the writer's Markdown with
the final `[n]` numbers and a `⚠ unsupported` mark beside each claim that failed the check; the sources are
numbered in order of first use, the ones read but not cited and the ones that could not be read follow.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from core.files import atomic_write
from core.text import money, report_data, report_safe
from report.markdown import safe_markdown
from report.sources import VERDICT_NOTE, citation_line, claim_text, md_source
from sources.check import FAILING, claims_line

REPORT_FILE = "report.json"  # in the run's directory (run/store.py)
SOURCES_DIR = "sources"  # <run>/sources/<n>.txt: the text source n gave, what its citations were judged against
MARK = "⚠ unsupported"
HEADINGS = ("Research report", "Partial research report", "No report: nothing could be read", "Partial report",
            "Sources", "Also read, not cited", "Could not be read (never cited)", "Citations checked",
            "Research plan")  # the report's own words a --language report has translated (research/language.py)
_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


@dataclass
class SubQuestion:
    """One sub-question of the plan and how its research went."""

    n: int
    text: str
    task_id: str = ""
    status: str = "not started"  # a task status (answered, error, budget, ...), "not started" or "stopped"
    answered: bool = False  # its research gave findings the report could use (an answer, also a best-effort one)
    error: str | None = None
    sources: int = 0  # sources it read
    cost: float | None = 0.0
    seconds: float = 0.0
    round: int = 1  # --depth: the round it was researched in (2 and on: asked by a follow-up call)


@dataclass
class ResearchReport:
    """Everything report.md and report.html show; report.json in the run store holds it."""

    question: str
    body: str = ""  # Markdown sections with final [n] numbers and marks
    sources: list[dict[str, Any]] = field(default_factory=list)  # {n, url, title}: cited, in order of first use
    also_read: list[dict[str, Any]] = field(default_factory=list)  # {url, title}: read, not cited
    not_read: list[dict[str, Any]] = field(default_factory=list)  # {url, title, error}: never citable
    citations: list[dict[str, Any]] = field(default_factory=list)  # {n, url, claim, verdict, passage}
    plan: list[SubQuestion] = field(default_factory=list)
    partial: str | None = None  # why the report is partial (a cap, a failed sub-question, a stop)
    nothing_read: bool = False
    repair: dict[str, Any] = field(default_factory=dict)  # {checked, failing, sent_back, repaired, marked}
    run_id: str = ""
    model: str = ""
    cost: float | None = None
    finished: str = ""
    notes: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)  # the planner's, writer's, judge's own (--writer-model)
    labels: dict[str, str] = field(default_factory=dict)  # the report's own headings in --language, by English

    def to_json(self) -> dict[str, Any]:
        """As report.json keeps it."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResearchReport:
        """From report.json (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        sub_fields = {f.name for f in fields(SubQuestion)}
        report = cls(**{k: v for k, v in data.items() if k in known and k != "plan"})
        report.plan = [SubQuestion(**{k: v for k, v in p.items() if k in sub_fields}) for p in data.get("plan", [])]
        return report

    @property
    def marked(self) -> int:
        """Claims delivered with a mark because they still failed the check."""
        return len({c["claim"] for c in self.citations if c.get("verdict") in FAILING})

    def title(self) -> str:
        """The report's title line (without the question), in English (heading() gives it in --language)."""
        if self.nothing_read:
            return "No report: nothing could be read"
        return "Partial research report" if self.partial else "Research report"

    def heading(self, english: str) -> str:
        """One of the report's own headings (HEADINGS) as the report shows it: in --language when it was asked."""
        return self.labels.get(english) or english


def load_report(run_dir: Path) -> ResearchReport | None:
    """The report a research run delivered, or None when it has none (yet)."""
    path = run_dir / REPORT_FILE
    if not path.is_file():
        return None
    return ResearchReport.from_json(json.loads(path.read_text(encoding="utf-8")))


def save_report(run_dir: Path, report: ResearchReport, texts: dict[int, str]) -> None:
    """report.json and each numbered source's text (sources/<n>.txt) in the run's directory."""
    folder = run_dir / SOURCES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.txt"):
        old.unlink()
    for n, text in texts.items():
        atomic_write(folder / f"{n}.txt", report_safe(text))
    atomic_write(run_dir / REPORT_FILE, json.dumps(report_data(report.to_json()), ensure_ascii=False, indent=1) + "\n")


def prose(text: str) -> str:
    """A line of ours holding outside text (an error, a reason, a question) made inert in Markdown: no links,
    HTML, code or emphasis; parentheses and `#` stay readable."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def render_markdown(report: ResearchReport, texts_dir: Path | None = None) -> str:
    """report.md: title, partial note, the claims line, the sections, Sources, Citations checked, the plan."""
    h = report.heading
    lines = [f"# {prose(h(report.title()))}: {prose(report.question)}", ""]
    if report.partial:
        lines += [f"> **{prose(h('Partial report'))}:** {prose(report.partial)}", ""]
    lines += [f"_{summary_line(report)}_", ""]
    if report.citations:
        lines += [f"**{claims_line(report.citations)}**" + _marked_note(report), ""]
    lines += [safe_markdown(report.body).strip(), ""]
    lines += _sources_md(report, texts_dir)
    if report.citations:
        lines += [f"## {prose(h('Citations checked'))}", "", f"_{VERDICT_NOTE}._", "",
                  *(citation_line(c) for c in report.citations), ""]
        if note := across_languages_note(report):
            lines += [f"_{prose(note[0])}_", "", *(f"- {prose(line)}" for line in note[1:]), ""]
    lines += [f"## {prose(h('Research plan'))}", "", *(plan_line(s) for s in report.plan), ""]
    lines += [prose(n) for n in report.notes] + ([""] if report.notes else [])
    return "\n".join(lines).rstrip() + "\n"


def _marked_note(report: ResearchReport) -> str:
    marked = report.marked
    return f" · {marked} claim{'s' if marked != 1 else ''} marked {MARK}" if marked else ""


def summary_line(report: ResearchReport) -> str:
    """`<date> · model m · writer w · 5 sub-questions (4 answered) · 7 sources · $0.0400 · run ID` (a planner,
    writer or judge of its own named beside the model)."""
    answered = sum(s.answered for s in report.plan)
    parts = [report.finished, f"model {report.model}" if report.model else "",
             *(f"{role} {spec}" for role, spec in report.models.items()),
             f"{len(report.plan)} sub-question{'s' if len(report.plan) != 1 else ''} ({answered} answered)"
             + (f" in {rounds(report)} rounds" if rounds(report) > 1 else ""), f"{len(report.sources)} sources cited",
             f"cost {money(report.cost)}", f"run {report.run_id}" if report.run_id else ""]
    return " · ".join(p for p in parts if p)


def _sources_md(report: ResearchReport, texts_dir: Path | None) -> list[str]:
    h = report.heading
    out = [f"## {prose(h('Sources'))}", ""]
    out += [f"{s['n']}. {md_source(s)}" for s in report.sources] or ["_none cited_"]
    if report.also_read:
        out += ["", f"{prose(h('Also read, not cited'))}:", "", *(f"- {md_source(s)}" for s in report.also_read)]
    if report.not_read:
        out += ["", f"{prose(h('Could not be read (never cited)'))}:", "",
                *(f"- {md_source(s)} — {prose(s.get('error') or 'failed')}" for s in report.not_read)]
    if texts_dir is not None and report.sources:
        out += ["", f"The text each source gave when it was read, which its citations were judged against, is "
                    f"kept in the run store as `{stored_texts(texts_dir)}` (`N.txt` for source N)."]
    return out + [""]


def across_languages_note(report: ResearchReport) -> list[str]:
    """The claims written in another language than their source, judged on names, figures and dates only."""
    crossed = [c for c in report.citations if c.get("across_languages")]
    if not crossed:
        return []
    head = (f"{len(crossed)} claim{'s' if len(crossed) != 1 else ''} could only be judged on names, figures and "
            "dates (written in another language than the source cited):")
    return [head, *(f"[{c.get('n')}] {claim_text(c)}" for c in crossed)]


def stored_texts(texts_dir: Path) -> str:
    """Where the sources' texts are, as the run store names it (`RUN/sources/`: `main.py runs` lists RUN), never
    the machine's absolute path."""
    return f"{texts_dir.parent.name}/{texts_dir.name}/"


def plan_line(s: SubQuestion) -> str:
    """`1. the sub-question — answered · 3 sources · $0.0100` (or **not answered** and why)."""
    if s.answered:
        how = f"{s.status.replace('_', ' ')} · {s.sources} source{'s' if s.sources != 1 else ''} · {money(s.cost)}"
    else:
        how = f"**not answered** ({prose(s.status)}{': ' + prose(s.error) if s.error else ''})"
    return f"{s.n}. {round_label(s)}{prose(s.text)} — {how}"


def round_label(s: SubQuestion) -> str:
    """`(round 2, a follow-up) ` before a sub-question a follow-up call asked for; "" in the first round."""
    return f"(round {s.round}, a follow-up) " if s.round > 1 else ""


def rounds(report: ResearchReport) -> int:
    """How many rounds the research had."""
    return max((s.round for s in report.plan), default=1)
