"""A memory summary the provider billed but that came back empty counts in the task's usage and cost.

The summarizer is the real facade on the real Gemini SDK, answered by a loopback server replaying the recorded
gemini-2.5-pro MAX_TOKENS-without-text and safety-blocked replies (tests/fixtures, see real_traffic.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import ReActAgent
from config import Settings
from core.errors import EmptyCompletionError
from llm import LLMInterface, RejectedParams
from prompt.memory import Memory
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import FakeClock, gemini_script
from tests.fakes.real_traffic import reply
from tests.fakes.scripted import ScriptedLLM
from tools.base import tool


@tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return f"page {n}\n" + "widgets and gadgets are described here in some detail.\n" * 150


@pytest.mark.parametrize("name", ["gemini_max_tokens_no_text", "gemini_safety_blocked"])
def test_a_billed_summary_that_fails_counts_in_the_task_usage(server: LoopbackServer, tmp_path: Path,
                                                              name: str) -> None:
    server.handler = gemini_script(reply(name))
    clock = FakeClock()
    settings = Settings(gemini_base_url=server.url, gemini_api_key="AIza-test", max_retries=1,
                        request_timeout=5.0)
    summarizer = LLMInterface.from_spec("gemini:gemini-2.5-pro", settings, sleep=clock.sleep, clock=clock,
                                        rejected=RejectedParams())
    actions = [f'Thought: read {n}\nAction: fetch\nAction Input: {{"n": {n}}}' for n in range(1, 9)]
    main_model = ScriptedLLM([*actions, "Thought: done\nFinal Answer: ok"], cost_per_call=0.0)
    memories: list[Memory] = []

    def factory() -> Memory:
        memories.append(Memory(3_000, tmp_path, summarizer=summarizer))
        return memories[-1]

    result = ReActAgent(main_model, [fetch], max_steps=12, memory_factory=factory).run("Read every page.")
    failed = [e for e in memories[0].summary_errors if isinstance(e, EmptyCompletionError)]
    assert result.answer == "ok" and failed, "the summaries were tried and came back empty"
    billed = [c for e in failed for c in e.billed]
    assert billed and all(c.prompt_tokens > 0 for c in billed)
    usage = result.usage
    assert usage.calls == len(main_model.calls) + len(billed)
    assert usage.prompt_tokens == 10 * len(main_model.calls) + sum(c.prompt_tokens for c in billed)
    assert usage.completion_tokens == 5 * len(main_model.calls) + sum(c.completion_tokens for c in billed)
    assert result.cost == pytest.approx(sum(c.cost or 0.0 for c in billed)) and result.cost > 0
    assert "gemini:gemini-2.5-pro" in usage.models


def test_a_billed_vision_reply_that_fails_counts_in_the_task_usage_and_cap(server: LoopbackServer,
                                                                           tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image", reason="Pillow draws the test image")
    from providers.budget import RunBudget
    from tools.media.look import LookTool

    server.handler = gemini_script(reply("gemini_safety_blocked"))  # 14 prompt tokens, no text
    image = tmp_path / "chart.png"
    pil.new("RGB", (300, 200), (0, 128, 255)).save(image, format="PNG")
    settings = Settings(model="gemini:gemini-2.5-pro", gemini_base_url=server.url, gemini_api_key="AIza-test",
                        max_retries=0, request_timeout=5.0, max_cost=1.0)
    run = RunBudget.from_settings(settings, ScriptedLLM(["x"]))
    assert run is not None
    main_model, _ = run.task_models(ScriptedLLM([
        'Thought: look\nAction: look\nAction Input: {"path": "chart.png", "question": "Number?"}',
        "Thought: done\nFinal Answer: unknown"], cost_per_call=0.0), None)
    result = ReActAgent(main_model, [LookTool(tmp_path, settings)], max_steps=3).run("What number is shown?")
    posts = [r for r in server.requests if r.method == "POST"]
    assert result.answer == "unknown" and result.steps[0].error == "tool" and posts
    assert result.usage.calls == 2 + len(posts) and result.usage.prompt_tokens == 20 + 14 * len(posts)
    billed_cost = 14 * len(posts) * 1.25 / 1e6  # gemini-2.5-pro input: $1.25 per million
    assert result.cost == pytest.approx(billed_cost)
    assert main_model.budget.cost == pytest.approx(billed_cost)  # type: ignore[attr-defined]  # charged once
