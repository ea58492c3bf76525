"""results.html: one self-contained page with every task's answer, sources, costs and step timeline.

Owns reading a run for the page (data.py), rendering it (page.py, charts.py, markdown.py, assets.py),
the --serve live view (live.py, hooks.py), `main.py report` (cli.py), and the door of every local server
(guard.py: Host, token and CSP rules; asgi.py: them as Starlette middleware for `main.py ui` and
`serve-mcp --http`). May import core, config,
tasks and report's own modules; never models or tools.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from core.files import atomic_write
from core.text import report_safe
from report.html.data import Run, load_run
from report.html.page import Caps, render_detail, render_page
from report.html.paths import html_path_for

__all__ = ["MAX_PAGE_BYTES", "build_page", "html_path_for", "write_html"]

MAX_PAGE_BYTES = 20_000_000
# Inline caps tried in order; a run whose page is still too large gets one file per task beside it.
_CAPS = (Caps(4000, 4000), Caps(1000, 1000), Caps(300, 400))


def write_html(records_file: Path, out: Path, trace_dirs: list[Path] | None = None,
               meta: dict[str, Any] | None = None) -> int:
    """Render the run in `records_file` (and its traces) to `out`, atomically; returns the page's size in bytes."""
    run = load_run(records_file, trace_dirs or [], meta or {})
    page = build_page(run, out)
    atomic_write(out, page)
    return len(page.encode("utf-8"))


def build_page(run: Run, out: Path, live: bool = False, version: str = "") -> str:
    """The page for a run, with timelines inline while it stays under MAX_PAGE_BYTES, else in per-task files;
    no control or bidirectional-override character of a page or model reaches it (core.text.report_safe)."""
    return report_safe(_built_page(run, out, live, version))


def _built_page(run: Run, out: Path, live: bool, version: str) -> str:
    details = out.parent / f"{out.stem}_tasks"
    if live:  # served from memory: never writes files, so it uses the smallest inline caps when needed
        pages = (render_page(run, live=True, caps=caps, version=version) for caps in _CAPS)
        return next((p for p in pages if len(p.encode("utf-8")) <= MAX_PAGE_BYTES),
                    render_page(run, live=True, caps=_CAPS[-1], version=version))
    for caps in _CAPS:
        page = render_page(run, live=live, caps=caps, version=version)
        if len(page.encode("utf-8")) <= MAX_PAGE_BYTES:
            if details.is_dir():
                shutil.rmtree(details, ignore_errors=True)
            return page
    caps = Caps(1500, 2000, detail_dir=details.name)  # the trace keeps the rest
    details.mkdir(parents=True, exist_ok=True)
    for task in run.tasks:
        (details / f"{task.get('id')}.html").write_text(report_safe(render_detail(task, caps)),
                                                                  encoding="utf-8")
    return render_page(run, live=live, caps=caps, version=version)
