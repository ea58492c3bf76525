"""Workspace file tools (read_file, write_file, list_files), opening everything through tools.safe_open."""

from __future__ import annotations

import io
import mimetypes
import os
import re
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ToolError
from core.text import human_size, terminal_safe
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.documents.confined import DEFAULT_LIMITS, DocLimits
from tools.documents.reading import archive_document, document_from_file, page_document, page_text, read_page
from tools.safe_open import (
    WorkspacePathError,
    open_file,
    relative_name,
    stat_entry,
    workspace_dir,
    workspace_parts,
)


def workspace_name(workspace: Path, path: str) -> str | None:
    """The workspace-relative name of an existing file of the workspace, else None."""
    try:
        parts = workspace_parts(workspace, path)
    except WorkspacePathError:
        return None
    return relative_name(parts) if parts and (Path(workspace).joinpath(*parts)).is_file() else None


def files_named(workspace: Path, code: str) -> list[str]:
    """The workspace files a program names in quotes (`pd.read_excel("data.xlsx")`): the sources it reads."""
    found = (workspace_name(workspace, m) for m in re.findall(r"""["']([^"'\n]{1,200})["']""", code))
    return list(dict.fromkeys(name for name in found if name))


# Scratch directories the python tool keeps in the workspace; list_files does not show them.
TOOL_DIRS = (".home", ".tmp", ".python")

LIST_MAX_ENTRIES = 200
LIST_MAX_DEPTH = 6
LIST_COUNT_LIMIT = 10_000

_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also xlsx/docx/pptx)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"PAR1", "Parquet file"),
    (b"\x93NUMPY", "NumPy array"),
    (b"\x7fELF", "ELF executable"),
    (b"RIFF", "RIFF media file"),
    (b"OggS", "Ogg media file"),
    (b"ID3", "MP3 audio"),
]


