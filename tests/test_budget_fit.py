"""Caps that let work happen: each call's max_tokens is fitted to what the task's and the run's budget can pay,
a call is refused only when not even a short reply fits, and the record says what was left and what the next
call would have cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from core.errors import BudgetExceededError
from providers.budget import MIN_COMPLETION, RunBudget, last_call
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.scripted import ScriptedLLM

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens; cache reads 0.25x (providers/pricing.py)
ACTION = 'Thought: keep notes\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "more"}'


def realistic_server(sent: list[dict[str, Any]]) -> Any:
    """gpt-4.1-mini as the API bills it: the prompt's real size (~4 characters a token), 80-token replies."""

    def handle(req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "not found")
        body = req.json()
        sent.append(body)
        prompt = sum(len(m["content"]) for m in body["messages"]) // 4
        text = "Final Answer: best effort" if "no steps left" in body["messages"][-1]["content"] else ACTION
        return Response(200, openai_reply(text, prompt, 80, model="gpt-4.1-mini").body)

    return handle


def test_a_small_cost_cap_lets_the_task_take_several_steps_before_budget(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    sent: list[dict[str, Any]] = []
    Path("tasks.txt").write_text("Keep taking notes.\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer(realistic_server(sent)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code = main.main(["tasks.txt", "--model", MODEL, "--max-steps", "50", "--max-cost", "0.004", "-q"])
    [record] = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines() if line.strip()]
    assert code == 1 and record["status"] == "budget" and record["answer"] == "best effort"
    assert record["llm_calls"] >= 4  # several steps, then the answering call (it was 0 steps at 8,192 tokens)
    assert 0.002 < record["cost"] <= 0.004
    limits = [b["max_tokens"] for b in sent]  # a local base URL: the classic parameter
    assert all(MIN_COMPLETION <= n < 8192 for n in limits)  # fitted: $0.0131 of reply never fits in $0.004
    assert "left; the next call would have cost at least $" in record["error"]


def _budget(**caps: Any) -> RunBudget:
    run = RunBudget.from_settings(Settings(**caps), ScriptedLLM(["x"], model="openai:gpt-4.1-mini"))
    assert run is not None
    return run


MESSAGE = [{"role": "user", "content": "x" * 3000}]  # ~1,000 prompt tokens by the estimate (3 chars a token)


def test_max_tokens_is_fitted_to_what_is_left_and_the_last_call_gets_the_rest() -> None:
    inner = ScriptedLLM(["Thought: a\nFinal Answer: b"], model="openai:gpt-4.1-mini", cost_per_call=0.0)
    model, _ = _budget(max_cost=0.003).task_models(inner, None)
    model.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    ordinary = inner.calls[-1].max_tokens
    with last_call():
        model.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    final = inner.calls[-1].max_tokens
    assert ordinary is not None and final is not None
    assert MIN_COMPLETION <= ordinary < final < 8192  # the last call need not keep room for another


def test_a_call_is_refused_only_when_not_even_a_short_reply_fits_and_says_what_was_left() -> None:
    # A ~1,000-token prompt ($0.0004) and a 256-token reply ($0.0004), and the same kept for the last call.
    model, _ = _budget(max_cost=0.0015).task_models(ScriptedLLM(["x"], model="openai:gpt-4.1-mini"), None)
    with pytest.raises(BudgetExceededError) as refused:
        model.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    assert "$0.0000 spent, $0.0015 left; the next call would have cost at least $0.0016" in str(refused.value)
    with last_call():  # the answering call alone fits
        assert model.complete(MESSAGE, max_tokens=8192).text == "x"  # type: ignore[arg-type]


def test_the_prompt_the_provider_caches_is_priced_at_the_cache_read_rate() -> None:
    fitted = []
    for earlier_prompt in (0, 1000):
        inner = ScriptedLLM(["x"], model="openai:gpt-4.1-mini", cost_per_call=0.0)
        model, _ = _budget(max_cost=0.05).task_models(inner, None)
        model.budget.last_prompt = earlier_prompt  # type: ignore[attr-defined]
        model.complete(MESSAGE, max_tokens=100_000)  # type: ignore[arg-type]
        fitted.append(inner.calls[-1].max_tokens or 0)
    # 1,000 of the prompt's tokens read from the cache at 0.25x of $0.40: $0.0003 less, for this call and the
    # one kept for the last answer: 375 more reply tokens at $1.60.
    assert fitted[1] - fitted[0] == pytest.approx(375, abs=2)


def test_concurrent_tasks_share_the_run_cap_with_fitted_calls() -> None:
    run = _budget(max_run_cost=0.002)
    first, _ = run.task_models(ScriptedLLM(["x"], model="openai:gpt-4.1-mini", cost_per_call=0.0009), None)
    second, _ = run.task_models(ScriptedLLM(["x"], model="openai:gpt-4.1-mini", cost_per_call=0.0009), None)
    first.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError, match="--max-run-cost"):
        second.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    assert not run.may_start()
