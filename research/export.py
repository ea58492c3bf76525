"""--formats md,html,pdf,docx: the report beside report.md as report.pdf (report.html printed by the run's
headless Chromium, tools/web/browser/pdf.py) and report.docx (report/docx.py). A format that cannot be made (no
Chromium, no Playwright) is named in one line; the others are still written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from config import Settings
from core.errors import ConfigError
from core.files import atomic_write
from report.docx import render_docx
from report.html.research import render_html
from report.research import ResearchReport
from tools.web.browser.pdf import print_pdf
from tools.web.errors import BrowserUnavailableError

FORMATS = ("md", "html", "pdf", "docx")


def report_formats(value: str, no_html: bool = False) -> tuple[str, ...]:
    """The formats asked for (md always; --no-html drops html); ConfigError naming an unknown one."""
    asked = [f.strip().lower().lstrip(".") for f in value.split(",") if f.strip()]
    unknown = [f for f in asked if f not in FORMATS]
    if unknown:
        raise ConfigError(f"--formats: unknown format {unknown[0]!r} (choose from {','.join(FORMATS)})", "formats")
    return tuple(f for f in FORMATS if f == "md" or f in asked and not (f == "html" and no_html))


def export(report: ResearchReport, markdown: Path, formats: tuple[str, ...], texts_dir: Path | None,
           settings: Settings, say: Callable[[str], None]) -> list[Path]:
    """report.pdf and report.docx beside `markdown` as `formats` asks; the paths written."""
    written = []
    if "docx" in formats:
        path = markdown.with_suffix(".docx")
        atomic_write(path, render_docx(report))
        written.append(path)
    if "pdf" in formats:
        path = markdown.with_suffix(".pdf")
        try:
            data = print_pdf(render_html(report, texts_dir), settings.chromium)
        except (BrowserUnavailableError, RuntimeError) as exc:
            say(f"report.pdf not written: {exc} (the other formats are)")
        else:
            atomic_write(path, data)
            written.append(path)
    return written
