"""report.html of a research run: the report's sections, its sources, each claim's verdict and the passage of
the source it was judged against; and writing report.md with it. No script runs on the page."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.files import atomic_write
from core.text import money, report_safe
from report.html.assets import CSS
from report.html.guard import loopback_url
from report.html.markdown import esc, render
from report.html.paths import html_path_for
from report.html.sources import citation_item, passage_html
from report.research import (
    MARK,
    REPORT_FILE,
    SOURCES_DIR,
    ResearchReport,
    SubQuestion,
    across_languages_note,
    load_report,
    render_markdown,
    round_label,
    stored_texts,
    summary_line,
)
from report.sources import VERDICT_NOTE, cited_where, is_web
from sources.check import claims_line

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
EXTRA_CSS = """.report h4{font-size:1.15rem;margin:1.4rem 0 .5rem}.mark{color:var(--bad);font-weight:600}
sup.cite a{text-decoration:none}.partial{border-left:4px solid var(--warn);background:#fff8e1;padding:.5rem .8rem}
li.citation{margin:.3rem 0}details.passage pre{max-height:16rem}
main a,main .meta,main code,main td,main li{overflow-wrap:anywhere}div.table{overflow-x:auto}
@media print{main{max-width:none}details.passage{display:none}a{color:inherit}}"""
_MARK = re.compile(re.escape(esc(MARK)) + r"(?: \([a-z ]+\))?")
_CITE = re.compile(r"\[(\d{1,3}(?:, p\. \d{1,5})?(?:[,;] \d{1,3}(?:, p\. \d{1,5})?)*)\]")  # [1, 2], [1, p. 3]
PASSAGE_CHARS = 1500


def write_report(report: ResearchReport, markdown: Path, html: bool = True, texts_dir: Path | None = None) -> \
        list[Path]:
    """report.md and (unless html=False) report.html beside it; the paths written."""
    atomic_write(markdown, report_safe(render_markdown(report, texts_dir)))
    if not html:
        return [markdown]
    atomic_write(html_path_for(markdown), report_safe(render_html(report, texts_dir)))
    return [markdown, html_path_for(markdown)]


def rebuild(run_dir: Path, argv: list[str]) -> int:
    """`main.py report RUN` for a research run: report.md and report.html again from its report.json (in the
    run's directory, or at -o PATH); exit 2 when the run delivered no report."""
    p = argparse.ArgumentParser(prog="main.py report RUN", description="Rebuild a research run's report.")
    p.add_argument("-o", "--output", type=Path, default=run_dir / "report.md", help="the report.md to write")
    p.add_argument("--no-html", action="store_true", help="write only report.md")
    args = p.parse_args(argv)
    report = load_report(run_dir)
    if report is None:
        print(f"error: research run {run_dir.name} delivered no report ({run_dir / REPORT_FILE} is missing)",
              file=sys.stderr)
        return 2
    for path in write_report(report, args.output, not args.no_html, run_dir / SOURCES_DIR):
        print(f"wrote {path}")
    return 0


def render_html(report: ResearchReport, texts_dir: Path | None = None) -> str:
    """The whole self-contained page."""
    h = report.heading
    title = f"{h(report.title())}: {report.question}"
    partial = f'<p class="partial"><b>{esc(h("Partial report"))}:</b> {esc(report.partial)}</p>' \
        if report.partial else ""
    claims = f'<p><b>{esc(claims_line(report.citations))}</b></p>' if report.citations else ""
    body = (f"<h1>{esc(title)}</h1>{partial}<p class=\"meta\">{esc(summary_line(report))}</p>{claims}"
            f'<article class="report">{_body(report.body)}</article>{_sources(report, texts_dir)}'
            f"{_citations(report.citations, h('Citations checked'))}{_across(report)}"
            f"<h2>{esc(h('Research plan'))}</h2><ol>{''.join(map(_plan_item, report.plan))}</ol>"
            + "".join(f'<p class="meta">{esc(n)}</p>' for n in report.notes))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title[:200])}</title><style>{CSS}{EXTRA_CSS}</style></head><body><main>{body}</main>"
            "</body></html>\n")


