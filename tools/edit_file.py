"""The edit_file tool: replace one exact passage, insert after a line, or view numbered lines of a workspace
text file, opening it through tools.safe_open like the other file tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import ToolError
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.files import binary_kind, workspace_name
from tools.safe_open import open_file, relative_name, workspace_parts

MAX_BYTES = 5_000_000  # as write_file's limit
VIEW_LINES = 400  # lines one view shows at most
_CONTEXT = 2  # lines shown around an edit
_LINE_CHARS = 500


class EditFileTool(Tool):
    """Precise edits of a text file in the workspace (II-Agent's string-replace editor)."""

    name = "edit_file"
    description = (
        "Edit a text file of the workspace. Replace: old_str (must occur exactly once) by new_str. Insert: "
        "new_str after line insert_line (0: at the top). View: view_range [first, last] shows numbered lines "
        "(last -1: to the end). write_file creates files."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer", "minimum": 0},
            "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """A view reads the file: a numbered source of the task, like read_file."""
        name = workspace_name(self.workspace, str(args.get("path", ""))) if "view_range" in args else None
        return [Read(name)] if name else []

    def run(self, **kwargs: Any) -> str:
        """Do the one edit (or view) the arguments ask for; anything refused leaves the file as it was."""
        path = str(kwargs["path"])
        modes = [m for m in ("old_str", "insert_line", "view_range") if m in kwargs]
        if len(modes) != 1:
            raise ToolError("give exactly one of old_str (replace), insert_line (insert) or view_range (view), "
                            f"not {', '.join(modes) or 'none of them'}")
        rel = relative_name(workspace_parts(self.workspace, path))
        text = self._read(path, rel)
        if modes == ["view_range"]:
            first, last = kwargs["view_range"]
            return _view(rel, text, int(first), int(last))
        if modes == ["old_str"]:
            new, start = _replace(rel, text, str(kwargs["old_str"]), str(kwargs.get("new_str", "")))
            done = "Replaced the one occurrence"
        else:
            if "new_str" not in kwargs:
                raise ToolError("insert_line needs new_str, the text to insert")
            new, start = _insert(rel, text, int(kwargs["insert_line"]), str(kwargs["new_str"]))
            done = f"Inserted after line {kwargs['insert_line']}"
        self._write(path, rel, new)
        lines = new.splitlines()
        if not lines:
            return f"{done} in {rel}; the file is now empty."
        end = min(start + len(str(kwargs.get("new_str", "")).splitlines()) + _CONTEXT, len(lines))
        begin = min(max(start - _CONTEXT, 1), end)
        return f"{done} in {rel}; lines {begin}-{end} now:\n" + _numbered(lines, begin, end)

    def _read(self, path: str, rel: str) -> str:
        with open_file(self.workspace, path, "r") as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ToolError(f"{rel} is over {MAX_BYTES:,} bytes; edit it with the python tool instead")
        kind = binary_kind(rel, data[:8192])
        if kind is not None:
            raise ToolError(f"{rel} is a binary file ({kind}); edit_file changes text files only")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"{rel} is not UTF-8 text (byte {exc.start:,}); edit it with the python tool") from exc

    def _write(self, path: str, rel: str, text: str) -> None:
        data = text.encode("utf-8")
        if len(data) > MAX_BYTES:
            raise ToolError(f"refused: {rel} would grow over {MAX_BYTES:,} bytes; nothing changed")
        try:
            with open_file(self.workspace, path, "w") as fh:
                fh.write(data)
        except OSError as exc:
            raise ToolError(f"could not write {rel}: {exc.strerror or exc}") from exc


def _replace(rel: str, text: str, old: str, new: str) -> tuple[str, int]:
    """The text with old replaced by new, and the line where the replacement starts."""
    if not old:
        raise ToolError("old_str is empty; give the exact text to replace, with enough lines to be unique")
    if "\r\n" in text and old not in text and "\n" in old:  # the model wrote \n, the file has \r\n
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_str occurs 0 times in {rel}; nothing changed. Copy it exactly (spaces and line "
                        "breaks too), e.g. from a view_range of the file")
    if count > 1:
        lines: list[str] = []
        at = -1
        while (at := text.find(old, at + 1)) != -1 and len(lines) < 10:
            lines.append(str(text.count("\n", 0, at) + 1))
        raise ToolError(f"old_str occurs {count} times in {rel} (lines {', '.join(lines)}); nothing changed. "
                        "Add surrounding lines to old_str so that it occurs once")
    at = text.index(old)
    return text[:at] + new + text[at + len(old):], text.count("\n", 0, at) + 1


def _insert(rel: str, text: str, after: int, new: str) -> tuple[str, int]:
    """The text with new inserted after line `after` (0: before the first), and the first inserted line."""
    lines = text.splitlines(keepends=True)
    if after > len(lines):
        raise ToolError(f"insert_line {after} is past the end: {rel} has {len(lines):,} lines; nothing changed")
    eol = "\r\n" if "\r\n" in text else "\n"
    if lines and after == len(lines) and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += eol
    block = new if new.endswith(("\n", "\r")) else new + eol
    return "".join([*lines[:after], block, *lines[after:]]), after + 1


def _view(rel: str, text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return f"{rel} is empty (0 lines)."
    last = total if last == -1 else last
    if not 1 <= first <= total or last < first:
        raise ToolError(f"view_range [{first}, {last}] is not within {rel}, which has {total:,} lines "
                        "(use [first, last] with 1 <= first <= last, or last -1 for the end)")
    last = min(last, total, first + VIEW_LINES - 1)
    more = f"\n[{total - last:,} more lines; view from {last + 1}]" if last < total else ""
    return f"{rel}: lines {first}-{last} of {total:,}:\n" + _numbered(lines, first, last) + more


def _numbered(lines: list[str], first: int, last: int) -> str:
    shown = []
    for n in range(first, last + 1):
        line = lines[n - 1] if n <= len(lines) else ""
        if len(line) > _LINE_CHARS:
            line = line[:_LINE_CHARS] + f" [… {len(line) - _LINE_CHARS:,} more characters]"
        shown.append(f"{n:6}\t{line}")
    return "\n".join(shown)
