"""Task files: the Task type, its resume key, and parsing of .txt, .jsonl, .json, .csv and .tsv files or stdin."""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import TaskFileError
from tasks.gaia import parquet_rows

STDIN = Path("-")
TEXT_SUFFIXES = ("", ".txt", ".text", ".md")  # tasks separated by blank lines
TABLES = {".csv": ",", ".tsv": "\t"}  # one question a row, with a header naming a question column
FORMATS = (".txt (tasks separated by blank lines), .jsonl or .json question sets, .csv or .tsv with a question "
           "column, GAIA's .parquet, or - for stdin")
# A file this large is almost certainly not meant as one batch; main.py warns but still runs it.
LARGE_TASK_COUNT = 100_000

# Field names we read, first match wins; the second names are those of GAIA's metadata.jsonl.
_FIELDS = {
    "id": ("id", "task_id"),
    "question": ("question", "Question"),
    "answer": ("answer", "Final answer"),
    "file": ("file", "file_name"),
    "level": ("level", "Level"),
}
_MAX_ID = 64
# GAIA's metadata: the test split's answers are "?" (not public); these columns are not ours to read.
HIDDEN_ANSWER = "?"
_DROPPED = ("Annotator Metadata", "file_path")


@dataclass(frozen=True, slots=True)
class Task:
    """One task from the task file; `key`, a hash of its text, matches results across runs (--resume)."""

    index: int
    text: str
    id: str
    expected: str | None = None
    file: str | None = None
    level: str | None = None
    _key: str = field(default="", init=False, compare=False, repr=False)  # slots: 400,000 tasks stay small

    @property
    def key(self) -> str:
        """The hash of the text, computed once (dataclasses.replace starts afresh)."""
        if not self._key:
            object.__setattr__(self, "_key", task_key(self.text))
        return self._key


def _text_task(index: int, text: str) -> Task:
    """A task of a .txt file, whose id carries its key: the text is hashed once."""
    key = task_key(text)
    task = Task(index, text, f"task-{index:03d}-{key[:8]}")
    object.__setattr__(task, "_key", key)
    return task


