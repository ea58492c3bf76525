"""Quotas, spend limits, account blocks and server-given waits, replayed from real recorded error bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from core.chat import Message
from core.errors import LLMError, LLMFatalError
from llm import LLMInterface, RejectedParams
from providers.common import QuotaExhaustedError
from providers.errors import AccountBlockedError, wait_in_message
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import (
    FakeClock,
    anthropic_reply,
    anthropic_script,
    dispatch,
    gemini_reply,
    gemini_script,
    openai_reply,
    openai_script,
)
from tests.fakes.real_traffic import recorded

MESSAGES: list[Message] = [{"role": "user", "content": "What is 6 * 7?"}]


def settings_for(server: LoopbackServer, **overrides: Any) -> Settings:
    """Settings pointing every provider at the loopback server."""
    options: dict[str, Any] = {
        "openai_base_url": server.url + "/v1", "openai_api_key": "sk-test", "anthropic_base_url": server.url,
        "anthropic_api_key": "sk-ant-test", "gemini_base_url": server.url, "gemini_api_key": "AIza-test",
        "max_retries": 6, "request_timeout": 5.0, "max_retry_wait": 60.0}
    options.update(overrides)
    return Settings(**options)


def facade(settings: Settings, spec: str, *fallbacks: str) -> tuple[LLMInterface, FakeClock]:
    """A facade with a fake clock (sleeping only records the wait)."""
    clock = FakeClock()
    llm = LLMInterface.from_spec(spec, settings, fallbacks=fallbacks, sleep=clock.sleep, clock=clock,
                                 rejected=RejectedParams())
    return llm, clock


def paths(server: LoopbackServer, part: str) -> int:
    """How many requests the server got on paths containing `part`."""
    return sum(part in r.path for r in server.requests)


@pytest.mark.parametrize("name", ["gemini_per_day_quota", "gemini_per_day_free_tier_with_retry",
                                  "gemini_limit_zero_text_only"])
def test_an_exhausted_gemini_quota_stops_after_one_request(server: LoopbackServer, name: str) -> None:
    server.handler = gemini_script(recorded(name), gemini_reply("never sent"))
    llm, clock = facade(settings_for(server), "gemini:gemini-2.5-flash")
    with pytest.raises(QuotaExhaustedError, match="aistudio.google.com") as caught:
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []
    assert isinstance(caught.value, LLMFatalError)  # with no fallback left, the run stops


def test_a_per_minute_gemini_quota_is_a_rate_limit_waited_out(server: LoopbackServer) -> None:
    server.handler = gemini_script(recorded("gemini_per_minute_rate_limit"), gemini_reply("Final Answer: 42"))
    llm, clock = facade(settings_for(server), "gemini:gemini-2.5-flash")
    assert llm.complete(MESSAGES).text == "Final Answer: 42"
    assert clock.waits == [26.0]


@pytest.mark.parametrize("name", ["anthropic_monthly_spend_limit", "anthropic_api_usage_limits",
                                  "anthropic_workspace_usage_limits"])
def test_anthropic_spend_and_usage_limits_stop_after_one_request(server: LoopbackServer, name: str) -> None:
    server.handler = anthropic_script(recorded(name), anthropic_reply("never sent"))
    llm, clock = facade(settings_for(server), "anthropic:claude-sonnet-4-6")
    with pytest.raises(QuotaExhaustedError, match="console.anthropic.com/settings/limits"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []  # the 600 s Retry-After is not waited


def test_an_exhausted_model_is_skipped_for_the_rest_of_the_run(server: LoopbackServer) -> None:
    server.handler = dispatch(gemini_script(recorded("gemini_per_day_quota")),
                              openai_script(openai_reply("Final Answer: 42")))
    llm, clock = facade(settings_for(server), "gemini:gemini-2.5-flash", "openai:gpt-4o")
    for _ in range(3):
        reply = llm.complete(MESSAGES)
        assert reply.model == "openai:gpt-4o"
    assert paths(server, "generateContent") == 1 and paths(server, "chat/completions") == 3
    assert clock.waits == []


def test_when_every_model_is_exhausted_the_run_stops_naming_each_billing_page(server: LoopbackServer) -> None:
    server.handler = dispatch(gemini_script(recorded("gemini_per_day_quota")),
                              anthropic_script(recorded("anthropic_monthly_spend_limit")))
    llm, _ = facade(settings_for(server), "gemini:gemini-2.5-flash", "anthropic:claude-sonnet-4-6")
    with pytest.raises(LLMFatalError, match="aistudio.google.com.*console.anthropic.com"):
        llm.complete(MESSAGES)
    with pytest.raises(LLMFatalError):
        llm.complete(MESSAGES)
    assert len(server.requests) == 2  # the second call sent nothing


def test_a_persistently_failing_model_is_skipped_while_the_fallback_answers(server: LoopbackServer) -> None:
    overloaded = Response(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    server.handler = dispatch(anthropic_script(overloaded), openai_script(openai_reply("Final Answer: 42")))
    llm, _ = facade(settings_for(server, max_retries=1), "anthropic:claude-sonnet-4-6", "openai:gpt-4o")
    for _ in range(5):
        assert llm.complete(MESSAGES).model == "openai:gpt-4o"
    assert paths(server, "/v1/messages") == 3 * 2  # 3 calls of 2 attempts, then no more


@pytest.mark.parametrize(("name", "wait"), [("openai_tpm_seconds", 18.642), ("openai_tpm_milliseconds", 0.644),
                                            ("openai_compatible_minutes", 62.639999999)])
def test_openai_429_waits_what_its_message_says(server: LoopbackServer, name: str, wait: float) -> None:
    server.handler = openai_script(recorded(name), openai_reply("Final Answer: 42"))
    llm, clock = facade(settings_for(server, max_retry_wait=120.0), "openai:gpt-4o")
    assert llm.complete(MESSAGES).text == "Final Answer: 42"
    assert clock.waits == [pytest.approx(wait)]


def test_wait_in_message_reads_every_unit() -> None:
    assert wait_in_message("Please try again in 23.03s.") == pytest.approx(23.03)
    assert wait_in_message("Please try again in 1m30s.") == pytest.approx(90.0)
    assert wait_in_message("Please try again in 500ms.") == pytest.approx(0.5)
    assert wait_in_message("Please retry in 5.237548564s.") == pytest.approx(5.237548564)
    assert wait_in_message("Rate limit reached, slow down.") is None


def test_a_wait_longer_than_the_cap_fails_at_once_with_the_wait(server: LoopbackServer) -> None:
    server.handler = openai_script(recorded("openai_compatible_long_wait"), openai_reply("never sent"))
    llm, clock = facade(settings_for(server), "openai:gpt-4o")
    with pytest.raises(LLMError, match="asked to wait 1418 s") as caught:
        llm.complete(MESSAGES)
    assert not isinstance(caught.value, LLMFatalError)  # this task fails, the batch goes on
    assert len(server.requests) == 1 and clock.waits == []


def test_a_wait_longer_than_the_cap_moves_to_the_fallback_at_once(server: LoopbackServer) -> None:
    server.handler = dispatch(openai_script(recorded("openai_compatible_long_wait")),
                              anthropic_script(anthropic_reply("Final Answer: 42")))
    llm, clock = facade(settings_for(server), "openai:gpt-4o", "anthropic:claude-sonnet-4-6")
    assert llm.complete(MESSAGES).model == "anthropic:claude-sonnet-4-6"
    assert clock.waits == []


def test_an_unsupported_gemini_location_is_an_account_level_error(server: LoopbackServer) -> None:
    server.handler = gemini_script(recorded("gemini_location_unsupported"))
    llm, _ = facade(settings_for(server), "gemini:gemini-2.5-flash")
    with pytest.raises(AccountBlockedError, match="available-regions"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


@pytest.mark.parametrize(("provider", "name", "env"), [
    ("gemini:gemini-2.5-flash", "gemini_location_unsupported", {"GEMINI_API_KEY": "AIza-test"}),
    ("anthropic:claude-sonnet-4-6", "anthropic_workspace_usage_limits", {"ANTHROPIC_API_KEY": "sk-ant"}),
])
def test_account_level_rejections_stop_the_run_with_exit_2(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        provider: str, name: str, env: dict[str, str]) -> None:
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("one\n\ntwo\n\nthree\n")
    answer = recorded(name)

    def handle(req: Request) -> Response:
        return answer

    with LoopbackServer(handle) as srv:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("GEMINI_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        code = main.main([str(tasks), "--model", provider, "-q", "-o", str(tmp_path / "r.md"),
                          "--workspace", str(tmp_path / "ws"), "--no-trace"])
        assert code == 2
        assert len(srv.requests) == 1  # one request, not one per task
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ("available-regions" in err[0] or "console.anthropic.com" in err[0])
