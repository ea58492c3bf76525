"""read_file's side of document conversion: convert an opened file or an archive member, page the result."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from core.errors import StopRequested, TaskDeadlineExceeded, ToolError
from core.text import human_size, truncate_middle
from tools.documents.confined import DocLimits, convert, member_document, pdf_text
from tools.documents.confined import archive_member as member_bytes
from tools.documents.convert import MAX_CONVERT_BYTES, ConversionError, Document, decode_text
from tools.documents.detect import looks_like_html, sniff, text_format
from tools.documents.pdf import SCANNED_NOTE, is_scanned
from tools.safe_open import open_file, relative_name, stat_entry, workspace_parts

LINE_CHARS = 2_000
PAGE_CHARS = 40_000
_CACHE_SIZE = 8
_cache: OrderedDict[tuple[str, int, int, int, int], Document | None] = OrderedDict()
_lock = threading.Lock()


def needs_conversion(name: str, head: bytes) -> bool:
    """True when the file is binary or a text format shown converted (CSV, HTML, long-line JSON/XML)."""
    return sniff(name, head) is not None or text_format(name) is not None or looks_like_html(head)


def document_from_file(rel: str, fh: BinaryIO, head: bytes, size: int, limits: DocLimits) -> Document | None:
    """The opened file converted in a child under `limits` (cached by inode, size and mtime), or None for plain
    text."""
    if not needs_conversion(rel, head):
        return None
    if size > MAX_CONVERT_BYTES:
        found = sniff(rel, head)
        what = found[1] if found else "text"
        return Document(what, f"{rel} ({what}, {human_size(size)}) is too large to convert here; open it "
                        "with the python tool.", converted=False)
    stat = os.fstat(fh.fileno())
    # The inode, not only the name: every task's workspace may hold an attachment of the same name.
    key = (rel, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    fh.seek(0)
    doc = _convert(rel, fh.read(MAX_CONVERT_BYTES), limits)
    with _lock:
        _cache[key] = doc
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return doc


# How a conversion in the child ends when its caller does (the call's time, Ctrl-C): never "a damaged file".
ENDED = (TaskDeadlineExceeded, StopRequested)


def _convert(rel: str, data: bytes, limits: DocLimits) -> Document | None:
    try:
        return convert(rel, data, limits)
    except ConversionError as exc:
        raise ToolError(f"could not convert {rel}: {exc}") from exc
    except ENDED:  # the call's time ran out, or the run is stopping: the caller says so
        raise
    except Exception as exc:  # noqa: BLE001 - format libraries raise many untyped errors on damaged files
        raise ToolError(f"could not convert {rel} ({type(exc).__name__}: {exc}); the file may be damaged. "
                        "Try the python tool.") from exc


def archive_member(workspace: Path, path: str, limits: DocLimits) -> tuple[str, bytes] | None:
    """For a path like 'a.zip/dir/b.png' inside a ZIP file of the workspace: its display path and bytes, the
    archive read in a child under `limits`.

    None when no folder of the path is a .zip file, so ordinary paths cost nothing.
    """
    found = _archive_of(workspace, path)
    if found is None:
        return None
    outer, inner, data = found
    try:
        return f"{outer}/{inner}", member_bytes(data, inner, limits)
    except ConversionError as exc:  # no such member, a limit met (named)
        raise ToolError(f"{outer}: {exc}") from exc


def archive_document(workspace: Path, path: str, limits: DocLimits) -> tuple[str, Document] | None:
    """A ZIP member (see archive_member) converted like a file, with its display path; None if no archive. The
    member is found and converted in one child under `limits`."""
    found = _archive_of(workspace, path)
    if found is None:
        return None
    outer, inner, data = found
    shown = f"{outer}/{inner}"
    try:
        return shown, member_document(data, inner, shown, limits)
    except ConversionError as exc:
        raise ToolError(f"{outer}: {exc}") from exc
    except ENDED:
        raise
    except Exception as exc:  # noqa: BLE001 - format libraries raise many untyped errors on damaged files
        raise ToolError(f"could not convert {shown} ({type(exc).__name__}: {exc}); the file may be damaged. "
                        "Try the python tool.") from exc


def _archive_of(workspace: Path, path: str) -> tuple[str, str, bytes] | None:
    """The ZIP file a path like 'a.zip/dir/b.png' goes through: its name, the member's and its bytes (unparsed)."""
    import stat

    parts = workspace_parts(workspace, path)
    if not any(p.lower().endswith(".zip") for p in parts[:-1]):
        return None
    for cut in range(len(parts) - 1, 0, -1):
        outer = relative_name(parts[:cut])
        found = stat_entry(workspace, outer) if parts[cut - 1].lower().endswith(".zip") else None
        if found is not None and stat.S_ISREG(found.st_mode):
            break
    else:
        return None
    with open_file(workspace, outer, "r") as fh:
        data = fh.read(MAX_CONVERT_BYTES)
    return outer, relative_name(parts[cut:]), data


