"""--serve: the live report reflects a finished task while the run goes, and ends with the run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

ROOT = Path(__file__).resolve().parent.parent


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 (loopback only)
        return r.read().decode("utf-8")


def test_live_page_shows_a_finished_task_while_the_next_one_runs(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("First question\n\nSecond question\n")
    release = threading.Event()

    def model(req: Request) -> Response:
        if "Second question" in json.dumps(req.json()):
            release.wait(60)
            return openai_reply("Final Answer: second answer", 10, 5)
        return openai_reply("Final Answer: first answer", 10, 5)

    lines: list[str] = []
    with LoopbackServer(model) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_MODEL="openai:gpt-4.1-mini")
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "--serve=0", "tasks.txt"], cwd=tmp_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        reader = threading.Thread(target=_collect, args=(proc, lines), daemon=True)
        reader.start()
        try:
            url = _wait_for(lambda: next((m.group(0) for line in lines
                                          if (m := re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line))), None))
            page = _wait_for(lambda: next((p for p in [_get(url)] if "first answer" in p), None))
            assert 'id="live"' in page and "second answer" not in page
            state = json.loads(_get(url.replace("/?", "/state?")))
            release.set()
            assert proc.wait(timeout=60) == 0
        finally:
            release.set()
            proc.kill()
    assert state["version"] != "0"
    final = (tmp_path / "results.html").read_text()
    assert "first answer" in final and "second answer" in final and 'id="live"' not in final
    try:
        _get(url)
        served_after_exit = True
    except OSError:
        served_after_exit = False
    assert not served_after_exit


def _collect(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)


def _wait_for(probe, limit: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            value = probe()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for the live report")
