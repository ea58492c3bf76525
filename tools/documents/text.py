"""Text-like formats: HTML files, JSON and XML (PDF is in tools/documents/pdf.py)."""

from __future__ import annotations

import json

from tools.documents.page_text import extract_main_content, trafilatura_extract

_LONG_LINE = 2_000


def html_markdown(html: str, recall: bool = False) -> str:
    """An HTML document's content as Markdown: the article extractor, or all text with recall=True."""
    import trafilatura

    if not recall:
        return extract_main_content(html)
    text = trafilatura_extract(html, output_format="markdown", include_tables=True, include_formatting=True,
                               include_links=False, include_images=False, include_comments=False,
                               favor_recall=True)
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
