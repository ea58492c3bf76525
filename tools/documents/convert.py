"""Documents as text: Office files, spreadsheets, EPUB, ZIP, HTML, JSON, XML and PDF turned into Markdown.

`convert(name, data)` is the one entry point: Markdown for a document, a clear description for other
binary files (type by content, size, which tool opens it), None for plain text that reads as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tools.documents import office, sheets, text
from tools.documents.archives import epub_markdown, zip_listing
from tools.documents.detect import (
    AUDIO,
    IMAGES,
    NAMES,
    looks_like_html,
    ole_format,
    sniff,
    text_format,
    zip_format,
)
from tools.documents.errors import ConversionError, MissingLibraryError
from tools.documents.pdf import SCANNED_NOTE, pdf_markdown

__all__ = ["ConversionError", "Document", "MissingLibraryError", "convert", "decode_text", "describe_binary"]

MAX_CONVERT_BYTES = 100_000_000


@dataclass(frozen=True)
class Document:
    """A file turned into text: what it is (e.g. 'Excel workbook'), the Markdown, and an optional note."""

    kind: str
    text: str
    note: str = ""
    converted: bool = True


def decode_text(data: bytes) -> str:
    """Bytes as text: UTF-8 (with or without BOM), else the encoding charset-normalizer detects."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(data).best()
        return str(best) if best is not None else data.decode("utf-8", errors="replace")


def describe_binary(name: str, size: int, human: str, key: str) -> str:
    """One clear line about a binary file that is not shown as text, naming the tool that opens it."""
    if key in IMAGES:
        advice = f"Use look(path='{name}', question=...) to have a vision model describe or read it"
    elif key in AUDIO:
        advice = f"Use transcribe(path='{name}') for its speech as text"
    else:
        advice = "Use the python tool to process it"
    return f"{name} is a binary file ({human}, {size:,} bytes); it is not shown as text. {advice}."


def convert(name: str, data: bytes) -> Document | None:
    """The file as a Document (Markdown or a description), or None for plain text that needs no conversion."""
    found = sniff(name, data[:8192])
    if found is None:
        return _convert_text(name, data)
    key, human = found
    if key == "zip":
        key = zip_format(data)
    elif key == "ole":
        key = ole_format(name)
    converter = _BINARY_CONVERTERS.get(key)
    if converter is None:
        return Document(human, describe_binary(name, len(data), human, key), converted=False)
    kind = NAMES.get(key, human)
    text, note = converter(name, data)
    return Document(kind, text or "(no text found)", note)


def _convert_text(name: str, data: bytes) -> Document | None:
    fmt = text_format(name)
    if fmt is None and looks_like_html(data):
        fmt = "html"
    if fmt is None:
        return None
    if fmt == "xml":
        pretty = text.xml_text(data)
        return Document(NAMES[fmt], pretty, "(indented for reading)") if pretty is not None else None
    decoded = decode_text(data)
    if fmt in ("csv", "tsv"):
        return Document(NAMES[fmt], sheets.csv_markdown(decoded, "\t" if fmt == "tsv" else None))
    if fmt == "html":
        return Document(NAMES[fmt], text.html_markdown(decoded) or "(no readable text found)")
    pretty = text.json_text(decoded)
    return Document(NAMES[fmt], pretty, "(pretty-printed for reading)") if pretty is not None else None


def _pdf(name: str, data: bytes) -> tuple[str, str]:
    body, count, scanned = pdf_markdown(data)
    return body, f"{count} page(s)." + (" " + SCANNED_NOTE if scanned else "")


def _sheet(reader: str) -> Callable[[str, bytes], tuple[str, str]]:
    def run(name: str, data: bytes) -> tuple[str, str]:
        text = getattr(sheets, reader)(data)
        return text, ("One table per sheet; the header row names the columns, the first column is the row "
                      "number. Formulas show their last computed values; cell fill colours are listed "
                      "per sheet; other formatting is not shown (use the python tool with openpyxl).")
    return run


def _office(reader: str) -> Callable[[str, bytes], tuple[str, str]]:
    def run(name: str, data: bytes) -> tuple[str, str]:
        return getattr(office, reader)(data), ""
    return run


def _epub(name: str, data: bytes) -> tuple[str, str]:
    return epub_markdown(data), ""


def _zip(name: str, data: bytes) -> tuple[str, str]:
    return zip_listing(data, name), ""


_BINARY_CONVERTERS: dict[str, Callable[[str, bytes], tuple[str, str]]] = {
    "pdf": _pdf, "xlsx": _sheet("xlsx_markdown"), "xls": _sheet("xls_markdown"), "ods": _sheet("ods_markdown"),
    "docx": _office("docx_markdown"), "pptx": _office("pptx_markdown"), "epub": _epub, "zip": _zip,
}
