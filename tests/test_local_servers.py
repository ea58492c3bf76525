"""Local servers' windows and refusals (issue 38): a prompt over the window is named with the window, the prompt's
size and the fix for that kind of server; the batch stops at the first such refusal; a window a refusal names is
kept, and a task whose older steps can shrink is refitted to it.

Bodies are real: llama-cpp-python's as recorded from its server (tests/fixtures/llama_cpp_server), llama-server's
and LM Studio's from tests/fixtures/real_api/local_servers.json (their sources named there)."""

from __future__ import annotations

from pathlib import Path

import pytest

import main
from agent import ANSWERED, ReActAgent
from config import Settings
from core.errors import ContextWindowError, LLMFatalError
from llm import LLMInterface
from prompt.memory import Memory, default_budget
from providers.context_window import known_server_window, openai_server_window, server_kind
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import llama_cpp_python, local
from tools.base import tool

MESSAGES = [{"role": "user", "content": "hi"}]


def server_answering(listing: Response, chat: list[Response], extra: dict[str, Response] | None = None):  # type: ignore[no-untyped-def]
    """A handler: GET /v1/models -> listing; each chat completion -> the next of `chat` (the last repeats)."""
    def handle(req: Request) -> Response:
        if req.path == "/v1/models":
            return listing
        if req.path.endswith("/chat/completions"):
            return chat.pop(0) if len(chat) > 1 else chat[0]
        return (extra or {}).get(req.path, Response(404, {"detail": "Not Found"}))
    return handle


def facade(server: LoopbackServer, model: str, **options: object) -> LLMInterface:
    settings = Settings(**{"openai_base_url": server.url + "/v1", "max_retries": 0, **options})
    default_budget(settings, f"openai:{model}")  # as a task's memory does first: the window is asked for
    return LLMInterface.from_spec(f"openai:{model}", settings)


def test_llama_cpp_pythons_refusal_names_its_window_the_prompt_and_n_ctx(server: LoopbackServer) -> None:
    server.handler = server_answering(llama_cpp_python("models"), [llama_cpp_python("context_length_exceeded")])
    llm = facade(server, "gemma-refused")
    with pytest.raises(ContextWindowError) as err:
        llm.complete(MESSAGES)
    message = str(err.value)
    assert "2,519 tokens" in message and "2,048-token context window" in message
    assert "llama-cpp-python" in message and "--n_ctx 8192" in message
    assert "reduce the length" not in message  # the server's advice (shorten the completion) cannot help
    assert isinstance(err.value, LLMFatalError) and (err.value.window, err.value.prompt_tokens) == (2048, 2519)
    assert known_server_window(server.url + "/v1", "gemma-refused") == 2048  # kept: the next prompts fit it


@pytest.mark.parametrize(("listing", "refusal", "model", "says"), [
    ("vllm_models", None, "qwen3-30b-instruct", "--max-model-len"),
    (None, "llamacpp_overflow", "llama", "llama-server -m … -c 32768"),
    (None, "lmstudio_overflow", "google/gemma-4-26b-a4b", "lms load MODEL --context-length 16384"),
])
def test_each_server_gets_its_own_fix(server: LoopbackServer, listing: str | None, refusal: str | None,
                                      model: str, says: str) -> None:
    vllm_refusal = Response(400, {"error": {"message": "This model's maximum context length is 32768 tokens. However,"
                                            " you requested 40000 tokens (39000 in the messages, 1000 in the "
                                            "completion).", "code": "context_length_exceeded"}})
    extra = {"/props": local("llamacpp_props")} if refusal == "llamacpp_overflow" else {}
    if refusal == "lmstudio_overflow":
        extra = {"/api/v1/models": local("lmstudio_models")}
    server.handler = server_answering(local(listing) if listing else Response(200, {"object": "list", "data": []}),
                                      [local(refusal) if refusal else vllm_refusal], extra)
    with pytest.raises(ContextWindowError, match="does not fit") as err:
        facade(server, model).complete(MESSAGES)
    assert says in str(err.value)


