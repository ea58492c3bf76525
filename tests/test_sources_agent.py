"""Numbered sources in the loop: a scripted model searches (DNS down), scrapes loopback pages, reads a file,
and answers with citations; the record keeps sources, citations, sourced and the tool failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent import ANSWERED, ReActAgent
from config import Settings
from core.errors import BudgetExceededError
from run.batch import record_from_result
from tasks.taskfile import Task
from tests.fakes.loopback import LoopbackServer, Response, routes
from tests.fakes.scripted import ScriptedLLM
from tests.test_check_setup_search import DNS_ERROR
from tools import Read
from tools.base import Tool, ToolOutput
from tools.files import ReadFileTool
from tools.web.scrape import ScrapeTool
from tools.web.search import SearchTool

CENSUS = ("<html><head><title>Riverton census 2020</title></head><body><nav>Home | Data</nav><article>"
          "<h1>Riverton census 2020</h1><p>Riverton's population reached 2,148,000 in the 2020 census, the "
          "statistics office said on March 3, 2021, the fastest growth of any city in the region.</p><p>The "
          "city covers 412 square kilometres along the river and has 14 public libraries.</p></article>"
          "<footer>Copyright</footer></body></html>")
NOTES = "Port of Riverton, annual report: 38.6 million tonnes of cargo handled in 2019.\n"


class DeadDDGS:
    def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
        from ddgs.exceptions import DDGSException

        raise DDGSException(DNS_ERROR)


def tools(tmp_path: Path) -> list[Tool]:
    settings = Settings(scrape_allow_private=True)
    (tmp_path / "notes.txt").write_text(NOTES)
    return [SearchTool(settings, ddgs_factory=DeadDDGS), ScrapeTool(tmp_path, settings), ReadFileTool(tmp_path)]


def act(tool: str, **arguments: str) -> str:
    import json

    return f"Thought: next\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


@pytest.fixture
def web() -> Any:
    with LoopbackServer(routes({"/census": Response(200, CENSUS, content_type="text/html; charset=utf-8")})) as s:
        yield s


def test_sources_are_numbered_in_observations_and_citations_checked(web: LoopbackServer, tmp_path: Path) -> None:
    answer = (f"Riverton had 2.148 million residents in 2020 [1]. Its port handled 38.6 million tonnes in 2019 [2]. "
              f"It has 41 public libraries [1]. The river port opened in 1850 [5]. More at {web.url}/history and "
              f"{web.url}/census/.")
    llm = ScriptedLLM([act("search", query="Riverton population"), act("scrape", url=f"{web.url}/census"),
                       act("scrape", url=f"{web.url}/missing"), act("read_file", path="notes.txt"),
                       act("scrape", url=f"{web.url}/census"), f"Thought: done\nFinal Answer: {answer}"])
    result = ReActAgent(llm, tools(tmp_path)).run("How big is Riverton?")
    obs = [s.observation for s in result.steps]
    assert obs[0].startswith("Error: DuckDuckGo search failed") and "[" not in obs[0][:3]  # search: seen, not read
    assert obs[1].startswith(f"[1] Riverton census 2020 — {web.url}/census\n")
    assert obs[2].startswith("Error: could not scrape") and not obs[2].startswith("[")
    assert obs[3].startswith("[2] notes.txt\n")
    assert obs[4].startswith(f"[1] Riverton census 2020 — {web.url}/census\n")  # read again: same number
    assert result.sourced and result.sources == [f"{web.url}/census", "notes.txt"]
    assert [(c.n, c.verdict) for c in result.citations] == [
        (1, "supported"), (2, "supported"), (1, "contradicted"), (5, "fabricated"), (None, "not_read")]
    assert result.citations[2].reason == "says 41, the source says 14"  # why, and the passage it was judged on
    assert result.citations[2].passage.startswith("The city covers 412 square kilometres")
    assert result.citations[-1].url == f"{web.url}/history"  # /census/ was read (trailing slash aside)

    record = record_from_result(Task(1, "How big is Riverton?", "task-1"), result)
    assert record.sources == [
        {"n": 1, "url": f"{web.url}/census", "title": "Riverton census 2020", "read": True, "error": None},
        {"n": 2, "url": "notes.txt", "title": "", "read": True, "error": None},
        {"n": None, "url": f"{web.url}/missing", "title": "", "read": False,
         "error": f"could not scrape {web.url}/missing: the server answered HTTP 404 Not Found"}]
    assert record.sourced is True and {k: record.citations[0][k] for k in ("n", "url", "claim", "verdict")} == {
        "n": 1, "url": f"{web.url}/census", "claim": "Riverton had 2.148 million residents in 2020 [1].",
        "verdict": "supported"}
    assert "2,148,000" in record.citations[0]["passage"] and record.citations[0]["reason"]
    assert [(f["step"], f["tool"]) for f in record.tool_failures] == [(1, "search"), (3, "scrape")]
    assert "dns error" in record.tool_failures[0]["error"]


def test_an_answer_after_a_dead_search_is_not_sourced_and_lists_the_failure(tmp_path: Path) -> None:
    llm = ScriptedLLM([act("search", query="capital of France"), "Thought: from memory\nFinal Answer: Paris"])
    result = ReActAgent(llm, tools(tmp_path)).run("What is the capital of France?")
    record = record_from_result(Task(1, "What is the capital of France?", "task-1"), result)
    assert (record.status, record.answer, record.sourced, record.sources) == (ANSWERED, "Paris", False, [])
    assert record.tool_failures == [
        {"step": 1, "tool": "search", "error": f"Error: DuckDuckGo search failed: {DNS_ERROR}"}]


class Rates(Tool):
    """A user's tool declaring what it read the three ways tools/base.py allows."""

    name = "rates"
    description = "Exchange rates."
    parameters = {"type": "object", "properties": {"currency": {"type": "string"}}, "required": ["currency"]}

    def run(self, currency: str) -> ToolOutput:  # type: ignore[override]
        if currency == "EUR":
            return ToolOutput("1 EUR = 1.08 USD", sources=["https://rates.example/eur"])
        return ToolOutput("GBP: 1.27 USD; JPY: 0.0067 USD", read=[
            Read("https://rates.example/gbp", "Pound rates", "1 GBP = 1.27 USD"),
            Read("https://rates.example/jpy", error="HTTP 503")])


