"""The OpenAI adapter (also Ollama and local servers) through the real `openai` SDK, against loopback."""

from __future__ import annotations

from typing import Any

import pytest

from core.chat import Message
from core.errors import EmptyCompletionError, LLMError, LLMFatalError
from llm import LLMInterface
from providers.common import ChatRequest, QuotaExhaustedError
from providers.openai_compat import OpenAIBackend
from tests.fakes.loopback import LoopbackServer, Response
from tests.fakes.providers import (
    FakeClock,
    broken_json,
    facade,
    hang,
    openai_error,
    openai_reply,
    openai_script,
)

MESSAGES: list[Message] = [
    {"role": "system", "content": "You are a research agent."},
    {"role": "user", "content": "What is 6 * 7?"},
]
STOP = ["\nObservation:"]


def make(server: LoopbackServer, spec: str = "openai:gpt-4o",
         **overrides: Any) -> tuple[LLMInterface, FakeClock]:
    """A facade for one model on the loopback server, with a fake clock and a fresh stop memory."""
    return facade(spec, **{"openai_base_url": server.url + "/v1", "openai_api_key": "sk-test", **overrides})


def test_reply_carries_text_usage_cost_and_the_request_maps_messages_and_stop(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_reply("42", prompt_tokens=1000, completion_tokens=100,
                                                model="gpt-4o-2024-08-06"))
    llm, _ = make(server)
    reply = llm.complete(MESSAGES, stop=STOP, max_tokens=300, temperature=0.2)
    assert (reply.text, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == (
        "42", "stop", 1000, 100)
    assert reply.model == "openai:gpt-4o"
    assert reply.cost == pytest.approx((1000 * 2.50 + 100 * 10.00) / 1e6)
    (request,) = server.requests
    body = request.json()
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert body["messages"] == MESSAGES
    assert body["stop"] == STOP
    assert body["max_tokens"] == 300 and body["temperature"] == 0.2


def test_settings_give_max_tokens_and_temperature_and_stops_are_cut_to_four(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_reply("ok"))
    llm, _ = make(server, max_tokens=77, temperature=0.5)
    llm.complete(MESSAGES, stop=["a", "b", "c", "d", "e"])
    body = server.requests[0].json()
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (77, 0.5, ["a", "b", "c", "d"])


def test_429_waits_for_retry_after_then_succeeds(server: LoopbackServer) -> None:
    limited = openai_error(429, "Rate limit reached", type_="requests", headers={"Retry-After": "3"})
    server.handler = openai_script(limited, openai_reply("ok"))
    llm, clock = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2
    assert clock.waits == [3.0]


def test_500_then_success_is_retried(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(500, "boom", type_="server_error"), openai_reply("ok"))
    llm, clock = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2 and len(clock.waits) == 1


def test_sdk_retries_are_off_so_max_retries_zero_means_one_request(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(503, "overloaded", type_="server_error"))
    llm, clock = make(server, max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []
    assert not isinstance(info.value, LLMFatalError)
    assert "503" in str(info.value) and info.value.attempts == 1


def test_a_hanging_server_times_out_and_the_retry_answers(server: LoopbackServer) -> None:
    # 2 s: a busy machine's server thread takes the first request before its client gives up on it (a retry
    # that came first would be the one held); the held one is let go when the server ends.
    server.handler = openai_script(hang(120), openai_reply("late but fine"))
    llm, _ = make(server, request_timeout=2.0)
    assert llm.complete(MESSAGES).text == "late but fine"
    assert len(server.requests) == 2


def test_a_body_that_is_not_json_is_retried(server: LoopbackServer) -> None:
    plain = Response(200, "upstream proxy error", content_type="text/plain")
    server.handler = openai_script(broken_json(), plain, openai_reply("ok"))
    llm, _ = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 3


def test_401_is_fatal_names_the_variable_and_is_not_retried(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(401, "Incorrect API key provided: sk-test.",
                                                code="invalid_api_key"))
    llm, clock = make(server)
    with pytest.raises(LLMFatalError, match=r"OPENAI_API_KEY was rejected \(401\)"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []


def test_401_from_a_keyless_local_server_says_to_set_a_key(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(401, "missing key"))
    llm, _ = make(server, openai_api_key=None)
    with pytest.raises(LLMFatalError, match=r"server at http://127\.0\.0\.1:\d+/v1 rejected.*OPENAI_API_KEY"):
        llm.complete(MESSAGES)
    assert "authorization" in server.requests[0].headers  # the SDK still gets a (dummy) key


def test_404_unknown_model_is_fatal(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(
        404, "The model `gpt-x` does not exist or you do not have access to it.", code="model_not_found"))
    llm, _ = make(server, spec="openai:gpt-x")
    with pytest.raises(LLMFatalError, match="model gpt-x not found"):
        llm.complete(MESSAGES)
    # One completion request; an unknown model behind a custom base URL may also have been asked its window.
    assert [r.path for r in server.requests if r.method == "POST"] == ["/v1/chat/completions"]
    assert all(r.method == "GET" for r in server.requests if r.path != "/v1/chat/completions")


def test_insufficient_quota_is_not_retried(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(
        429, "You exceeded your current quota, please check your plan and billing details.",
        type_="insufficient_quota", code="insufficient_quota"))
    llm, clock = make(server)
    with pytest.raises(QuotaExhaustedError, match="quota"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []


def test_other_400_is_an_llm_error_with_the_provider_message(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(
        400, "This model's maximum context length is 128000 tokens.", code="context_length_exceeded"))
    llm, _ = make(server)
    with pytest.raises(LLMError, match="maximum context length") as info:
        llm.complete(MESSAGES)
    assert not isinstance(info.value, LLMFatalError) and info.value.status == 400
    assert len(server.requests) == 1


def test_unsupported_stop_is_dropped_for_the_call_and_remembered_for_the_model(
        server: LoopbackServer) -> None:
    rejected = openai_error(400, "Unsupported parameter: 'stop' is not supported with this model.",
                            param="stop", code="unsupported_parameter")
    server.handler = openai_script(rejected, openai_reply("first"), openai_reply("second"))
    llm, clock = make(server, spec="openai:o3")
    assert llm.complete(MESSAGES, stop=STOP).text == "first"
    assert llm.complete(MESSAGES, stop=STOP).text == "second"
    assert ["stop" in r.json() for r in server.requests] == [True, False, False]
    assert clock.waits == []


def test_unsupported_max_tokens_switches_to_max_completion_tokens(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(
        400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
             "Use 'max_completion_tokens' instead.", param="max_tokens"), openai_reply("ok"))
    llm, _ = make(server, spec="openai:gpt-5")
    llm.complete(MESSAGES, max_tokens=500)
    second = server.requests[1].json()
    assert second["max_completion_tokens"] == 500 and "max_tokens" not in second


@pytest.mark.parametrize("reply, reason", [
    (openai_reply(""), "no text"),
    (openai_reply(None), "no text"),
    (openai_reply(None, finish_reason="length"), "max-tokens"),
    (openai_reply(None, refusal="I can't help with that."), "refused: I can't help"),
    (openai_reply(None, finish_reason="content_filter"), "content filter"),
])
def test_empty_refused_or_filtered_replies_raise_empty_completion(server: LoopbackServer, reply: Response,
                                                                   reason: str) -> None:
    server.handler = openai_script(reply)
    llm, _ = make(server)
    with pytest.raises(EmptyCompletionError, match=reason):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


def test_api_openai_com_gets_max_completion_tokens() -> None:
    backend = OpenAIBackend("openai:o4-mini", "o4-mini", api_key="sk", base_url=None, timeout=1.0)
    body = backend.request_body(ChatRequest(messages=MESSAGES, max_tokens=64))
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body
