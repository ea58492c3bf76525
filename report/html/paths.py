"""Where the HTML report of a run lives (a bottom module: imports nothing of ours)."""

from __future__ import annotations

from pathlib import Path


def html_path_for(report: Path) -> Path:
    """The HTML twin of a report: results.md -> results.html (a report named .html gets .report.html)."""
    if report.suffix.lower() == ".html":
        return report.with_name(report.stem + ".report.html")
    return report.with_suffix(".html")
