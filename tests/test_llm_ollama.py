"""Local servers' real context windows: Ollama's native /api/chat with num_ctx, vLLM and llama.cpp windows."""

from __future__ import annotations

from typing import Any

import pytest

from config import Settings
from core.chat import Message
from core.errors import LLMFatalError
from llm import LLMInterface
from prompt.memory import default_budget
from providers.context_window import ContextWindowWarning, llamacpp_window, ollama_show_window, vllm_window
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import ollama_reply, ollama_script
from tests.fakes.real_traffic import local

MESSAGES: list[Message] = [{"role": "system", "content": "You are a research agent."},
                           {"role": "user", "content": "Task: find X."}]


def ollama(server: LoopbackServer, model: str = "llama3.1:8b", **overrides: Any) -> LLMInterface:
    """A facade for an Ollama model on the loopback server (OLLAMA_BASE_URL ends in /v1, as documented)."""
    settings = Settings(**{"ollama_base_url": server.url + "/v1", "max_retries": 0, **overrides})
    return LLMInterface.from_spec(f"ollama:{model}", settings)


def test_the_native_chat_gets_a_num_ctx_that_holds_the_budget_and_the_reply(server: LoopbackServer) -> None:
    server.handler = ollama_script(local("ollama_chat"), show=Response(200, {"model_info": {
        "general.architecture": "llama", "llama.context_length": 131072}}))
    llm = ollama(server, context_budget=20_000, max_tokens=4096)
    reply = llm.complete(MESSAGES, stop=["\nObservation:"])
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("Hello! How are you today?", 26, 298)
    assert reply.model == "ollama:llama3.1:8b" and reply.cost is None
    chat = next(r for r in server.requests if r.path == "/api/chat").json()
    assert chat["options"]["num_ctx"] == 20_000 + 4096 and chat["options"]["num_predict"] == 4096
    assert chat["options"]["stop"] == ["\nObservation:"] and chat["stream"] is False
    assert chat["messages"][0] == {"role": "system", "content": "You are a research agent."}


def test_num_ctx_and_the_budget_stay_within_the_models_window(server: LoopbackServer) -> None:
    server.handler = ollama_script(local("ollama_chat"), show=local("ollama_show"))  # llama.context_length 8192
    settings = Settings(ollama_base_url=server.url + "/v1", max_tokens=2048, max_retries=0)
    assert default_budget(settings, "ollama:llava") == int((8192 - 2048) * 0.7)
    LLMInterface.from_spec("ollama:llava", settings).complete(MESSAGES)
    chat = next(r for r in server.requests if r.path == "/api/chat").json()
    assert chat["options"]["num_ctx"] == 8192
    assert server.requests[0].path == "/api/show" and server.requests[0].json() == {"model": "llava"}


def test_a_prompt_that_cannot_fit_the_window_in_use_is_warned_about(server: LoopbackServer) -> None:
    server.handler = ollama_script(ollama_reply("ok"), show=local("ollama_show"))
    llm = ollama(server, model="llava-warn", max_tokens=2048)
    long_prompt: list[Message] = [{"role": "user", "content": "word " * 30_000}]  # ~37,500 tokens
    with pytest.warns(ContextWindowWarning, match="does not fit the 8,192-token context"):
        llm.complete(long_prompt)


def test_a_missing_ollama_model_says_how_to_pull_it(server: LoopbackServer) -> None:
    server.handler = ollama_script(Response(404, {"error": 'model "qwen3" not found, try pulling it first'}))
    with pytest.raises(LLMFatalError, match="ollama pull qwen3"):
        ollama(server, model="qwen3").complete(MESSAGES)


def test_an_ollama_server_error_is_retried(server: LoopbackServer) -> None:
    server.handler = ollama_script(local("ollama_error"), ollama_reply("Final Answer: 42"))
    settings = Settings(ollama_base_url=server.url + "/v1", max_retries=1, max_retry_wait=0.01,
                        context_budget=4000)
    assert LLMInterface.from_spec("ollama:llama3.1:8b", settings).complete(MESSAGES).text == "Final Answer: 42"


def test_recorded_windows_of_ollama_vllm_and_llamacpp_are_read() -> None:
    assert ollama_show_window(local("ollama_show").body) == 8192
    assert vllm_window(local("vllm_models").body, "qwen3-30b-instruct") == 32768
    assert llamacpp_window(local("llamacpp_props").body) == 1024


def test_a_local_openai_compatible_server_budgets_to_the_window_it_reports(server: LoopbackServer) -> None:
    models, props = local("vllm_models"), local("llamacpp_props")

    def handle(req: Request) -> Response:
        return models if req.path == "/v1/models" else props

    server.handler = handle
    vllm = Settings(openai_base_url=server.url + "/v1", max_tokens=4096)
    assert default_budget(vllm, "openai:qwen3-30b-instruct") == int((32768 - 4096) * 0.7)
    server.handler = lambda req: props if req.path == "/props" else Response(404, {"error": "no"})
    llamacpp = Settings(openai_base_url=server.url + "/v1", max_tokens=512)
    assert default_budget(llamacpp, "openai:some-gguf") == max(int((1024 - 512) * 0.7), 1000)
