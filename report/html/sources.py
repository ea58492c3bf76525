"""results.html's sources block of a task (titled links, checked citations, tool failures) and the run's totals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from report.html.guard import loopback_url
from report.html.markdown import esc
from report.sources import (
    RETRACTED,
    VERDICT_NOTE,
    WITHOUT_SOURCES,
    WITHOUT_SOURCES_NOTE,
    attachment_read,
    cited_where,
    claim_text,
    is_web,
    read_sources,
    reason,
    verdict_label,
    verdict_mark,
    without_sources,
)
from sources.check import FAILING, NOT_READ, SUPPORTED, claims_line

DONE = {"answered", "answered_unformatted"}


def unsourced(record: Mapping[str, Any]) -> bool:
    """True for an answered task that read no source."""
    return without_sources(record.get("sourced"), record.get("status") in DONE)


def _link(url: str, label: str) -> str:
    if is_web(url) and not loopback_url(url):  # a local address stays text: the token's cookie would go along
        return f'<a href="{esc(url)}" rel="noopener noreferrer nofollow" target="_blank">{esc(label)}</a>'
    return f"<code>{esc(url)}</code>" + (f" {esc(label)}" if label != url else "")


def sources_html(record: Mapping[str, Any], tools: Mapping[str, str]) -> str:
    """The Sources block of one task: numbered titled links (with the tool that read each), the ones not
    read, the no-source warning, each cited claim with its verdict, and the task's tool failures."""
    sources = record.get("sources") or []
    items = []
    for s in read_sources(sources):
        url, title = str(s.get("url") or ""), str(s.get("title") or "")
        tag = f' <span class="tag">{esc(tools[url])}</span>' if url in tools else ""
        where = f' <span class="meta">{esc(url)}</span>' if title and is_web(url) and not loopback_url(url) else ""
        items.append(f'<li value="{int(s["n"])}">{_link(url, title or url)}{where}{tag}</li>')
    html = ""
    if record.get("attachment"):  # the task's attached file, and whether the agent read it
        read = attachment_read(str(record["attachment"]), sources)
        html += (f'<p><b>Attachment:</b> <code>{esc(record["attachment"])}</code> '
                 f'<span class="{"yes" if read else "no"}">{"read" if read else "not read"}</span></p>')
    html += "<h4>Sources</h4>" + (f"<ol>{''.join(items)}</ol>" if items else '<p class="meta">none read</p>')
    failed = [s for s in sources if not s.get("read")]
    if failed:
        html += '<p class="meta">Not read:</p><ul>' + "".join(
            f'<li class="bad">{_link(str(s.get("url") or ""), str(s.get("url") or ""))} — '
            f'{esc(s.get("error") or "failed")}</li>' for s in failed) + "</ul>"
    if unsourced(record):
        html += f'<p class="warn"><b>⚠ {esc(WITHOUT_SOURCES)}</b>: {esc(WITHOUT_SOURCES_NOTE)}.</p>'
    return html + citations_html(record.get("citations") or []) + failures_html(record.get("tool_failures") or [])


def citations_html(citations: Sequence[Mapping[str, Any]]) -> str:
    """Each cited claim with its verdict; failing ones marked ✗ in red."""
    if not citations:
        return ""
    rows = []
    for c in citations:
        verdict = str(c.get("verdict"))
        where = cited_where(c) if c.get("n") is not None else (str(c.get("url")) if verdict == NOT_READ else "")
        model = f' <span class="meta">model: {esc(c["model_verdict"])}</span>' if c.get("model_verdict") else ""
        rows.append(citation_item(c, where, note=model, tail=passage_html(c, f"[{c.get('n')}]")))
    return (f"<h4>Citations</h4><p class=\"meta\">{esc(claims_line(citations))}</p>"
            f"<p class=\"meta\">{esc(VERDICT_NOTE)}.</p><ul>{''.join(rows)}</ul>")


def citation_item(c: Mapping[str, Any], where: str, note: str = "", tail: str = "") -> str:
    """One checked claim as a list item: its verdict (failing ones ✗ in red), the note (HTML), where it points,
    the claim, then tail (HTML)."""
    verdict = str(c.get("verdict"))
    css = "no" if verdict in FAILING else "yes" if verdict == SUPPORTED else "meta"
    why = f' <span class="meta">— {esc(reason(c))}</span>' if reason(c) else ""
    mark = f' <span class="no"><b>{RETRACTED}</b>: {esc(c["retracted"])}</span>' if c.get("retracted") else ""
    return (f'<li class="citation"><span class="{css}"><b>{verdict_mark(verdict)} {esc(verdict_label(verdict))}'
            f'</b></span>{note} <code>{esc(where)}</code> {esc(claim_text(c)[:400])}{why}{mark}{tail}</li>')


def passage_html(c: Mapping[str, Any], where: str, limit: int = 1500) -> str:
    """The passage of the cited source the claim was judged against, folded (nothing when none was kept)."""
    passage = str(c.get("passage") or "")
    return (f'<details class="passage"><summary class="meta">what {esc(where)} says there</summary>'
            f"<pre>{esc(passage[:limit])}</pre></details>") if passage else ""


def failures_html(failures: Sequence[Mapping[str, Any]]) -> str:
    """The task's failed tool calls: step, tool, error."""
    if not failures:
        return ""
    return "<h4>Tool failures</h4><ul>" + "".join(
        f'<li class="bad">step {esc(f.get("step"))} · <code>{esc(f.get("tool"))}</code>: {esc(f.get("error"))}</li>'
        for f in failures) + "</ul>"


def run_html(records: Sequence[Mapping[str, Any]]) -> str:
    """The run's citations by verdict and how many answered tasks read no source."""
    if not records:
        return ""
    html = f'<p class="meta">Citations: {esc(claims_line([c for r in records for c in r.get("citations") or []]))}</p>'
    answered = [r for r in records if r.get("status") in DONE]
    bare = [r for r in answered if unsourced(r)]
    if bare:
        html += (f'<p class="warn"><b>⚠ {len(bare)} of {len(answered)} answered tasks were {esc(WITHOUT_SOURCES)}'
                 "</b></p>")
    return html
