"""Workspace file tools (read_file, write_file, list_files) and the path containment check they share."""

from __future__ import annotations

import mimetypes
import os
from collections import deque
from pathlib import Path
from typing import Any

from memory import truncate_middle
from tools.base import Tool, ToolError

# Scratch directories the python tool keeps in the workspace; list_files does not show them.
TOOL_DIRS = (".home", ".tmp", ".python")

READ_LINE_CHARS = 2_000
READ_PAGE_CHARS = 40_000
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


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """The real path of `path` (relative to the workspace); ToolError if it lies outside the workspace."""
    root = os.path.realpath(workspace)
    try:
        candidate = os.path.realpath(os.path.join(root, os.fspath(path)))
    except (ValueError, TypeError) as exc:  # e.g. an embedded NUL byte
        raise ToolError(f"path {path!r} is not a valid file name") from exc
    # commonpath, not startswith: the workspace /tmp/ws must not contain /tmp/ws2/x.
    if os.path.commonpath([root, candidate]) != root:
        raise ToolError(f"path {path!r} is outside the workspace; use a path relative to the workspace")
    return Path(candidate)


def _relative(workspace: Path, real: Path) -> str:
    rel = os.path.relpath(real, os.path.realpath(workspace))
    return Path(rel).as_posix()


def human_size(size: int) -> str:
    """A byte count as people read it: 532 B, 12.3 KB, 4.5 MB."""
    if size < 1024:
        return f"{size:,} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


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
    description = (
        "Read a text file from the task workspace (the directory where scrape, write_file and python save "
        "files). Paths are relative to the workspace. Returns at most `limit` lines starting at line "
        "`offset` (line numbers start at 1) and says how many lines remain and which offset to use next. "
        "Very long lines are shortened in the middle. Binary files (images, PDFs, archives) are only "
        "described; process them with the python tool."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "File path relative to the workspace, e.g. 'data/notes.txt'."},
            "offset": {"type": "integer", "minimum": 1, "default": 1,
                       "description": "First line to return; line numbers start at 1."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "default": 200,
                      "description": "How many lines to return at most."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)

    def run(self, **kwargs: Any) -> str:
        """Return a page of the file with a header saying which lines these are and what remains."""
        path = str(kwargs["path"])
        offset = max(int(kwargs.get("offset") or 1), 1)
        limit = max(int(kwargs.get("limit") or 200), 1)
        self.workspace.mkdir(parents=True, exist_ok=True)
        real = resolve_in_workspace(self.workspace, path)
        rel = _relative(self.workspace, real)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files to see what it contains")
        if not real.is_file():
            raise ToolError(f"there is no file {path!r} in the workspace; use list_files to see what exists")
        size = real.stat().st_size
        if size == 0:
            return f"File {rel} is empty (0 bytes)."
        with real.open("rb") as fh:
            kind = binary_kind(real.name, fh.read(8192))
        if kind is not None:
            return (f"{rel} is a binary file ({kind}, {size:,} bytes); it is not shown as text. "
                    "Use the python tool to process it.")
        lines, total, end = _read_page(real, offset, limit)
        if offset > total:
            raise ToolError(f"offset {offset} is past the end: {rel} has {total:,} lines")
        return _format_page(rel, lines, offset, end, total)


def _read_page(real: Path, offset: int, limit: int) -> tuple[list[str], int, int]:
    """The shown lines (each capped), the file's total line count and the last line number shown."""
    shown: list[str] = []
    used = 0
    end = offset - 1
    total = 0
    full = False
    with real.open("r", encoding="utf-8", errors="replace", newline="") as fh:
        for number, line in enumerate(fh, start=1):
            total = number
            if number < offset or full:
                continue
            text = truncate_middle(line.rstrip("\r\n"), READ_LINE_CHARS, "line shortened")
            if shown and (len(shown) >= limit or used + len(text) > READ_PAGE_CHARS):
                full = True
                continue
            shown.append(text)
            used += len(text) + 1
            end = number
    return shown, total, end


def _format_page(rel: str, lines: list[str], offset: int, end: int, total: int) -> str:
    remaining = total - end
    if offset == 1 and remaining == 0:
        header = f"File {rel} ({total:,} lines):"
    else:
        header = f"File {rel}: lines {offset:,}-{end:,} of {total:,}:"
    body = "\n".join(lines)
    if remaining <= 0:
        return f"{header}\n{body}"
    return (f"{header}\n{body}\n[{remaining:,} more lines; call read_file again with path={rel!r}, "
            f"offset={end + 1}]")


