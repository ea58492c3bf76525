"""Documents converted where they cannot hurt the agent: in a forked child under a memory and a time limit.

Every conversion of a document's bytes to text (read_file, scrape, arxiv and the document index), and every other
parser of untrusted bytes (look's images and PDF page pictures, a ZIP archive's members, a fetched HTML page's
reading) comes through here: the converters run in a child of the sandbox's fork server
(tools/sandbox/forks.py), which holds pypdf, python-docx, python-pptx, openpyxl, xlrd, lxml, trafilatura and
Pillow imported and warmed, so a bomb (an ODS whose repeats multiply, a DOCX cell spanning 100,000,000 columns,
PDF pages sharing one huge stream, a PNG of 13,000 x 13,000 pixels, a ZIP of 1,700,000 entries) costs the child
its memory or its time, never the agent; the error says which limit stopped it. The child is confined as model
code is where this machine can (no network; it reads only system and interpreter paths and writes nothing)
unless AGENT_SANDBOX=none. The errors the converters raise come back as they were raised (ConversionError,
MissingLibraryError, docindex's Unreadable; a library's own error under its class's name), so their callers
handle them as before. Where no child can be forked (Windows) the converters run in this process.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from config import Settings
from core.errors import TaskDeadlineExceeded
from docindex import Unit, Unreadable
from tools.documents import worker
from tools.documents.convert import Document
from tools.documents.errors import ConversionError, MissingLibraryError
from tools.sandbox.forks import MAX_ANSWER, CallEnded, CallFailed, ChildLimits, ForkServer, available

MEMORY_MB, SECONDS = 1024, 60.0  # AGENT_DOC_MEMORY_MB, AGENT_DOC_TIMEOUT: one conversion's limits
_SERVER = ForkServer({"convert": "tools.documents.worker:convert_document",
                      "units": "tools.documents.worker:document_units",
                      "pdf": "tools.documents.worker:pdf_pages_text",
                      "pictures": "tools.documents.worker:look_images",
                      "member": "tools.documents.worker:archive_member",
                      "member_document": "tools.documents.worker:member_document",
                      "page": "tools.documents.worker:page_reading"}, warm="tools.documents.worker:warm")


@dataclass(frozen=True)
class DocLimits(ChildLimits):
    """One conversion's limits (its child's): memory (MB) on top of the converter's own, seconds, and whether its
    child is confined (not under AGENT_SANDBOX=none)."""

    memory_mb: int = MEMORY_MB
    seconds: float = SECONDS
    confine: bool = True

    @classmethod
    def of(cls, settings: Settings) -> DocLimits:
        """The limits the settings give (AGENT_DOC_MEMORY_MB, AGENT_DOC_TIMEOUT, AGENT_SANDBOX)."""
        return cls(settings.doc_memory_mb, settings.doc_timeout, settings.sandbox != "none")

    def memory(self) -> str:
        """The memory limit as people read it: '1 GB', '512 MB'."""
        mb = self.memory_mb
        return f"{mb // 1024} GB" if mb % 1024 == 0 else f"{mb / 1024:.1f} GB" if mb > 1024 else f"{mb} MB"


DEFAULT_LIMITS = DocLimits()


class LimitError(ConversionError):
    """A document that met a limit of its conversion (memory, time, the size of its text), or whose converter
    died; the message says which, and the setting that sets it."""


def convert(name: str, data: bytes, limits: DocLimits = DEFAULT_LIMITS) -> Document | None:
    """tools.documents.convert.convert in a child: the Document, or None for plain text; LimitError past a limit."""
    found = _run("convert", data, limits, {"name": name}, _kind(name))
    return None if found is None else Document(**found)


def read_units(name: str, data: bytes, limits: DocLimits = DEFAULT_LIMITS) -> list[Unit]:
    """The document index's reader (tools.documents.units.read_units) in a child; a document past a limit is
    Unreadable, named with the limit (the index skips it and lists it)."""
    try:
        found = _run("units", data, limits, {"name": name}, _kind(name))
    except LimitError as exc:
        raise Unreadable(str(exc)) from exc
    return [Unit(**fields) for fields in found]


def pdf_text(data: bytes, pages: str | None = None, limits: DocLimits = DEFAULT_LIMITS) -> tuple[str, int]:
    """tools.documents.pdf.pdf_text in a child: the page-marked text and the page count."""
    text, count = _run("pdf", data, limits, {"pages": pages}, "pdf")
    return str(text), int(count)


def pictures(data: bytes, name: str, page: int | None, render: bool,
             limits: DocLimits = DEFAULT_LIMITS) -> list[tuple[bytes, str]] | None:
    """tools.documents.pictures.pictures in a child: each picture's bytes and MIME type (None: a PDF page checked,
    for the caller to render); LimitError naming the limit an image met (a 500 KB PNG of 13,000 x 13,000)."""
    found = _run("pictures", data, limits, {"name": name, "page": page, "render": render}, "png",
                 ("the image", "decode"))
    return None if found is None else [(data if blob is None else base64.b64decode(blob), str(mime))
                                       for blob, mime in found]


def archive_member(data: bytes, member: str, limits: DocLimits = DEFAULT_LIMITS) -> bytes:
    """The bytes of one member of a ZIP archive, found in a child (an archive of 1,700,000 entries costs it)."""
    return base64.b64decode(_run("member", data, limits, {"member": member}, "zip", ("the archive", "read")))


def member_document(data: bytes, member: str, name: str, limits: DocLimits = DEFAULT_LIMITS) -> Document:
    """One member of a ZIP archive converted in a child (found and converted there), shown under `name`."""
    return Document(**_run("member_document", data, limits, {"member": member, "name": name}, _kind(member),
                           ("the archive", "read")))


def page_reading(html: str, url: str | None, limits: DocLimits = DEFAULT_LIMITS) -> tuple[str, str]:
    """A fetched HTML page's title and main text (tools.documents.page_text, parsed in a child); LimitError naming
    the limit a page met."""
    title, text = _run("page", html.encode("utf-8", "surrogatepass"), limits, {"url": url}, "page",
                       ("the page", "read"), stoppable=False)  # a page fetched is read as it was in the agent:
    # the first Ctrl-C lets it finish (within its limits), so a running task's last page still counts
    return str(title), str(text)


def reader(limits: DocLimits) -> functools.partial[list[Unit]]:
    """read_units with these limits: what docindex's DocIndex is handed."""
    return functools.partial(read_units, limits=limits)


