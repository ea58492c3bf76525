"""`main.py ui` as a subprocess against a scripted loopback model and a small loopback web, for the app's tests.

The model answers by the question it is asked (the task text of its first user message):
- "What does Widget Corp publish?": scrape the report, then answer citing it; the answer waits on `gate`.
- a follow-up ("Which years ..."): answers at once; its prompt is kept in `prompts` to check the context.
- "Slow question": scrape, then wait on `release` before a second scrape; a third call answers (the Stop
  tests: a stopped question never makes it).
- "What number is in my file?": read_file notes.txt, then answer with the number the observation held.
- "Hostile ...": scrape a page whose title and text are markup, then answer with the same markup.
- anything else: answers at once, "Final Answer: quick answer".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.research import PAGE

ROOT = Path(__file__).resolve().parents[2]
# Markup a page or a model may write: the app must show it as text and load nothing it names.
HOSTILE = ('<img src="http://attacker.example/i.png" onerror="alert(1)"><script>alert(2)</script>'
           '<iframe src="http://attacker.example/"></iframe><a href="javascript:alert(3)">x</a>')
URL_LINE = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)")


class Served(Protocol):
    """A running `main.py ui`: its port and the token of its printed URL."""

    port: int
    token: str


def api_call(app: Served, path: str, data: bytes | None = None, headers: dict[str, str] | None = None,
             timeout: float = 30) -> Any:
    """GET (or POST data to) path on the app with its token: the decoded JSON, or the text."""
    req = urllib.request.Request(f"http://127.0.0.1:{app.port}{path}", data=data,
                                 headers={"Authorization": f"token {app.token}", **(headers or {})})
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310 (loopback only)
        body = r.read().decode("utf-8")
        return json.loads(body) if r.headers.get_content_type() == "application/json" else body


@dataclass
class FakeApp:
    """The running app: its URL (with token), port and token, and the model's levers and records."""

    url: str = ""
    port: int = 0
    token: str = ""
    web: str = ""
    runs: Path = Path()
    gate: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    prompts: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    proc: subprocess.Popen[str] | None = None

    def model(self, req: Request) -> Response:
        """The scripted model (and the report page it reads)."""
        if req.path.split("?")[0] == "/report":
            return Response(200, PAGE, content_type="text/html; charset=utf-8")
        if req.path.split("?")[0] == "/hostile":
            return Response(200, f"<html><head><title>{HOSTILE}</title></head><body><p>{HOSTILE}</p></body></html>",
                            content_type="text/html; charset=utf-8")
        if req.path.split("?")[0] == "/robots.txt":
            return Response(404, "none")
        messages = req.json()["messages"]
        task = next(str(m["content"]) for m in messages if m["role"] == "user")
        turns = sum(1 for m in messages if m["role"] == "assistant")
        self.prompts.append(task)
        return openai_reply(self._reply(task, turns, json.dumps(messages)))

    def _reply(self, task: str, turns: int, transcript: str) -> str:
        question = task.rsplit("Current question:", 1)[-1]
        if "Which years" in question:
            return "Thought: the earlier answer named the report\nFinal Answer: The dataset covers 2021 to 2023."
        scrape = f'Thought: read the company report\nAction: scrape\nAction Input: {{"url": "{self.web}/report"}}'
        if "Slow question" in question:  # a tool step, then one more that waits: Stop ends it at the next step
            if turns == 1:
                self.release.wait(60)
            return scrape if turns < 2 else "Final Answer: the slow question went on after Stop"
        if "Widget Corp publish" in question:
            if turns == 0:
                return scrape
            self.gate.wait(60)
            return ("Thought: the report says it\nFinal Answer: Widget Corp publishes its yearly sales as a CSV "
                    "file covering 2021 to 2023 [1].")
        if "number is in my file" in question:
            if turns == 0:
                return 'Thought: read the attachment\nAction: read_file\nAction Input: {"path": "notes.txt"}'
            number = re.search(r"secret number is (\d+)", transcript)
            return f"Final Answer: The number is {number.group(1) if number else 'missing'}."
        if "Hostile" in question:
            if turns == 0:
                return (f'Thought: {HOSTILE}\nAction: scrape\nAction Input: {{"url": "{self.web}/hostile"}}')
            return f"Thought: {HOSTILE}\nFinal Answer: {HOSTILE} [1]"
        return "Final Answer: quick answer"


@contextmanager
def running_app(tmp: Path) -> Iterator[FakeApp]:
    """Start the fake model and `main.py ui --port 0` in `tmp`; stop both at the end."""
    app = FakeApp(runs=tmp / "runs")
    with LoopbackServer(app.model) as server:
        app.web = server.url
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_MODEL="openai:gpt-4.1-mini",
                   SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0", AGENT_SEARCH="0",
                   AGENT_RUNS_DIR=str(app.runs))
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "ui", "--port", "0"], cwd=tmp, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        app.proc = proc
        threading.Thread(target=_collect, args=(proc, app.output), daemon=True).start()
        try:
            match = _wait_for_url(app.output, proc)
            app.port, app.token = int(match.group(1)), match.group(2)
            app.url = match.group(0)
            yield app
        finally:
            app.gate.set()
            app.release.set()
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _collect(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)


def _wait_for_url(lines: list[str], proc: subprocess.Popen[str]) -> re.Match[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in list(lines):
            if match := URL_LINE.search(line):
                return match
        if proc.poll() is not None:
            raise AssertionError("main.py ui exited: " + "".join(lines))
        time.sleep(0.05)
    raise AssertionError("main.py ui printed no URL: " + "".join(lines))
