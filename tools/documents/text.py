"""Text-like formats: HTML files, JSON, XML and PDF (with a clear note for scanned PDFs)."""

from __future__ import annotations

import json
from typing import Any

from tools.documents.errors import ConversionError

SCANNED_NOTE = ("This PDF has no text layer (it is probably scanned): use the look tool with page=N "
                "to read a page as an image.")
_LONG_LINE = 2_000


def html_markdown(html: str, recall: bool = False) -> str:
    """An HTML document's content as Markdown: the article extractor, or all text with recall=True."""
    import trafilatura

    from tools.page_text import extract_main_content

    if not recall:
        return extract_main_content(html)
    text = trafilatura.extract(html, output_format="markdown", include_tables=True, include_formatting=True,
                               include_links=False, include_images=False, include_comments=False,
                               favor_recall=True) or ""
    return text or (trafilatura.html2txt(html) or "")


def json_text(text: str) -> str | None:
    """Pretty-printed JSON when the file is one long line (so it pages by lines); None to show it as is."""
    if max((len(line) for line in text.splitlines()), default=0) <= _LONG_LINE:
        return None
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def xml_text(data: bytes) -> str | None:
    """Indented XML when the file is one long line; None to show it as is (entities are never expanded)."""
    if max((len(line) for line in data.splitlines()), default=0) <= _LONG_LINE:
        return None
    from lxml import etree

    try:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=True)
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None
    return str(etree.tostring(root, pretty_print=True, encoding="unicode"))


def pdf_markdown(data: bytes) -> tuple[str, int, bool]:
    """The PDF's text with '--- page N ---' markers, its page count, and whether it has no text at all."""
    from tools.scrape import ScrapeInputError, pdf_text

    try:
        text, count = pdf_text(data)
    except ScrapeInputError as exc:
        raise ConversionError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - pypdf's errors are many and untyped
        raise ConversionError(f"could not read the PDF: {exc}") from exc
    return text, count, is_scanned(text)


def is_scanned(pdf_text_with_markers: str) -> bool:
    """True when the page-marked text holds nothing but the markers (no text layer)."""
    body: Any = "".join(line for line in pdf_text_with_markers.splitlines() if not line.startswith("--- page "))
    return not body.strip()
