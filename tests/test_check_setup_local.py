"""check_setup.py against local servers (issue 38): a model that replies with no text is a failure naming its likely
causes; the agent's prompt (its size, the window) is sent once as a task's first request, so a window smaller than
the prompt or a chat template that drops it shows here. Bodies are llama-cpp-python's own, recorded from its server."""

from __future__ import annotations

import pytest

import check_setup
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import llama_cpp_python, local


def llama_cpp_server(chat: Response | None = None, probe: Response | None = None):  # type: ignore[no-untyped-def]
    """llama-cpp-python as recorded: its listing, no /props; the probe ("ok") and the agent's prompt answered."""
    def handle(req: Request) -> Response:
        if req.path == "/v1/models":
            return llama_cpp_python("models")
        if not req.path.endswith("/chat/completions"):
            return llama_cpp_python("props_404")
        prompt = req.json()["messages"][0]["role"] == "system"
        sent = sum(len(m["content"]) for m in req.json()["messages"]) // 4
        return (chat or openai_reply("ok", prompt_tokens=sent)) if prompt else (probe or openai_reply("ok"))
    return handle


def check(server: LoopbackServer, capsys: pytest.CaptureFixture[str], model: str) -> tuple[int, str]:
    code = check_setup.main(["--model", f"openai:{model}", "--base-url", server.url + "/v1", "--no-search"])
    return code, capsys.readouterr().out


def test_a_model_that_replies_with_no_text_is_not_ready(server: LoopbackServer,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    server.handler = llama_cpp_server(probe=llama_cpp_python("empty_reply"))
    code, out = check(server, capsys, "gemma-silent")
    assert code == 1 and "Not ready" in out
    row = next(line for line in out.splitlines() if "model request" in line)
    assert row.lstrip().startswith("✗") and "no text" in row
    assert "instruction-tuned" in out and "chat template" in out
    assert "thinking model" not in out  # not the cause here: the reply ended at once (stop, 0 tokens)


def test_the_prompt_row_names_its_size_and_asks_for_a_window_the_server_does_not_report(
        server: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.handler = llama_cpp_server()
    code, out = check(server, capsys, "gemma-unreported")
    row = next(line for line in out.splitlines() if " prompt " in line)
    assert row.lstrip().startswith("!") and "characters for" in row and "window not reported" in row
    assert "it fits" in row and "--context-window" in out
    assert code == 0  # a warning: the agent still learns the window from a refusal


def test_a_window_the_server_reports_is_shown(server: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    def handle(req: Request) -> Response:
        if req.path == "/v1/models":
            return local("vllm_models")  # max_model_len 32768
        sent = sum(len(m["content"]) for m in req.json()["messages"]) // 4
        return openai_reply("ok", prompt_tokens=sent)

    server.handler = handle
    code, out = check(server, capsys, "qwen3-30b-instruct")
    row = next(line for line in out.splitlines() if " prompt " in line)
    assert code == 0 and row.lstrip().startswith("✓") and "window 32,768 tokens" in row and "it fits" in row


def test_a_window_smaller_than_the_prompt_fails_with_the_servers_fix(server: LoopbackServer,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    server.handler = llama_cpp_server(chat=llama_cpp_python("context_length_exceeded"))
    code, out = check(server, capsys, "gemma-small")
    row = next(line for line in out.splitlines() if " prompt " in line)
    assert code == 1 and row.lstrip().startswith("✗")
    assert "2,048-token context window" in row and "--n_ctx" in row


def test_a_chat_template_that_drops_the_system_prompt_fails(server: LoopbackServer,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    server.handler = llama_cpp_server(chat=llama_cpp_python("dropped_system"))
    code, out = check(server, capsys, "gemma-dropped")
    row = next(line for line in out.splitlines() if " prompt " in line)
    assert code == 1 and row.lstrip().startswith("✗") and "counted 16 prompt tokens" in row
    assert "chat template" in out


def test_a_window_only_the_compact_prompt_fits_is_ready_and_says_what_the_full_one_needs(
        server: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> None:
    refused = llama_cpp_python("context_length_exceeded")  # the server names its 2,048-token window

    def handle(req: Request) -> Response:
        first = req.json()["messages"][0]
        if req.path.endswith("/chat/completions") and first["role"] == "system" and \
                first["content"].startswith("You are a careful research assistant."):  # the full prompt
            return refused
        return llama_cpp_server()(req)

    server.handler = handle
    code, out = check(server, capsys, "gemma-only-compact")  # a window no other test taught
    row = next(line for line in out.splitlines() if " prompt " in line)
    assert code == 0 and "\nReady:" in out, out
    assert row.lstrip().startswith("!") or "⚠" in row, row
    assert "does not fit the server's 2,048-token window; runs use the compact one (" in row
    assert "which fits" in row and "start the server with a window of about" in out and "--n_ctx" in out
