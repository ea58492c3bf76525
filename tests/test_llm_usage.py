"""Usage and cost as providers bill them: cached prompt tokens, billed empty replies, prompt caching on the
wire, family temperature defaults and the setup probe on thinking models, replayed from real recordings."""

from __future__ import annotations

from typing import Any

import pytest

import check_setup
import main
from agent import ReActAgent
from config import Settings
from core.chat import Message
from core.errors import EmptyCompletionError
from llm import LLMInterface, RejectedParams
from report.markdown import TaskRecord, render_markdown
from run import model_checks
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import FakeClock, anthropic_script, gemini_script, openai_script
from tests.fakes.real_traffic import reply

MESSAGES: list[Message] = [
    {"role": "system", "content": "You are a research agent."},
    {"role": "user", "content": "Task: find X."},
    {"role": "assistant", "content": "Thought: search."},
    {"role": "user", "content": "Observation: X is 7."},
]


def make(server: LoopbackServer, spec: str, **overrides: Any) -> tuple[LLMInterface, FakeClock]:
    """A facade for one model on the loopback server."""
    options: dict[str, Any] = {
        "openai_base_url": server.url + "/v1", "openai_api_key": "sk-test", "anthropic_base_url": server.url,
        "anthropic_api_key": "sk-ant-test", "gemini_base_url": server.url, "gemini_api_key": "AIza-test",
        "max_retries": 1, "request_timeout": 5.0, **overrides}
    clock = FakeClock()
    llm = LLMInterface.from_spec(spec, Settings(**options), sleep=clock.sleep, clock=clock,
                                 rejected=RejectedParams())
    return llm, clock


def test_anthropic_cache_reads_and_writes_are_priced_at_their_rates(server: LoopbackServer) -> None:
    server.handler = anthropic_script(reply("anthropic_cache_read"))
    llm, _ = make(server, "anthropic:claude-sonnet-4-6")  # $3 / $15 per million, like the recorded model
    out = llm.complete(MESSAGES)
    assert (out.prompt_tokens, out.cached_tokens, out.cache_write_tokens) == (3 + 403 + 1111, 1111, 403)
    assert out.cost == pytest.approx((3 * 3.00 + 1111 * 0.30 + 403 * 3.75 + 33 * 15.00) / 1e6)
    assert out.cost < (1517 * 3.00 + 33 * 15.00) / 1e6 / 2  # less than half the full-input price


def test_openai_cached_prompt_tokens_are_priced_at_the_cache_rate(server: LoopbackServer) -> None:
    server.handler = openai_script(reply("openai_cache_write"), reply("openai_cache_read"))
    llm, _ = make(server, "openai:gpt-5.4-mini")  # $0.75 / $4.50, cached input $0.075
    first, second = llm.complete(MESSAGES), llm.complete(MESSAGES)
    assert (first.cached_tokens, first.cache_write_tokens) == (0, 4012)
    assert first.cost == pytest.approx((4020 * 0.75 + 4 * 4.50) / 1e6)  # OpenAI charges no cache write
    assert second.cached_tokens == 4012
    assert second.cost == pytest.approx((8 * 0.75 + 4012 * 0.075 + 4 * 4.50) / 1e6)


def test_gemini_implicit_cache_tokens_are_priced_at_the_cache_rate(server: LoopbackServer) -> None:
    server.handler = gemini_script(reply("gemini_cached"))
    llm, _ = make(server, "gemini:gemini-2.5-flash")  # $0.30 / $2.50, cached input $0.03
    out = llm.complete(MESSAGES)
    assert (out.prompt_tokens, out.cached_tokens, out.completion_tokens) == (17713, 17379, 68 + 821)
    assert out.cost == pytest.approx((334 * 0.30 + 17379 * 0.03 + 889 * 2.50) / 1e6)


def test_cached_tokens_reach_the_results_and_the_trace(server: LoopbackServer) -> None:
    server.handler = anthropic_script(reply("anthropic_cache_read"))
    llm, _ = make(server, "anthropic:claude-sonnet-4-6")
    events: list[Any] = []
    result = ReActAgent(llm, [], on_event=events.append).run("Explain Python.")
    calls = [e for e in events if e.kind == "llm_call"]
    assert result.usage.cached_tokens == 1111 * len(calls) and result.usage.cache_write_tokens == 403 * len(calls)
    assert all(call.data["cached_tokens"] == 1111 for call in calls)
    record = TaskRecord(key="k", id="1", index=1, task="t", status="done", prompt_tokens=1517,
                        cached_tokens=1111, cache_write_tokens=403)
    report = render_markdown([record], {"model": "anthropic:claude-sonnet-4-6"})
    assert "1,517 prompt (1,111 cached, 403 written to cache)" in report