def test_lm_studio_reports_the_window_it_loaded_the_model_with(server: LoopbackServer) -> None:
    server.handler = server_answering(Response(200, {"object": "list", "data": [{"id": "google/gemma-4-26b-a4b"}]}),
                                      [openai_reply("ok")], {"/api/v1/models": local("lmstudio_models")})
    base = server.url + "/v1"
    assert openai_server_window(base, "google/gemma-4-26b-a4b") == 4096
    assert server_kind(base) == "LM Studio"


def test_a_server_that_reports_no_window_is_told_it_with_context_window(server: LoopbackServer) -> None:
    server.handler = server_answering(llama_cpp_python("models"), [openai_reply("ok")],
                                      {"/props": llama_cpp_python("props_404")})
    base = server.url + "/v1"
    assert default_budget(Settings(openai_base_url=base), "openai:silent-window") == 32_000  # nothing reported
    settings = Settings(openai_base_url=base, context_window=2048)
    assert default_budget(settings, "openai:silent-window") == 1075  # 70% of what a 512-token reply leaves


def test_a_local_reply_budget_is_sized_to_the_window_unless_max_tokens_was_set(server: LoopbackServer) -> None:
    server.handler = server_answering(llama_cpp_python("models"), [openai_reply("ok")])
    facade(server, "sized", context_window=2048).complete(MESSAGES)
    facade(server, "sized", context_window=2048, max_tokens=700).complete(MESSAGES)
    facade(server, "unsized").complete(MESSAGES)
    sent = [r.json()["max_tokens"] for r in server.requests if r.path.endswith("/chat/completions")]
    assert sent == [512, 700, 2048]  # a quarter of the window; the user's own; a window not known yet


def test_the_batch_stops_at_the_first_prompt_over_the_window_and_says_why(
        server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MAX_RETRIES", "0")
    server.handler = server_answering(llama_cpp_python("models"), [llama_cpp_python("context_length_exceeded")])
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("word " * 3000 + "\n\nWhat is 2+2?\n\nWhat is 3+3?\n", encoding="utf-8")
    code = main.main([str(tasks), "-o", str(tmp_path / "results.md"), "--model", "openai:gemma-batch",
                      "--base-url", server.url + "/v1", "--no-search"])
    err = capsys.readouterr().err
    assert code == 2
    assert "2,048-token context window" in err and "--n_ctx" in err
    assert sum(r.path.endswith("/chat/completions") for r in server.requests) == 1  # no task after the first


def test_a_task_whose_steps_outgrow_the_window_is_refitted_and_goes_on(server: LoopbackServer) -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        return "A very long page. " * 600

    calls: list[dict[str, object]] = []

    def handle(req: Request) -> Response:
        if not req.path.endswith("/chat/completions"):
            return llama_cpp_python("models") if req.path == "/v1/models" else Response(404, {"detail": "Not Found"})
        body = req.json()
        calls.append(body)
        if len(calls) == 1:
            return openai_reply('Thought: read it\nAction: fetch\nAction Input: {"url": "http://x.test"}')
        if len(calls) == 2:
            return llama_cpp_python("context_length_exceeded")  # the observation made the prompt too long
        return openai_reply("Thought: done\nFinal Answer: read")

    server.handler = handle
    llm = facade(server, "gemma-refit")
    result = ReActAgent(llm, [fetch], memory_factory=lambda: Memory(budget_tokens=32_000)).run("Read x.test")
    assert result.status == ANSWERED and result.answer == "read"
    assert len(calls) == 3  # the refused step was sent once more, fitted
    third = sum(len(m["content"]) for m in calls[2]["messages"])  # type: ignore[union-attr]
    assert third < sum(len(m["content"]) for m in calls[1]["messages"]) and third // 4 < 2048 - 512  # type: ignore[union-attr]
