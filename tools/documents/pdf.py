"""PDF as text: pages with '--- page N ---' markers, page ranges, and a clear note for scanned PDFs."""

from __future__ import annotations

import io
import re
from typing import Any

from tools.documents.errors import ConversionError

LABEL_CHARS = 24  # of a page label (a PDF may name its pages anything)
SCANNED_NOTE = ("This PDF has no text layer (it is probably scanned): use the look tool with page=N "
                "to read a page as an image.")


def parse_pages(spec: str, count: int) -> list[int]:
    """Turn a 1-based page spec like '1-3,7' into page numbers within 1..count."""
    wanted: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d*))?", part)
        if not match:
            raise ConversionError(f"pages {spec!r} is not a page range like '1-3,7'")
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else (count if match.group(2) == "" else start)
        if start < 1 or end < start:
            raise ConversionError(f"pages {spec!r}: {part!r} is not a valid range")
        wanted.update(range(start, min(end, count) + 1))
    if not wanted:
        raise ConversionError(f"pages {spec!r} is out of range: the PDF has {count} page(s)")
    return sorted(wanted)


def _open(body: bytes) -> tuple[Any, int]:
    """pypdf's reader of a PDF and its page count; ConversionError for a password or a PDF pypdf cannot read."""
    from pypdf import PdfReader  # a hard dependency, imported when a PDF is read (import cost)

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConversionError("the PDF is password-protected")
        return reader, len(reader.pages)
    except ConversionError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf's errors are many and untyped
        raise ConversionError(f"could not read the PDF: {exc}") from exc


def pdf_pages(body: bytes, pages: str | None = None) -> tuple[list[tuple[int, str]], int]:
    """(page number, text) of each page asked for (all by default), and the page count; ConversionError when
    the PDF cannot be read. A page pypdf cannot extract gives a bracketed note instead of its text."""
    reader, count = _open(body)
    numbers = parse_pages(pages, count) if pages else list(range(1, count + 1))
    return [(number, _page_text(reader, number)) for number in numbers], count


def labelled_pages(body: bytes) -> list[tuple[str, str]]:
    """(the number the page prints, its text) of every page: the PDF's own page labels (`viii`, `8`, `A-3`), as a
    reader cites a page; ConversionError when the PDF cannot be read."""
    reader, count = _open(body)
    return list(zip(page_labels(reader, count), (_page_text(reader, n) for n in range(1, count + 1)), strict=True))


def page_labels(reader: Any, count: int) -> list[str]:
    """Each page's label (pypdf's reading of /PageLabels), its physical number where the PDF gives none; a label
    several pages share is told apart by its physical number (`1 (PDF page 5)`)."""
    try:
        labels = [" ".join(str(label).split())[:LABEL_CHARS] for label in reader.page_labels]
    except Exception:  # noqa: BLE001 - a broken /PageLabels tree: the physical numbers
        labels = []
    if len(labels) != count:
        labels = [""] * count
    labels = [label or str(n) for n, label in enumerate(labels, start=1)]
    repeated = {label for label in labels if labels.count(label) > 1}
    return [f"{label} (PDF page {n})" if label in repeated else label for n, label in enumerate(labels, start=1)]


def _page_text(reader: Any, number: int) -> str:
    try:
        return (reader.pages[number - 1].extract_text() or "").strip()
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on odd pages; keep the rest
        return f"[could not extract text from this page: {exc}]"


def pdf_text(body: bytes, pages: str | None = None) -> tuple[str, int]:
    """The text of a PDF with '--- page N ---' markers, and its page count; ConversionError when unreadable."""
    found, count = pdf_pages(body, pages)
    return "\n\n".join(f"--- page {number} ---\n{text}" for number, text in found), count


def pdf_markdown(data: bytes) -> tuple[str, int, bool]:
    """The PDF's text with '--- page N ---' markers, its page count, and whether it has no text at all."""
    text, count = pdf_text(data)
    return text, count, is_scanned(text)


def is_scanned(pdf_text_with_markers: str) -> bool:
    """True when the page-marked text holds nothing but the markers (no text layer)."""
    body: Any = "".join(line for line in pdf_text_with_markers.splitlines() if not line.startswith("--- page "))
    return not body.strip()
