"""What a run says about itself beyond its task records (tasks a spend cap kept from starting).

results.jsonl holds one record per task and nothing else, so the note lives beside it (results.run.json),
tied to the records file it was written with: `python main.py report results.jsonl` shows it, and a later
change of the records file (a resumed or another run) makes an old note stale.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from core.files import atomic_write

FIELDS = ("skipped",)  # the report meta fields that only the run knows


def note_path(records_file: Path) -> Path:
    """results.jsonl -> results.run.json."""
    return records_file.with_suffix(".run.json")


def save_note(records_file: Path, meta: dict[str, Any]) -> None:
    """Write the run's note beside its records file, or remove an older one when the run has none."""
    path = note_path(records_file)
    note = {k: str(meta[k]) for k in FIELDS if meta.get(k)}
    try:
        if not note:
            path.unlink(missing_ok=True)
            return
        atomic_write(path, json.dumps({**note, "records_bytes": os.stat(records_file).st_size},
                                      ensure_ascii=False) + "\n")
    except OSError:  # the report already shows the note; only a later rebuild would miss it
        pass


def read_note(records_file: Path) -> dict[str, str]:
    """The note written with this records file, or {} (none, unreadable, or the records changed since)."""
    try:
        data = json.loads(note_path(records_file).read_text(encoding="utf-8"))
        size = os.stat(records_file).st_size
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("records_bytes") != size:
        return {}
    return {k: str(data[k]) for k in FIELDS if data.get(k)}
