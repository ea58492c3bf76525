"""The two places a run meets the HTML report: the live server while it goes, the file when it ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report.html import html_path_for, write_html
from report.html.live import LiveReport
from report.paths import records_path


@contextmanager
def live_report(port: int | None, output: Path, trace_dir: Path | None,
                say: Callable[[str], None]) -> Iterator[None]:
    """Serve the report on 127.0.0.1:port (0 = any free port) while the block runs; None = no server."""
    if port is None:
        yield
        return
    try:
        live = LiveReport(records_path(output), [trace_dir] if trace_dir else [], {}, port).start()
    except OSError as exc:
        say(f"live view not started: cannot listen on 127.0.0.1:{port} ({exc.strerror})")
        yield
        return
    say(f"live report: {live.url}")
    try:
        yield
    finally:
        live.finish(html_path_for(output).resolve())  # an open page keeps the end, with a link to results.html
        live.stop()


def write_final_html(enabled: bool, output: Path, trace_dir: Path | None, meta: dict[str, Any]) -> Path | None:
    """Write results.html beside the report from its records file; the path written, or None."""
    records = records_path(output)
    if not enabled or not records.is_file():
        return None
    out = html_path_for(output)
    write_html(records, out, [trace_dir] if trace_dir else [], meta)
    return out