def _body(markdown: str) -> str:
    """The sections rendered safely, each `[n]` a link to source n and each mark in red."""
    html = render(markdown)
    html = _MARK.sub(lambda m: f'<span class="mark">{m.group(0)}</span>', html)

    def cite(m: re.Match[str]) -> str:
        parts = re.findall(r"(\d{1,3})(, p\. \d{1,5})?", m.group(1))
        links = ("; " if any(page for _, page in parts) else ", ").join(
            f'<a href="#source-{n}">{n}</a>{page}' for n, page in parts)
        return f'<sup class="cite">[{links}]</sup>'
    return _CITE.sub(cite, html)


def _sources(report: ResearchReport, texts_dir: Path | None) -> str:
    items = "".join(f'<li id="source-{int(s["n"])}" value="{int(s["n"])}">{_link(s)}</li>' for s in report.sources)
    h = report.heading
    html = f"<h2>{esc(h('Sources'))}</h2>" + (f"<ol>{items}</ol>" if items else '<p class="meta">none cited</p>')
    if report.also_read:
        html += f'<p class="meta">{esc(h("Also read, not cited"))}:</p><ul>' + "".join(
            f"<li>{_link(s)}</li>" for s in report.also_read) + "</ul>"
    if report.not_read:
        html += f'<p class="meta">{esc(h("Could not be read (never cited)"))}:</p><ul>' + "".join(
            f'<li class="bad">{_link(s)} — {esc(s.get("error") or "failed")}</li>' for s in report.not_read) + "</ul>"
    if texts_dir is not None and report.sources:
        html += ('<p class="meta">The text each source gave when it was read is kept in the run store as '
                 f"<code>{esc(stored_texts(texts_dir))}</code> (<code>N.txt</code> for source N): each claim below "
                 "was judged against it.</p>")
    return html


def _link(s: Mapping[str, Any]) -> str:
    url, title = str(s.get("url") or ""), str(s.get("title") or "")
    if not is_web(url) or loopback_url(url):  # a local address stays text: the app's token cookie would go along
        return f"<code>{esc(url)}</code>" + (f" {esc(title)}" if title else "")
    link = f'<a href="{esc(url)}" rel="noopener noreferrer nofollow" target="_blank">{esc(title or url)}</a>'
    return link + (f' <span class="meta">{esc(url)}</span>' if title else "")


def _citations(citations: list[dict[str, Any]], heading: str = "Citations checked") -> str:
    """Each claim with its verdict and the passage of the cited source it was judged against."""
    if not citations:
        return ""
    rows = []
    for c in citations:
        where = cited_where(c) if c.get("n") is not None else str(c.get("url") or "")
        shown = passage_html(c, f"[{c.get('n')}]", PASSAGE_CHARS)
        rows.append(citation_item(c, where, tail=shown))
    return (f"<h2>{esc(heading)}</h2><p class=\"meta\">{esc(claims_line(citations))}</p>"
            f"<p class=\"meta\">{esc(VERDICT_NOTE)}.</p><ul>{''.join(rows)}</ul>")


def _across(report: ResearchReport) -> str:
    """The claims judged on names, figures and dates only (another language than their source)."""
    note = across_languages_note(report)
    return (f'<p class="meta">{esc(note[0])}</p><ul>' + "".join(f"<li>{esc(x)}</li>" for x in note[1:]) + "</ul>"
            if note else "")


def _plan_item(s: SubQuestion) -> str:
    """A sub-question with how its research went; one that gave nothing says why."""
    if s.answered:
        how = (f'<span class="yes">{esc(s.status.replace("_", " "))}</span> · {s.sources} '
               f'source{"s" if s.sources != 1 else ""} · {money(s.cost)}')
    else:
        how = f'<span class="no"><b>not answered</b></span> ({esc(s.status)}{": " + esc(s.error) if s.error else ""})'
    return f"<li>{esc(round_label(s) + s.text)} — {how}</li>"
