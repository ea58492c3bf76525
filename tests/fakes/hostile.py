"""A hostile web and a model that does what it says, for the attack suite's second round (issue #34).

`HostileWeb` is one loopback server: an OpenAI-compatible model scripted per question (a substring of the
question picks its plan; the reply is the plan's step for the number of answers so far) and the pages it reads.
`ESCAPES` is the text a page or a model writes to take over a terminal.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.loopback import Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.ui_app import ROOT, FakeApp

MODEL = "openai:gpt-4.1-mini"
# Retitle the window, clear the screen, a disguised hyperlink, a carriage return that rewrites the line with a
# forged cost, an 8-bit CSI, and a right-to-left override.
ESCAPES = ("\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
           "\r[1/1] task: answered · $0.0000\x9b31m\u202eevil")
TERMINAL_CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")
FORGED = "[9/9] task-999: answered · 1 step · 0 tokens · $0.0000 · 0.1 s"  # a line of the run's own, forged


@dataclass
class HostileWeb:
    """The scripted model and its pages; `plans` maps a substring of the question to the replies, in order."""

    plans: dict[str, list[str]]
    pages: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (content type, body)
    url: str = ""

    def __call__(self, req: Request) -> Response:
        if req.method == "GET":
            kind, body = self.pages.get(req.path.split("?")[0], ("text/plain", ""))
            return Response(200 if body else 404, body, content_type=kind)
        messages = req.json()["messages"]
        question = str(next(m["content"] for m in messages if m["role"] == "user")).rsplit("Current question:", 1)[-1]
        answered = sum(1 for m in messages if m["role"] == "assistant")
        plan = next((p for key, p in self.plans.items() if key in question), ["Final Answer: quick answer"])
        return openai_reply(plan[min(answered, len(plan) - 1)])

    def env(self) -> dict[str, str]:
        """The variables that point `main.py` at this model (and let it read loopback pages)."""
        return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": self.url + "/v1", "SCRAPE_ALLOW_PRIVATE_URLS": "1",
                "SCRAPE_HOST_GAP": "0", "AGENT_SEARCH": "0"}


def action(tool: str, arguments: dict[str, Any], thought: str = "the page says to") -> str:
    """A model reply calling one tool."""
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(arguments)}"


def planted_run(runs: Path, run_id: str, **info: Any) -> Path:
    """A run folder as an attacker with write access to a synced runs folder would plant it."""
    folder = runs / run_id
    folder.mkdir(parents=True)
    data = {"id": run_id, "kind": "batch", "started": "2020-01-01T00:00:00+00:00", "status": "finished",
            "finished": "2020-01-01T00:01:00+00:00", "title": "planted", **info}
    (folder / "run.json").write_text(json.dumps(data))
    return folder


def terminal_web() -> HostileWeb:
    """A model and a page whose thoughts, text and answer try to take over the terminal and forge its lines."""
    page = f"Quarterly figures.\n{ESCAPES}\n{FORGED}\nRevenue rose to 4.2 million dollars."
    return HostileWeb({"revenue": [action("scrape", {"url": "URL/page"}, thought=f"reading {ESCAPES}"),
                                   f"Thought: {ESCAPES}\nFinal Answer: 4.2 million dollars {ESCAPES}\n{FORGED}"]},
                      pages={"/page": ("text/plain", page)})


def run_main(web: HostileWeb, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`main.py ARGS` as a user runs it, against the hostile model (its scrape pointed at the running web)."""
    web.plans["revenue"][0] = web.plans["revenue"][0].replace("URL", web.url)
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd, env={**os.environ, **web.env()},
                          capture_output=True, text=True, timeout=180)


def post_form(app: FakeApp, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    """POST /api/ask: the status and the JSON answer, also for a refusal."""
    req = urllib.request.Request(f"http://127.0.0.1:{app.port}/api/ask", data=body,
                                 headers={"Authorization": f"token {app.token}", **headers})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 (loopback only)
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def two_files(form: bytes) -> bytes:
    """A multipart form (ending with a file) with a second file added."""
    boundary = form.split(b"\r\n", 1)[0]
    return form.replace(boundary + b"--", boundary + b'\r\nContent-Disposition: form-data; name="file"; '
                        b'filename="b.txt"\r\n\r\nb\r\n' + boundary + b"--")


def open_stream(port: int, token: str, key: str) -> socket.socket:
    """A page listening to a conversation's events: the request sent, the answer left to read."""
    page = socket.create_connection(("127.0.0.1", port), timeout=60)
    page.sendall(f"GET /api/events/{key} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                 f"Authorization: token {token}\r\n\r\n".encode())
    return page


def threads(pid: int) -> int:
    """How many threads a process has now."""
    return int(re.search(r"Threads:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())[1])  # type: ignore[index]
