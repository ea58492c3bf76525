"""Caps that let work happen: each call's max_tokens is fitted to what the task's and the run's budget can pay,
a call is refused only when not even a short reply fits, and the record says what was left and what the next
call would have cost."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from core.chat import Completion
from core.errors import BudgetExceededError
from providers.budget import MIN_COMPLETION, RunBudget, last_call
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.scripted import ScriptedLLM

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens; cache reads 0.25x (providers/pricing.py)
ACTION = 'Thought: keep notes\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "more"}'


def realistic_server(sent: list[dict[str, Any]]) -> Any:
    """gpt-4.1-mini as the API bills it: the prompt's real size (~4 characters a token), 80-token replies, and
    OpenAI's automatic prompt cache: the part of a prompt (1,024 tokens or more, in 128-token blocks) that
    repeats the start of an earlier one is reported as cached_tokens (https://platform.openai.com/docs/guides/
    prompt-caching)."""
    seen: list[str] = []

    def handle(req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "not found")
        body = req.json()
        sent.append(body)
        text = "".join(m["content"] for m in body["messages"])
        prefix = max((len(os.path.commonprefix([text, old])) for old in seen), default=0) // 4
        seen.append(text)
        cached = prefix // 128 * 128 if prefix >= 1024 else 0
        answer = "Final Answer: best effort" if "no steps left" in body["messages"][-1]["content"] else ACTION
        reply = openai_reply(answer, len(text) // 4, 80, model="gpt-4.1-mini").body
        reply["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}  # type: ignore[index]
        return Response(200, reply)

    return handle


def test_a_small_cost_cap_lets_the_tasks_take_several_steps_before_budget(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    sent: list[dict[str, Any]] = []
    Path("tasks.txt").write_text("Keep taking notes.\n\nKeep taking more notes.\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer(realistic_server(sent)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code = main.main(["tasks.txt", "--model", MODEL, "--max-steps", "50", "--max-cost", "0.004", "-q"])
    first, second = [json.loads(line) for line in Path("results.jsonl").read_text().splitlines() if line.strip()]
    assert code == 1 and [first["status"], second["status"]] == ["budget", "budget"]
    assert first["answer"] == second["answer"] == "best effort"
    # Before: 0 steps at 8,192 reply tokens. Now the first task, before any reply has shown the provider
    # caches, pays full input price; once one has, prompts repeated from the cache cost a quarter as much.
    assert first["llm_calls"] >= 2 and second["llm_calls"] >= 4
    assert all(r["cost"] <= 0.004 for r in (first, second))
    assert all(MIN_COMPLETION <= b["max_tokens"] < 8192 for b in sent)  # fitted: $0.0131 of reply never fits
    assert "left, a step with room for the final answer needs at least $" in second["error"]


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
    assert ("could not pay for another step: $0.0015 left, a step with room for the final answer needs at least "
            "$0.0016") in str(refused.value)
    with last_call():  # the answering call alone fits
        assert model.complete(MESSAGE, max_tokens=8192).text == "x"  # type: ignore[arg-type]


def test_the_prompt_the_provider_caches_is_priced_at_the_cache_read_rate() -> None:
    fitted = []
    for cached in (0, 400):  # the provider's first reply reported no cache reads, or some
        earlier = Completion("x", prompt_tokens=1000, completion_tokens=5, cached_tokens=cached, cost=0.0)
        inner = ScriptedLLM([earlier, "x"], model="openai:gpt-4.1-mini", cost_per_call=0.0)
        model, _ = _budget(max_cost=0.05).task_models(inner, None)
        model.complete(MESSAGE, max_tokens=100_000)  # type: ignore[arg-type]
        model.complete(MESSAGE, max_tokens=100_000)  # type: ignore[arg-type]
        fitted.append(inner.calls[-1].max_tokens or 0)
    # The same prompt again: its 1,000 tokens read from the cache at 0.25x of $0.40 once the provider has shown
    # it caches, $0.0003 less for this call and for the one kept for the last answer: 375 more reply tokens.
    assert fitted[1] - fitted[0] == pytest.approx(375, abs=2)


def test_concurrent_tasks_share_the_run_cap_with_fitted_calls() -> None:
    run = _budget(max_run_cost=0.002)
    first, _ = run.task_models(ScriptedLLM(["x"], model="openai:gpt-4.1-mini", cost_per_call=0.0009), None)
    second, _ = run.task_models(ScriptedLLM(["x"], model="openai:gpt-4.1-mini", cost_per_call=0.0009), None)
    first.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError, match="--max-run-cost"):
        second.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
    assert not run.may_start()


def test_a_reasoning_model_needs_room_for_its_thinking_before_a_call_is_made() -> None:
    # $0.0032 pays gpt-5-mini ($0.25 / $2.00) a ~1,000-token prompt twice and ~1,350 reply tokens in all: with
    # 256 kept for the last answer the call would go, but a model that thinks before it writes needs 1,024 kept
    # and 1,024 for this call. gpt-4.1-mini's 256-token minimum fits.
    settings = {"max_cost": 0.0032}
    for spec, refused in (("openai:gpt-5-mini", True), ("openai:gpt-4.1-mini", False)):
        run = RunBudget.from_settings(Settings(**settings), ScriptedLLM(["x"], model=spec))
        assert run is not None
        model, _ = run.task_models(ScriptedLLM(["x"], model=spec), None)
        if refused:
            with pytest.raises(BudgetExceededError, match="--max-cost"):
                model.complete(MESSAGE, max_tokens=8192)  # type: ignore[arg-type]
        else:
            assert model.complete(MESSAGE, max_tokens=8192).text == "x"  # type: ignore[arg-type]