def test_a_tool_declares_its_reads_in_short_or_full_form() -> None:
    llm = ScriptedLLM([act("rates", currency="EUR"), act("rates", currency="GBP"),
                       "Final Answer: 1 EUR is 1.08 USD [1] and 1 GBP is 1.27 USD [2]; yen [3]."])
    result = ReActAgent(llm, [Rates()]).run("rates?")
    assert result.steps[0].observation == "[1] https://rates.example/eur\n1 EUR = 1.08 USD"
    assert result.steps[1].observation.startswith("[2] Pound rates — https://rates.example/gbp\nGBP")
    assert [s.record()["read"] for s in result.ledger.sources] == [True, True, False]
    assert [c.verdict for c in result.citations] == ["supported", "supported", "fabricated"]


def test_verify_claims_asks_the_model_per_citation_and_counts_the_calls(web: LoopbackServer, tmp_path: Path) -> None:
    prompts: list[str] = []

    def judge(reply: str) -> Any:
        def answer(messages: list[dict[str, str]]) -> str:
            prompts.append(messages[-1]["content"])
            return reply
        return answer

    llm = ScriptedLLM([act("scrape", url=f"{web.url}/census"),
                       "Final Answer: Riverton has 2,148,000 people [1]. It has 14 public libraries [1]. Fake [4].",
                       judge("SUPPORTED"), judge("UNSUPPORTED: the passage does not say so")], cost_per_call=0.01)
    result = ReActAgent(llm, tools(tmp_path), verify_claims=True).run("How big is Riverton?")
    assert [(c.verdict, c.model_verdict) for c in result.citations] == [
        ("supported", "supported"), ("supported", "unsupported"), ("fabricated", None)]
    assert result.usage.calls == 4 and result.cost == pytest.approx(0.04)  # 2 steps + 2 verifications
    assert "2,148,000" in prompts[0] and "Riverton census 2020" in prompts[0] and "Claim: Riverton has" in prompts[0]
    assert "[1]" not in prompts[0].split("Claim:")[1]


def test_verification_stops_at_a_spend_cap_and_the_answer_stands(web: LoopbackServer, tmp_path: Path) -> None:
    llm = ScriptedLLM([act("scrape", url=f"{web.url}/census"),
                       "Final Answer: Riverton has 2,148,000 people [1]. It has 14 public libraries [1].",
                       BudgetExceededError("the task's cost cap of $0.01 is reached", "--max-cost")])
    result = ReActAgent(llm, tools(tmp_path), verify_claims=True).run("How big is Riverton?")
    assert result.status == ANSWERED and result.answer and result.answer.startswith("Riverton has")
    assert [(c.verdict, c.model_verdict) for c in result.citations] == [("supported", "skipped"),
                                                                        ("supported", "skipped")]
    assert len(llm.calls) == 3  # one verification was tried, the second never asked


def test_a_completion_is_not_needed_without_verify_claims(web: LoopbackServer, tmp_path: Path) -> None:
    llm = ScriptedLLM([act("scrape", url=f"{web.url}/census"), "Final Answer: 2,148,000 people [1]."])
    result = ReActAgent(llm, tools(tmp_path)).run("How big is Riverton?")
    assert len(llm.calls) == 2 and result.citations[0].model_verdict is None


def test_a_file_the_python_tool_opens_is_a_numbered_source_and_a_saved_download_keeps_its_number(
        web: LoopbackServer, tmp_path: Path) -> None:
    from tools.python_exec import PythonTool

    (tmp_path / "sales.csv").write_text("year,sales\n2021,100\n2023,150\n")
    code = "import csv\\nrows = list(csv.DictReader(open('sales.csv')))\\nprint('growth', int(rows[-1]['sales']) - 100)"
    llm = ScriptedLLM([act("scrape", url=f"{web.url}/census", save_as="census.html"),
                       f'Action: python\nAction Input: {{"code": "{code}"}}',
                       'Action: python\nAction Input: {"code": "print(len(open(\'census.html\').read()) > 0)"}',
                       "Final Answer: The growth was 50 [2]. Riverton has 2,148,000 people [1]."])
    agent_tools = [ScrapeTool(tmp_path, Settings(scrape_allow_private=True)), PythonTool(tmp_path, Settings())]
    result = ReActAgent(llm, agent_tools).run("How much did sales grow?")
    assert result.steps[1].observation.startswith("[2] sales.csv\n") and "growth 50" in result.steps[1].observation
    assert result.steps[2].observation.startswith(f"[1] Riverton census 2020 — {web.url}/census\n")  # its saved copy
    assert [c.verdict for c in result.citations] == ["supported", "supported"]
