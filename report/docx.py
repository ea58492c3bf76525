"""report.docx of a research report, through python-docx: the title, the partial note, the claims line, the
sections (headings, paragraphs with their `[n]`, lists, tables), the Sources, every claim with its verdict and
the research plan.

The body is the report's Markdown read block by block (report/md_table.py for tables: a ragged table is made
rectangular, never an error); emphasis marks are dropped, a link keeps its text and address, a claim's
`⚠ unsupported` mark is red. Text that Word cannot hold (control characters) is removed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

from docx import Document
from docx.shared import Pt, RGBColor

from report.md_table import Table, table_at
from report.research import MARK, ResearchReport, SubQuestion, across_languages_note, round_label, summary_line
from report.sources import RETRACTED, cited_where, claim_text, verdict_label, verdict_mark
from sources.check import FAILING, claims_line
from sources.ledger import titled

_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_LINK = re.compile(r"!?\[([^\]\n]+)\]\(<?(https?://[^\s()<>]+)>?\)")
_EMPHASIS = re.compile(r"(\*\*|__|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])|`)")
_ESCAPE = re.compile(r"\\([\\`*_\[\]()<>#!|])")
_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")  # not allowed in XML
_MARK = re.compile(re.escape(MARK) + r"(?: \([a-z ]+\))?")
RED = RGBColor(0xB0, 0x00, 0x20)


def clean(text: str) -> str:
    """Markdown's inline marks taken out: links as `text (url)`, no emphasis, escapes undone, XML-safe."""
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", text)
    return _BAD.sub("", _ESCAPE.sub(r"\1", _EMPHASIS.sub("", text)))


def render_docx(report: ResearchReport) -> bytes:
    """The .docx file's bytes."""
    doc = Document()
    doc.styles["Normal"].font.size = Pt(10.5)
    h = report.heading
    title = clean(f"{h(report.title())}: {' '.join(report.question.split())}")
    doc.core_properties.title = title[:255]  # what Word's title bar and a file manager show
    doc.add_heading(title, level=0)
    if report.partial:
        _paragraph(doc, f"{h('Partial report')}: {report.partial}", bold=True)
    _paragraph(doc, summary_line(report), italic=True)
    if report.citations:
        _paragraph(doc, claims_line(report.citations) + (f" · {report.marked} marked {MARK}" if report.marked else ""),
                   bold=True)
    body(doc, report.body)
    _sources(doc, report)
    if report.citations:
        doc.add_heading(_BAD.sub("", h("Citations checked")), level=1)
        for c in report.citations:
            _citation(doc, c)
        for i, line in enumerate(across_languages_note(report)):
            _plain(doc, line, style="List Bullet" if i else None)
    doc.add_heading(_BAD.sub("", h("Research plan")), level=1)
    for s in report.plan:
        _plan(doc, s)
    for note in report.notes:
        _paragraph(doc, note, italic=True)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def body(doc: Any, markdown: str) -> None:
    """The report's sections: `## ` headings, paragraphs, lists and tables."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    i, para = 0, list[str]()
    while i < len(lines):
        line = lines[i]
        table = table_at(lines, i)
        ends = table is not None or not line.strip() or _HEADING.match(line) or _BULLET.match(line) or \
            _NUMBERED.match(line)
        if ends and para:
            _paragraph(doc, " ".join(para))
            para = []
        if table is not None:
            _table(doc, table[0])
            i = table[1]
            continue
        if (m := _HEADING.match(line)) is not None:
            doc.add_heading(clean(m.group(2)), level=min(len(m.group(1)), 4))
        elif (m := _BULLET.match(line)) is not None:
            _paragraph(doc, m.group(1), style="List Bullet")
        elif (m := _NUMBERED.match(line)) is not None:
            _paragraph(doc, m.group(1), style="List Number")
        elif line.strip() and not line.strip().startswith("```"):
            para.append(line.strip())
        i += 1
    if para:
        _paragraph(doc, " ".join(para))


def _paragraph(doc: Any, text: str, *, style: str | None = None, bold: bool = False, italic: bool = False) -> Any:
    """A paragraph of cleaned text; each `⚠ unsupported` mark in it red and bold."""
    p = doc.add_paragraph(style=style)
    text, pos = clean(text), 0
    for m in _MARK.finditer(text):
        _run(p, text[pos:m.start()], bold, italic)
        mark = p.add_run(m.group(0))
        mark.bold, mark.font.color.rgb = True, RED
        pos = m.end()
    _run(p, text[pos:], bold, italic)
    return p


def _run(p: Any, text: str, bold: bool, italic: bool) -> None:
    if text:
        r = p.add_run(text)
        r.bold, r.italic = bold or None, italic or None


def _table(doc: Any, table: Table) -> None:
    t = doc.add_table(rows=1 + len(table.rows), cols=len(table.header))
    t.style = "Table Grid"
    for j, text in enumerate(table.header):
        cell = t.rows[0].cells[j]
        cell.text = clean(text)
        for r in cell.paragraphs[0].runs:
            r.bold = True
    for i, row in enumerate(table.rows, start=1):
        for j, text in enumerate(row):
            t.rows[i].cells[j].text = clean(text)
    doc.add_paragraph()


def _source(s: Mapping[str, Any]) -> str:
    """`Title — URL`, or a document's place alone; without the backticks of a section named by code
    (`notes.md, § `subscribe(name)``), as report.md shows it."""
    return titled(str(s.get("title") or ""), str(s.get("url") or "")).replace("`", "")


def _sources(doc: Any, report: ResearchReport) -> None:
    h = report.heading
    doc.add_heading(_BAD.sub("", h("Sources")), level=1)
    for s in report.sources:
        _plain(doc, f"[{s['n']}] {_source(s)}")
    if not report.sources:
        _plain(doc, "none cited")
    if report.also_read:
        _plain(doc, f"{h('Also read, not cited')}:")
        for s in report.also_read:
            _plain(doc, _source(s), style="List Bullet")
    if report.not_read:
        _plain(doc, f"{h('Could not be read (never cited)')}:")
        for s in report.not_read:
            _plain(doc, f"{_source(s)} — {s.get('error') or 'failed'}", style="List Bullet")


def _plain(doc: Any, text: str, style: str | None = None) -> None:
    """Outside text (a title, an address, an error) as it is: no Markdown reading, only XML-safe."""
    doc.add_paragraph(_BAD.sub("", " ".join(text.split())), style=style)


def _citation(doc: Any, c: Mapping[str, Any]) -> None:
    verdict = str(c.get("verdict"))
    where = f"{cited_where(c)} " if c.get("n") is not None else f"{c.get('url') or ''} "
    p = doc.add_paragraph(style="List Bullet")
    label = p.add_run(f"{verdict_mark(verdict)} {verdict_label(verdict)}")
    label.bold = True
    if verdict in FAILING:
        label.font.color.rgb = RED
    p.add_run(_BAD.sub("", f" {where}") + clean(claim_text(c)))  # the claim's Markdown: a link as text (address)
    if c.get("retracted"):
        mark = p.add_run(_BAD.sub("", f" {RETRACTED}: {c['retracted']}"))
        mark.bold, mark.font.color.rgb = True, RED


def _plan(doc: Any, s: SubQuestion) -> None:
    if s.answered:
        how = f"{s.status.replace('_', ' ')} · {s.sources} source{'s' if s.sources != 1 else ''}"
    else:
        how = f"not answered ({s.status}{': ' + s.error if s.error else ''})"
    _plain(doc, f"{s.n}. {round_label(s)}{s.text} — {how}")
