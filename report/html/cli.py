"""`python main.py report results.jsonl [-o results.html]`: rebuild the HTML and Markdown of an earlier run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core.cli import ArgumentParser
from core.files import atomic_write
from report.html import write_html
from report.markdown import TaskRecord, read_records, render_markdown
from report.note import read_note
from report.stopped import read_header, written_at


def build_parser() -> argparse.ArgumentParser:
    """Flags of the report command."""
    p = ArgumentParser(prog="main.py report",
                       description="Rebuild results.html (and results.md) from a run's records and traces.")
    p.add_argument("records", type=Path, help="the run's records file (results.jsonl), or a run id or folder of "
                                             "the run store (see main.py runs; --runs-dir DIR names the store)")
    p.add_argument("-o", "--output", type=Path, help="HTML path (default: beside the records, .html)")
    p.add_argument("--trace-dir", type=Path, action="append", dest="trace_dirs",
                   help="where the run's traces are (default: traces/ beside the records, then ./traces)")
    p.add_argument("--no-markdown", action="store_true", help="rebuild only the HTML")
    return p


def main(argv: list[str]) -> int:
    """Run the command; exit 2 when the records file has no records."""
    args = build_parser().parse_args(argv)
    records = sorted(read_records(args.records)[0].values(), key=lambda r: (r.index, r.id))
    if not records:
        print(f"error: {args.records}: no task records found (expected the .jsonl a run wrote)", file=sys.stderr)
        return 2
    trace_dirs = args.trace_dirs or [args.records.parent / "traces", Path("traces")]
    out = args.output or args.records.with_suffix(".html")
    size = write_html(args.records, out, trace_dirs)
    print(f"wrote {out} ({len(records)} tasks, {size / 1e6:.1f} MB)")
    if not args.no_markdown:
        md = args.records.with_suffix(".md")
        meta = {"finished": written_at(args.records), **read_note(args.records), **read_header(args.records)}
        _write_markdown(records, md, meta)
        print(f"wrote {md}")
    return 0


def _write_markdown(records: list[TaskRecord], path: Path, meta: dict[str, Any]) -> None:
    atomic_write(path, render_markdown(records, meta))
