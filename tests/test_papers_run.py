"""search_papers through main.py, against loopback stand-ins answering the services' recorded bodies: a paper found,
its open-access PDF read and a claim cited to its page; a retracted paper marked wherever it is shown and cited
(results.md, results.html, results.jsonl, a research report); OpenAlex down and a 429 held across the run's tasks."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.cli import clean_env, run_main
from tests.fakes.deep_research import MARK_TASK, Sub, World
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.scholarly import DOI, PDF_PATH, Scholarly, env_for, serve

MODEL = ["--model", "openai:gpt-4.1-mini"]
WAKEFIELD = "https://doi.org/10.1016/s0140-6736(97)11096-0"
RETRACTION = "Crossref: retraction notice doi:10.1016/s0140-6736(10)60175-4 of 2010-02-06, from Retraction Watch"


def scripted(*replies: str, seen: list[str] | None = None) -> Any:
    """An OpenAI-compatible model answering each task's turns in order (the transcript of each call kept)."""
    def handle(req: Request) -> Response:
        messages = req.json()["messages"]
        if seen is not None:
            seen.append(json.dumps(messages, ensure_ascii=False))
        turns = sum(1 for m in messages if m["role"] == "assistant")
        return openai_reply(replies[min(turns, len(replies) - 1)])
    return handle


def run(monkeypatch: pytest.MonkeyPatch, tmp: Path, world: Scholarly, model: Any, *extra: str,
        tasks: str = "What did ChemCrow synthesize?\n", env: dict[str, str] | None = None) -> int:
    (tmp / "tasks.txt").write_text(tasks)
    with serve(world), LoopbackServer(model) as llm:
        for name, value in {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.url + "/v1", **env_for(world),
                            **(env or {})}.items():
            monkeypatch.setenv(name, value)
        return main.main(["tasks.txt", *MODEL, "-q", *extra])


def test_a_paper_is_found_read_and_a_claim_cited_to_its_page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[str] = []
    model = scripted('Action: search_papers\nAction Input: {"query": "language model chemistry agent tools"}',
                     f'Action: search_papers\nAction Input: {{"read": "{DOI}"}}',
                     "Final Answer: ChemCrow planned the synthesis of DEET, an insect repellent [1].", seen=seen)
    world = Scholarly()
    assert run(monkeypatch, tmp_path, world, model, env={"OPENALEX_MAILTO": "me@example.org"}) == 0
    assert world.asked("openalex")[0]["mailto"] == "me@example.org"  # OpenAlex's polite pool
    hits = seen[1]  # the model saw each hit whole: facts, PDF link and abstract
    for shown in ("[1] Augmenting large language models with chemistry tools (2024) — https://doi.org/" + DOI,
                  "Venue: Nature Machine Intelligence · DOI: " + DOI + " · Cited by 236",
                  f"Open-access PDF: {world.url}{PDF_PATH}", "By integrating 18 expert-designed tools",
                  "[2] ChemCrow: Augmenting large-language models with chemistry tools (2023)"):
        assert shown in hits
    assert "--- page 2 ---\\nChemCrow planned the synthesis of DEET" in seen[2]
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["sources"][0] == {"n": 1, "url": "https://doi.org/" + DOI, "title": "Augmenting large language "
                                    "models with chemistry tools (2024)", "read": True, "error": None}
    [citation] = record["citations"]
    assert citation["verdict"] == "supported" and citation["page"] == 2 and "retracted" not in citation
    md = (tmp_path / "results.md").read_text()
    assert f"1. [Augmenting large language models with chemistry tools \\(2024\\)](<https://doi.org/{DOI}>)" in md
    assert "- ✓ supported [1, p. 2] ChemCrow planned the synthesis of DEET, an insect repellent." in md
    html = (tmp_path / "results.html").read_text()
    assert f'<a href="https://doi.org/{DOI}" rel="noopener noreferrer nofollow" target="_blank">Augmenting large ' \
           "language models with chemistry tools (2024)</a>" in html and "<code>[1, p. 2]</code>" in html


