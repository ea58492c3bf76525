"""Through main.py: a dead search backend and a sourced answer, as results.jsonl, results.md, results.html and
the terminal show them; an old results.jsonl whose sources are plain URLs still reads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.test_check_setup_search import DNS_ERROR, DeadDDGS
from tests.test_sources_agent import CENSUS


def _model(url: str) -> Any:
    """Task 1 searches (the search fails) and answers from memory; task 2 reads a page and cites it."""

    def handle(req: Request) -> Response:
        if req.path == "/census":
            return Response(200, CENSUS, content_type="text/html; charset=utf-8")
        messages = req.json()["messages"]
        task, turns = messages[1]["content"], sum(1 for m in messages if m["role"] == "assistant")
        if task.startswith("What is the capital"):
            steps = ['Action: search\nAction Input: {"query": "capital of France"}', "Final Answer: Paris"]
        else:
            steps = [f'Action: scrape\nAction Input: {{"url": "{url}/census"}}',
                     "Final Answer: Riverton has 2,148,000 people [1]. It was founded in 1820 [2]."]
        return openai_reply(steps[min(turns, 1)])

    return handle


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: DeadDDGS())  # no SERPER key
    (tmp_path / "tasks.txt").write_text("What is the capital of France?\n\nHow many people live in Riverton?\n")
    base: dict[str, str] = {}
    with LoopbackServer(lambda req: _model(base["url"])(req)) as server:
        base["url"] = server.url
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("SCRAPE_ALLOW_PRIVATE_URLS", "1")
        code = main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini"])
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    return {"code": code, "records": records, "md": (tmp_path / "results.md").read_text(),
            "html": (tmp_path / "results.html").read_text(), "terminal": capsys.readouterr().err, "url": server.url}


def test_records_keep_sources_citations_sourced_and_failures(run: dict[str, Any]) -> None:
    memory, cited = run["records"]
    assert run["code"] == 0  # both answered: the warning is in what the user reads, not the exit code
    assert memory["sourced"] is False and memory["sources"] == [] and memory["citations"] == []
    assert memory["tool_failures"] == [{"step": 1, "tool": "search",
                                        "error": f"Error: DuckDuckGo search failed: {DNS_ERROR}"}]
    assert cited["sourced"] is True and cited["tool_failures"] == []
    assert cited["sources"] == [{"n": 1, "url": run["url"] + "/census", "title": "Riverton census 2020", "read": True,
                                 "error": None}]
    assert [(c["n"], c["verdict"]) for c in cited["citations"]] == [(1, "supported"), (2, "fabricated")]


def test_results_md_marks_the_sourceless_answer_and_each_verdict(run: dict[str, Any]) -> None:
    md = run["md"]
    assert "| # | Task | Answer | Status | Steps | Tokens | Cost | Seconds | Sources |" in md
    assert re.search(r"\| 1 \| What is the capital of France\? \| [^|]+ \| answered \| 2 \|", md)
    assert "| ⚠ answered without sources |\n| 2 |" in md
    assert md.split("\n| 2 | How many")[1].split("\n")[0].endswith("| 1 |")  # one source read
    assert "**⚠ 1 of 2 answered tasks were answered without sources** (task 1)" in md
    assert "**Citations:** 2 claims: 1 supported, 0 unsupported, 0 wrong source, 1 fabricated, 0 not read" in md
    task1 = md.split("## 1.")[1].split("## 2.")[0]
    assert "**⚠ answered without sources:**" in task1 and "**Tool failures**" in task1
    assert "- step 1 · search: Error: DuckDuckGo search failed: ConnectError" in task1 and "dns error" in task1
    task2 = md.split("## 2.")[1]
    assert f"1. [Riverton census 2020](<{run['url']}/census>)" in task2
    assert "- ✓ supported [1] Riverton has 2,148,000 people." in task2
    assert "- ✗ **fabricated** [2] It was founded in 1820." in task2


def test_results_html_shows_the_same(run: dict[str, Any]) -> None:
    html = run["html"]
    assert '<span class="tag warn">answered without sources</span>' in html
    assert "⚠ 1 of 2 answered tasks were answered without sources" in html
    # The site is on 127.0.0.1: a local address is shown, not linked (the browser would send the local pages'
    # token cookie along to whatever listens on that port).
    assert f'<code>{run["url"]}/census</code> Riverton census 2020' in html and f'href="{run["url"]}' not in html
    assert '<span class="no"><b>✗ fabricated</b></span>' in html and '<span class="yes"><b>✓ supported</b>' in html
    assert "<h4>Tool failures</h4>" in html and "dns error" in html


def test_the_terminal_names_the_failure_and_counts_the_sourceless_answers(run: dict[str, Any]) -> None:
    terminal = run["terminal"]
    assert "answered · 2 steps" in terminal and "· ⚠ answered without sources" in terminal
    assert "    step 1 · search failed: Error: DuckDuckGo search failed: ConnectError" in terminal
    assert "1 of 2 citations fail the check" in terminal
    assert "citations: 2 claims: 1 supported, 0 unsupported, 0 wrong source, 1 fabricated, 0 not read" in terminal
    assert "warning: 1 of 2 answered tasks were answered without sources" in terminal


def test_an_old_records_file_with_plain_url_sources_still_reads(tmp_path: Path) -> None:
    old = {"key": "k1", "id": "task-1", "index": 1, "task": "Q?", "status": "answered", "answer": "A",
           "sources": ["https://example.org/a", "https://example.org/b"], "steps": 2}
    bare = {"key": "k2", "id": "task-2", "index": 2, "task": "Q2?", "status": "answered", "answer": "B",
            "sources": [], "steps": 1}
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n" + json.dumps(bare) + "\n")
    assert main.main(["report", str(tmp_path / "old.jsonl")]) == 0
    md = (tmp_path / "old.md").read_text()
    assert "1. [https://example.org/a](<https://example.org/a>)" in md and "2. [https://example.org/b]" in md
    assert "without sources" not in md  # an old record without sources: unknown, not flagged
    assert '<a href="https://example.org/b"' in (tmp_path / "old.html").read_text()


def test_a_hostile_page_title_or_claim_stays_text_in_both_reports(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>](javascript:alert(2)) **bold**"
    record = {"key": "k1", "id": "task-1", "index": 1, "task": "Q?", "status": "answered", "answer": "A [1]",
              "sources": [{"n": 1, "url": "https://ok.example/a", "title": hostile, "read": True, "error": None},
                          {"n": None, "url": "javascript:alert(3)", "title": "", "read": False, "error": hostile}],
              "citations": [{"n": 1, "url": "https://ok.example/a", "claim": hostile + " [1]",
                             "verdict": "unsupported"}],
              "sourced": True, "tool_failures": [{"step": 1, "tool": "scrape", "error": hostile}]}
    (tmp_path / "run.jsonl").write_text(json.dumps(record) + "\n")
    assert main.main(["report", str(tmp_path / "run.jsonl")]) == 0
    md, html = (tmp_path / "run.md").read_text(), (tmp_path / "run.html").read_text()
    assert "](javascript:" not in md and "<script>" not in md and "\\<script\\>" in md
    assert "`javascript:alert(3)`" in md  # not a link
    assert "<script>alert" not in html and 'href="javascript:' not in html and "&lt;script&gt;alert(1)" in html
