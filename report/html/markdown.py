"""A small, safe Markdown renderer: everything is escaped first, then a few constructs become tags."""

from __future__ import annotations

import html
import re

from report.html.guard import loopback_url
from report.md_table import table_at

_FENCE = re.compile(r"^```[\w+-]*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_TOKEN = re.compile(r"`(?P<code>[^`\n]+)`"
                    r"|\[(?P<label>[^\]\n]+)\]\((?P<href>https?://[^\s()<>\"']+)\)"
                    r"|(?P<url>https?://[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]])")
# Applied to already-escaped text, so emphasis can never produce markup the source did not ask for.
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])")


def esc(text: object) -> str:
    """HTML-escape any value (quotes included, so it is safe inside attributes too)."""
    return html.escape(str(text), quote=True)


def _emphasis(escaped: str) -> str:
    return _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", escaped))


def inline(text: str) -> str:
    """Escape one line and render code spans, bold, italics and http(s) links (no other scheme)."""
    out, pos = [], 0
    for m in _TOKEN.finditer(text):
        out.append(_emphasis(esc(text[pos:m.start()])))
        if m.group("code") is not None:
            out.append(f"<code>{esc(m.group('code'))}</code>")
        elif m.group("href") is not None:
            out.append(_anchor(m.group("href"), _emphasis(esc(m.group("label")))))
        else:
            out.append(_anchor(m.group("url"), esc(m.group("url"))))
        pos = m.end()
    out.append(_emphasis(esc(text[pos:])))
    return "".join(out)


def _anchor(href: str, label_html: str) -> str:
    if loopback_url(href):  # a local address stays text: the browser would send the token's cookie along
        return label_html if label_html == esc(href) else f"{label_html} (<code>{esc(href)}</code>)"
    return f'<a href="{esc(href)}" rel="noopener noreferrer nofollow" target="_blank">{label_html}</a>'


def render(text: str) -> str:
    """Markdown to safe HTML: paragraphs, headings, lists, fenced code, code spans, emphasis, links."""
    blocks: list[str] = []
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
            blocks.append(f"<pre><code>{esc(chr(10).join(lines[i + 1:end]))}</code></pre>")
            i = end + 1
        elif not line.strip():
            i += 1
        else:
            i = _block(lines, i, blocks)
    return "\n".join(blocks)


def _block(lines: list[str], i: int, blocks: list[str]) -> int:
    table = table_at(lines, i)
    if table is not None:
        head = "".join(f"<th>{inline(c)}</th>" for c in table[0].header)
        body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in table[0].rows)
        blocks.append(f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
        return table[1]
    heading = _HEADING.match(lines[i])
    if heading:
        level = min(len(heading.group(1)) + 2, 6)  # answers live under the page's own headings
        blocks.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
        return i + 1
    for pattern, tag in ((_BULLET, "ul"), (_NUMBERED, "ol")):
        if pattern.match(lines[i]):
            items = []
            while i < len(lines) and (m := pattern.match(lines[i])):
                items.append(f"<li>{inline(m.group(1))}</li>")
                i += 1
            blocks.append(f"<{tag}>{''.join(items)}</{tag}>")
            return i
    para: list[str] = []
    while i < len(lines) and lines[i].strip() and not _FENCE.match(lines[i]) and not _HEADING.match(lines[i]) \
            and not _BULLET.match(lines[i]) and not _NUMBERED.match(lines[i]) and (not para or not table_at(lines, i)):
        para.append(inline(lines[i].strip()))
        i += 1
    blocks.append("<p>" + "<br>".join(para) + "</p>")
    return i
