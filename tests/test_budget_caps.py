"""Spend caps through main.py: a task stops at --max-cost / --max-tokens-per-task with status budget and a
best-effort answer; --max-run-cost skips queued tasks; concurrent tasks do not overshoot the run cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from core.errors import BudgetExceededError
from providers.budget import RunBudget, last_call
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.scripted import ScriptedLLM

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens (providers/pricing.py)
CALL_COST = (1000 * 0.40 + 100 * 1.60) / 1_000_000  # what one scripted call below costs: $0.00056
ACTION = 'Thought: keep notes\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "more"}'


def model_server(answer_at_once: bool = False, delay: float = 0.0) -> Any:
    """A model that keeps working until told it has no steps left (or answers at once)."""

    def handle(req: Request) -> Response:
        if req.method != "POST":  # model listing / server probes
            return Response(404, "not found")
        last = req.json()["messages"][-1]["content"]
        if answer_at_once or "no steps left" in last:
            return Response(200, openai_reply("Final Answer: best effort", 1000, 100).body, delay=delay)
        return Response(200, openai_reply(ACTION, 1000, 100).body, delay=delay)

    return handle


def _run(monkeypatch: pytest.MonkeyPatch, server: LoopbackServer, tasks: list[str], *flags: str,
         model: str = MODEL) -> int:
    Path("tasks.txt").write_text("\n\n".join(tasks) + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("AGENT_MAX_TOKENS", "200")
    return main.main(["tasks.txt", "--model", model, "--max-steps", "50", *flags])


def _records() -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines() if line.strip()]
    return [line for line in lines if "key" in line]  # a stopped run's file starts with its run line


def test_the_task_cost_cap_ends_the_task_with_a_best_effort_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(model_server()) as server:
        code = _run(monkeypatch, server, ["Keep taking notes."], "--max-cost", "0.006", "-q")
        last_prompt = [r for r in server.requests if r.method == "POST"][-1].json()["messages"][-1]["content"]
    [record] = _records()
    assert code == 1 and record["status"] == "budget" and record["answer"] == "best effort"
    assert "no steps left" in last_prompt  # the last call asked for an answer from what was gathered
    assert record["llm_calls"] >= 3 and record["cost"] <= 0.006
    assert "--max-cost" in record["error"]
    assert "| budget |" in Path("results.md").read_text()


def test_the_token_cap_ends_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(model_server()) as server:
        code = _run(monkeypatch, server, ["Keep taking notes."], "--max-tokens-per-task", "12000", "-q")
    [record] = _records()
    assert code == 1 and record["status"] == "budget" and record["answer"] == "best effort"
    assert record["prompt_tokens"] + record["completion_tokens"] <= 12000 and record["llm_calls"] >= 3
    assert "--max-tokens-per-task" in record["error"]


def test_the_run_cap_skips_queued_tasks_and_the_report_says_so(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    tasks = [f"Question number {n}?" for n in range(1, 9)]
    with LoopbackServer(model_server(answer_at_once=True)) as server:
        code = _run(monkeypatch, server, tasks, "--max-run-cost", "0.004", "-q")
    records = _records()
    assert code == 1 and 2 <= len(records) < len(tasks)
    assert sum(r["cost"] for r in records) <= 0.004
    skipped = len(tasks) - len(records)
    note = f"{skipped} task(s) not started: the run's cost cap of $0.0040 (--max-run-cost) left too little"
    assert note in Path("results.md").read_text() and note in capsys.readouterr().err
    header = json.loads(Path("results.jsonl").read_text().splitlines()[0])  # the run says it was stopped
    assert header["run"] == "stopped" and "--max-run-cost" in header["reason"] and "--resume" in header["resume"]
    assert "Run stopped" in Path("results.md").read_text() and "Run stopped" in Path("results.html").read_text()


def test_concurrent_tasks_overshoot_the_run_cap_by_no_more_than_the_calls_in_flight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = [f"Concurrent question {n}?" for n in range(1, 17)]
    with LoopbackServer(model_server(answer_at_once=True, delay=0.05)) as server:
        code = _run(monkeypatch, server, tasks, "--max-run-cost", "0.005", "--concurrency", "8", "-q")
        calls = sum(1 for r in server.requests if r.method == "POST")
    records = _records()
    assert code == 1 and 0 < len(records) < len(tasks)
    assert sum(r["cost"] for r in records) <= 0.005 + 8 * CALL_COST
    assert sum(r["answer"] == "best effort" for r in records) >= 0.005 // CALL_COST // 2  # no refusal for nothing
    assert calls == sum(r["llm_calls"] for r in records)  # a refused call never reaches the server


def test_an_unpriced_model_falls_back_on_the_token_cap_and_says_so_once(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(model_server()) as server:
        code = _run(monkeypatch, server, ["Keep taking notes.", "Take more notes."], "--max-cost", "0.001",
                    "--max-tokens-per-task", "12000", model="openai:mystery-model")
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert code == 1 and out.count("no price is known for openai:mystery-model") == 1
    assert "--max-tokens-per-task (12,000 tokens)" in out
    assert [r["status"] for r in _records()] == ["budget", "budget"]


def test_summaries_and_other_calls_of_a_task_share_its_budget() -> None:
    settings = Settings(max_tokens_per_task=80, max_tokens=10)
    run = RunBudget.from_settings(settings, ScriptedLLM(["x"]))
    assert run is not None
    main_model, summary_model = run.task_models(ScriptedLLM(["x"], prompt_tokens=40, completion_tokens=10),
                                                ScriptedLLM(["summary"], prompt_tokens=40, completion_tokens=10))
    message = [{"role": "user", "content": "hi"}]
    summary_model.complete(message)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError, match="--max-tokens-per-task"):
        main_model.complete(message)  # type: ignore[arg-type]
    with last_call():  # the last answering call still fits
        assert main_model.complete(message).text == "x"  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError):
        summary_model.complete(message)  # type: ignore[arg-type]


def test_a_tools_own_model_calls_count_against_the_task_cap() -> None:
    from core.chat import Completion
    from providers.budget import charge_tool_call

    run = RunBudget.from_settings(Settings(max_tokens_per_task=80, max_tokens=10), ScriptedLLM(["x"]))
    assert run is not None
    model, _ = run.task_models(ScriptedLLM(["x"]), None)
    message = [{"role": "user", "content": "hi"}]
    model.complete(message)  # type: ignore[arg-type]
    charge_tool_call(model, Completion("a picture of a cat", prompt_tokens=40, completion_tokens=10))
    with pytest.raises(BudgetExceededError, match="15 tokens left"):
        model.complete(message)  # type: ignore[arg-type]


def test_the_estimate_uses_the_dearest_of_the_model_and_its_fallbacks() -> None:
    from types import SimpleNamespace

    from providers.budget import model_price

    backends = [SimpleNamespace(spec="openai:gpt-4.1-mini"), SimpleNamespace(spec="anthropic:claude-opus-4-1"),
                SimpleNamespace(spec="openai:unknown-model")]
    assert model_price(SimpleNamespace(backends=backends), Settings()) == (15.00, 75.00)
    assert model_price(SimpleNamespace(backends=backends[2:]), Settings()) is None
