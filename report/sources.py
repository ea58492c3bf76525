"""What both reports say about sources: titled source links, checked citations, tool failures, run totals.

Works on plain record fields (dicts of results.jsonl), so results.md (report/markdown.py) and results.html
(report/html/sources.py) say the same thing; the verdicts come from sources/check.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sources.check import FAILING, MARKER, NOT_READ, SUPPORTED, claims_line

WITHOUT_SOURCES = "answered without sources"
WITHOUT_SOURCES_NOTE = ("no page, document or file was read: the answer comes from the model's "
                        "own memory and cannot be checked against a source")
LABELS = {"wrong_source": "wrong source", "not_read": "not read"}
RETRACTED = "⚠ cites a retracted paper"  # on a claim citing one, whatever its verdict


# how far a verdict goes (docs/task-files-and-results.md), under every list of checked claims
VERDICT_NOTE = ("supported: its names, figures and words are in the cited passage, read in order, which does not "
                "prove it true; unsupported: the passage does not show it; contradicted: the passage says otherwise")


def verdict_label(verdict: str) -> str:
    """A verdict as a reader says it: `wrong source`, `not read`, `supported` ..."""
    return LABELS.get(verdict, verdict)


def verdict_mark(verdict: str) -> str:
    """✓ supported, ✗ failing (contradicted, fabricated, unsupported, wrong source, not read), · unchecked."""
    return "✓" if verdict == SUPPORTED else "✗" if verdict in FAILING else "·"


def without_sources(sourced: bool | None, done: bool) -> bool:
    """True for an answered task that read no source (records written before sources were tracked: False)."""
    return done and sourced is False


def read_sources(sources: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The sources read successfully, by number."""
    return sorted((s for s in sources if s.get("read") and s.get("n") is not None), key=lambda s: int(s["n"]))


def is_web(url: str) -> bool:
    """True for an http(s) address (shown as a link); anything else is a path or an unknown scheme."""
    return bool(re.match(r"(?i)^https?://", url))


def attachment_read(name: str, sources: Iterable[Mapping[str, Any]]) -> bool:
    """True when the task's attached file is among the sources it read."""
    return any(s.get("read") and str(s.get("url") or "").replace("\\", "/").rsplit("/", 1)[-1] == name
               for s in sources)


def attachment_text(name: str | None, sources: Iterable[Mapping[str, Any]]) -> str:
    """`report.xlsx — read` or `report.xlsx — not read`, or "" for a task without an attachment."""
    if not name:
        return ""
    return f"{name} — {'read' if attachment_read(name, sources) else 'not read'}"


def _md_text(text: str) -> str:
    """Untrusted text (a page title, a claim) made inert in Markdown: no links, images, HTML or emphasis."""
    return re.sub(r"([\\`*_\[\]()<>#!|])", r"\\\1", " ".join(str(text).split()))


def md_source(s: Mapping[str, Any]) -> str:
    """A source in Markdown: `[title](<url>) — url` for an http(s) address, else the address as code."""
    url, title = str(s.get("url") or ""), str(s.get("title") or "")
    if is_web(url) and not re.search(r"[\s<>]", url):
        return f"[{_md_text(title or url)}](<{url}>)" + (f" — {url}" if title else "")
    return f"`{url.replace('`', '')}`" + (f" — {_md_text(title)}" if title else "")


def _md_address(url: str) -> str:
    """An address as a Markdown autolink when it is http(s), else as code (`<javascript:...>` is a link too)."""
    return f"<{url}>" if is_web(url) and not re.search(r"[\s<>]", url) else f"`{url.replace('`', '')}`"


