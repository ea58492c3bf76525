"""A server that has never given a usable reply stops the run after the first call's retries (issue 49, item 3):
a wrong --base-url answering an HTML page, or HTTP 500 from the first call, is one line and exit 2, not hours of
retries; a server that worked and then fails keeps being retried task by task."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

TASKS = "\n\n".join(f"task {n}" for n in range(1, 6)) + "\n"
NGINX = Response(200, "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>It works</body></html>",
                 content_type="text/html")
BROKEN = Response(500, "<html><head><title>500 Internal Server Error</title></head><body></body></html>",
                  content_type="text/html")


def batch(tmp: Path, server: LoopbackServer, *extra: str) -> object:
    (tmp / "tasks.txt").write_text(TASKS)
    env = clean_env(server, AGENT_MAX_RETRIES="2", AGENT_MAX_RETRY_WAIT="1", AGENT_SEARCH="0")
    return run_main(tmp, "tasks.txt", "--model", "openai:m", "--concurrency", "1", *extra, env=env)


@pytest.mark.parametrize("reply, answered", [(NGINX, 'an HTML page titled "Welcome to nginx!"'),
                                             (BROKEN, 'HTTP 500 (an HTML page titled "500 Internal Server Error")'),
                                             (Response(200, "OK", content_type="application/json"),
                                              "a body that is not JSON")])
def test_a_server_that_never_answered_usably_stops_the_run_after_the_first_task(
        tmp_path: Path, reply: Response, answered: str) -> None:
    with LoopbackServer(lambda req: reply) as server:
        proc = batch(tmp_path, server)
    assert proc.returncode == 2, proc.stderr
    assert len([r for r in server.requests if r.method == "POST"]) == 3  # the first call, 2 retries, no other task
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert f"the server at {server.url}/v1 never gave a usable reply for openai:m: it answered {answered} " \
           "(3 attempts). Check the base URL (--base-url or OPENAI_BASE_URL)" in errors[0]


def test_a_server_that_worked_and_then_fails_is_retried_task_by_task(tmp_path: Path) -> None:
    lock, calls = threading.Lock(), []

    def first_then_html(req: Request) -> Response:
        if req.method != "POST":
            return NGINX  # the run's look at what server this is (GET /v1/models ...)
        with lock:
            calls.append(req.path)
            return openai_reply("Final Answer: ok") if len(calls) == 1 else NGINX

    with LoopbackServer(first_then_html) as server:
        proc = batch(tmp_path, server)
    assert proc.returncode == 1, proc.stderr  # some tasks failed; the run went on
    records = [r for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines()) if "task" in r]
    assert [r["status"] for r in records] == ["answered", "error", "error", "error", "error"]
    assert "never gave a usable reply" not in proc.stderr