def binary_kind(name: str, head: bytes) -> str | None:
    """What a file is if it is binary (from magic bytes, a NUL byte or the extension); None for text."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if b"\x00" not in head:
        return None
    guessed, _ = mimetypes.guess_type(name)
    return f"{guessed} data" if guessed else "binary data"


class ReadFileTool(Tool):
    """Read a text file of the workspace one page of lines at a time."""

    name = "read_file"
    brief = "Read a workspace file or document, `limit` lines from line `offset`."
    description = (
        "Read a workspace file, `limit` lines from line `offset`; it says which offset comes next. Documents "
        "(Word, PowerPoint, Excel, ODS, CSV, PDF, EPUB, HTML) are read as Markdown; a ZIP is listed and its "
        "members read as 'archive.zip/member.docx'."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "Path in the workspace, e.g. 'data/notes.txt'."},
            "offset": {"type": "integer", "minimum": 1, "default": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "default": 200},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, limits: DocLimits = DEFAULT_LIMITS) -> None:
        """`limits`: each document's conversion's, in its own process (AGENT_DOC_MEMORY_MB, AGENT_DOC_TIMEOUT)."""
        self.workspace = Path(workspace)
        self.limits = limits

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """The file read: a numbered source of the task, named relative to the workspace."""
        name = workspace_name(self.workspace, str(args.get("path", "")))
        return [Read(name)] if name else []

    def run(self, **kwargs: Any) -> str:
        """Return a page of the file with a header saying which lines these are and what remains."""
        path = str(kwargs["path"])
        offset = max(int(kwargs.get("offset") or 1), 1)
        limit = max(int(kwargs.get("limit") or 200), 1)
        rel = relative_name(workspace_parts(self.workspace, path))
        member = archive_document(self.workspace, path, self.limits)  # 'a.zip/inner.docx': a member of a ZIP file
        if member is not None:
            return page_document(*member, offset, limit)
        with open_file(self.workspace, path, "r") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return f"File {rel} is empty (0 bytes)."
            head = fh.read(8192)
            document = document_from_file(rel, fh, head, size, self.limits)  # Office, spreadsheets, PDF, HTML, CSV...
            if document is not None:
                return page_document(rel, document, offset, limit)
            kind = binary_kind(rel, head)
            if kind is not None:
                return (f"{rel} is a binary file ({kind}, {size:,} bytes); it is not shown as text. "
                        "Use the python tool to process it.")
            fh.seek(0)
            text = io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline="")
            lines, total, end = read_page(text, offset, limit)
        if offset > total:
            raise ToolError(f"offset {offset} is past the end: {rel} has {total:,} lines")
        return _format_page(rel, lines, offset, end, total)


def _format_page(rel: str, lines: list[str], offset: int, end: int, total: int) -> str:
    header = f"File {rel} ({total:,} lines):" if offset == 1 and end >= total else \
        f"File {rel}: lines {offset:,}-{end:,} of {total:,}:"
    return page_text(header, lines, rel, end, total)


class WriteFileTool(Tool):
    """Write or append text to a file in the workspace, within a size limit."""

    name = "write_file"
    brief = "Save text to a workspace file."
    description = (
        "Save text to a workspace file (folders are created): `mode` 'overwrite' replaces it, 'append' adds "
        "to its end. Write large or generated data from python instead."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "Path in the workspace, e.g. 'report.md'."},
            "content": {"type": "string"},
            "mode": {"type": "string", "enum": ["overwrite", "append"], "default": "overwrite"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, max_bytes: int = 5_000_000) -> None:
        self.workspace = Path(workspace)
        self.max_bytes = max_bytes

    def run(self, **kwargs: Any) -> str:
        """Write the content and report how many bytes went where."""
        path = str(kwargs["path"])
        data = str(kwargs["content"]).encode("utf-8")
        mode = kwargs.get("mode") or "overwrite"
        if mode not in ("overwrite", "append"):
            raise ToolError(f"mode must be 'overwrite' or 'append', not {mode!r}")
        rel = relative_name(workspace_parts(self.workspace, path))
        self._check_size(rel, len(data), 0)
        try:
            with open_file(self.workspace, path, "a" if mode == "append" else "w") as fh:
                self._check_size(rel, len(data), os.fstat(fh.fileno()).st_size)
                fh.write(data)
                fh.flush()
                now = os.fstat(fh.fileno()).st_size
        except OSError as exc:
            raise ToolError(f"could not write {rel}: {exc.strerror or exc}") from exc
        verb = "Appended" if mode == "append" else "Wrote"
        return f"{verb} {len(data):,} bytes to {rel} (the file is now {now:,} bytes)."

    def _check_size(self, rel: str, adding: int, existing: int) -> None:
        if existing + adding > self.max_bytes:
            what = f"appending {adding:,} bytes to {existing:,}" if existing else f"{adding:,} bytes"
            raise ToolError(f"refused to write {rel}: {what} exceeds the write_file limit of "
                            f"{self.max_bytes:,} bytes; write large data with the python tool instead")


class ListFilesTool(Tool):
    """List the files of the workspace (or one of its directories) with their sizes."""

    name = "list_files"
    brief = "List the workspace's files."
    description = (
        f"List the workspace's files with their sizes, recursively, up to {LIST_MAX_ENTRIES} entries nearest "
        "first; list a folder to see more of it."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "default": "."},
        },
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)

    def run(self, **kwargs: Any) -> str:
        """Return one line per entry (path and size), or say that the directory is empty."""
        path = str(kwargs.get("path") or ".")
        parts = workspace_parts(self.workspace, path)
        rel = relative_name(parts)
        found = stat_entry(self.workspace, path)
        if found is not None and stat.S_ISREG(found.st_mode):
            return f"{rel} is a file ({human_size(found.st_size)}); use read_file to read it."
        if found is None or not stat.S_ISDIR(found.st_mode):
            what = "is a symbolic link (links are not followed)" if found else "does not exist"
            raise ToolError(f"there is no directory {path!r} in the workspace: it {what}")
        entries, more = _walk(self.workspace, parts, skip_tool_dirs=not parts)
        where = "the workspace" if rel == "." else f"{rel}/"
        if not entries:
            return "The workspace is empty." if rel == "." else f"Directory {rel}/ is empty."
        lines = [f"Files in {where} ({len(entries)} entries{', not all shown' if more else ''}):"]
        lines += [entry.line() for entry in sorted(entries, key=lambda e: e.parts)]
        if more:
            count = f"over {LIST_COUNT_LIMIT:,}" if more >= LIST_COUNT_LIMIT else f"{more:,}"
            lines.append(f"[{count} more entries not shown; list a subdirectory to see them]")
        if any(terminal_safe(p, one_line=True) != p for e in entries for p in e.parts):
            lines.append("(control characters in names are shown escaped, e.g. \\n)")
        return "\n".join(lines)


@dataclass
class _Entry:
    """One listed entry: its path below the listed directory and what it is."""

    parts: tuple[str, ...]
    kind: str  # dir | link | file | other
    size: int = 0
    target: str = ""

    def line(self) -> str:
        rel = terminal_safe("/".join(self.parts), one_line=True)
        if self.kind == "link":
            return f"{rel} -> {terminal_safe(self.target, one_line=True)}"
        if self.kind == "dir":
            return f"{rel}/"
        return f"{rel}  ({human_size(self.size)})" if self.kind == "file" else rel


def _walk(root: Path, top: tuple[str, ...], skip_tool_dirs: bool) -> tuple[list[_Entry], int]:
    """Breadth-first entries under root/top (nearest first, up to the cap) and how many more were found."""
    shown: list[_Entry] = []
    more = 0
    queue: deque[tuple[tuple[str, ...], int]] = deque([((), 1)])
    while queue and more < LIST_COUNT_LIMIT:
        below, depth = queue.popleft()
        try:
            children = _scan(root, top + below)
        except (OSError, ToolError):
            continue
        for entry in children:
            entry.parts = below + entry.parts
            if skip_tool_dirs and depth == 1 and entry.parts[0] in TOOL_DIRS:
                continue
            if len(shown) < LIST_MAX_ENTRIES:
                shown.append(entry)
            else:
                more += 1
            # Symlinked directories are not followed: no loops, no walking out of the workspace.
            if entry.kind == "dir" and depth < LIST_MAX_DEPTH:
                queue.append((entry.parts, depth + 1))
    return shown, more


def _scan(root: Path, parts: tuple[str, ...]) -> list[_Entry]:
    """The entries of one directory, read through a directory handle (no link is followed)."""
    found: list[_Entry] = []
    with workspace_dir(root, parts) as fd, os.scandir(fd) as it:
        for item in sorted(it, key=lambda e: e.name):
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                found.append(_Entry((item.name,), "link", target=os.readlink(item.name, dir_fd=fd)))
            elif stat.S_ISDIR(info.st_mode):
                found.append(_Entry((item.name,), "dir"))
            else:
                found.append(_Entry((item.name,), "file" if stat.S_ISREG(info.st_mode) else "other",
                                    info.st_size))
    return found
