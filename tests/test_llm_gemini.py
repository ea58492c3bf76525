"""The Gemini adapter through the real `google-genai` SDK against a loopback generateContent endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from core.chat import Message
from core.errors import EmptyCompletionError, LLMFatalError
from llm import LLMInterface
from tests.fakes.loopback import LoopbackServer, Response
from tests.fakes.providers import (
    FakeClock,
    broken_json,
    facade,
    gemini_error,
    gemini_reply,
    gemini_retry_info,
    gemini_script,
    hang,
)

MESSAGES: list[Message] = [
    {"role": "system", "content": "You are a research agent."},
    {"role": "user", "content": "Task: find X."},
    {"role": "assistant", "content": "Thought: search."},
    {"role": "user", "content": "Observation: X is 7."},
]


def make(server: LoopbackServer, spec: str = "gemini:gemini-3.5-flash",
         **overrides: Any) -> tuple[LLMInterface, FakeClock]:
    """A facade for one model on the loopback server, with a fake clock and a fresh stop memory."""
    return facade(spec, **{"gemini_base_url": server.url, "gemini_api_key": "AIza-test", **overrides})


def test_system_instruction_model_role_stop_sequences_usage_and_cost(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_reply("Final Answer: 7", prompt_tokens=1000, candidates_tokens=40,
                                                thoughts_tokens=60))
    llm, _ = make(server)
    reply = llm.complete(MESSAGES, stop=["\nObservation:"], max_tokens=256, temperature=0.0)
    # Thinking tokens are billed as output, so they are part of completion_tokens.
    assert (reply.text, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == (
        "Final Answer: 7", "stop", 1000, 100)
    assert reply.model == "gemini:gemini-3.5-flash"
    assert reply.cost == pytest.approx((1000 * 1.50 + 100 * 9.00) / 1e6)
    (request,) = server.requests
    body = request.json()
    assert request.path.endswith("/models/gemini-3.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == "AIza-test"
    assert body["systemInstruction"]["parts"] == [{"text": "You are a research agent."}]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["generationConfig"]["stopSequences"] == ["\nObservation:"]
    assert body["generationConfig"]["maxOutputTokens"] == 256


def test_429_waits_for_the_retry_info_delay(server: LoopbackServer) -> None:
    limited = gemini_error(429, "Resource has been exhausted (e.g. check quota).",
                           status_name="RESOURCE_EXHAUSTED", details=[gemini_retry_info("7s")])
    server.handler = gemini_script(limited, gemini_reply("ok"))
    llm, clock = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert clock.waits == [7.0] and len(server.requests) == 2


def test_503_then_success_is_retried(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_error(503, "The model is overloaded.", status_name="UNAVAILABLE"),
                                   gemini_reply("ok"))
    llm, _ = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_a_hanging_server_times_out_and_the_retry_answers(server: LoopbackServer) -> None:
    # 2 s: a busy machine's server thread takes the first request before its client gives up on it (a retry
    # that came first would be the one held); the held one is let go when the server ends.
    server.handler = gemini_script(hang(120), gemini_reply("ok"))
    llm, _ = make(server, request_timeout=2.0)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_a_broken_body_is_retried(server: LoopbackServer) -> None:
    server.handler = gemini_script(broken_json(), gemini_reply("ok"))
    llm, _ = make(server)
    assert llm.complete(MESSAGES).text == "ok"
    assert len(server.requests) == 2


def test_an_invalid_key_answered_with_400_is_fatal_and_names_gemini_api_key(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_error(
        400, "API key not valid. Please pass a valid API key.",
        details=[{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]))
    llm, clock = make(server)
    with pytest.raises(LLMFatalError, match=r"GEMINI_API_KEY was rejected \(400\)"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1 and clock.waits == []


def test_403_is_fatal(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_error(403, "Permission denied.", status_name="PERMISSION_DENIED"))
    llm, _ = make(server)
    with pytest.raises(LLMFatalError, match="GEMINI_API_KEY was refused access"):
        llm.complete(MESSAGES)


def test_404_unknown_model_is_fatal(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_error(
        404, "models/gemini-9 is not found for API version v1, or is not supported for generateContent.",
        status_name="NOT_FOUND"))
    llm, _ = make(server, spec="gemini:gemini-9")
    with pytest.raises(LLMFatalError, match="model gemini-9 not found"):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply, reason", [
    (gemini_reply(None, finish_reason="SAFETY"), r"blocked \(finish reason SAFETY\)"),
    (gemini_reply(None, block_reason="PROHIBITED_CONTENT"), r"prompt was blocked \(PROHIBITED_CONTENT\)"),
    (gemini_reply(None, finish_reason="MAX_TOKENS"), "max-tokens"),
    (gemini_reply(""), "no text"),
])
def test_blocked_or_empty_replies_raise_empty_completion(server: LoopbackServer, reply: Response,
                                                         reason: str) -> None:
    server.handler = gemini_script(reply)
    llm, _ = make(server)
    with pytest.raises(EmptyCompletionError, match=reason):
        llm.complete(MESSAGES)
    assert len(server.requests) == 1


def test_a_system_only_prompt_is_sent_as_the_user_turn(server: LoopbackServer) -> None:
    server.handler = gemini_script(gemini_reply("ok"))
    llm, _ = make(server)
    llm.complete([{"role": "system", "content": "Summarize these notes: ..."}])
    body = server.requests[0].json()
    assert "systemInstruction" not in body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Summarize these notes: ..."}]}]
