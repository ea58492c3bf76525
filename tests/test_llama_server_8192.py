"""Against a real llama-cpp-python server with an 8,192-token window and --chat_format gemma (issue 38): the model
answers, but that chat format drops system messages, so the server counts a few prompt tokens for the whole agent
prompt. check_setup fails the prompt row naming the chat template, a batch warns once on the console, `ask`
shows the same warning, and a window given with --context-window is what the prompt is fitted to. One server for
the module; replies kept to a few tokens (the model is CPU-bound)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import check_setup
import main
from tests.fakes.llama_server import LlamaServer, llama_server, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
MODEL = "openai:gemma-3-270m"
DROPPED = "its chat template drops part of the prompt"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama"), 8192, "--chat_format", "gemma") as server:
        yield server


@pytest.fixture(autouse=True)
def _patient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_REQUEST_TIMEOUT", "900")  # a busy CI machine evaluates the prompt slowly


def test_check_setup_shows_the_window_and_fails_a_template_that_drops_the_prompt(
        llama: LlamaServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AGENT_CONTEXT_WINDOW", "8192")
    code = check_setup.main(["--model", MODEL, "--base-url", llama.base_url, "--no-search"])
    out = capsys.readouterr().out
    assert code == 1
    request = next(line for line in out.splitlines() if "model request" in line)
    assert request.lstrip().startswith("✓") and "answered" in request
    prompt = next(line for line in out.splitlines() if " prompt " in line)
    assert prompt.lstrip().startswith("✗") and "window 8,192 tokens" in prompt and DROPPED in prompt


def test_a_batch_warns_once_that_the_server_dropped_the_system_prompt(llama: LlamaServer, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("What is 2+2?\n\nWhat is the capital of France?\n", encoding="utf-8")
    code = main.main([str(tmp_path / "tasks.txt"), "-o", str(tmp_path / "results.md"), "--model", MODEL,
                      "--base-url", llama.base_url, "--no-search", "--max-steps", "1", "--max-tokens", "16"])
    out = capsys.readouterr()
    assert code == 0 and (out.out + out.err).count(DROPPED) == 1
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len([r for r in records if r.get("id", "").startswith("task-")]) == 2  # a warning: the batch went on


def test_ask_shows_the_warning_among_its_steps(llama: LlamaServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = main.main(["ask", "What is 2+2?", "--model", MODEL, "--base-url", llama.base_url, "--no-search",
                      "--max-steps", "1", "--max-tokens", "16", "--context-window", "8192"])
    err = capsys.readouterr().err
    assert code == 0 and DROPPED in err and "--chat_format gemma" in err
