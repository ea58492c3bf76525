"""results.html in a real headless Chromium: no console errors, filter, sort, open a task, screenshot."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from report.html import write_html
from tests.test_report_html import PAYLOADS, make_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"),
]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """The system Chromium, headless, through Playwright (the test skips when Playwright is missing)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (requirements-dev.txt)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module; each test opens its own page or context in it."""
    with launched() as b:
        yield b


def _mixed_run(tmp: Path) -> Path:
    records = make_run(tmp, n=6, obs="\n".join(PAYLOADS))
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    for r in rows:
        if r["index"] % 2 == 0:
            r.update(status="error", error="boom", answer=None, cost=0.5)
    rows[0]["task"] = PAYLOADS[0]
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return records


def test_page_works_in_chromium(tmp_path: Path, browser: Any) -> None:
    records = _mixed_run(tmp_path)
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    page = browser.new_page(viewport={"width": 1200, "height": 1400})
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(out.as_uri())
    assert page.locator("#count").inner_text() == "6 of 6 tasks"
    page.select_option("#f-status", "error")
    assert page.locator("#count").inner_text() == "3 of 6 tasks"
    assert page.locator("#tasks tbody tr.row:not(.hidden)").count() == 3
    page.select_option("#f-status", "")
    page.locator("#tasks th", has_text="Cost").click()
    page.locator("#tasks th", has_text="Cost").click()  # descending: the most expensive first
    first = page.locator("#tasks tbody tr.row:not(.hidden)").first
    assert first.get_attribute("data-status") == "error"
    page.locator("#tasks tbody tr.row[data-target='t-3']").click()
    assert page.locator("#t-3").evaluate("d => d.open") is True
    assert page.locator("#t-3 ol.timeline > li").count() == 3  # two tool steps and the answer
    page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert errors == [] and dialogs == []


def test_page_is_readable_without_javascript(tmp_path: Path, browser: Any) -> None:
    records = make_run(tmp_path, n=3)
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(out.as_uri())
    assert page.locator("#tasks tbody tr.row").count() == 3  # every row shown, no paging
    page.locator("#t-2 > summary").click()
    assert "Answer 2" in page.locator("#t-2").inner_text()
    context.close()


def test_task_id_links_open_the_card_and_the_table_shows_answers_and_verdicts(tmp_path: Path, browser: Any) -> None:
    records = make_run(tmp_path, n=4)
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    for r in rows:
        r.update(expected=f"Answer {r['index']}", correct=r["index"] != 3)
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = tmp_path / "traces" / "task-002.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[2].update(tool="python", arguments={"code": "import math\nprint(math.pi)"})
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri() + "#task-002")  # the task's id, as the task file names it
    assert page.locator("#t-2").evaluate("d => d.open") is True
    assert page.locator("#t-1").evaluate("d => d.open") is False
    code = page.locator("#t-2 pre.code code").first
    assert code.inner_text().splitlines() == ["import math", "print(math.pi)"]  # real line breaks
    assert code.locator("span.kn").first.evaluate("e => getComputedStyle(e).fontWeight") == "700"  # highlighted
    headers = page.locator("#tasks thead th").all_inner_texts()
    assert headers[:5] == ["#", "Task", "Answer", "Expected", "Verdict"]
    assert page.locator("#tasks tbody tr.row[data-target='t-3'] td").nth(2).inner_text() == "Answer 3"
    page.select_option("#f-correct", "no")
    assert page.locator("#count").inner_text() == "1 of 4 tasks"
    page.evaluate("location.hash = 'task-004'")  # a link followed on the open page
    page.wait_for_function("document.getElementById('t-4').open")
    assert errors == []