def test_openalex_down_crossref_answers_and_a_claim_citing_a_retracted_paper_is_marked_everywhere(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world = Scholarly()
    world.answers["openalex"] = Response(503, "<html><body>Service Unavailable</body></html>",
                                         content_type="text/html")
    world.answers["s2"] = "semantic_scholar_429"
    world.answers["crossref"] = "crossref_retracted_query"
    model = scripted('Action: search_papers\nAction Input: {"query": "MMR vaccine autism Lancet 1998"}',
                     "Final Answer: A 1998 paper in The Lancet described ileal-lymphoid-nodular hyperplasia in "
                     "children [1].")
    assert run(monkeypatch, tmp_path, world, model) == 0
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert [f["error"] for f in record["tool_failures"]] == [
        "OpenAlex answered HTTP 503", "Semantic Scholar rate limit or daily allowance spent (HTTP 429) (a "
        "SEMANTIC_SCHOLAR_API_KEY raises it): Too Many Requests. Please wait and try again or apply for a key for "
        "higher rate limits. https://www.semanticscholar.org/product/api#api-key-form"]
    source = record["sources"][0]
    assert source["url"] == WAKEFIELD and source["retracted"] == RETRACTION
    assert source["title"] == ("⚠ RETRACTED — Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
                               "developmental disorder in children (1998)")
    [citation] = record["citations"]
    assert citation["retracted"] == RETRACTION and citation["n"] == 1  # whatever its verdict
    md = (tmp_path / "results.md").read_text()
    assert "1. [⚠ RETRACTED — Ileal-lymphoid-nodular hyperplasia" in md
    line = next(x for x in md.splitlines() if x.startswith("- ") and "[1]" in x and "1998 paper" in x)
    assert line.endswith("**⚠ cites a retracted paper:** Crossref: retraction notice doi:10.1016/s0140-6736\\(10\\)"
                         "60175-4 of 2010-02-06, from Retraction Watch")
    html = (tmp_path / "results.html").read_text()
    assert f'<span class="no"><b>⚠ cites a retracted paper</b>: {RETRACTION}</span>' in html
    assert ">⚠ RETRACTED — Ileal-lymphoid-nodular hyperplasia" in html


def test_a_429_holds_the_service_for_the_runs_next_task_which_asks_the_next_service_at_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world = Scholarly()
    answers = [Response(429, {"error": "Rate limit exceeded", "message": "Rate limit exceeded"},
                        headers={"Retry-After": "30"})]
    world.answers["openalex"] = lambda req: answers.pop(0) if answers else world.entry("openalex_works_search")
    model = scripted('Action: search_papers\nAction Input: {"query": "chemistry agent"}', "Final Answer: ChemCrow.")
    assert run(monkeypatch, tmp_path, world, model, tasks="What is ChemCrow?\n\nWho made ChemCrow?\n") == 0
    first, second = (json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines())
    assert first["tool_failures"][0]["error"].startswith("OpenAlex rate limit or daily allowance spent (HTTP 429)")
    assert [f["error"] for f in second["tool_failures"]] == [
        "OpenAlex not asked: on hold 30 s more (it answered HTTP 429, Retry-After 30 s)"]
    # The held service was asked once: a call waiting out the hold would have asked it again when it ended.
    assert [s for _, s, _ in world.requests if s in ("openalex", "s2")] == ["openalex", "s2", "s2"]
    assert second["sources"][0]["title"].startswith("Augmenting large language models with chemistry tools")


def test_the_end_of_a_hold_is_honoured_by_the_next_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world = Scholarly()
    answers = [Response(429, {"error": "Rate limit exceeded"}, headers={"Retry-After": "1"})]
    world.answers["openalex"] = lambda req: answers.pop(0) if answers else world.entry("openalex_works_search")
    search = 'Action: search_papers\nAction Input: {"query": "chemistry agent"}'
    replies = scripted(search, search, search, "Final Answer: ChemCrow.")

    def model(req: Request) -> Response:
        if sum(m["role"] == "assistant" for m in req.json()["messages"]) == 2:
            time.sleep(1.2)  # after the second call, past the hold's end (it began before this reply was asked)
        return replies(req)
    assert run(monkeypatch, tmp_path, world, model) == 0
    asked = [(t, s) for t, s, _ in world.requests if s in ("openalex", "s2")]
    held_from = asked[0][0]
    # Never asked again while held (whenever the second call came), and asked again by the call after the hold.
    assert all(t >= held_from + 1.0 for t, s in asked[1:] if s == "openalex")
    assert asked[-1][1] == "openalex" and sum(s == "openalex" for _, s in asked) in (2, 3)
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["tool_failures"][0]["error"].startswith("OpenAlex rate limit or daily allowance spent (HTTP 429)")


def test_a_research_report_marks_a_claim_citing_a_retracted_paper(tmp_path: Path) -> None:
    question = "What did the 1998 Lancet paper on MMR report?"
    sub = "What did the 1998 Lancet paper by Wakefield report?"
    claim = "A 1998 paper in The Lancet described ileal-lymphoid-nodular hyperplasia in children [1]."
    papers = Scholarly()
    papers.answers["openalex"] = "openalex_retracted_search"
    w = World(question, [sub], {sub: Sub(["papers:Wakefield 1998 Lancet ileal lymphoid"], claim)}, {},
              writer=lambda prompt: "## Findings\n\n" + claim + "\n")
    with serve(papers), LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", question, "-o", "report.md", *MODEL,
                        env=clean_env(server, AGENT_MAX_RETRIES="0", **env_for(papers)))
    assert proc.returncode == 0, proc.stderr
    assert "search_papers" in w.prompts["plan"][0]  # the planner knows the tool is there
    assert "find peer-reviewed papers with search_papers" in w.prompts["task"][0]  # and so does the sub-question
    report = (tmp_path / "report.md").read_text()
    assert "1. [⚠ RETRACTED — Ileal-lymphoid-nodular hyperplasia" in report
    marked = "**⚠ cites a retracted paper:** OpenAlex marks it retracted \\(is\\_retracted\\)"
    assert any(line.endswith(marked) for line in report.split("## Citations checked")[1].splitlines())
    assert "<b>⚠ cites a retracted paper</b>: OpenAlex marks it retracted (is_retracted)" in \
        (tmp_path / "report.html").read_text()