def _kind(name: str) -> str:
    return PurePosixPath(name).suffix.lower().lstrip(".")


def _here(function: str, data: bytes, args: dict[str, Any]) -> Any:
    """The worker's function in this process (no child can be forked here)."""
    return getattr(worker, _SERVER.functions[function].partition(":")[2])(data, **args)


def _run(function: str, data: bytes, limits: DocLimits, args: dict[str, Any], kind: str,
         what: tuple[str, str] = ("the document", "convert"), stoppable: bool = True) -> Any:
    if not available():
        return _here(function, data, args)
    try:
        return _SERVER.call(function, data, limits, args, kind, stoppable)
    except CallEnded as exc:
        if exc.why == "unavailable" and not limits.confine:  # AGENT_SANDBOX=none: converted here, as it asks
            return _here(function, data, args)
        if exc.why == "deadline":
            raise TaskDeadlineExceeded("the time left for this call ran out while a document was converted") \
                from exc
        raise LimitError(_limit_said(exc, limits, *what)) from exc
    except CallFailed as exc:
        raise _raised(exc) from None


def _limit_said(exc: CallEnded, limits: DocLimits, what: str = "the document", verb: str = "convert") -> str:
    if exc.why == "memory":
        return f"{what} needed more than {limits.memory()} to {verb} (AGENT_DOC_MEMORY_MB)"
    if exc.why == "time":
        return f"{what} took longer than {limits.seconds:g} s to {verb} (AGENT_DOC_TIMEOUT)"
    if exc.why == "text":
        return f"{what}'s text is larger than {MAX_ANSWER >> 20} MB"
    if exc.why == "sandbox":
        return f"the document converter could not confine itself ({exc.detail})"
    if exc.why == "unavailable":
        return (f"the document converter could not start ({exc.detail}); documents are converted in the agent's "
                "own process only with AGENT_SANDBOX=none")
    return (f"the document converter died before it answered ({exc.detail}); the file may be damaged, or need "
            f"more than {limits.memory()} to {verb} (AGENT_DOC_MEMORY_MB)")


def _raised(exc: CallFailed) -> Exception:
    """The exception the converter raised, raised again here: ours as ours, a library's under its class's name."""
    if exc.kind == "MissingLibraryError":
        return MissingLibraryError(exc.fields.get("module", ""), exc.fields.get("package", ""))
    if exc.kind == "ConversionError":
        return ConversionError(str(exc))
    if exc.kind == "Unreadable":
        return Unreadable(str(exc))
    return _foreign(exc.kind)(str(exc))


class ConverterError(Exception):
    """An error a format library raised in the converter's child (a damaged file), under its own class's name."""


@functools.cache
def _foreign(kind: str) -> type[ConverterError]:
    name = kind if kind.isidentifier() else "ConverterError"
    return type(name, (ConverterError,), {"__module__": __name__})
