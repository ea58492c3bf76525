"""A whole research task through main.py: search (fake Serper), scrape a page, download a CSV, compute on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

CSV = "year,sales\n2021,100\n2022,125\n2023,150\n"
PAGE = ("<html><head><title>Widget Corp annual report</title></head><body><nav>Home | Investors</nav>"
        "<article><h1>Widget Corp annual report</h1><p>Widget Corp publishes its yearly sales as a CSV file "
        "for researchers, updated every spring with audited figures from all regions.</p>"
        "<p>The dataset is at /data/sales.csv and covers 2021 to 2023.</p></article>"
        "<footer>Copyright Widget Corp</footer></body></html>")


def test_search_scrape_download_and_compute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base: dict[str, str] = {}

    def steps(n: int) -> str:
        url = base["url"]
        return [
            'Thought: find the report\nAction: search\nAction Input: {"query": "Widget Corp sales dataset"}',
            f'Action: scrape\nAction Input: {{"url": "{url}/report"}}',
            f'Action: scrape\nAction Input: {{"url": "{url}/data/sales.csv", "save_as": "sales.csv"}}',
            'Action: python\nAction Input: {"code": "import csv\\nrows = list(csv.DictReader(open(\'sales.csv\')))\\n'
            'a, b = int(rows[0][\'sales\']), int(rows[-1][\'sales\'])\\nprint(f\'growth {100 * (b - a) / a:.0f}%\')"}',
            "Thought: computed\nFinal Answer: Sales grew 50% from 2021 to 2023.",
        ][n]

    def handle(req: Request) -> Response:
        path = req.path.split("?")[0]
        if path == "/search":
            assert req.headers["x-api-key"] == "serper-key"
            return Response(200, {"organic": [{"title": "Widget Corp annual report", "link": base["url"] + "/report",
                                               "snippet": "Yearly sales as CSV."}]})
        if path == "/report":
            return Response(200, PAGE, content_type="text/html; charset=utf-8")
        if path == "/data/sales.csv":
            return Response(200, CSV, content_type="text/csv")
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        transcript = json.dumps(req.json()["messages"])
        if turns >= 1:
            assert "Widget Corp annual report" in transcript  # the search result came back
        if turns >= 2:
            assert "/data/sales.csv and covers 2021 to 2023" in transcript and "Copyright" not in transcript
        if turns >= 4:
            assert "growth 50%" in transcript
        return openai_reply(steps(turns))

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
    assert record["sources"] == [server.url + "/report", server.url + "/data/sales.csv"]
    assert (Path(record["workspace"]) / "sales.csv").read_text() == CSV
    assert f"- {server.url}/report" in (tmp_path / "results.md").read_text()
