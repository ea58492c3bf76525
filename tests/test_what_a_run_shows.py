"""Small truths of what `ask` and a batch show, through main.py: an answer given without reading anything is
marked in `ask` as in the batch; a call to a tool the task does not have is a failed step, listed under its
task; a busy server at OPENAI_BASE_URL is named as the reason no model could be chosen."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.fakes.cli import GUARD, clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
PAGE = ("<html><head><title>Lyon in figures</title></head><body><p>In 2010 Lyon had 484,344 inhabitants.</p>"
        "</body></html>")
MARK = "⚠ answered without sources: no page, document or file was read"


def lyon(base: dict[str, str]) -> Any:
    """Asked about Lyon, the model reads the page first; asked anything else, it answers from memory."""

    def handle(req: Request) -> Response:
        if req.method == "GET":
            return Response(200, PAGE, content_type="text/html") if req.path == "/lyon" else Response(404, "")
        messages = req.json()["messages"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        if "Lyon" in question and not any(m["role"] == "assistant" for m in messages):
            return openai_reply(f'Thought: read it\nAction: scrape\nAction Input: {{"url": "{base["url"]}/lyon"}}')
        if "Lyon" in question:
            return openai_reply("Thought: found it\nFinal Answer: 484,344 in 2010 [1].")
        return openai_reply("Thought: I know this\nFinal Answer: Paris.")

    return handle


def test_ask_marks_an_answer_given_without_reading_anything(tmp_path: Path) -> None:
    base: dict[str, str] = {}
    with LoopbackServer(lyon(base)) as server:
        base["url"] = server.url
        env = clean_env(server, AGENT_SEARCH="0", SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0")
        bare = run_main(tmp_path, "ask", "What is the capital of France?", "--model", MODEL, env=env)
        read = run_main(tmp_path, "ask", "How many people lived in Lyon in 2010?", "--model", MODEL, env=env)
    assert bare.returncode == 0 and read.returncode == 0, bare.stderr + read.stderr
    assert bare.stdout.splitlines()[0] == "Paris."
    assert f"\n{MARK}: the answer comes from the model's own memory" in bare.stdout  # on stdout, with the answer
    assert MARK not in read.stdout and f"[1] Lyon in figures — {server.url}/lyon" in read.stdout


def test_a_call_to_a_tool_the_task_does_not_have_is_a_failed_step(tmp_path: Path) -> None:
    def handle(req: Request) -> Response:  # three calls of a tool that is not there, then an answer
        if req.method != "POST":
            return Response(404, "not found")
        tried = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        if tried < 3:
            return openai_reply('Thought: fetch it\nAction: fetch_page\nAction Input: {"url": "https://x.test/"}')
        return openai_reply("Thought: I will answer\nFinal Answer: Paris.")

    (tmp_path / "tasks.txt").write_text("What is the capital of France?\n")
    with LoopbackServer(handle) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, env=clean_env(server, AGENT_SEARCH="0"))
    assert proc.returncode == 0, proc.stderr  # not ended as "did not follow the ReAct format 3 times"
    [record] = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert record["status"] == "answered" and record["steps"] == 4
    assert [f["step"] for f in record["tool_failures"]] == [1, 2, 3]
    lines = proc.stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[1/1] "))
    assert " · 4 steps · " in lines[at]
    assert lines[at + 1].startswith("    step 1 · fetch_page failed: Error: Unknown tool 'fetch_page'.")
    assert "Valid tools: " in lines[at + 1]
    assert "**Tool failures**" in (tmp_path / "results.md").read_text()


def test_a_busy_server_at_openai_base_url_is_named_when_no_model_can_be_chosen(tmp_path: Path) -> None:
    release = threading.Event()

    def busy(req: Request) -> Response:  # answers nothing, not even its model list, until the test is over
        release.wait(GUARD)
        return Response(200, {"object": "list", "data": [{"id": "local-model", "object": "model"}]})

    with LoopbackServer(busy) as server:
        env = clean_env(OPENAI_BASE_URL=server.url + "/v1", OLLAMA_BASE_URL="http://127.0.0.1:9/v1")
        try:
            proc = run_main(tmp_path, "ask", "Anything?", env=env)
        finally:
            release.set()
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: no model is configured: the server at OPENAI_BASE_URL "
                           f"({server.url}/v1) did not answer GET /models within 1 s")
    assert "name it with --model openai:MODEL (or AGENT_MODEL), which needs no listing" in line
    assert "(Ollama at http://127.0.0.1:9/v1 refused the connection)" in line
