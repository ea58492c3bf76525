"""The document index's reader: a file as its citable units (PDF pages, slides, sheets, sections, lines).

docindex/ stores and searches passages but reads no format; tools/docsearch.py hands it `read_units`, which
turns a document into Markdown with the converters of this package and cuts it where a citation can point.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath

from docindex import Unit, Unreadable
from docindex.passages import PASSAGE_CHARS, line_units, sections
from tools.documents import office, sheets, text
from tools.documents.convert import decode_text
from tools.documents.pdf import labelled_pages

UNIT_CHARS = 8 * PASSAGE_CHARS  # a section longer than this is cited by part, so a check reads a page's worth
_SLIDE = re.compile(r"^## Slide (\d+)")
_SHEET = re.compile(r"^§ Sheet: (.+?) \(\d+ rows x \d+ columns\)")


def _pdf(data: bytes) -> list[Unit]:
    units = [Unit(f"p. {label}", body) for label, body in labelled_pages(data) if body.strip()]  # as it prints
    if not units:
        raise Unreadable("a PDF with no text layer (scanned?)")
    return units


def _slides(data: bytes) -> list[Unit]:
    units = []
    for part in re.split(r"\n\n(?=## Slide \d+)", office.pptx_markdown(data)):
        match = _SLIDE.match(part)
        units.append(Unit(f"slide {match.group(1)}" if match else "", part))
    return units


def _sections(markdown: str) -> list[Unit]:
    """Sections at headings; a long one cut into parts by lines."""
    out = []
    for unit in sections(markdown):
        if len(unit.text) <= UNIT_CHARS:
            out.append(unit)
            continue
        for part in line_units(unit.text, UNIT_CHARS):
            label = f"{unit.label}, {part.label}" if unit.label else part.label
            out.append(Unit(label, part.text))
    return out


def _sheets(markdown: str) -> list[Unit]:
    """A workbook by sheet: `sheet Sales` (a long one by parts)."""
    return [Unit(_SHEET.sub(lambda m: f"sheet {m.group(1)}", u.label), u.text) for u in _sections(markdown)]


def _html(data: bytes) -> list[Unit]:
    return _sections(text.html_markdown(decode_text(data), recall=True))


_READERS: dict[str, Callable[[bytes], list[Unit]]] = {
    ".pdf": _pdf,
    ".docx": lambda data: _sections(office.docx_markdown(data)),
    ".pptx": _slides,
    ".xlsx": lambda data: _sheets(sheets.xlsx_markdown(data)),
    ".xls": lambda data: _sheets(sheets.xls_markdown(data)),
    ".ods": lambda data: _sheets(sheets.ods_markdown(data)),
    ".html": _html, ".htm": _html, ".xhtml": _html,
    ".md": lambda data: _sections(decode_text(data)), ".markdown": lambda data: _sections(decode_text(data)),
    ".txt": lambda data: line_units(decode_text(data), UNIT_CHARS),
    ".text": lambda data: line_units(decode_text(data), UNIT_CHARS),
    ".rst": lambda data: line_units(decode_text(data), UNIT_CHARS),
    ".csv": lambda data: line_units(decode_text(data), UNIT_CHARS),
    ".tsv": lambda data: line_units(decode_text(data), UNIT_CHARS),
}
SUFFIXES = frozenset(_READERS)


def read_units(name: str, data: bytes) -> list[Unit]:
    """The file's units by its suffix (SUFFIXES); Unreadable for another format or a binary file named as text."""
    suffix = PurePosixPath(name).suffix.lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise Unreadable("a format no reader reads")
    if suffix not in (".pdf", ".docx", ".pptx", ".xlsx", ".xls", ".ods") and b"\x00" in data[:8192]:
        raise Unreadable("binary data under a text file's name")
    return reader(data)
