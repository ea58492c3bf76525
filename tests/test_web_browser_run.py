"""No browser process outlives a run: main.py as a subprocess, stopped by Ctrl-C or a task's time limit mid-render.

The run gets a TMPDIR of its own: the browser's directory, HOME and Playwright's profile all land in it, and
every browser process names it in its command line or environment. After the run, /proc must hold no live
process that does, and the directory no profile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tests.fakes.providers import openai_reply
from tools.web.browser.launch import playwright_missing, system_chromium

pytestmark = pytest.mark.skipif(playwright_missing() is not None or system_chromium() is None,
                                reason="needs Playwright (requirements-browser.txt) and Chromium (apt-get install "
                                       "chromium)")
ROOT = Path(__file__).resolve().parent.parent
GUARD = 90.0  # a hung run fails the test instead of hanging it; no assertion depends on speed
HANGING = ("<html><head><title>Slow app</title></head><body><div id=root></div>"
           "<script src=\"/hang.js\"></script></body></html>")  # a script that never arrives: the render waits


def processes_naming(marker: str) -> list[tuple[int, str]]:
    """Live processes (not zombies) whose command line or environment contains marker: (pid, command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
            cmdline = (entry / "cmdline").read_bytes()
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                environ = b""
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline + environ:
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]))
    return found


def _model(page_url: str, tool: str = "scrape") -> Callable[[Request], Response]:
    """A model that asks, step after step, to render the page (which never finishes loading), with scrape or in the
    browser tool's page."""
    action = json.dumps({"url": page_url, "render": True} if tool == "scrape" else {"action": "open", "url": page_url})
    return lambda req: openai_reply(f"Thought: read it\nAction: {tool}\nAction Input: {action}")


def _start(tmp_path: Path, model: LoopbackServer, *flags: str) -> subprocess.Popen[str]:
    (tmp_path / "tasks.txt").write_text("What does the slow app say?\n")
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.url + "/v1", AGENT_MODEL="openai:gpt-4.1-mini",
               AGENT_ENV_FILE="/nonexistent.env", TMPDIR=str(tmp_path / "tmp"), SCRAPE_ALLOW_PRIVATE_URLS="1",
               SCRAPE_IGNORE_ROBOTS="1", SCRAPE_HOST_GAP="0", SCRAPE_TIMEOUT="60")
    argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--max-steps", "50", *flags]
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "stderr.txt", "w"), text=True, start_new_session=True)


def _until(condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    end = time.monotonic() + GUARD
    while not condition():
        assert proc.poll() is None, f"main.py exited early: {proc.returncode}"
        assert time.monotonic() < end, "the run never reached the expected state"
        time.sleep(0.1)


def _browser_dirs(marker: str) -> list[Path]:
    """The running browser's directories: its TMPDIR (kept short, so perhaps under /tmp) and its HOME."""
    dirs = []
    for pid, cmdline in processes_naming(marker):
        if "chrom" not in cmdline:
            continue
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        dirs += [Path(v.split(b"=", 1)[1].decode()) for v in environ if v.startswith((b"TMPDIR=", b"HOME="))]
    return dirs


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _assert_nothing_left(tmp_path: Path, browser_dirs: list[Path]) -> None:
    marker = str(tmp_path / "tmp")
    left = processes_naming(marker)
    assert left == [], f"processes outlived the run: {left}"
    assert [p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith(("agent-browser-", "playwright"))] == []
    assert browser_dirs and [d for d in browser_dirs if d.exists()] == []


@pytest.mark.parametrize(("presses", "tool"), [(1, "scrape"), (2, "scrape"), (1, "browser")],
                         ids=["ctrl-c", "ctrl-c-twice", "ctrl-c-in-the-browser-tool"])
def test_ctrl_c_during_a_render_leaves_no_browser_process(tmp_path: Path, presses: int, tool: str) -> None:
    with LoopbackServer(routes({})) as page, LoopbackServer(lambda req: Response(599)) as model:
        page.handler = routes({"/app": Response(body=HANGING, content_type="text/html"),
                               "/hang.js": Response(body="", content_type="text/javascript", delay=GUARD)})
        model.handler = _model(f"{page.url}/app", tool)
        proc = _start(tmp_path, model)
        try:
            _until(lambda: any(r.path == "/hang.js" for r in page.requests), proc)  # the browser is mid-render
            browser_dirs = _browser_dirs(str(tmp_path / "tmp"))
            assert browser_dirs, "the scan must see the running browser"
            for _ in range(presses):  # as a terminal's Ctrl-C: main.py, its driver and children; twice: exit at once
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(0.05)
            proc.wait(timeout=GUARD)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    err = (tmp_path / "stderr.txt").read_text()
    if presses == 1:
        assert proc.returncode == 130, err
        assert "Traceback" not in err
    # (A second press may land after the run has already stopped, where Python's own handler meets it; what
    # this test holds is that nothing of the browser is left either way.)
    _assert_nothing_left(tmp_path, browser_dirs)


@pytest.mark.parametrize("tool", ["scrape", "browser"])
def test_a_task_that_runs_out_of_time_mid_render_leaves_no_browser_process(tmp_path: Path, tool: str) -> None:
    with LoopbackServer(routes({})) as page, LoopbackServer(lambda req: Response(599)) as model:
        page.handler = routes({"/app": Response(body=HANGING, content_type="text/html"),
                               "/hang.js": Response(body="", content_type="text/javascript", delay=GUARD)})
        model.handler = _model(f"{page.url}/app", tool)
        proc = _start(tmp_path, model, "--task-timeout", "10")  # past a browser launch on a busy machine
        try:
            _until(lambda: any(r.path == "/hang.js" for r in page.requests), proc)
            browser_dirs = _browser_dirs(str(tmp_path / "tmp"))
            assert browser_dirs, "the scan must see the running browser"
            proc.wait(timeout=GUARD)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 1, err  # the task ended at its time limit; the run itself finished
    assert "Traceback" not in err
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["time_limit"]
    _assert_nothing_left(tmp_path, browser_dirs)


def test_a_run_that_fails_with_the_browser_tools_page_open_leaves_no_browser_process(tmp_path: Path) -> None:
    replies = iter([openai_reply('Thought: look\nAction: browser\nAction Input: {"action": "open", "url": "URL"}')])

    def model_reply(req: Request) -> Response:  # the page opens; then the provider refuses the key: the run fails
        reply = next(replies, None)
        return Response(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                        "code": "invalid_api_key"}}) if reply is None else reply

    with LoopbackServer(routes({})) as page, LoopbackServer(model_reply) as model:
        page.handler = routes({"/open": Response(body="<html><body><h1>Open page</h1><script>setInterval(() => "
                                                      "fetch('/ping'), 100)</script></body></html>",
                                                 content_type="text/html"), "/ping": Response(204)})
        replies = iter([openai_reply("Thought: look\nAction: browser\nAction Input: "
                                     + json.dumps({"action": "open", "url": f"{page.url}/open"}))])
        gone = _dead_pid()
        left_behind = Path(f"/tmp/agb-{gone}-killed")  # the browser folder of an agent killed with SIGKILL
        (left_behind / "profile").mkdir(parents=True)
        proc = _start(tmp_path, model)
        try:
            _until(lambda: any(r.path == "/ping" for r in page.requests), proc)  # the page is open, between steps
            assert not left_behind.exists()  # the next browser start removed it
            browser_dirs = _browser_dirs(str(tmp_path / "tmp"))
            proc.wait(timeout=GUARD)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    _assert_nothing_left(tmp_path, browser_dirs)
