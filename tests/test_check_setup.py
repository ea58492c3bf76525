"""check_setup.py: the table, the exit code, and the same configuration path as main.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import check_setup
from tests.fakes.cli import trust
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply, openai_script

# The shape of Serper's /search reply (https://serper.dev, as tests/test_search.py's SERPER_BODY)
SERPER_RESULTS = {"organic": [{"title": "Python (programming language)", "link": "https://en.wikipedia.org/wiki/Python",
                               "snippet": "Python is a high-level programming language.", "position": 1}]}


def test_offline_check_passes_with_a_configured_model(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1234567890")
    assert check_setup.main(["--offline"]) == 0
    out = capsys.readouterr().out
    assert "✓  model" in out and "openai:" in out and "(chosen automatically)" in out
    key = next(line for line in out.splitlines() if "key OPENAI_API_KEY" in line)
    assert key.split()[:4] == ["✓", "key", "OPENAI_API_KEY", "set"]  # whether it is set, never its characters
    assert "7890" not in out and "sk-" not in out
    assert "✓  python tool" in out and "print(1+1) -> 2" in out
    assert "✓  scrape tool" in out and "✓  workspace" in out and "DuckDuckGo" in out
    assert "Ready:" in out


def test_live_model_request_goes_through_the_real_client(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    def handle(req: Request) -> Response:
        if req.path == "/search":
            return Response(200, SERPER_RESULTS)
        sent = sum(len(m["content"]) for m in req.json()["messages"])
        return openai_reply("ok", prompt_tokens=sent // 4)  # a real server counts what it was sent

    with LoopbackServer(handle) as server:
        monkeypatch.setenv("SERPER_API_KEY", "serper-test-key")
        monkeypatch.setenv("SERPER_BASE_URL", server.url)
        code = check_setup.main(["--model", "openai:local-model", "--base-url", server.url + "/v1"])
        assert any("chat/completions" in r.path for r in server.requests)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "✓  model request" in out and "'ok'" in out
    assert "it fits" in out  # the agent's own prompt, sent once to the local server
    assert "✓  search" in out and "Serper" in out and "answered" in out


def test_no_model_fails_and_names_the_keys(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    assert check_setup.main(["--offline"]) == 1
    out = capsys.readouterr().out
    assert "✗  model" in out and "Not ready" in out
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "ollama"):
        assert name in out


def test_rejected_key_fails_the_live_check(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes.providers import openai_error

    with LoopbackServer(openai_script(openai_error(401, "Incorrect API key"))) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-bad-000000000")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert check_setup.main(["--model", "openai:gpt-4.1-mini"]) == 1
    out = capsys.readouterr().out
    assert "✗  model request" in out and "OPENAI_API_KEY" in out


def test_each_role_shows_its_provider_host_and_key_variable_and_a_short_call(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.fakes.providers import openai_error

    with LoopbackServer(lambda req: openai_reply("ok")) as groq, \
            LoopbackServer(openai_script(openai_error(401, "Incorrect API key"))) as gpu_box:
        (tmp_path / "models.toml").write_text(f'[writer]\nmodel = "big-writer"\nbase_url = "{gpu_box.url}/v1"\n'
                                              'api_key_env = "WRITER_KEY"\n')
        monkeypatch.chdir(tmp_path)
        trust(tmp_path)  # its alias sends WRITER_KEY to its own base_url: the user trusted the folder
        monkeypatch.setenv("GROQ_API_KEY", "gsk-groq-secret-0000")
        monkeypatch.setenv("GROQ_BASE_URL", groq.url + "/openai/v1")
        monkeypatch.setenv("WRITER_KEY", "writer-secret-0000")
        monkeypatch.setenv("AGENT_WRITER_MODEL", "writer")
        code = check_setup.main(["--model", "groq:llama-3.3-70b-versatile", "--no-search"])
        assert [r.path for r in gpu_box.requests] == ["/v1/chat/completions"]
        assert groq.requests[0].path == "/openai/v1/chat/completions"
    out = capsys.readouterr().out
    assert code == 1
    host, box = groq.url.removeprefix("http://"), gpu_box.url.removeprefix("http://")
    assert "✓  model " in out and f"groq:llama-3.3-70b-versatile: groq at {host}, key GROQ_API_KEY" in out
    assert "✓  model request" in out and "'ok'" in out
    writer = next(line for line in out.splitlines() if line[4:].startswith("writer model"))  # its row, not its key's
    assert writer.startswith(" ✗") and f"writer: openai at {box}, key WRITER_KEY" in writer
    assert "WRITER_KEY was rejected (401)" in writer
    assert "secret-0000" not in out
