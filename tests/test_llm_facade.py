"""The LLM facade: model specs, default model choice, retry waits and deadline, fallback models."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from config import Settings
from core.chat import Message
from core.errors import ConfigError, EmptyCompletionError, LLMError, LLMFatalError
from llm import LLMInterface, RejectedParams, build_llm, context_window, default_model, parse_spec
from providers.common import parse_retry_after
from providers.local_servers import list_models
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import (
    FakeClock,
    Script,
    anthropic_error,
    anthropic_reply,
    anthropic_script,
    dispatch,
    ollama_reply,
    ollama_script,
    openai_error,
    openai_models,
    openai_reply,
    openai_script,
)

MESSAGES: list[Message] = [{"role": "user", "content": "What is 6 * 7?"}]
KEYS = ("anthropic_api_key", "openai_api_key", "gemini_api_key")


def settings_for(server: LoopbackServer, **overrides: Any) -> Settings:
    """Settings pointing OpenAI and Anthropic at the loopback server."""
    options: dict[str, Any] = {"openai_base_url": server.url + "/v1", "openai_api_key": "sk-test",
                               "anthropic_base_url": server.url, "anthropic_api_key": "sk-ant-test",
                               "max_retries": 2, "request_timeout": 5.0}
    options.update(overrides)
    return Settings(**options)


def facade(settings: Settings, spec: str = "openai:gpt-4o", fallbacks: tuple[str, ...] = (),
           rejected: RejectedParams | None = None) -> tuple[LLMInterface, FakeClock]:
    """A facade with a fake clock; a fresh stop memory unless one is shared."""
    clock = FakeClock()
    llm = LLMInterface.from_spec(spec, settings, fallbacks=fallbacks, sleep=clock.sleep, clock=clock,
                                 rejected=rejected or RejectedParams())
    return llm, clock


def paths(server: LoopbackServer) -> list[str]:
    """The paths the server was asked for, in order."""
    return [r.path for r in server.requests]


# --- specs and configuration -------------------------------------------------------------------------

def test_specs_split_on_the_first_colon_and_the_provider_is_case_insensitive() -> None:
    assert parse_spec("ollama:llama3.1:8b") == ("ollama", "llama3.1:8b")
    assert parse_spec("OpenAI:gpt-5.4-mini") == ("openai", "gpt-5.4-mini")


@pytest.mark.parametrize("spec, hint", [
    ("gpt-4o", "did you mean openai:gpt-4o"),
    ("claude-sonnet-5-5", "did you mean anthropic:claude-sonnet-5-5"),
    ("mistral-api:large", "openai, anthropic, gemini, ollama"),
    ("openai:", "provider:model"),
])
def test_a_spec_without_a_known_provider_is_a_config_error(spec: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=hint):
        parse_spec(spec)


@pytest.mark.parametrize("spec, variable", [
    ("anthropic:claude-sonnet-5-5", "ANTHROPIC_API_KEY"),
    ("openai:gpt-5.4-mini", "OPENAI_API_KEY.*OPENAI_BASE_URL"),
    ("gemini:gemini-3.8-flash", r"GEMINI_API_KEY \(or GOOGLE_API_KEY\)"),
])
def test_a_model_whose_key_is_missing_is_a_config_error_naming_the_variable(spec: str, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        LLMInterface.from_spec(spec, Settings())


def test_the_configured_model_wins_without_probing() -> None:
    def probe(url: str, timeout: float) -> tuple[list[str], str]:
        raise AssertionError("must not probe")

    assert default_model(Settings(model="gemini:gemini-3.5-flash", openai_api_key="k"), probe) == (
        "gemini:gemini-3.5-flash")


@pytest.mark.parametrize("keys, expected", [
    (KEYS, "anthropic:claude-sonnet-5-5"),
    (("openai_api_key", "gemini_api_key"), "openai:gpt-5.4-mini"),
    (("gemini_api_key",), "gemini:gemini-3.8-flash"),
])
def test_default_model_follows_the_key_order(keys: tuple[str, ...], expected: str) -> None:
    settings = Settings().with_overrides(**dict.fromkeys(keys, "key"))
    assert default_model(settings, lambda url, timeout: (["never-used"], "")) == expected


def test_without_keys_a_local_server_or_ollama_supplies_the_model() -> None:
    asked: list[tuple[str, float]] = []

    def probe(url: str, timeout: float) -> tuple[list[str], str]:
        asked.append((url, timeout))
        return (["qwen3:8b", "llama3.1:8b"], "") if "11434" in url else ([], "refused the connection")

    assert default_model(Settings(), probe) == "ollama:qwen3:8b"
    assert asked == [("http://localhost:11434/v1", 1.0)]
    local = Settings(openai_base_url="http://127.0.0.1:8000/v1")
    assert default_model(local, lambda url, timeout: (["served-model"], "") if "8000" in url else ([], "")) == (
        "openai:served-model")


def test_probe_lists_chat_models_and_skips_embedding_models(server: LoopbackServer) -> None:
    server.handler = lambda req: openai_models("nomic-embed-text:latest", "llama3.1:8b", "qwen3:8b")
    assert list_models(server.url + "/v1", 1.0) == (["llama3.1:8b", "qwen3:8b"], "")
    assert paths(server) == ["/v1/models"]


def test_no_key_and_no_ollama_is_a_config_error_that_says_what_to_set() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    with pytest.raises(ConfigError) as info:
        build_llm(Settings(ollama_base_url=dead))
    message = str(info.value)
    for needle in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "ollama serve",
                   "--model ollama:llama3.1", dead):
        assert needle in message


def test_build_llm_puts_fallbacks_behind_the_model_without_repeating_it() -> None:
    settings = Settings(model="openai:gpt-4o", openai_api_key="k", anthropic_api_key="k",
                        fallback_models=("openai:gpt-4o", "anthropic:claude-haiku-4-5"))
    assert [b.spec for b in build_llm(settings).backends] == ["openai:gpt-4o", "anthropic:claude-haiku-4-5"]


def test_context_window_comes_from_the_table() -> None:
    assert context_window("anthropic:claude-sonnet-5-5") == 1_000_000
    assert context_window("openai:gpt-4o-2024-08-06") == 128_000
    assert context_window("ollama:llama3.1") is None


# --- retries -------------------------------------------------------------------------------------------

def test_a_retry_after_longer_than_the_cap_fails_at_once_with_the_hint(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(429, "slow down", headers={"Retry-After": "120"}),
                                   openai_reply("ok"))
    llm, clock = facade(settings_for(server, max_retry_wait=5.0))
    with pytest.raises(LLMError, match="asked to wait 120 s.*AGENT_MAX_RETRY_WAIT"):
        llm.complete(MESSAGES)
    assert clock.waits == [] and len(server.requests) == 1  # nothing sent that the server said would fail


def test_a_retry_after_within_the_cap_is_waited_and_latency_counts_the_wait(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(429, "slow down", headers={"Retry-After": "4"}),
                                   openai_reply("ok"))
    llm, clock = facade(settings_for(server, max_retry_wait=5.0))
    reply = llm.complete(MESSAGES)
    assert clock.waits == [4.0]
    assert reply.latency == pytest.approx(4.0)  # the fake clock only moves while sleeping


def test_without_a_hint_waits_grow_exponentially_with_jitter(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_reply("fine"), openai_error(500, "boom", type_="server_error"))
    llm, clock = facade(settings_for(server, max_retries=3))
    llm.complete(MESSAGES)  # it answered once: a server that never did stops the run instead (reachability.py)
    with pytest.raises(LLMError, match="failed after 4 attempt"):
        llm.complete(MESSAGES)
    assert len(clock.waits) == 3
    for n, wait in enumerate(clock.waits):
        assert 2**n <= wait <= 2**n + 1


def test_the_retry_deadline_stops_retrying_before_a_wait_would_pass_it(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(429, "slow down", headers={"Retry-After": "6"}))
    llm, clock = facade(settings_for(server, max_retries=6, retry_deadline=10.0))
    with pytest.raises(LLMError) as info:
        llm.complete(MESSAGES)
    assert clock.waits == [6.0] and len(server.requests) == 2
    assert info.value.attempts == 2 and info.value.status == 429


def test_retry_after_headers_in_every_form() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT"}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_a_rejected_stop_parameter_is_shared_by_facades_with_the_same_memory(server: LoopbackServer) -> None:
    server.handler = openai_script(
        openai_error(400, "Unsupported parameter: 'stop' is not supported with this model.", param="stop"),
        openai_reply("ok"))
    shared = RejectedParams()
    first, _ = facade(settings_for(server), spec="openai:o3", rejected=shared)
    second, _ = facade(settings_for(server), spec="openai:o3", rejected=shared)
    first.complete(MESSAGES, stop=["\nObservation:"])
    second.complete(MESSAGES, stop=["\nObservation:"])
    assert ["stop" in r.json() for r in server.requests] == [True, False, False]


def test_a_prices_file_prices_a_local_model(server: LoopbackServer, tmp_path: Any) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text('{"llama3.1:8b": [0.1, 0.2]}')
    server.handler = ollama_script(ollama_reply("ok", prompt_tokens=1_000_000, completion_tokens=1_000_000))
    llm, _ = facade(settings_for(server, ollama_base_url=server.url + "/v1", prices_file=prices),
                    spec="ollama:llama3.1:8b")
    assert llm.complete(MESSAGES).cost == pytest.approx(0.3)


# --- fallback models ---------------------------------------------------------------------------------

def two_providers(server: LoopbackServer, primary: Script, fallback: Script) -> None:
    """Serve the primary's and the fallback's wire formats from the one server."""
    server.handler = dispatch(primary, fallback)


def test_the_fallback_answers_when_the_primary_exhausts_its_retries(server: LoopbackServer) -> None:
    two_providers(server, openai_script(openai_error(503, "overloaded", type_="server_error")),
                  anthropic_script(anthropic_reply("from claude", input_tokens=100, output_tokens=10)))
    llm, _ = facade(settings_for(server), fallbacks=("anthropic:claude-haiku-4-5",))
    reply = llm.complete(MESSAGES)
    assert (reply.text, reply.model) == ("from claude", "anthropic:claude-haiku-4-5")
    assert reply.cost == pytest.approx((100 * 1.00 + 10 * 5.00) / 1e6)
    assert paths(server) == ["/v1/chat/completions"] * 3 + ["/v1/messages"]


def test_an_empty_reply_goes_to_the_fallback_without_retrying(server: LoopbackServer) -> None:
    two_providers(server, openai_script(openai_reply("")), anthropic_script(anthropic_reply("answer")))
    llm, clock = facade(settings_for(server), fallbacks=("anthropic:claude-haiku-4-5",))
    assert llm.complete(MESSAGES).model == "anthropic:claude-haiku-4-5"
    assert paths(server) == ["/v1/chat/completions", "/v1/messages"] and clock.waits == []


def test_a_rejected_key_on_the_primary_is_fatal_and_never_falls_back(server: LoopbackServer) -> None:
    two_providers(server, openai_script(openai_error(401, "Incorrect API key provided")),
                  anthropic_script(anthropic_reply("should not be asked")))
    llm, _ = facade(settings_for(server), fallbacks=("anthropic:claude-haiku-4-5",))
    with pytest.raises(LLMFatalError, match="OPENAI_API_KEY"):
        llm.complete(MESSAGES)
    assert paths(server) == ["/v1/chat/completions"]


def test_an_exhausted_quota_falls_back_to_another_provider(server: LoopbackServer) -> None:
    two_providers(server, openai_script(openai_error(429, "You exceeded your current quota.",
                                                     code="insufficient_quota")),
                  anthropic_script(anthropic_reply("answer")))
    llm, _ = facade(settings_for(server), fallbacks=("anthropic:claude-haiku-4-5",))
    assert llm.complete(MESSAGES).model == "anthropic:claude-haiku-4-5"


def test_when_every_model_fails_the_error_names_each_of_them(server: LoopbackServer) -> None:
    two_providers(server, openai_script(openai_reply(None)),
                  anthropic_script(anthropic_error(529, "Overloaded", type_="overloaded_error")))
    llm, _ = facade(settings_for(server, max_retries=1), fallbacks=("anthropic:claude-haiku-4-5",))
    with pytest.raises(LLMError) as info:
        llm.complete(MESSAGES)
    assert not isinstance(info.value, LLMFatalError | EmptyCompletionError)
    assert "openai:gpt-4o" in str(info.value) and "anthropic:claude-haiku-4-5" in str(info.value)
    assert info.value.attempts == 3
