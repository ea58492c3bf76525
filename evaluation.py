"""Scored question sets: reading .jsonl task files and GAIA-style quasi-exact answer scoring."""

from __future__ import annotations

import json
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from batch import Task, TaskFileError, task_key

# Field names we read, first match wins; the second names are those of GAIA's metadata.jsonl.
_FIELDS = {
    "id": ("id", "task_id"),
    "question": ("question", "Question"),
    "answer": ("answer", "Final answer"),
    "file": ("file", "file_name"),
    "level": ("level", "Level"),
}
_MAX_ID = 64


def parse_jsonl_tasks(text: str, path: Path) -> list[Task]:
    """Tasks from a .jsonl question set; a bad line raises TaskFileError naming its line number."""
    tasks: list[Task] = []
    ids: dict[str, int] = {}
    questions: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            task = _task_from_line(line, len(tasks) + 1, path)
        except ValueError as exc:
            raise TaskFileError(path, f"line {number}: {exc}") from exc
        if task.id in ids:
            raise TaskFileError(path, f"line {number}: duplicate id {task.id!r} (see line {ids[task.id]})")
        if task.key in questions:
            # Results are keyed by the question's text, so a repeat would overwrite the first one's result.
            raise TaskFileError(path, f"line {number}: same question as line {questions[task.key]}")
        ids[task.id] = questions[task.key] = number
        tasks.append(task)
    return tasks


def _task_from_line(line: str, index: int, path: Path) -> Task:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    question = _field(data, "question")
    if question is None:
        raise ValueError("missing 'question'")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("'question' must be a non-empty string")
    question = question.strip()
    return Task(index, question, id=_task_id(_field(data, "id"), index, question),
                expected=_expected(_field(data, "answer")), file=_attachment(_field(data, "file"), path),
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


def _attachment(raw: Any, path: Path) -> str | None:
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ValueError("'file' must be a path string")
    resolved = (path.parent / raw).resolve()
    if not resolved.is_file():
        raise ValueError(f"attachment {raw!r} not found (looked for {resolved})")
    return str(resolved)


def _level(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise ValueError("'level' must be a string or an integer")
    return str(raw).strip() or None


# ---- scoring ---------------------------------------------------------------------------------------

_LABEL_REMNANT = re.compile(r"^(?:.*\bfinal[ \t_-]*answer|[ \t*_]*answer)\b[ \t*_]*[:：][ \t*_]*",
                            re.IGNORECASE | re.DOTALL)
_WRAPPERS = ('"', "'", "`", "*", "_", "“", "”", "‘", "’", "«", "»")
_CURRENCY = r"(?:[A-Z]{0,2}[$€£¥₹₩₽]|USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR)"
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
_UNIT = r"(?:%|‰|[^\W\d_][^\W\d]*(?:[/.²³°][^\W\d_]*\d?)*|°[CF]?)"
_NUMERIC = re.compile(
    rf"^(?P<sign1>[-+−]?)\s*(?:{_CURRENCY}\s*)?(?P<sign2>[-+−]?)\s*(?P<num>{_NUMBER})"
    rf"(?:\s*(?P<unit>{_UNIT}(?:\s+{_UNIT}){{0,2}}))?$",
    re.IGNORECASE,
)
# A number followed by one of these is a different number, not a number with a unit.
_SCALE_WORDS = {"thousand", "million", "billion", "trillion", "mn", "bn", "mio", "mrd", "k"}
_SCALE_LETTERS = {"M", "B"}  # case matters: "12 m" is metres, "12M" is millions
# Commas that are thousands separators (1,000) do not split a list; all other commas and semicolons do.
_LIST_SPLIT = re.compile(r";|,(?!(?<=\d,)\d{3}(?!\d))")


def score_answer(answer: str, expected: str) -> bool:
    """Quasi-exact match as GAIA scores: numbers as numbers, lists element by element, strings normalized."""
    answer, expected = clean_answer(answer), clean_answer(expected)
    expected_items = split_list(expected)
    if len(expected_items) > 1 and parse_number(expected) is None:
        answer_items = split_list(answer)
        return len(answer_items) == len(expected_items) and all(
            _matches(clean_answer(a), clean_answer(e)) for a, e in zip(answer_items, expected_items, strict=True))
    return _matches(answer, expected)


def _matches(answer: str, expected: str) -> bool:
    expected_number = parse_number(expected)
    if expected_number is not None:
        return parse_number(answer) == expected_number
    return normalize_text(answer) == normalize_text(expected)


def clean_answer(text: str) -> str:
    """Strip what models wrap answers in: a `Final Answer:` label, quotes, bold, a trailing period."""
    text = _LABEL_REMNANT.sub("", text.strip()).strip()
    previous = None
    while text != previous:
        previous = text
        text = text.rstrip(" \t\n.。")
        if len(text) >= 2 and text[0] in _WRAPPERS and text[-1] in _WRAPPERS:
            text = text.strip("".join(_WRAPPERS)).strip()
    return text


def parse_number(text: str) -> Decimal | None:
    """The value of a number written with thousands separators, currency, percent or a unit; else None."""
    match = _NUMERIC.match(text.strip().replace("\u00a0", " ").replace("\u202f", " "))
    if match is None:
        return None
    unit = ((match.group("unit") or "").split() or [""])[0]
    if unit.lower() in _SCALE_WORDS or unit in _SCALE_LETTERS:
        return None
    if match.group("sign1") and match.group("sign2"):
        return None
    negative = (match.group("sign1") or match.group("sign2")) in {"-", "−"}
    try:
        value = Decimal(match.group("num").replace(",", ""))
    except InvalidOperation:
        return None
    return -value if negative else value


def split_list(text: str) -> list[str]:
    """Split on semicolons and on commas that are not thousands separators."""
    return [item.strip() for item in _LIST_SPLIT.split(text)]


def normalize_text(text: str) -> str:
    """Lower-cased, with all whitespace and punctuation (ASCII and Unicode) removed."""
    return "".join(ch for ch in text.lower()
                   if not ch.isspace() and not unicodedata.category(ch).startswith(("P", "S")))
