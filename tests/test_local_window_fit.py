"""vLLM and llama.cpp windows: a prompt that would not fit the window the server runs with is warned about (as
for Ollama), and under --replay the window probe makes no connection (the recorded window is used instead).

Server answers are the recorded vLLM /v1/models and llama.cpp /props bodies in tests/fixtures/real_api
(local_servers.json names their sources)."""

from __future__ import annotations

import json
import socket
import warnings
from pathlib import Path

import pytest

import main
from config import Settings
from core.chat import Message
from llm import LLMInterface
from prompt.memory import DEFAULT_BUDGET, default_budget
from providers.context_window import ContextWindowWarning
from tests.fakes.loopback import LoopbackServer, Request, Response, free_port
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import local

VLLM_MODEL = "qwen3-30b-instruct"  # the model of the recorded /v1/models answer (max_model_len 32768)


def local_server(kind: str, answer: str = "Final Answer: 42") -> object:
    """A vLLM or llama.cpp server: its recorded window answer, and chat completions."""
    def handle(req: Request) -> Response:
        if req.method == "POST" and req.path.endswith("/chat/completions"):
            return Response(200, openai_reply(answer, 20, 5).body)
        if kind == "vllm" and req.path == "/v1/models":
            return local("vllm_models")
        if kind == "llamacpp" and req.path == "/props":
            return local("llamacpp_props")
        return Response(404, {"error": "not found"})
    return handle


def facade(server: LoopbackServer, spec: str, max_tokens: int) -> LLMInterface:
    """The facade as a run has it: the task's memory has fitted its budget to the server's window first."""
    settings = Settings(openai_base_url=server.url + "/v1", max_tokens=max_tokens, max_retries=0)
    assert default_budget(settings, spec) != DEFAULT_BUDGET  # the window was asked for (memory_for_task)
    return LLMInterface.from_spec(spec, settings)


@pytest.mark.parametrize(("kind", "spec", "max_tokens", "chars", "window"), [
    ("vllm", f"openai:{VLLM_MODEL}", 4096, 140_000, "32,768"),  # ~35,000 prompt tokens
    ("llamacpp", "openai:some-gguf", 512, 4_000, "1,024"),  # ~1,000 prompt tokens + 512 for the reply
])
def test_a_prompt_over_the_servers_window_is_warned_about(kind: str, spec: str, max_tokens: int, chars: int,
                                                          window: str) -> None:
    with LoopbackServer(local_server(kind)) as server:
        llm = facade(server, spec, max_tokens)
        long_prompt: list[Message] = [{"role": "user", "content": "x" * chars}]
        with pytest.warns(ContextWindowWarning, match=f"does not fit the {window}-token context"):
            assert llm.complete(long_prompt).text == "Final Answer: 42"


@pytest.mark.parametrize(("kind", "spec"), [("vllm", f"openai:{VLLM_MODEL}"), ("llamacpp", "openai:some-gguf")])
def test_a_prompt_that_fits_is_not_warned_about(kind: str, spec: str) -> None:
    with LoopbackServer(local_server(kind)) as server, warnings.catch_warnings():
        warnings.simplefilter("error", ContextWindowWarning)
        assert facade(server, spec, 256).complete([{"role": "user", "content": "short"}]).text


def test_replay_of_a_local_model_probes_no_window_and_keeps_the_recorded_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.txt").write_text("What is six times seven?\n")
    monkeypatch.setenv("AGENT_MAX_TOKENS", "4096")
    with LoopbackServer(local_server("vllm")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main.main(["tasks.txt", "--model", f"openai:{VLLM_MODEL}", "-q", "--cache", "cache",
                          "-o", "first.md"]) == 0
        assert any(r.path == "/v1/models" for r in server.requests)  # recording probed the window
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")  # the server is gone
    attempts: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:  # counts (and refuses) every connection
        attempts.append(address)
        raise ConnectionRefusedError("no connection may be made during --replay")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert main.main(["tasks.txt", "--model", f"openai:{VLLM_MODEL}", "-q", "--replay", "cache",
                      "-o", "second.md"]) == 0
    replay = Settings(openai_base_url=f"http://127.0.0.1:{free_port()}/v1", max_tokens=4096,
                      cache_dir=tmp_path / "cache", cache_replay=True)
    assert default_budget(replay, f"openai:{VLLM_MODEL}") == int((32768 - 4096) * 0.7)  # as recorded
    assert default_budget(replay, "openai:never-recorded") == DEFAULT_BUDGET
    assert attempts == []
    [first] = [json.loads(x) for x in Path("first.jsonl").read_text().splitlines()]
    [second] = [json.loads(x) for x in Path("second.jsonl").read_text().splitlines()]
    assert first["answer"] == second["answer"] == "42"


def test_a_context_budget_over_the_vllm_window_is_warned_about(tmp_path: Path) -> None:
    with LoopbackServer(local_server("vllm")) as server:
        settings = Settings(openai_base_url=server.url + "/v1", max_tokens=4096, max_retries=0,
                            context_budget=100_000)
        spec = f"openai:{VLLM_MODEL}"
        assert default_budget(settings, spec) == 100_000  # the user's budget stands ...
        long_prompt: list[Message] = [{"role": "user", "content": "x" * 140_000}]
        with pytest.warns(ContextWindowWarning, match="does not fit the 32,768-token context"):
            LLMInterface.from_spec(spec, settings).complete(long_prompt)  # ... and what it lets through is flagged
