"""The --serve live page in headless Chromium: waits for the first task, then keeps the run's end on screen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.test_report_html_browser import CHROMIUM, browser  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")]


def test_live_page_waits_for_the_first_task_and_keeps_the_end(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    (tmp_path / "tasks.txt").write_text("What is the answer?\n")
    release = threading.Event()

    def model(req: Request) -> Response:
        release.wait(60)
        return openai_reply("Final Answer: forty-two", 10, 5)

    lines: list[str] = []
    with LoopbackServer(model) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_MODEL="openai:gpt-4.1-mini",
                   AGENT_RUNS_DIR=str(tmp_path / "runs"))
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "--serve=0", "tasks.txt"], cwd=tmp_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            page.goto(_url(lines, proc))
            assert "token=" not in page.url  # the cookie carries it from here
            live = page.locator("#live")
            assert "waiting for the first task" in live.inner_text()
            release.set()
            page.locator("#live", has_text="The run is over").wait_for(timeout=60_000)
            assert proc.wait(timeout=60) == 0
            time.sleep(1.5)  # the page would have polled the gone server by now
            assert "The run is over" in live.inner_text() and "forty-two" in (page.locator("#app").text_content() or "")
            link = live.locator("a")
            assert link.inner_text() == "results.html" and link.get_attribute("href").endswith("/results.html")
            assert (tmp_path / "results.html").is_file()
            assert errors == []  # it stopped polling: no refused connection to a server that is gone
        finally:
            release.set()
            page.close()
            proc.kill()


def _url(lines: list[str], proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in list(lines):
            if m := re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line):
                return m.group(0)
        if proc.poll() is not None:
            raise AssertionError("the run ended without a live URL: " + "".join(lines))
        time.sleep(0.05)
    raise AssertionError("no live URL printed: " + "".join(lines))
