"""Against a real llama-cpp-python server with its default 2,048-token window and Gemma 3 270M (issue 38), as a new
user meets it: the GGUF has no chat template, so the server falls back to llama-2's and the model replies to
"Reply with the single word: ok" with no text at all.

check_setup fails the model and shows the prompt's size and that the window is not reported; a task longer than
the window stops the batch at once with --n_ctx as the fix; --context-budget 1500 sends the compact prompt, which
the server accepts; `ask` with a request timeout the model cannot meet says so once, without a retry. The model
is CPU-bound: replies are kept to a few tokens; the module starts one server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import check_setup
import main
from config import Settings
from tests.fakes.llama_server import LlamaServer, llama_server, unavailable
from tools.builtin import default_tools

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
MODEL = "openai:gemma-3-270m"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama"), 2048) as server:
        yield server


@pytest.fixture(autouse=True)
def _patient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_REQUEST_TIMEOUT", "900")  # a busy CI machine evaluates the prompt slowly


def batch(llama: LlamaServer, tmp_path: Path, tasks: str, *flags: str) -> int:
    (tmp_path / "tasks.txt").write_text(tasks, encoding="utf-8")
    return main.main([str(tmp_path / "tasks.txt"), "-o", str(tmp_path / "results.md"), "--model", MODEL,
                      "--base-url", llama.base_url, "--no-search", *flags])


def test_check_setup_fails_the_silent_model_and_shows_the_prompt(llama: LlamaServer, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = check_setup.main(["--model", MODEL, "--base-url", llama.base_url, "--no-search"])
    out = capsys.readouterr().out
    assert code == 1 and "Not ready" in out
    request = next(line for line in out.splitlines() if "model request" in line)
    assert request.lstrip().startswith("✗") and "no text" in request and "finish reason stop" in request
    prompt = next(line for line in out.splitlines() if " prompt " in line)
    assert "window not reported" in prompt and "it fits" in prompt
    offered = int(re.search(r"characters for (\d+) tools", prompt).group(1))
    every = {tool.name for tool in default_tools(Settings(search=False), tmp_path)}
    assert {"look", "watch", "transcribe"} <= every  # a vision and speech model gets them ...
    assert offered == len(every) - 3  # ... this one does not
    assert "--context-window" in out


def test_a_task_longer_than_the_window_stops_the_batch_with_the_fix(llama: LlamaServer, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    sent_before = llama.requests()
    code = batch(llama, tmp_path, "Summarise: " + "word " * 3000 + "\n\nWhat is 2+2?\n")
    err = capsys.readouterr().err
    assert code == 2
    assert "2,048-token context window" in err and "--n_ctx" in err and "reduce the length" not in err
    assert llama.requests() == sent_before + 1  # refused once; the second task was never sent


def test_context_budget_1500_sends_a_prompt_the_2048_token_server_accepts(llama: LlamaServer, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MAX_FORMAT_ERRORS", "1")  # its replies do not follow the format: the task ends there
    code = batch(llama, tmp_path, "What is 2+2?\n", "--context-budget", "1500", "--max-tokens", "16",
                 "--max-steps", "1")
    assert code in (0, 1)  # the run went through (1: the task ended on the model's format, not on the server)
    events = [json.loads(line) for trace in tmp_path.glob("runs/*/traces/*.jsonl")
              for line in trace.read_text(encoding="utf-8").splitlines()]
    calls = [e for e in events if e["kind"] == "llm_call"]
    assert calls and not [e for e in events if e["kind"] == "llm_error"]
    system = calls[0]["messages"][0]["content"]
    assert "### " not in system and "Tools (input keys marked ? are optional)" in system  # the compact form
    assert 0 < calls[0]["prompt_tokens"] < 2048 - 16  # the server's own count


def test_ask_says_a_timeout_once_and_does_not_ask_again(llama: LlamaServer, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Last in the module: the server goes on evaluating the abandoned request, the next one would wait for it.
    monkeypatch.setenv("AGENT_REQUEST_TIMEOUT", "0.1")
    code = main.main(["ask", "What is the capital of France?", "--model", MODEL, "--base-url", llama.base_url,
                      "--no-search", "--max-tokens", "16"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("no answer within 0.1 s") == 2  # the notice, and the error: one request
    assert "not asked again" in err and "--request-timeout" in err and "attempt 2" not in err
