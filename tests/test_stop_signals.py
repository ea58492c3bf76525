"""Ctrl-C and SIGTERM sent to main.py's process group, as a terminal or a supervisor does (issue #10, item 8)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

ROOT = Path(__file__).resolve().parent.parent
TASKS = "quick task\n\nanother quick task\n\n" + "\n\n".join(f"slow task {n}" for n in range(1, 6)) + "\n"
GUARD = 60.0  # a hung run fails the test instead of hanging it; no assertion depends on speed


def _task_of(req: Request) -> str:
    found = re.search(r"(another quick task|quick task|slow task \d)", json.dumps(req.json()))
    return found.group(1) if found else "?"


def _env(server: LoopbackServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_ENV_FILE="/nonexistent.env",
               AGENT_MODEL="openai:gpt-4.1-mini")
    return env


def _start(tmp_path: Path, server: LoopbackServer, *extra: str) -> subprocess.Popen[str]:
    (tmp_path / "tasks.txt").write_text(TASKS)
    argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--concurrency", "2",
            "--max-steps", "200", *extra]
    # A session of its own: the signal goes to main.py's process group only, as a terminal sends it.
    return subprocess.Popen(argv, cwd=tmp_path, env=_env(server), stdout=subprocess.PIPE,
                            stderr=open(tmp_path / "stderr.txt", "w"), text=True, start_new_session=True)


def _until(condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    end = time.monotonic() + GUARD
    while not condition():
        assert proc.poll() is None, f"main.py exited early: {proc.returncode}"
        assert time.monotonic() < end, "the run never reached the expected state"
        time.sleep(0.05)


def _lines(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _records(tmp_path: Path) -> list[dict[str, object]]:
    """The task records (a stopped run's file starts with a run line that is not one)."""
    return [line for line in _lines(tmp_path) if "key" in line]


def _stepping(req: Request) -> Response:
    """The quick task answers at once; slow tasks keep calling a tool, a little slowly, for ever."""
    if "quick" in _task_of(req):
        return openai_reply(f"Thought: easy\nFinal Answer: {_task_of(req)} answered")
    return dataclasses.replace(openai_reply("Thought: look\nAction: list_files\nAction Input: {}"), delay=0.2)


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_first_signal_cancels_queued_tasks_stops_running_ones_and_resume_continues(
        tmp_path: Path, sig: signal.Signals, code: int) -> None:
    with LoopbackServer(_stepping) as server:
        proc = _start(tmp_path, server)
        # The quick task is saved and two slow tasks are running (each has made a few model calls).
        _until(lambda: len(_records(tmp_path)) == 2
               and sum(_task_of(r).startswith("slow") for r in server.requests) >= 4, proc)
        before = len(server.requests)
        os.killpg(proc.pid, sig)
        proc.wait(timeout=GUARD)
        after = list(server.requests)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == code, err
    assert "stopped: 2 of 7 tasks finished; --resume continues" in err
    assert "Traceback" not in err
    # Running tasks ended at their next step boundary: at most the call each had in flight, nothing queued.
    assert len(after) - before <= 2
    assert {_task_of(r) for r in after} <= {"quick task", "another quick task", "slow task 1", "slow task 2"}
    assert [r["status"] for r in _records(tmp_path)] == ["answered", "answered"]
    assert "another quick task answered" in (tmp_path / "results.md").read_text()
    # Every report says the run was stopped, why, and how to resume it; none says "finished".
    reason = "Ctrl-C (SIGINT)" if sig == signal.SIGINT else "SIGTERM"
    header = _lines(tmp_path)[0]
    assert header["run"] == "stopped" and header["reason"] == reason
    assert str(header["resume"]).endswith("main.py tasks.txt -o results.md --concurrency 2 --max-steps 200 --resume")
    md, page = (tmp_path / "results.md").read_text(), (tmp_path / "results.html").read_text()
    assert "Run stopped" in md and reason in md and "Run finished" not in md and "--resume" in md
    assert "Run stopped" in page and reason in page and "Run finished" not in page
    assert f"resume: {header['resume']}" in err and f"stopped: {reason}" in err

    def answer_all(req: Request) -> Response:
        return openai_reply(f"Final Answer: done {_task_of(req)}")

    with LoopbackServer(answer_all) as server:
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md",
                               "--resume", "-q"], cwd=tmp_path, env=_env(server), capture_output=True,
                              text=True, timeout=GUARD)
        resumed = {_task_of(r) for r in server.requests}
    assert proc.returncode == 0, proc.stderr
    assert resumed == {f"slow task {n}" for n in range(1, 6)}
    assert len(_records(tmp_path)) == 7


TOOLS = '''
import subprocess, time
from tools import Tool
from tools import processes

class Hold(Tool):
    name = "hold"
    description = "starts a helper process and waits"
    parameters = {"type": "object", "properties": {}}

    def __init__(self, workspace):
        self.workspace = workspace

    def run(self, **kwargs):
        proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
        processes.register(proc)
        (self.workspace.parent.parent / "helper.pid").write_text(str(proc.pid))
        time.sleep(300)  # a tool that ignores everything: only a second Ctrl-C ends the run
        return "never"

def tools(settings, workspace):
    return [Hold(workspace)]
'''


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # killed; a zombie waits only for its parent to reap it


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to see whether the helper process died")
def test_second_signal_exits_at_once_killing_tool_processes(tmp_path: Path) -> None:
    (tmp_path / "hold_tools.py").write_text(TOOLS)

    def handle(req: Request) -> Response:
        if "quick" in _task_of(req):
            return openai_reply(f"Final Answer: {_task_of(req)} answered")
        return openai_reply("Action: hold\nAction Input: {}")

    with LoopbackServer(handle) as server:
        proc = _start(tmp_path, server, "--tools", "hold_tools.py", "--concurrency", "1")
        _until(lambda: len(_records(tmp_path)) == 2 and any(tmp_path.glob("**/helper.pid")), proc)
        pid = int(next(tmp_path.glob("**/helper.pid")).read_text())
        assert not _dead(pid)
        os.killpg(proc.pid, signal.SIGINT)
        _until(lambda: "stopping:" in (tmp_path / "stderr.txt").read_text(), proc)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=GUARD)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 130, err
    assert _dead(pid), "the tool's process survived"
    assert "stopped at once" in err and "Traceback" not in err
    assert [r["status"] for r in _records(tmp_path)] == ["answered", "answered"]
    report = (tmp_path / "results.md").read_text()  # both saved records, though the second came <2 s later
    assert "quick task answered" in report and "another quick task answered" in report
    assert "Run stopped" in report and "Ctrl-C (SIGINT)" in report and "Run finished" not in report