def page_document(rel: str, doc: Document, offset: int, limit: int) -> str:
    """A page of the converted text, with the same header and 'more lines' footer as plain files."""
    if not doc.converted and doc.kind != "text file":
        return doc.text
    lines = doc.text.splitlines() or [""]
    total = len(lines)
    if offset > total:
        raise ToolError(f"offset {offset} is past the end: {rel} has {total:,} lines as Markdown")
    shown, _, end = read_page(lines, offset, limit)
    what = f"{doc.kind}, shown as Markdown" if doc.converted else doc.kind
    span = f"{total:,} lines" if offset == 1 and end == total else f"lines {offset:,}-{end:,} of {total:,}"
    header = f"File {rel} ({what}; {span}):" + (f"\n{doc.note}" if doc.note else "")
    return page_text(header, shown, rel, end, total)


def read_page(lines: Iterable[str], offset: int, limit: int) -> tuple[list[str], int, int]:
    """The shown lines from `offset` (each capped, at most `limit` and PAGE_CHARS), the total line count and
    the last line number shown; read_file pages plain files and converted documents with it."""
    shown: list[str] = []
    used = 0
    end = offset - 1
    total = 0
    full = False
    for number, line in enumerate(lines, start=1):
        total = number
        if number < offset or full:
            continue
        text = truncate_middle(line.rstrip("\r\n"), LINE_CHARS, "line shortened")
        if shown and (len(shown) >= limit or used + len(text) > PAGE_CHARS):
            full = True
            continue
        shown.append(text)
        used += len(text) + 1
        end = number
    return shown, total, end


def page_text(header: str, shown: list[str], rel: str, end: int, total: int) -> str:
    """A page under its header, with the 'more lines' footer when lines remain after it."""
    body = "\n".join(shown)
    if end >= total:
        return f"{header}\n{body}"
    return (f"{header}\n{body}\n[{total - end:,} more lines; call read_file again with path={rel!r}, "
            f"offset={end + 1}]")


SCRAPE_CHARS = 40_000


def scrape_binary(name: str, body: bytes, lines: list[str], url: str, limits: DocLimits) -> str:
    """scrape's body for a downloaded binary file: its Markdown (converted in a child under `limits`), else ''
    with advice added to `lines`.

    The advice names the URL (look and transcribe take URLs too).
    """
    try:
        doc = convert(name, body, limits)
    except ConversionError as exc:  # a limit met (named), a password, a missing library
        lines.append(f"Could not convert it: {exc}; open it with the python tool.")
        return ""
    except ENDED:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged file must not lose the saved copy
        lines.append(f"Could not convert it ({type(exc).__name__}: {exc}); open it with the python tool.")
        return ""
    if doc is None:  # text after all (no magic bytes, no NUL byte)
        return truncate_middle(decode_text(body), SCRAPE_CHARS, "pass save_as and page through it with read_file")
    if not doc.converted:
        lines.append(doc.text.replace(f"{name} is", "It is", 1).replace(f"path='{name}'", f"path='{url}'"))
        return ""
    lines.append(f"{doc.kind}, shown as Markdown." + (f" {doc.note}" if doc.note else ""))
    return truncate_middle(doc.text, SCRAPE_CHARS, "pass save_as and page through the file with read_file")


def pdf_shown(body: bytes, pages: str | None, limits: DocLimits) -> tuple[str, list[str]]:
    """A downloaded PDF's page-marked text (converted in a child under `limits`) and the lines a tool shows above
    it: its page count, the pages shown, and the scanned-PDF note. ConversionError as pdf_text raises it."""
    text, count = pdf_text(body, pages, limits)
    lines = [f"PDF with {count} page(s)" + (f"; showing pages {pages}" if pages else "")]
    return text, lines + ([SCANNED_NOTE] if is_scanned(text) else [])