class WriteFileTool(Tool):
    """Write or append text to a file in the workspace, within a size limit."""

    name = "write_file"
    description = (
        "Save text to a file in the task workspace (paths are relative to the workspace; parent "
        "directories are created). mode 'overwrite' replaces the file, 'append' adds to its end. The "
        "python tool can read the file afterwards. For large or generated data, write it from python."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": "File path relative to the workspace, e.g. 'report.md'."},
            "content": {"type": "string", "description": "The text to write (saved as UTF-8)."},
            "mode": {"type": "string", "enum": ["overwrite", "append"], "default": "overwrite",
                     "description": "'overwrite' replaces the file; 'append' adds to the end of it."},
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
        self.workspace.mkdir(parents=True, exist_ok=True)
        real = resolve_in_workspace(self.workspace, path)
        rel = _relative(self.workspace, real)
        if real.is_dir() or rel == ".":
            raise ToolError(f"{path!r} is a directory; give a file name such as '{rel}/notes.txt'")
        existing = real.stat().st_size if mode == "append" and real.is_file() else 0
        if existing + len(data) > self.max_bytes:
            what = f"appending {len(data):,} bytes to {existing:,}" if existing else f"{len(data):,} bytes"
            raise ToolError(f"refused to write {rel}: {what} exceeds the write_file limit of "
                            f"{self.max_bytes:,} bytes; write large data with the python tool instead")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            with real.open("ab" if mode == "append" else "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ToolError(f"could not write {rel}: {exc.strerror or exc}") from exc
        verb = "Appended" if mode == "append" else "Wrote"
        return f"{verb} {len(data):,} bytes to {rel} (the file is now {real.stat().st_size:,} bytes)."


class ListFilesTool(Tool):
    """List the files of the workspace (or one of its directories) with their sizes."""

    name = "list_files"
    description = (
        "List files in the task workspace with their sizes, recursively (directories end with '/'). "
        f"Shows up to {LIST_MAX_ENTRIES} entries, nearest first; list a subdirectory to see more of it. "
        "Paths are relative to the workspace."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "default": ".",
                     "description": "Directory relative to the workspace; '.' (the default) is all of it."},
        },
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)

    def run(self, **kwargs: Any) -> str:
        """Return one line per entry (path and size), or say that the directory is empty."""
        path = str(kwargs.get("path") or ".")
        self.workspace.mkdir(parents=True, exist_ok=True)
        real = resolve_in_workspace(self.workspace, path)
        rel = _relative(self.workspace, real)
        if real.is_file():
            return f"{rel} is a file ({human_size(real.stat().st_size)}); use read_file to read it."
        if not real.is_dir():
            raise ToolError(f"there is no directory {path!r} in the workspace")
        entries, more = _walk(real, skip_tool_dirs=(rel == "."))
        where = "the workspace" if rel == "." else f"{rel}/"
        if not entries:
            return "The workspace is empty." if rel == "." else f"Directory {rel}/ is empty."
        lines = [f"Files in {where} ({len(entries)} entries{', not all shown' if more else ''}):"]
        lines += [_entry_line(real, p) for p in sorted(entries, key=lambda p: p.relative_to(real).parts)]
        if more:
            count = f"over {LIST_COUNT_LIMIT:,}" if more >= LIST_COUNT_LIMIT else f"{more:,}"
            lines.append(f"[{count} more entries not shown; list a subdirectory to see them]")
        return "\n".join(lines)


def _walk(top: Path, skip_tool_dirs: bool) -> tuple[list[Path], int]:
    """Breadth-first entries under top (nearest first, up to the cap) and how many more were found."""
    shown: list[Path] = []
    more = 0
    queue: deque[tuple[Path, int]] = deque([(top, 1)])
    while queue and more < LIST_COUNT_LIMIT:
        directory, depth = queue.popleft()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in children:
            if skip_tool_dirs and depth == 1 and entry.name in TOOL_DIRS:
                continue
            if len(shown) < LIST_MAX_ENTRIES:
                shown.append(Path(entry.path))
            else:
                more += 1
            # Symlinked directories are not followed: no loops, no walking out of the workspace.
            if entry.is_dir(follow_symlinks=False) and depth < LIST_MAX_DEPTH:
                queue.append((Path(entry.path), depth + 1))
    return shown, more


def _entry_line(top: Path, path: Path) -> str:
    rel = path.relative_to(top).as_posix()
    if path.is_symlink():
        return f"{rel} -> {os.readlink(path)}"
    if path.is_dir():
        return f"{rel}/"
    try:
        return f"{rel}  ({human_size(path.stat().st_size)})"
    except OSError:
        return rel
