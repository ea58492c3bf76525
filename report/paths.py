"""Where a report's records live beside it (a bottom module of report/: imports nothing of ours)."""

from __future__ import annotations

from pathlib import Path


def records_path(results: Path) -> Path:
    """Where the JSON-lines record of a results file lives (results.md -> results.jsonl)."""
    return results.with_suffix(".jsonl") if results.suffix != ".jsonl" else results.with_suffix(".records.jsonl")