def test_papers_only_keeps_a_research_to_scholarly_tools(tmp_path: Path) -> None:
    question = "What did ChemCrow synthesize?"
    w = World(question, [question], {question: Sub(["papers:ChemCrow"], "ChemCrow planned syntheses [1].")}, {},
              writer=lambda prompt: "## Findings\n\nChemCrow planned syntheses [1].\n")
    papers = Scholarly()
    with serve(papers), LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", question, "-o", "report.md", *MODEL, "--papers-only",
                        env=clean_env(server, AGENT_MAX_RETRIES="0", **env_for(papers)))
        tasks = [r.json()["messages"] for r in server.requests if r.method == "POST" and
                 MARK_TASK in json.dumps(r.json()["messages"])]
    assert proc.returncode == 0, proc.stderr
    assert "in scholarly papers only (search_papers, arxiv)" in w.prompts["plan"][0]
    assert "Use scholarly sources only" in w.prompts["task"][0]
    system = tasks[0][0]["content"]  # the sub-question's tools: the scholarly ones, no web search, scrape, browser
    assert "### search_papers" in system and "### arxiv" in system
    assert not any(t in system for t in ("### search\n", "### scrape", "### wikipedia", "### browser"))
    assert "ChemCrow" in (tmp_path / "report.md").read_text()
    off = run_main(tmp_path, "research", question, "--papers-only", "--no-search", *MODEL, env=clean_env())
    assert off.returncode == 2 and "--papers-only needs search" in off.stderr


@pytest.mark.parametrize("flags", [("--papers-only", "--no-papers"), ("--no-papers", "--papers-only")])
def test_papers_only_with_no_papers_is_a_usage_error_in_either_order(tmp_path: Path, flags: tuple[str, str]) -> None:
    with LoopbackServer(lambda req: Response(500, "no model request expected")) as server:
        proc = run_main(tmp_path, "research", "What did ChemCrow synthesize?", *MODEL, *flags,
                        env=clean_env(server))
        asked = list(server.requests)
    assert proc.returncode == 2 and asked == []
    [line] = proc.stderr.strip().splitlines()
    assert "--papers-only" in line and "--no-papers" in line
