"""The small truths of issue 60.8: a local scholarly mirror needs SCRAPE_ALLOW_PRIVATE_URLS=1 and the docs say
so; `ask` without --model asks a local server for its models once, as with it; `main.py report` keeps the time
the run finished; `research` with a model that never follows the format says its sub-questions went unanswered."""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from report.markdown import TaskRecord, write_results
from tests.fakes.cli import ROOT, clean_env, run_main
from tests.fakes.deep_research import Sub, World
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_models, openai_reply
from tests.fakes.scholarly import Scholarly, serve, settings_for
from tools.web.papers.tool import SearchPapersTool


def test_a_local_scholarly_mirror_is_refused_without_private_urls_and_the_docs_say_so() -> None:
    world = Scholarly()
    with serve(world):
        local = dataclasses.replace(settings_for(world), scrape_allow_private=False)
        refused = SearchPapersTool(local).run(query="chemistry tools")
        allowed = SearchPapersTool(settings_for(world)).run(query="chemistry tools")
    text = refused if isinstance(refused, str) else refused.text
    assert "private" in text.lower() and "Augmenting large language models" not in text
    assert "Augmenting large language models" in (allowed if isinstance(allowed, str) else allowed.text)
    docs = (ROOT / "docs" / "tools-and-mcp.md").read_text(encoding="utf-8")
    section = docs.split("### Scholarly papers", 1)[1].split("\n### ", 1)[0]
    assert "SCRAPE_ALLOW_PRIVATE_URLS=1" in section


def local_server(asked: list[str]) -> object:
    def handle(req: Request) -> Response:
        asked.append(f"{req.method} {req.path}")
        if req.path.endswith("/models"):
            return openai_models("local-model")
        return openai_reply("Thought: easy\nFinal Answer: 42", model="local-model")
    return handle


@pytest.mark.parametrize("model", [[], ["--model", "openai:local-model"]], ids=["chosen automatically", "--model"])
def test_ask_lists_a_local_servers_models_once_before_its_first_request(tmp_path: Path, model: list[str]) -> None:
    asked: list[str] = []
    with LoopbackServer(local_server(asked)) as server:  # type: ignore[arg-type]
        env = clean_env(server, AGENT_SEARCH="0")
        del env["OPENAI_API_KEY"]  # no key: the model is the one the server at OPENAI_BASE_URL lists
        proc = run_main(tmp_path, "ask", "What is 6 x 7?", *model, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("42")
    assert asked == ["GET /v1/models", "POST /v1/chat/completions"]


def test_a_rebuilt_report_keeps_the_time_the_run_finished(tmp_path: Path) -> None:
    results = tmp_path / "results.md"
    write_results(results, [TaskRecord("k1", "t1", 1, "What is 6 x 7?", "answered", answer="42", model="openai:m")])
    records = tmp_path / "results.jsonl"
    finished = datetime(2024, 3, 5, 7, 9, tzinfo=UTC).timestamp()
    os.utime(records, (finished, finished))  # the run wrote its last record then
    proc = run_main(tmp_path, "report", "results.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "Run finished 2024-03-05 07:09 UTC" in results.read_text(encoding="utf-8")
    assert "2024-03-05 07:09 UTC" in (tmp_path / "results.html").read_text(encoding="utf-8")


def test_research_with_a_model_that_never_follows_the_format_answers_no_sub_question(tmp_path: Path) -> None:
    plain = openai_reply("The Rhine is a long river in Europe and carries a lot of freight.")  # no label, ever
    subs = ["How much freight does the Rhine carry in a year?", "Which ports on the Rhine are largest?"]
    world = World("How much freight does the Rhine carry?", subs, {q: Sub([], plain) for q in subs}, {})
    with LoopbackServer(world) as server:
        world.base = server.url
        proc = run_main(tmp_path, "research", world.question, "-o", "report.md", "--model", "openai:gpt-4.1-mini",
                        env=clean_env(server, AGENT_SEARCH="0", SCRAPE_HOST_GAP="0", AGENT_MAX_RETRIES="0"))
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert proc.returncode != 0
    assert " · 2 sub-questions (0 answered) · " in report and "(2 answered)" not in report
    plan = report.split("## Research plan", 1)[1]
    assert len(re.findall(r"— \*\*not answered\*\* \(unformatted: the model never wrote the Thought / Action / "
                          r"Final Answer format: nothing was searched or read\)", plan)) == 2
