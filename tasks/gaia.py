"""GAIA's own layout: metadata.jsonl / metadata.parquet beside the attachments, read with no conversion.

Columns, as GAIA's dataset card lists them: `task_id`, `Question`, `Level`, `Final answer`, `file_name`
(the attachment, in the metadata file's folder), `file_path` (the same file relative to the dataset root)
and `Annotator Metadata` (ignored). The test split's answers are "?", which means "not public"; that mapping
is the task file reader's (tasks/taskfile.py, gaia_fields), which also checks every row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import TaskFileError


def read_parquet_records(path: Path) -> list[dict[str, Any]]:
    """The rows of a GAIA metadata.parquet as dicts; TaskFileError with the install hint without pyarrow."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise TaskFileError(path, "reading .parquet question sets needs pyarrow: pip install pyarrow") from exc
    if not path.is_file():
        raise TaskFileError(path, "no such file")
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TaskFileError(path, f"not a readable Parquet file ({exc})") from exc
    if "Question" not in table.column_names and "question" not in table.column_names:
        raise TaskFileError(path, f"no 'Question' column (columns: {', '.join(table.column_names)})")
    return [dict(row) for row in table.to_pylist()]


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    """A GAIA metadata.parquet's rows as a .jsonl set's lines would read (the task file reader checks them)."""
    # Through JSON as a .jsonl line would be: values JSON cannot hold (dates, bytes) become strings.
    rows = [json.loads(json.dumps(_plain(r), ensure_ascii=False, default=str)) for r in read_parquet_records(path)]
    if not rows:
        raise TaskFileError(path, "contains no tasks")
    return rows


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    # Parquet has no "missing" for strings: GAIA writes "" for "no attachment"; None likewise means absent.
    return {k: v for k, v in row.items() if v is not None}
