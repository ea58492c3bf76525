"""main.py end to end: every provider route against loopback servers, with the real built-in tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import (
    anthropic_reply,
    gemini_reply,
    ollama_reply,
    openai_error,
    openai_models,
    openai_reply,
)

ROOT = Path(__file__).resolve().parent.parent
STEPS = [
    'Thought: save a note\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "hello"}',
    "Thought: read it back\nAction: python\nAction Input:\n```python\nprint(open('notes.txt').read().upper())\n```",
    "Thought: done\nFinal Answer: The note says HELLO.",
]


def _turns(req: Request) -> int:
    """How many assistant turns the request already carries (= the step we are at)."""
    body = req.json()
    if "contents" in body:
        return sum(1 for c in body["contents"] if c.get("role") == "model")
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def react_server(reply: Any, models: Response | None = None) -> Any:
    """A handler that plays STEPS in the provider's wire format, whatever the path prefix."""

    def handle(req: Request) -> Response:
        if req.method == "GET" and req.path.rstrip("/").endswith("/models") and models is not None:
            return models
        return reply(STEPS[min(_turns(req), len(STEPS) - 1)], 100, 20)

    return handle


def _check_report(out: Path, model: str) -> None:
    text = out.read_text()
    assert "The note says HELLO." in text and "| answered | 3 |" in text and model in text
    record = json.loads(out.with_suffix(".jsonl").read_text().splitlines()[0])
    assert record["status"] == "answered" and record["prompt_tokens"] == 300 and record["llm_calls"] == 3
    trace = Path(record["trace"])  # runs/<run-id>/traces/<task-id>.jsonl: this run's own
    assert trace.parent.parent.parent == Path("runs").resolve() and trace.name == f"{record['id']}.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    python_call = next(e for e in events if e["kind"] == "tool_call" and e["tool"] == "python")
    assert "HELLO" in python_call["observation"]
    workspace = Path(record["workspace"])  # runs/<run-id>/workspace/<task-id>/
    assert workspace.parent.parent == trace.parent.parent and workspace.name == record["id"]
    assert (workspace / "notes.txt").read_text() == "hello"


@pytest.mark.parametrize("provider, reply, env", [
    ("openai", openai_reply, {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "{url}/v1"}),
    ("anthropic", anthropic_reply, {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": "{url}"}),
    ("gemini", gemini_reply, {"GEMINI_API_KEY": "g-test", "GEMINI_BASE_URL": "{url}"}),
    ("ollama", ollama_reply, {"OLLAMA_BASE_URL": "{url}/v1"}),  # Ollama's native /api/chat
])
def test_every_provider_route_runs_a_task_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, provider: str,
                                               reply: Any, env: dict[str, str]) -> None:
    (tmp_path / "tasks.txt").write_text("Save a note and read it back.\n")
    with LoopbackServer(react_server(reply)) as server:
        for key, value in env.items():
            monkeypatch.setenv(key, value.format(url=server.url))
        model = f"{provider}:test-model"
        code = main.main(["tasks.txt", "-o", "results.md", "--model", model, "-q"])
    assert code == 0
    _check_report(tmp_path / "results.md", model)


def test_readme_command_as_a_subprocess_against_loopback_openai(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("Save a note and read it back.\n\nSecond task, same script.\n")
    with LoopbackServer(react_server(openai_reply)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_MODEL="openai:gpt-4.1-mini")
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "wrote results.md (2 of 2 tasks)" in proc.stderr
    text = (tmp_path / "results.md").read_text()
    # each answer in the table and in its task's section; gpt-4.1-mini has a price
    assert text.count("The note says HELLO.") == 4 and "$0.0" in text


def test_no_model_configured_exits_2_naming_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("A task\n")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    assert main.main(["tasks.txt"]) == 2
    err = capsys.readouterr().err
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "ollama"):
        assert key in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.txt"]  # nothing created: no workspace, no traces


def test_ollama_is_used_when_it_answers_and_no_key_is_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("A task\n")
    with LoopbackServer(react_server(ollama_reply, models=openai_models("llama3.1"))) as server:
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url + "/v1")
        assert main.main(["tasks.txt", "-q"]) == 0
    assert "ollama:llama3.1" in (tmp_path / "results.md").read_text()


@pytest.mark.parametrize("content", [None, "", "\x00\x01binary"])
def test_bad_task_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None) -> None:
    if content is not None:
        (tmp_path / "tasks.txt").write_text(content)
    assert main.main(["tasks.txt", "--model", "openai:x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: tasks.txt") and len(err.strip().splitlines()) == 1


def test_rejected_key_stops_the_run_with_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("one\n\ntwo\n\nthree\n")
    with LoopbackServer(lambda req: openai_error(401, "Incorrect API key provided", type_="invalid_api_key")) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        assert main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]) == 2
        assert len(srv.requests) == 1
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_failed_task_gives_exit_1_and_resume_reruns_only_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("good task\n\nflaky task\n")
    state = {"fail": True}

    def handle(req: Request) -> Response:
        if "flaky" in json.dumps(req.json()) and state["fail"]:
            return openai_error(400, "context too long for this request")
        return openai_reply("Final Answer: fine", 10, 2)

    with LoopbackServer(handle) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        args = ["tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]
        assert main.main(args) == 1
        first = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[1])
        assert first["status"] == "error" and "context too long" in first["error"]
        state["fail"] = False
        before = len(server.requests)
        assert main.main([*args, "--resume"]) == 0
        assert len(server.requests) - before == 1
    text = (tmp_path / "results.md").read_text()
    assert text.count("| answered |") == 2 and text.index("## 1. good task") < text.index("## 2. flaky task")


def test_help_lists_the_flags() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    for flag in ("--model", "--max-steps", "--context-budget", "--concurrency", "--resume", "--trace-dir",
                 "--workspace", "--fallback-model", "-v", "-q"):
        assert flag in proc.stdout


@pytest.mark.parametrize("page", ["README.md", "docs/tools-and-mcp.md"])
def test_tools_flag_registers_a_user_tool_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, page: str) -> None:
    """The my_tools.py a user copies from the README or the tools page works with --tools."""
    text = (ROOT / page).read_text()
    module = next(block for block in text.split("```python\n")[1:] if "def tools(settings, workspace)" in block)
    module = module.split("```", 1)[0]
    (tmp_path / "my_tools.py").write_text(module)
    (tmp_path / "tasks.txt").write_text("How many words are in 'a b c'?\n")
    steps = ['Action: word_count\nAction Input: {"text": "a b c"}', "Final Answer: 3 words"]

    def handle(req: Request) -> Response:
        body = req.json()
        assert "### word_count" in body["messages"][0]["content"]
        return openai_reply(steps[min(_turns(req), 1)])

    with LoopbackServer(handle) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "--tools", "my_tools.py", "-q"]) == 0
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert record["answer"] == "3 words"
    trace = [json.loads(x) for x in Path(record["trace"]).read_text().splitlines()]
    assert any(e["kind"] == "tool_call" and e["tool"] == "word_count" and e["observation"] == "3" for e in trace)


def test_broken_tools_module_exits_2_before_any_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("A task\n")
    (tmp_path / "bad_tools.py").write_text("TOOLS = []\n")
    assert main.main(["tasks.txt", "--model", "openai:x", "--tools", "bad_tools.py"]) == 2
    assert "has no function tools(settings, workspace)" in capsys.readouterr().err


def test_version_prints_the_version_pyproject_holds(tmp_path: Path) -> None:
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    run = subprocess.run([sys.executable, str(ROOT / "main.py"), "--version"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"main.py {version}", run.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran
