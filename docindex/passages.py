"""A document's pages or sections (units) split into passages, and a question made into safe FTS5 text."""

from __future__ import annotations

import re
from dataclasses import dataclass

PASSAGE_CHARS = 1_000
_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to rank by: left out of the query so that "what is the ..." does not match every passage.
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "i", "if", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "their", "there",
    "these", "they", "this", "to", "was", "were", "what", "when", "where", "which", "who", "why", "will", "with"})
MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class Unit:
    """One part of a document that a citation names: a PDF page ('p. 3'), a slide, a sheet, a section
    ('§ Budget'), or '' for a document read whole; and its text, which claims citing it are checked against."""

    label: str
    text: str


def passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """The text in passages of about `size` characters, cut at blank lines, else at lines, else at spaces."""
    out: list[str] = []
    current = ""
    for block in _blocks(text, size):
        if current and len(current) + len(block) + 2 > size:
            out.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
    if current.strip():
        out.append(current)
    return out


def _blocks(text: str, size: int) -> list[str]:
    blocks = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= size:
            blocks.append(paragraph)
            continue
        for line in paragraph.splitlines():
            while len(line) > size:  # one very long line: cut at the last space before the size
                cut = line.rfind(" ", size // 2, size)
                cut = cut if cut > 0 else size
                blocks.append(line[:cut].strip())
                line = line[cut:]
            if line.strip():
                blocks.append(line.strip())
    return blocks


NO_WORDS = ("the query has no word to search for: common words (the, what, is...) are left out; give words a "
            "passage would contain (a name, a figure, a term)")


def fts_query(question: str) -> str:
    """The words of a question as an FTS5 query that can neither fail nor use an operator: each word quoted,
    joined by OR (BM25 ranks passages holding more of them, and rarer ones, higher); '' when no word is left
    (common words alone would match passages at random: NO_WORDS says so to the user)."""
    words = [w.lower() for w in _WORD.findall(question)]
    kept = [w for w in words if w not in _STOP]
    unique = list(dict.fromkeys(kept))[:MAX_QUERY_TERMS]
    return " OR ".join(f'"{w}"' for w in unique)


_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def sections(markdown: str) -> list[Unit]:
    """Markdown split at its headings into units labelled '§ Heading' (the last of headings with nothing between
    them); text before the first heading is a unit with no label."""
    units: list[Unit] = []
    label, lines = "", list[str]()
    for line in markdown.splitlines():
        match = _HEADING.match(line)
        if match and any(x.strip() and not _HEADING.match(x) for x in lines):  # a heading alone joins the next
            units.append(Unit(label, "\n".join(lines).strip()))
            lines = []
        if match:
            label = "§ " + " ".join(match.group(1).split())[:80]
        lines.append(line)
    if any(x.strip() for x in lines):
        units.append(Unit(label, "\n".join(lines).strip()))
    return units


def line_units(text: str, size: int = 8 * PASSAGE_CHARS) -> list[Unit]:
    """Text without pages or headings in units of about `size` characters labelled by their lines ('lines 1-120');
    a short text is one unit with no label."""
    if len(text) <= size:
        return [Unit("", text)] if text.strip() else []
    units, start, chunk = list[Unit](), 1, list[str]()
    used = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if chunk and used + len(line) > size:
            units.append(Unit(f"lines {start}-{number - 1}", "\n".join(chunk)))
            start, chunk, used = number, [], 0
        chunk.append(line)
        used += len(line) + 1
    if any(x.strip() for x in chunk):
        units.append(Unit(f"lines {start}-{start + len(chunk) - 1}", "\n".join(chunk)))
    return units


def snippet(passage: str, query: str, width: int = 240) -> str:
    """A one-line window of the passage around the first word of the query it holds, for a person to read."""
    flat = " ".join(passage.split())
    words = [w for w in _WORD.findall(query.lower()) if w not in _STOP]
    at = min((i for i in (flat.lower().find(w) for w in words) if i >= 0), default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    shown = flat[start:start + width]
    return ("…" if start > 0 else "") + shown + ("…" if start + width < len(flat) else "")
