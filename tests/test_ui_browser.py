"""`main.py ui` in a real headless Chromium: ask, watch a step stream in, follow up, stop, reopen, attach."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import Settings
from report.html import write_html
from run.store import RunStore
from tests.fakes.ui_app import HOSTILE, FakeApp, running_app
from tests.test_report_html import make_run
from tests.test_report_html_browser import CHROMIUM, launched

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"),
]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "ui.png"
WAIT = 30_000  # ms: generous, a shared CI machine; no test measures speed


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApp]:
    pytest.importorskip("starlette", reason="starlette not installed (requirements-ui.txt)")
    with running_app(tmp_path_factory.mktemp("ui")) as fake:
        yield fake


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched() as b:
        yield b


@pytest.fixture
def page(app: FakeApp, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    external: list[str] = []
    tab.on("request", lambda r: None if r.url.startswith(f"http://127.0.0.1:{app.port}/") else external.append(r.url))
    tab.goto(app.url)
    tab.set_default_timeout(WAIT)
    yield tab
    context.close()
    assert errors == [], errors  # a CSP refusal or a script error shows here
    assert external == [], external  # nothing loaded from outside: the page works offline


def _ask(page: Any, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")


def test_the_url_token_is_taken_out_of_the_address_bar(page: Any) -> None:
    assert "token=" not in page.url
    page.reload()  # the cookie carries the token from now on
    assert page.locator("#question").is_visible()


def test_ask_see_a_step_stream_then_the_answer_with_sources_then_follow_up(page: Any, app: FakeApp) -> None:
    page.fill("#question", "What does Widget Corp publish?")
    page.press("#question", "Shift+Enter")  # a new line, not a send
    assert page.locator(".turn").count() == 0
    page.keyboard.type("(One line.)")
    assert page.input_value("#question") == "What does Widget Corp publish?\n(One line.)"
    page.press("#question", "Enter")
    step = page.locator(".turn .step").first
    step.wait_for()
    assert "scrape" in step.locator(".call").inner_text() and "/report" in step.inner_text()
    assert "read the company report" in step.locator(".thought").inner_text()
    assert page.locator(".answer").count() == 0  # the model has not answered yet: the step came first
    assert page.locator("#stop").is_visible()
    app.gate.set()
    answer = page.locator(".turn .answer")
    answer.wait_for()
    assert "yearly sales as a CSV" in answer.locator(".text").inner_text()
    # The site is on 127.0.0.1: shown, not linked (the app's token cookie would go to that port with a click).
    assert answer.locator(".sources li a").count() == 0
    assert answer.locator(".sources li span").first.inner_text() == "Widget Corp annual report"
    assert f"— {app.web}/report" in answer.locator(".sources li").inner_text()
    assert "supported" in answer.locator(".sources li").inner_text()
    assert "tokens" in page.locator("#usage").inner_text()
    page.locator("#stop").wait_for(state="hidden")

    _ask(page, "Which years does it cover?")
    page.locator(".turn").nth(1).locator(".answer").wait_for()
    assert "2021 to 2023" in page.locator(".turn").nth(1).locator(".answer").inner_text()
    follow_up = next(p for p in app.prompts if "Which years" in p)
    assert "Question 1: What does Widget Corp publish?" in follow_up and "yearly sales as a CSV" in follow_up
    assert app.web + "/report" in follow_up  # the sources already read travel with it
    shot = page.screenshot(full_page=False)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("UPDATE_SCREENSHOTS"):
        SCREENSHOT.write_bytes(shot)

    page.click("#new")
    assert page.locator(".turn").count() == 0
    _ask(page, "Hello, new topic")
    page.locator(".turn .answer").wait_for()
    assert not any("Hello, new topic" in p and "Question 1:" in p for p in app.prompts)  # fresh context


def test_stop_ends_a_running_question(page: Any, app: FakeApp) -> None:
    _ask(page, "Slow question about Widget Corp")
    page.locator(".turn .step").first.wait_for()
    with page.expect_response("**/api/stop/*") as stopped:
        page.click("#stop")
    assert stopped.value.ok
    app.release.set()  # the model's next reply arrives after the stop: the task must not go on
    answer = page.locator(".turn .answer")
    answer.wait_for()
    assert "stopped" in answer.inner_text() and "went on" not in answer.inner_text()
    assert sum("Slow question" in p for p in app.prompts) < 3  # the call after the stop never came
    page.locator("#stop").wait_for(state="hidden")


def test_open_a_past_session_read_only_with_its_steps(page: Any, app: FakeApp) -> None:
    app.gate.set()  # this question's answer need not wait
    _ask(page, "What does Widget Corp publish? Once more, for the history")
    page.locator(".turn .answer").wait_for()
    page.click("#new")
    page.reload()
    item = page.locator("#history a", has_text="Once more, for the history")
    item.click()
    page.locator("#readonly").wait_for()
    assert page.locator("#ask").is_hidden()
    turn = page.locator(".turn").first
    assert "Once more, for the history" in turn.locator(".question").inner_text()
    assert "scrape" in turn.locator(".step .call").first.inner_text()
    assert "yearly sales as a CSV" in turn.locator(".answer").inner_text()
    titles = page.locator("#history a").all_inner_texts()
    assert titles and "Once more" in titles[0]  # newest first


def test_upload_an_attachment_the_agent_reads(page: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Meeting notes.\nThe secret number is 7312.\n")
    page.set_input_files("#file", str(notes))
    _ask(page, "What number is in my file?")
    turn = page.locator(".turn").first
    assert "notes.txt" in turn.locator(".attachment").inner_text()
    turn.locator(".answer").wait_for()
    assert "read_file" in turn.locator(".step .call").first.inner_text()
    assert "The number is 7312" in turn.locator(".answer").inner_text()


def test_a_batch_run_in_the_list_opens_its_results_html(page: Any, app: FakeApp, tmp_path: Path) -> None:
    records = make_run(tmp_path, n=2)
    html = tmp_path / "results.html"
    write_html(records, html, [tmp_path / "traces"])
    run = RunStore(app.runs).create("batch", "tasks.txt", Settings())
    run.keep_reports(tmp_path / "results.jsonl", html)  # as a batch does at its end: the run's own copy
    run.finish(tasks=2, answered=2, cost=0.003, outputs=[str(html)])
    page.reload()
    page.locator("#history a", has_text="tasks.txt").click()
    page.wait_for_url(f"**/runs/{run.id}/results.html")
    assert page.locator("#count").inner_text() == "2 of 2 tasks"  # its own script runs under the app's CSP


def test_markup_from_a_page_or_the_model_is_shown_as_text(page: Any) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _ask(page, "Hostile page, please summarise")
    answer = page.locator(".turn .answer")
    answer.wait_for()
    assert HOSTILE in answer.locator(".text").inner_text()  # the markup, as text
    assert HOSTILE in page.locator(".turn .step .thought").first.inner_text()
    assert page.locator(".turn img, .turn script, .turn iframe").count() == 0
    assert page.locator('.turn a[href^="javascript"]').count() == 0
    assert dialogs == []  # and the page fixture checks that nothing outside the app was requested
