"""What runs in the converter's child process (tools/sandbox/fork_server.py forks it): a document's bytes in, what
JSON holds out. confined.py calls these through the fork server; where no child can be forked it calls them
itself. `warm` is the server's warm-up: a small document of a format converted once in the server, so that the
libraries' lazy imports and caches are paid there once and every child inherits them.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import logging
import zipfile
from collections.abc import Callable
from typing import Any

from tools.documents.archives import zip_member
from tools.documents.convert import Document, convert, decode_text
from tools.documents.errors import need
from tools.documents.page_text import extract_main_content, page_title, parse_html
from tools.documents.pdf import pdf_text
from tools.documents.pictures import pictures
from tools.documents.units import read_units


def quiet_libraries() -> None:
    """Library warnings are not ours to print: pypdf logs "EOF marker not found" and the like through logging,
    which with no handler set writes them to stderr (they broke `docs index`'s progress bar)."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)


def convert_document(data: bytes, name: str) -> dict[str, Any] | None:
    """convert() of a file: its Document's fields, or None for plain text."""
    quiet_libraries()
    doc = convert(name, data)
    return None if doc is None else dataclasses.asdict(doc)


def document_units(data: bytes, name: str) -> list[dict[str, Any]]:
    """read_units() of a file: each unit's fields (its label and text)."""
    quiet_libraries()
    return [dataclasses.asdict(unit) for unit in read_units(name, data)]


def pdf_pages_text(data: bytes, pages: str | None = None) -> list[Any]:
    """pdf_text() of a PDF: [its page-marked text, its page count]."""
    quiet_libraries()
    found, count = pdf_text(data, pages)
    return [found, count]


def look_images(data: bytes, name: str, page: int | None = None, render: bool = False) -> list[Any] | None:
    """pictures() of a file: [[base64, MIME type], ...] (base64 None: the file itself, as the agent has it), or None
    (a PDF page the agent renders)."""
    quiet_libraries()
    found = pictures(data, name, page, render)
    return None if found is None else [[None if blob is data else base64.b64encode(blob).decode("ascii"), mime]
                                       for blob, mime in found]


def archive_member(data: bytes, member: str) -> str:
    """zip_member() of an archive: the member's bytes in base64."""
    return base64.b64encode(zip_member(data, member)).decode("ascii")


def member_document(data: bytes, member: str, name: str) -> dict[str, Any]:
    """One member of a ZIP archive converted as a file named `name` (a plain text member as it is): the Document's
    fields."""
    quiet_libraries()
    found = zip_member(data, member)
    doc = convert(name, found) or Document("text file", decode_text(found), converted=False)
    return dataclasses.asdict(doc)


def page_reading(data: bytes, url: str | None = None) -> list[str]:
    """A fetched HTML page (UTF-8) read once: [its title, its main text as Markdown]."""
    html = data.decode("utf-8", "surrogatepass")
    tree = parse_html(html)  # parsed once: the title, trafilatura and readability all read this tree
    title = page_title(tree) if tree is not None else ""
    return [title, extract_main_content(html, url, tree=tree)]


def warm(kind: str) -> None:
    """Convert a small sample of this format (a file suffix without its dot) in this process; others: nothing."""
    if kind == "xls":  # (no writer of the format to make a sample with: its reader is imported)
        need("xlrd", "xlrd")
    make = _SAMPLES.get(kind)
    if make is not None:
        name, data = make()
        convert_document(data, name)
        with contextlib.suppress(Exception):  # (a format the index does not read: JSON)
            document_units(data, name)  # also the HTML reading of every section, an EPUB's chapters' reader
    if kind == "png":  # Pillow's decoders and encoders, imported and run once (a wide picture is downscaled)
        with contextlib.suppress(Exception):
            look_images(_wide_png(), "warm.png")
    if kind == "page":
        page_reading(_html()[1], "https://example.org/warm")
        page_reading(b"<html><body><h1>Warm</h1><p>Short.</p></body></html>", "https://example.org/short")
    if make is _html:  # a short page too: trafilatura's rescue of short texts builds jusText's stop words (0.5 s)
        document_units(b"<html><body><h1>Warm</h1><p>Short.</p></body></html>", "short.html")


def _wide_png() -> bytes:
    """A grey PNG of 2,000 x 2 pixels (wider than a vision model takes: it is downscaled)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = zlib.compress((b"\x00" + b"\x80" * 2000) * 2)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2000, 2, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", rows) + chunk(b"IEND", b""))


def _pdf() -> tuple[str, bytes]:
    return "warm.pdf", _WARM_PDF


def _saved(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _docx() -> tuple[str, bytes]:
    docx = need("docx", "python-docx")
    document = docx.Document()
    document.add_heading("Warm", level=1)
    document.add_paragraph("warm")
    document.add_table(rows=1, cols=2).rows[0].cells[0].text = "warm"
    return "warm.docx", _saved(document)


def _pptx() -> tuple[str, bytes]:
    pptx = need("pptx", "python-pptx")
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Warm"
    return "warm.pptx", _saved(deck)


def _xlsx() -> tuple[str, bytes]:
    openpyxl = need("openpyxl", "openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["warm", 1.5])
    return "warm.xlsx", _saved(book)


def _ods() -> tuple[str, bytes]:
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:'
               'opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>'
               '<table:table table:name="S"><table:table-row><table:table-cell office:value-type="string">'
               '<text:p>warm</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>'
               '</office:body></office:document-content>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", content)
    return "warm.ods", buffer.getvalue()


def _html() -> tuple[str, bytes]:
    body = "<p>" + "Warm words for the reader of this page. " * 20 + "</p>"
    return "warm.html", f"<html><head><title>Warm</title></head><body><article><h1>Warm</h1>{body}</article>" \
                        f"</body></html>".encode()


# One page whose text layer says "warm" (Helvetica), with its cross-reference table.
_WARM_PDF = (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
             b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
             b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
             b"/Contents 4 0 R >>\nendobj\n"
             b"4 0 obj\n<< /Length 35 >>\nstream\nBT /F1 12 Tf 72 720 Td (warm) Tj ET\nendstream\nendobj\n"
             b"5 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n"
             b"xref\n0 6\n0000000000 65535 f \n0000000009 00000 n \n0000000058 00000 n \n0000000115 00000 n \n"
             b"0000000241 00000 n \n0000000326 00000 n \ntrailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n396\n%%EOF\n")
_SAMPLES: dict[str, Callable[[], tuple[str, bytes]]] = {
    "pdf": _pdf, "docx": _docx, "pptx": _pptx, "xlsx": _xlsx, "ods": _ods, "html": _html, "htm": _html,
    "xhtml": _html, "epub": _html, "md": lambda: ("warm.md", b"# Warm\n\nwarm words\n"),
    "csv": lambda: ("warm.csv", b"a,b\n1,2\n"), "json": lambda: ("warm.json", b'{"a": 1}'),
}
