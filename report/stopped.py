"""What a stopped run's reports say: results.jsonl's first line, and the title results.md and results.html show.

A run ended by Ctrl-C, a spend cap, a rejected key or a model server that went away is not "finished":
its records file starts with one run line, {"run": "stopped", "reason": ..., "resume": ...}, that readers
of records skip (report.markdown.read_records) and `main.py report` reads back, so a rebuilt report
still says why the run stopped and how to resume it.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.text import report_data

RUN_KEY = "run"
FIELDS = ("stopped", "resume", "stopped_at", "total")  # report meta fields the run line carries


def header_line(meta: dict[str, Any]) -> str:
    """The records file's first line for a stopped run, or "" for a run that finished."""
    if not meta.get("stopped"):
        return ""
    line = {RUN_KEY: "stopped", "reason": str(meta["stopped"]), "resume": meta.get("resume"),
            "stopped_at": meta.get("stopped_at"), "tasks": meta.get("total")}
    return json.dumps(report_data(line), ensure_ascii=False) + "\n"


def is_run_line(data: object) -> bool:
    """True for the run line (not a task record)."""
    return isinstance(data, dict) and RUN_KEY in data and "key" not in data


def read_header(records_file: Path) -> dict[str, str]:
    """The report meta a stopped run left in its records file ({} for a finished run or no file)."""
    try:
        with records_file.open(encoding="utf-8", errors="replace") as f:
            data = json.loads(f.readline() or "null")
    except (OSError, ValueError):
        return {}
    if not is_run_line(data) or data.get(RUN_KEY) != "stopped":
        return {}
    meta = {"stopped": data.get("reason"), "resume": data.get("resume"), "stopped_at": data.get("stopped_at"),
            "total": data.get("tasks")}  # the task file's count: the report says "2 of 5 tasks"
    return {k: str(v) for k, v in meta.items() if v}


def written_at(records_file: Path) -> str:
    """When the run last wrote its records file (its last task's end), as the reports show a time: a report
    rebuilt later (`main.py report`) says when the run finished, not when it was rebuilt."""
    try:
        stamp = records_file.stat().st_mtime
    except OSError:
        stamp = time.time()
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def title(meta: dict[str, Any], when: str) -> str:
    """`Run finished <when>`, or `Run stopped <when>: <reason>` (never "finished" for a stopped run)."""
    if meta.get("stopped"):
        return f"Run stopped {meta.get('stopped_at') or when}: {meta['stopped']}"
    return f"Run finished {when}"


def resume_line(meta: dict[str, Any]) -> str:
    """The command that continues a stopped run, or ""."""
    return str(meta["resume"]) if meta.get("stopped") and meta.get("resume") else ""