def test_anthropic_requests_mark_the_system_prompt_and_the_conversation_for_caching(
        server: LoopbackServer) -> None:
    server.handler = anthropic_script(reply("anthropic_haiku_temperature"))
    llm, _ = make(server, "anthropic:claude-haiku-4-5")
    llm.complete(MESSAGES)
    body = server.requests[0].json()
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    marked = [i for i, m in enumerate(body["messages"])
              if isinstance(m["content"], list) and m["content"][-1].get("cache_control")]
    assert marked == [1, 2]  # the last two turns: this step's prefix and the previous step's
    assert body["temperature"] == 0.0  # Anthropic models take it (haiku-4-5 accepted 0.2 when recorded)


@pytest.mark.parametrize("name", ["gemini_max_tokens_no_text", "gemini_safety_blocked"])
def test_an_empty_or_blocked_reply_still_counts_its_billed_tokens(server: LoopbackServer, name: str) -> None:
    server.handler = gemini_script(reply(name))
    llm, _ = make(server, "gemini:gemini-2.5-pro")  # $1.25 / $10
    with pytest.raises(EmptyCompletionError) as caught:
        llm.complete(MESSAGES)
    (billed,) = caught.value.billed
    assert billed.prompt_tokens in (14, 15) and billed.cost is not None and billed.cost > 0
    result = ReActAgent(llm, []).run("Find X.")
    assert result.status == "error"
    assert result.usage.prompt_tokens >= billed.prompt_tokens and result.cost is not None and result.cost > 0


def test_gemini_3_keeps_its_own_temperature_unless_the_user_sets_one(server: LoopbackServer) -> None:
    server.handler = gemini_script(reply("gemini_cached"))
    for spec, options, requested, expected in [
            ("gemini:gemini-3.5-flash", {}, None, None),
            ("gemini:gemini-3.5-flash", {}, 0, None),  # what the memory's summarizer asks for
            ("gemini:gemini-3.5-flash", {"temperature": 0.3}, 0.3, 0.3),  # AGENT_TEMPERATURE, passed down
            ("gemini:gemini-2.5-flash", {}, None, 0.0)]:
        server.requests.clear()
        llm, _ = make(server, spec, **options)
        llm.complete(MESSAGES, temperature=requested)
        config = server.requests[0].json()["generationConfig"]
        assert config.get("temperature") == expected, spec


def test_the_setup_probe_accepts_a_thinking_model_that_answers_without_text(server: LoopbackServer) -> None:
    server.handler = gemini_script(reply("gemini_max_tokens_no_text"))
    settings = Settings(model="gemini:gemini-2.5-pro", gemini_base_url=server.url, gemini_api_key="AIza-test",
                        max_retries=0)
    rows = check_setup.check_model(settings, offline=False)
    assert [r.mark for r in rows] == [check_setup.OK, check_setup.WARN]
    assert "reachable" in rows[1].detail and "--max-tokens" in rows[1].fix
    sent = server.requests[0].json()["generationConfig"]["maxOutputTokens"]
    assert sent == model_checks.PROBE_MAX_TOKENS >= 1024  # room for a thinking model to answer


def test_max_tokens_flag_sets_the_completion_budget() -> None:
    settings = main.settings_from_args(main.parse_args(["tasks.txt", "--max-tokens", "2048"]))
    assert settings.max_tokens == 2048


def test_newer_claude_models_get_no_default_temperature_and_drop_a_rejected_one(server: LoopbackServer) -> None:
    from tests.fakes.real_traffic import recorded

    server.handler = anthropic_script(reply("anthropic_haiku_temperature"))
    llm, _ = make(server, "anthropic:claude-sonnet-5-5")
    llm.complete(MESSAGES)
    assert "temperature" not in server.requests[0].json()
    server.requests.clear()
    server.handler = anthropic_script(recorded("anthropic_temperature_deprecated"),
                                      reply("anthropic_haiku_temperature"))
    llm, _ = make(server, "anthropic:claude-sonnet-5-5", temperature=0.3)  # the user set AGENT_TEMPERATURE
    assert llm.complete(MESSAGES, temperature=0.3).text.startswith("Hello!")
    llm.complete(MESSAGES, temperature=0.3)
    assert ["temperature" in r.json() for r in server.requests] == [True, False, False]


def test_a_blocked_reply_before_a_fallback_answer_is_still_counted(server: LoopbackServer) -> None:
    from tests.fakes.providers import dispatch, openai_reply

    server.handler = dispatch(gemini_script(reply("gemini_safety_blocked")),
                              openai_script(openai_reply("Final Answer: 42", prompt_tokens=100, completion_tokens=5)))
    settings = Settings(gemini_base_url=server.url, gemini_api_key="AIza-test", openai_base_url=server.url + "/v1",
                        openai_api_key="sk-test", max_retries=0)
    llm = LLMInterface.from_spec("gemini:gemini-2.5-pro", settings, fallbacks=("openai:gpt-4o",),
                                 rejected=RejectedParams())
    out = llm.complete(MESSAGES)
    (blocked,) = out.billed_before
    assert out.model == "openai:gpt-4o" and blocked.prompt_tokens == 14 and blocked.cost == pytest.approx(
        14 * 1.25 / 1e6)
    result = ReActAgent(llm, []).run("Find X.")
    assert result.usage.prompt_tokens == 14 + 100 and "gemini:gemini-2.5-pro" in result.usage.models