def task_key(text: str) -> str:
    """Hash of a task's text, used to match results across runs."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:16]


def read_task_file(path: Path) -> str:
    """The task file's text (`-` is stdin), or TaskFileError for a missing, unreadable, binary or empty file."""
    if path == STDIN:
        data = sys.stdin.buffer.read()
    else:
        if not path.exists():
            raise TaskFileError(path, "no such file")
        if not path.is_file():
            raise TaskFileError(path, "not a regular file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise TaskFileError(path, f"cannot read it ({exc.strerror})") from exc
    text = decode_text(path, data)
    if not text.strip():
        raise TaskFileError(path, "contains no tasks")
    return text


def decode_text(path: Path, data: bytes) -> str:
    """A task file's bytes as text: UTF-8 (with or without BOM) or UTF-16; TaskFileError naming the line and the
    byte of a file in another encoding (a Latin-1 export), and for a binary file."""
    utf16 = _utf16(data)
    if utf16:
        try:
            return data.decode(utf16)
        except UnicodeDecodeError as exc:
            raise TaskFileError(path, "looks like UTF-16 text but cannot be decoded; save it as UTF-8") from exc
    if b"\x00" in data[:8192]:
        raise TaskFileError(path, "looks like a binary file, expected text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TaskFileError(path, f"is not UTF-8 text (line {line} has byte 0x{data[exc.start]:02x}: a Latin-1 or "
                                  "Windows-1252 file?); save it as UTF-8") from exc


def _utf16(data: bytes) -> str | None:
    """"utf-16" for a file with a UTF-16 byte-order mark, "utf-16-le"/"-be" for one without that reads as such."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = data[:8192]
    if len(head) >= 4 and len(head) % 2 == 0:
        for zeros, text, name in ((head[1::2], head[0::2], "utf-16-le"), (head[0::2], head[1::2], "utf-16-be")):
            if not zeros.strip(b"\x00") and b"\x00" not in text:
                return name
    return None


def load_tasks(path: Path, attachments: Path | None = None) -> list[Task]:
    """Read and parse a task file: .txt blocks, a .jsonl question set, a .json array of questions, a .csv or
    .tsv table with a question column; any other extension is refused naming these (never run as one task).

    Attachment paths are relative to `attachments` (default: the question set's folder) and must stay in it.
    """
    suffix = "" if path == STDIN else path.suffix.lower()
    if suffix == ".parquet":  # GAIA's metadata.parquet (tasks/gaia.py), checked as a .jsonl set
        return parse_records(parquet_rows(path), path, attachments if attachments is not None else path.parent)
    if suffix not in (*TEXT_SUFFIXES, ".jsonl", ".json", *TABLES) and path.exists():
        raise TaskFileError(path, f"is not a task file format this reads ({suffix}); use {FORMATS}")
    text = read_task_file(path)
    kind = _kind(path, text)
    if attachments is None:
        attachments = Path.cwd() if path == STDIN else path.parent
    if kind == "jsonl":
        tasks = parse_jsonl_tasks(text, path, attachments)
    elif kind == "json":
        tasks = parse_json_tasks(text, path, attachments)
    elif kind in TABLES:
        tasks = parse_table_tasks(text, path, attachments, TABLES[kind])
    else:
        tasks = parse_text_tasks(text, path)
    if not tasks:
        raise TaskFileError(path, "contains no tasks")
    return tasks


def _kind(path: Path, text: str) -> str:
    if path == STDIN:
        first = text.lstrip()[:1]
        return {"{": "jsonl", "[": "json"}.get(first, "txt")
    suffix = path.suffix.lower()
    return {".jsonl": "jsonl", ".json": "json"}.get(suffix, suffix if suffix in TABLES else "txt")


def parse_text_tasks(text: str, path: Path = Path("tasks.txt")) -> list[Task]:
    """Tasks separated by blank lines; a task may span several lines; `#` lines are comments.

    A task repeated word for word is an error naming both lines: results are keyed by the task's text.
    """
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for line_no, block in _blocks(text):
        task = _text_task(len(tasks) + 1, block)
        if task.key in seen:
            raise TaskFileError(path, f"line {line_no}: same task as line {seen[task.key]} "
                                      "(results are kept per task text; remove or reword one)")
        seen[task.key] = line_no
        tasks.append(task)
    return tasks


def _blocks(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each blank-line separated block; CRLF, LF and CR-only files alike."""
    current: list[str] = []
    start = 0
    lines = io.StringIO(text.replace("\r\n", "\n").replace("\r", "\n"))  # one line at a time: big files
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\n")
        if line.lstrip().startswith("#"):
            continue
        if line.strip():
            start = start if current else number
            current.append(line.rstrip())
        elif current:
            yield start, "\n".join(current)
            current = []
    if current:
        yield start, "\n".join(current)


def parse_jsonl_tasks(text: str, path: Path, attachments: Path | None = None) -> list[Task]:
    """Tasks from a .jsonl question set; a bad line raises TaskFileError naming its line number."""
    base = attachments if attachments is not None else path.parent
    entries = ((number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip())
    return _parse_entries(entries, path, base, "line", _json_object)


def parse_json_tasks(text: str, path: Path, attachments: Path | None = None) -> list[Task]:
    """Tasks from a .json array of question objects (the same fields as .jsonl); errors name the item."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(path, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    if not isinstance(data, list):
        raise TaskFileError(path, f"expected a JSON array of question objects, got {type(data).__name__}")
    base = attachments if attachments is not None else path.parent
    return _parse_entries(enumerate(data, start=1), path, base, "item", lambda item: item)


def parse_table_tasks(text: str, path: Path, attachments: Path | None = None, delimiter: str = ",") -> list[Task]:
    """Tasks from a .csv or .tsv table: a header row naming a `question` column (and optionally `id`, `answer`,
    `file`, `level`, read as in a .jsonl set), then a question a row; empty cells are left out."""
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    columns = [c.strip() for c in reader.fieldnames or []]
    if not any(c in _FIELDS["question"] for c in columns):
        raise TaskFileError(path, f"has no question column (its header: {', '.join(columns)[:200] or 'none'}); "
                                  "name one column `question`")
    reader.fieldnames = columns
    rows = ((reader.line_num, {k: v.strip() for k, v in row.items() if k and isinstance(v, str) and v.strip()})
            for row in reader)
    base = attachments if attachments is not None else path.parent
    return _parse_entries(rows, path, base, "line", lambda row: row)


def parse_records(rows: list[dict[str, Any]], path: Path, attachments: Path | None = None) -> list[Task]:
    """Tasks from already decoded question objects (Parquet rows), checked like .jsonl lines (row = line)."""
    base = attachments if attachments is not None else path.parent
    return _parse_entries(enumerate(rows, start=1), path, base, "line", lambda row: row)


def _parse_entries(entries: Any, path: Path, base: Path, unit: str, decode: Any) -> list[Task]:
    tasks: list[Task] = []
    ids: dict[str, int] = {}
    questions: dict[str, int] = {}
    root = Path(os.path.realpath(base))
    for number, raw in entries:
        try:
            task = _task_from_data(decode(raw), len(tasks) + 1, root)
        except ValueError as exc:
            raise TaskFileError(path, f"{unit} {number}: {exc}") from exc
        if task.id in ids:
            raise TaskFileError(path, f"{unit} {number}: duplicate id {task.id!r} (see {unit} {ids[task.id]})")
        if task.key in questions:
            # Results are keyed by the question's text, so a repeat would overwrite the first one's result.
            raise TaskFileError(path, f"{unit} {number}: same question as {unit} {questions[task.key]}")
        ids[task.id] = questions[task.key] = number
        tasks.append(task)
    return tasks


def _json_object(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc


def _task_from_data(data: Any, index: int, root: Path) -> Task:
    data = gaia_fields(data)  # GAIA's test split marks hidden answers "?"
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    question = _field(data, "question")
    if question is None:
        raise ValueError("missing 'question'")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("'question' must be a non-empty string")
    question = question.strip()
    return Task(index, question, id=_task_id(_field(data, "id"), index, question),
                expected=_expected(_field(data, "answer")), file=_attachment(_field(data, "file"), root),
                level=_level(_field(data, "level")))


def _field(data: dict[str, Any], name: str) -> Any:
    for key in _FIELDS[name]:
        if key in data:
            return data[key]
    return None


def _task_id(raw: Any, index: int, question: str) -> str:
    if raw is None or raw == "":
        return f"task-{index:03d}-{task_key(question)[:8]}"
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError("'id' must be a string or an integer")
    return sanitize_id(str(raw)) or f"task-{index:03d}-{task_key(question)[:8]}"


def sanitize_id(raw: str) -> str:
    """An id safe as a directory and file name: letters, digits, `.`, `_` and `-`, at most 64 characters."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", raw.strip())
    return cleaned.strip(".-")[:_MAX_ID].rstrip(".-")


def _expected(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, list) and raw and all(_is_scalar(x) for x in raw):
        return ", ".join(_scalar_text(x) for x in raw)
    if not _is_scalar(raw):
        raise ValueError("'answer' must be a string, a number or a list of them")
    text = _scalar_text(raw).strip()
    if not text:
        raise ValueError("'answer' is empty (leave it out for an unscored question)")
    return text


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _scalar_text(value: str | int | float) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _attachment(raw: Any, root: Path) -> str | None:
    """The attachment's real path; it must be a file inside root (no `..`, absolute paths or symlinks out)."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ValueError("'file' must be a path string")
    resolved = Path(os.path.realpath(root / raw))
    if os.path.commonpath([resolved, root]) != str(root):
        raise ValueError(f"attachment {raw!r} is outside {root} (attachments must be in the question set's "
                         "folder, or in the folder given with --attachments)")
    if not resolved.is_file():
        raise ValueError(f"attachment {raw!r} not found (looked for {resolved})")
    return str(resolved)


def _level(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError("'level' must be a string or an integer")
    return str(raw).strip() or None


def gaia_fields(data: Any) -> Any:
    """A question record with GAIA's quirks mapped: a '?' answer (test split) becomes unscored."""
    if not isinstance(data, dict) or "Final answer" not in data:
        return data
    out = {k: v for k, v in data.items() if k not in _DROPPED}
    if isinstance(out["Final answer"], str) and out["Final answer"].strip() == HIDDEN_ANSWER:
        del out["Final answer"]
    return out
