"""The smaller points a first user met (issue 49, item 8), each through main.py as a user meets it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import local


def small_llamacpp(n_ctx: int) -> object:
    """A llama.cpp server running with an n_ctx-token window (its recorded /props answer, resized)."""
    props = local("llamacpp_props").body
    assert isinstance(props, dict)
    sized = json.loads(json.dumps(props).replace('"n_ctx": 1024', f'"n_ctx": {n_ctx}'))

    def handle(req: Request) -> Response:
        if req.method == "POST" and req.path.endswith("/chat/completions"):
            return openai_reply("Final Answer: 42", 20, 5)
        return Response(200, sized) if req.path == "/props" else Response(404, {"error": "not found"})
    return handle


def test_a_prompt_over_a_small_servers_window_is_one_line_of_ours_once(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("one\n\ntwo\n")
    with LoopbackServer(small_llamacpp(512)) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", "openai:some-gguf", env=clean_env(server, AGENT_SEARCH="0"))
    warned = [line for line in proc.stderr.splitlines() if "-token context the server runs with" in line]
    assert len(warned) == 1, proc.stderr
    assert warned[0].startswith("warning: openai:some-gguf: a prompt of about ")
    assert "ContextWindowWarning" not in proc.stderr and "warnings.warn" not in proc.stderr
    assert ".py:" not in proc.stderr  # no source file and line of Python's display


def test_an_unknown_chat_command_is_named(tmp_path: Path) -> None:
    with LoopbackServer(lambda req: Response(500, "no call expected")) as server:
        proc = run_main(tmp_path, "chat", "--model", "openai:gpt-4.1-mini", stdin="/bogus\n/save\n/exit\n",
                        env=clean_env(server))
    assert proc.returncode == 0, proc.stderr
    assert "unknown command /bogus. Ask a question, or: /sources" in proc.stderr
    assert "/save needs a file name" in proc.stderr
    assert not [r for r in server.requests if r.method == "POST"]


def test_a_stopped_run_prints_its_resume_command_once(tmp_path: Path) -> None:
    import os
    import signal

    from tests.test_stop_signals import _records, _start, _stepping, _until
    with LoopbackServer(_stepping) as server:
        proc = _start(tmp_path, server)
        _until(lambda: len(_records(tmp_path)) == 2, proc)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 130, err
    assert err.count("tasks.txt -o results.md --concurrency 2 --max-steps 200 --resume") == 1, err
    assert "stopped: 2 of 7 tasks finished; --resume continues" in err


def test_research_that_read_nothing_and_tried_nothing_says_so(tmp_path: Path) -> None:
    from tests.fakes.deep_research import Sub
    from tests.test_research import PLAN, run_with, world
    w = world(plan=[PLAN[0]], subs={PLAN[0]: Sub([], "The Rhine carried 187 million tonnes [1].")}, pages={})
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "Nothing was read for this question: the research tried no page, document or file" in report
    assert "each attempt" not in report
    assert " · 1 sub-question (1 answered) · " in report


def test_check_setup_names_the_browser_install_fix_once(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import check_setup
    from tools.web.browser import headless, launch
    missing = f"Playwright is not installed: {launch.INSTALL_HINT}"
    monkeypatch.setattr(headless, "playwright_missing", lambda: missing)
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    check_setup.main(["--no-search"])
    out = capsys.readouterr().out
    assert "script-built pages are read without JavaScript: Playwright is not installed" in out
    assert out.count("requirements-browser.txt") == 1, out
