"""A whole research task through main.py: search (fake Serper), scrape a page, download a CSV, compute on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.research import CSV, research_step, web_page


def test_search_scrape_download_and_compute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base: dict[str, str] = {}

    def handle(req: Request) -> Response:
        if req.path.startswith("/search"):
            assert req.headers["x-api-key"] == "serper-key"
        page = web_page(req, base["url"])
        if page is not None:
            return page
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        transcript = json.dumps(req.json()["messages"])
        if turns >= 1:
            assert "Widget Corp annual report" in transcript  # the search result came back
        if turns >= 2:
            assert "/data/sales.csv and covers 2021 to 2023" in transcript and "Copyright" not in transcript
        if turns >= 4:
            assert "growth 50%" in transcript
        return openai_reply(research_step(base["url"], turns))

    (tmp_path / "tasks.txt").write_text("By how much did Widget Corp's sales grow from 2021 to 2023?\n")
    with LoopbackServer(handle) as server:
        base["url"] = server.url
        for key, value in {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1",
                           "SERPER_API_KEY": "serper-key", "SERPER_BASE_URL": server.url,
                           "SCRAPE_ALLOW_PRIVATE_URLS": "1"}.items():
            monkeypatch.setenv(key, value)
        assert main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]) == 0
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["answer"] == "Sales grew 50% from 2021 to 2023." and record["steps"] == 5
    assert record["sources"] == [
        {"n": 1, "url": server.url + "/report", "title": "Widget Corp annual report", "read": True, "error": None},
        {"n": 2, "url": server.url + "/data/sales.csv", "title": "", "read": True, "error": None}]
    assert record["sourced"] is True and record["citations"] == [] and record["tool_failures"] == []
    assert (Path(record["workspace"]) / "sales.csv").read_text() == CSV
    assert f"1. [Widget Corp annual report](<{server.url}/report>)" in (tmp_path / "results.md").read_text()
