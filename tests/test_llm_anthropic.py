"""The Anthropic adapter through the real `anthropic` SDK against a loopback Messages API."""

from __future__ import annotations

from typing import Any

import pytest

from core.chat import Message
from core.errors import EmptyCompletionError, LLMError, LLMFatalError
from llm import LLMInterface
from providers.common import QuotaExhaustedError
from tests.fakes.loopback import LoopbackServer, Response
from tests.fakes.providers import (
    FakeClock,
    anthropic_error,
    anthropic_reply,
    anthropic_script,
    broken_json,
    facade,
    hang,
)

MESSAGES: list[Message] = [
    {"role": "system", "content": "You are a research agent."},
    {"role": "user", "content": "Task: find X."},
    {"role": "assistant", "content": "Thought: search.\nAction: web_search  "},
    {"role": "user", "content": "Observation: X is 7."},
    {"role": "user", "content": "Reminder: answer in the format."},
]


def make(server: LoopbackServer, spec: str = "anthropic:claude-sonnet-5-5",
         **overrides: Any) -> tuple[LLMInterface, FakeClock]:
    """A facade for one model on the loopback server, with a fake clock and a fresh stop memory."""
    return facade(spec, **{"anthropic_base_url": server.url, "anthropic_api_key": "sk-ant-test", **overrides})


def test_system_goes_top_level_turns_alternate_and_stop_sequences_are_sent(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_reply("Final Answer: 7", input_tokens=2000, output_tokens=50))
    llm, _ = make(server)
    reply = llm.complete(MESSAGES, stop=["\nObservation:"], max_tokens=400)
    assert (reply.text, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == (
        "Final Answer: 7", "stop", 2000, 50)
    assert reply.model == "anthropic:claude-sonnet-5-5"
    assert reply.cost == pytest.approx((2000 * 2.00 + 50 * 10.00) / 1e6)
    (request,) = server.requests
    body = request.json()
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer sk-ant-test"  # how anthropic 2.x sends the key
    assert body["system"] == [{"type": "text", "text": "You are a research agent.",
                               "cache_control": {"type": "ephemeral"}}]
    assert body["stop_sequences"] == ["\nObservation:"]
    assert body["max_tokens"] == 400
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert text_of(body["messages"][2]) == "Observation: X is 7.\n\nReminder: answer in the format."


def text_of(message: dict[str, Any]) -> str:
    """The text of a wire message whose content is a string or a list of text blocks."""
    content = message["content"]
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def test_a_final_assistant_prefill_loses_trailing_whitespace(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_reply("ok"))
    llm, _ = make(server)
    llm.complete(MESSAGES[:3])
    assert text_of(server.requests[0].json()["messages"][-1]) == "Thought: search.\nAction: web_search"


def test_429_with_retry_after_ms_waits_that_long(server: LoopbackServer) -> None:
    limited = anthropic_error(429, "Number of request tokens has exceeded your rate limit",
                              type_="rate_limit_error", headers={"retry-after-ms": "2500"})
    server.handler = anthropic_script(limited, anthropic_reply("ok"))
    llm, clock = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert clock.waits == [2.5] and len(server.requests) == 2


def test_529_overloaded_then_success_is_retried(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_error(529, "Overloaded", type_="overloaded_error"),
                                      anthropic_reply("ok"))
    llm, _ = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_a_hanging_server_times_out_and_the_retry_answers(server: LoopbackServer) -> None:
    # 2 s: a busy machine's server thread takes the first request before its client gives up on it (a retry
    # that came first would be the one held); the held one is let go when the server ends.
    server.handler = anthropic_script(hang(120), anthropic_reply("ok"))
    llm, _ = make(server, request_timeout=2.0)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_a_broken_body_is_retried(server: LoopbackServer) -> None:
    server.handler = anthropic_script(broken_json(), anthropic_reply("ok"))
    llm, _ = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_401_is_fatal_and_names_anthropic_api_key(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_error(401, "invalid x-api-key", type_="authentication_error"))
    llm, clock = make(server)
    with pytest.raises(LLMFatalError, match=r"ANTHROPIC_API_KEY was rejected \(401\).*invalid x-api-key"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []


def test_404_unknown_model_is_fatal(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_error(404, "model: claude-x", type_="not_found_error"))
    llm, _ = make(server, spec="anthropic:claude-x")
    with pytest.raises(LLMFatalError, match="model claude-x not found"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


def test_low_credit_is_a_quota_error_not_retried(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_error(
        400, "Your credit balance is too low to access the Anthropic API."))
    llm, _ = make(server)
    with pytest.raises(QuotaExhaustedError, match="credit"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


def test_other_400_is_an_llm_error_with_the_provider_message(server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_error(400, "prompt is too long: 210000 tokens > 200000"))
    llm, _ = make(server)
    with pytest.raises(LLMError, match="prompt is too long") as info:
        llm.complete(MESSAGES)
    assert not isinstance(info.value, LLMFatalError)
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply, reason", [
    (anthropic_reply(None), "no text"),
    (anthropic_reply("   "), "no text"),
    (anthropic_reply("I can't", stop_reason="refusal"), "refused"),
    (anthropic_reply(None, stop_reason="max_tokens"), "max-tokens"),
])
def test_empty_or_refused_replies_raise_empty_completion(server: LoopbackServer, reply: Response,
                                                         reason: str) -> None:
    server.handler = anthropic_script(reply)
    llm, _ = make(server)
    with pytest.raises(EmptyCompletionError, match=reason):
        llm.complete(MESSAGES)


def test_a_later_system_message_becomes_a_user_turn_and_no_system_key_is_sent_without_one(
        server: LoopbackServer) -> None:
    server.handler = anthropic_script(anthropic_reply("ok"))
    llm, _ = make(server)
    llm.complete([{"role": "assistant", "content": "Thought: earlier step"},
                  {"role": "system", "content": "Summary of earlier steps: X is 7."},
                  {"role": "user", "content": "Continue."}])
    body = server.requests[0].json()
    assert "system" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert text_of(body["messages"][2]) == "Summary of earlier steps: X is 7.\n\nContinue."


def test_prompt_tokens_include_cached_prompt_parts(server: LoopbackServer) -> None:
    reply = anthropic_reply("Final Answer: 7", input_tokens=100, output_tokens=5)
    assert isinstance(reply.body, dict)
    reply.body["usage"].update(cache_read_input_tokens=900, cache_creation_input_tokens=50)
    server.handler = anthropic_script(reply)
    llm, _ = make(server)
    assert llm.complete(MESSAGES).prompt_tokens == 1050