def markdown_lines(sources: Sequence[Mapping[str, Any]], citations: Sequence[Mapping[str, Any]],
                   failures: Sequence[Mapping[str, Any]], unsourced: bool, attachment: str | None = None) -> list[str]:
    """The Attachment, Sources, Citations and Tool failures blocks of one task in results.md."""
    out = [f"**Attachment:** {_md_text(attachment_text(attachment, sources))}", ""] if attachment else []
    out += ["**Sources**", ""]
    read = read_sources(sources)
    out += [f"{s['n']}. {md_source(s)}" for s in read]
    out += [f"- not read: {md_source(s)} — {_md_text(s.get('error') or 'failed')}"
            for s in sources if not s.get("read")]
    if not sources:
        out.append("_none read_")
    if unsourced:
        out += ["", f"**⚠ {WITHOUT_SOURCES}:** {WITHOUT_SOURCES_NOTE}."]
    if citations:
        out += ["", f"**Citations:** {claims_line(citations)}", "", f"_{VERDICT_NOTE}._", ""]
        out += [citation_line(c) for c in citations]
    if failures:
        out += ["", "**Tool failures**", ""]
        out += [f"- step {f.get('step')} · {f.get('tool')}: {_md_text(f.get('error') or '')}" for f in failures]
    return out


def citation_line(c: Mapping[str, Any]) -> str:
    """`- ✗ **contradicted** [7] the claim — says ‘rose’, the source says ‘fell’` (failing verdicts in bold, with
    why), with the judge model's verdict when one was asked; `[7, p. 3]` for a PDF's page; a claim citing a
    retracted paper marked, whatever its verdict."""
    verdict = str(c.get("verdict"))
    label = f"**{verdict_label(verdict)}**" if verdict in FAILING else verdict_label(verdict)
    where = cited_where(c) if c.get("n") is not None else _md_address(str(c.get("url"))) if verdict == NOT_READ else ""
    model = f" (model: {c['model_verdict']})" if c.get("model_verdict") else ""
    why = f" — {_md_text(reason(c))}" if reason(c) else ""
    mark = f" **{RETRACTED}:** {_md_text(c['retracted'])}" if c.get("retracted") else ""
    return f"- {verdict_mark(verdict)} {label}{model} {where} {_md_text(claim_text(c))[:400]}{why}{mark}"


def cited_where(c: Mapping[str, Any]) -> str:
    """`[7]`, or `[7, p. 3]` when the passage judged is on page 3 of a PDF ("" for a citation without a number)."""
    if c.get("n") is None:
        return ""
    return f"[{c['n']}, p. {int(c['page'])}]" if isinstance(c.get("page"), int) else f"[{c['n']}]"


def reason(c: Mapping[str, Any]) -> str:
    """Why a claim is not supported, in a few words (records written before reasons were kept: "")."""
    return " ".join(str(c.get("reason") or "").split())[:200] if c.get("verdict") != SUPPORTED else ""


def claim_text(c: Mapping[str, Any]) -> str:
    """The claim without its `[n]` markers (the citation names its source beside it)."""
    return " ".join(re.sub(r"\s*" + MARKER.pattern, "", str(c.get("claim") or "")).split())


def sources_cell(sources: Sequence[Mapping[str, Any]], unsourced: bool) -> str:
    """The table's Sources cell: how many sources were read, `⚠ answered without sources` when none was."""
    return f"⚠ {WITHOUT_SOURCES}" if unsourced else str(len(read_sources(sources)))


def run_lines(records: Sequence[Any], done: set[str]) -> list[str]:
    """The run's totals: every citation by verdict, and how many answered tasks read no source."""
    lines = [f"**Citations:** {claims_line([c for r in records for c in (r.citations or [])])}"] if records else []
    answered = [r for r in records if r.status in done]
    bare = [r for r in answered if without_sources(r.sourced, True)]
    if bare:
        lines.append(f"**⚠ {len(bare)} of {len(answered)} answered tasks were {WITHOUT_SOURCES}** "
                     f"(task{'s' if len(bare) > 1 else ''} {', '.join(str(r.index) for r in bare[:20])}"
                     f"{' …' if len(bare) > 20 else ''})")
    return [line for pair in zip(lines, [""] * len(lines), strict=True) for line in pair]

