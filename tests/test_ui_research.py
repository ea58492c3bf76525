"""The web app's Deep research mode (`main.py ui`): the plan and each sub-question's progress stream in, the
report appears with its verdicts and opens as report.html; over HTTP and in a real headless Chromium."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docx
import pypdf
import pytest

from tests.fakes.deep_research import Sub, World, page
from tests.fakes.loopback import LoopbackServer
from tests.fakes.ui_app import api_call
from tests.test_report_html_browser import CHROMIUM, launched
from tests.test_research import BAD, GOOD, MODEL, PLAN, QUESTION, world
from tests.test_research_stopped import QUESTION as ASKED
from tests.test_research_stopped import Held, folder, held_world

URL_LINE = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)")


@dataclass
class App:
    world: World
    url: str = ""
    port: int = 0
    token: str = ""
    output: list[str] = field(default_factory=list)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    with served(tmp_path, world(writer=lambda prompt: BAD, repair=lambda prompt: GOOD)) as a:
        yield a


@contextlib.contextmanager
def served(tmp_path: Path, w: World, handler: Any = None, **env_extra: str) -> Iterator[App]:
    """`main.py ui` on a free port, its model and pages the world's (or `handler`'s, which wraps it)."""
    pytest.importorskip("starlette", reason="starlette not installed (requirements-ui.txt)")
    with LoopbackServer(handler or w) as server:
        w.base = server.url
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1", "AGENT_MODEL": MODEL,
               "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0", "AGENT_SEARCH": "0",
               "AGENT_RUNS_DIR": str(tmp_path / "runs"), **env_extra}
        proc = subprocess.Popen([sys.executable, str(Path(__file__).parent.parent / "main.py"), "ui", "--port", "0"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        a = App(w)
        threading.Thread(target=lambda: a.output.extend(proc.stdout or []), daemon=True).start()
        try:
            deadline = time.monotonic() + 60
            while not (m := URL_LINE.search("".join(a.output))) and time.monotonic() < deadline:
                assert proc.poll() is None, "".join(a.output)
                time.sleep(0.05)
            assert m is not None, "".join(a.output)
            a.url, a.port, a.token = m.group(0), int(m.group(1)), m.group(2)
            yield a
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def call(app: App, path: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    return api_call(app, path, data, headers, timeout=120)  # a research run answers slowly


def test_a_research_streams_its_plan_and_sub_questions_then_the_checked_report(app: App) -> None:
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="question"\r\n\r\n{QUESTION}\r\n'
            f"--{boundary}--\r\n").encode()
    started = call(app, "/api/research", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    stream = call(app, f"/api/research/{started['research']}/events")
    events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith('data: {"')]
    assert events[0] == {"type": "plan", "questions": [{"n": 1, "text": PLAN[0], "round": 1},
                                                {"n": 2, "text": PLAN[1], "round": 1}]}
    done = [e for e in events if e["type"] == "sub" and e.get("done")]
    assert sorted((e["n"], e["state"], e["sources"]) for e in done) == [(1, "answered", 1), (2, "answered", 1)]
    assert any(e["type"] == "sub" and e["state"] == "step 1: scrape" for e in events)  # progress before the end
    report = events[-1]
    assert report["type"] == "report" and report["report"]["title"] == "Research report"
    assert [c["verdict"] for c in report["report"]["citations"]] == ["supported", "supported"]
    assert report["report"]["repair"]["sent_back"] is True and app.world.calls["repair"] == 1
    page = call(app, report["html"])
    assert "<h1>Research report: How are the Rhine" in page and "Citations checked" in page
    history = call(app, "/api/history")["items"]
    assert (history[0]["kind"], history[0]["results"]) == ("research", report["html"])
    empty = body.replace(QUESTION.encode(), b"  ")
    with pytest.raises(urllib.error.HTTPError) as refused:  # one line, nothing started
        call(app, "/api/research", empty, {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert refused.value.code == 400 and "ask a question" in json.loads(refused.value.read())["error"]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
def test_the_page_has_a_deep_research_mode(app: App) -> None:
    with launched() as browser:
        tab = browser.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.goto(app.url)
        tab.set_default_timeout(60_000)
        tab.check("#deep")
        tab.fill("#question", QUESTION)
        tab.press("#question", "Enter")
        tab.locator(".review .approve").click()  # the plan as the model made it
        tab.locator(".research .plan li").nth(1).wait_for()
        assert tab.locator(".research .plan li").first.inner_text().startswith(PLAN[0])
        tab.locator(".research .answer").wait_for()
        answer = tab.locator(".research .answer").inner_text()
        assert "Research report" in answer and "2 claims: 2 supported" in answer
        assert "The Danube is navigable for 2,415 km [2]." in answer
        assert tab.locator(".research .answer .text h4").all_inner_texts() == ["Rhine", "Danube"]  # headings
        assert "## " not in answer
        assert tab.locator(".research .sources li").first.inner_text() == "Rhine freight"  # a loopback page: text
        assert tab.locator(".research .sources a").count() == 0
        assert tab.locator(".research .plan li").first.locator(".state").inner_text() == "answered · 1 source"
        assert tab.locator(".research a", has_text="open the full report").get_attribute("href").endswith(
            "/report.html")
        assert app.world.calls.get("other") is None and tab.locator(".turn .step").count() == 0  # not a question
        assert errors == []


EDITED, OWN = "How much freight did the Rhine carry in 2022?", "Which ports lie on the Danube?"
STEERED = ("## Rhine\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1].\n\n"
           "## Ports\n\nConstanța handled 75.6 million tonnes in 2022 [2].\n")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
def test_the_plan_is_reviewed_edited_and_approved_before_research_and_the_report_downloads(app: App) -> None:
    w = app.world
    w.subs[EDITED] = Sub(["/rhine"], "The Rhine carried 187 million tonnes of freight in 2022 [1].")
    w.subs[OWN] = Sub(["/ports"], "Constanța handled 75.6 million tonnes in 2022 [1].")
    w.pages["/ports"] = page("Danube ports", "Constanța handled 75.6 million tonnes in 2022.")
    w.writer = w.repair = lambda prompt: STEERED
    with launched() as browser:
        tab = browser.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(app.url)
        tab.set_default_timeout(60_000)
        tab.check("#deep")
        tab.fill("#question", QUESTION)
        tab.press("#question", "Enter")
        rows = tab.locator(".review .plan-edit .sub-text")
        rows.nth(1).wait_for()
        assert [rows.nth(i).input_value() for i in range(rows.count())] == PLAN  # the model's plan, to review
        assert w.calls == {"plan": 1}  # nothing researched before it is approved
        rows.nth(0).fill(EDITED)  # change the first
        tab.locator(".review .plan-edit li").nth(1).locator(".remove").click()  # remove the second
        tab.locator(".review .add").click()  # add one of the user's own
        rows.nth(1).fill(OWN)
        tab.locator(".review .depth").fill("2")
        tab.locator(".review .approve").click()
        tab.locator(".research .answer").wait_for()
        assert tab.locator(".review").count() == 0
        assert [tab.locator(".research .plan li").nth(i).locator("span").first.inner_text() for i in range(2)] == \
            [EDITED, OWN]
        assert {p.split("\n")[0] for p in w.prompts["task"]} == {EDITED, OWN}  # exactly the approved plan
        assert w.calls["plan"] == 1 and w.calls["followup"] == 1  # depth 2: one follow-up call, which said none
        assert "Constanța handled 75.6 million tonnes in 2022 [2]." in tab.locator(".research .answer").inner_text()
        links = {a.inner_text(): f"http://127.0.0.1:{app.port}{a.get_attribute('href')}"
                 for a in tab.locator(".research a.download").all()}
        assert set(links) == {"download PDF", "download DOCX"}
        pdf = tab.request.get(links["download PDF"])
        assert pdf.status == 200 and pdf.body().startswith(b"%PDF")
        assert "Constanța handled 75.6" in " ".join(pypdf.PdfReader(io.BytesIO(pdf.body())).pages[0].extract_text()
                                                     .split())
        word = tab.request.get(links["download DOCX"])
        assert word.status == 200 and "attachment" in word.headers["content-disposition"]
        text = "\n".join(p.text for p in docx.Document(io.BytesIO(word.body())).paragraphs)
        assert "Constanța handled 75.6 million tonnes in 2022 [2]." in text and "Danube ports" in text
        assert errors == []


def test_stop_while_searching_the_documents_names_what_was_read_and_each_row_says_it_stopped(
        tmp_path: Path) -> None:
    w = held_world()
    held = Held(w)
    with served(tmp_path, w, held, AGENT_DOCS=str(folder(tmp_path))) as a:
        boundary = uuid.uuid4().hex
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="question"\r\n\r\n{ASKED}\r\n'
                f"--{boundary}--\r\n").encode()
        try:
            key = call(a, "/api/research", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"})[
                "research"]
            assert held.arrived.wait(120), "the sub-question never searched the documents"
            assert call(a, f"/api/research/{key}/stop", b"") == {"stopping": True}
        finally:
            held.release.set()
        stream = call(a, f"/api/research/{key}/events")
    events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith('data: {"')]
    rows = [e for e in events if e["type"] == "sub"]
    assert rows[0]["state"] == "step 1: search_docs"  # while it ran
    assert rows[-1] == {"type": "sub", "n": 1, "state": "stopped", "done": True, "sources": 1,
                        "error": "after reading 1 source"}  # after the stop: not the last step it showed
    report = events[-1]["report"]
    assert report["title"] == "Partial research report"
    assert report["partial"].startswith("the research was stopped by the user (Stop in the web app) after reading "
                                        "1 source (1 document passage), listed under Sources")
    assert report["also_read"] == [{"url": "harbour-report.pdf, p. 3", "title": ""}]
