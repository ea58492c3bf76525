"""A model call is heard from (issue 38): each retry and timeout on the console with -v and in the trace, a line
every WAIT_NOTICE seconds of a slow call (also in `ask`), a local server that timed out not asked again, and a
warning when a server counts far fewer prompt tokens than were sent (its chat template dropped the system prompt)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import agent as agent_module
import main
from agent import Event, ReActAgent
from core.errors import LLMError
from core.notices import listening
from run.conversation import step_events
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import facade, hang, openai_error, openai_reply
from tests.fakes.real_traffic import llama_cpp_python
from tests.fakes.scripted import ScriptedLLM
from tools.base import tool

MESSAGES = [{"role": "user", "content": "hi"}]


def run_batch(server: LoopbackServer, tmp_path: Path, model: str, *flags: str) -> int:
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("What is 2+2?\n\nWhat is 3+3?\n", encoding="utf-8")
    return main.main([str(tasks), "-o", str(tmp_path / "results.md"), "--model", model,
                      "--base-url", server.url + "/v1", "--no-search", *flags])


def trace_events(tmp_path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for trace in sorted(tmp_path.glob("runs/*/traces/*.jsonl"))
            for line in trace.read_text(encoding="utf-8").splitlines()]


def test_a_retry_is_on_the_console_with_v_and_in_the_trace(server: LoopbackServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MAX_RETRY_WAIT", "0")
    replies = [openai_error(503, "The server is overloaded", type_="server_error")]

    def handle(req: Request) -> Response:
        if not req.path.endswith("/chat/completions"):
            return Response(404, {"detail": "Not Found"})
        return replies.pop() if replies else openai_reply("Final Answer: 4")

    server.handler = handle
    assert run_batch(server, tmp_path, "openai:local-model", "-v") == 0
    out = capsys.readouterr()
    assert "openai:local-model: attempt 2 in 0 s" in out.out + out.err and "overloaded" in out.out + out.err
    retries = [e for e in trace_events(tmp_path) if e["kind"] == "llm_retry"]
    assert len(retries) == 1 and retries[0]["attempt"] == 2 and "overloaded" in str(retries[0]["error"])


def test_a_failed_call_is_in_the_trace_with_what_was_sent(server: LoopbackServer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MAX_RETRIES", "0")
    replies = [openai_reply('Thought: list\nAction: list_files\nAction Input: {}')]

    def handle(req: Request) -> Response:
        if not req.path.endswith("/chat/completions"):
            return Response(404, {"detail": "Not Found"})
        return replies.pop() if replies else openai_error(500, "The server had an error", type_="server_error")

    server.handler = handle
    assert run_batch(server, tmp_path, "openai:local-model") == 1  # the tasks failed, the run did not
    failed = [e for e in trace_events(tmp_path) if e["kind"] == "llm_error"]
    assert failed and failed[0]["status"] == 500 and failed[0]["step"] == 2
    sent = failed[0]["messages"]
    assert isinstance(sent, list) and sent[0]["role"] == "system" and "Observation: The workspace is empty" in str(sent)


def test_a_local_server_that_timed_out_is_not_asked_again(server: LoopbackServer) -> None:
    server.handler = lambda req: hang(120)  # answers only after the test (the server ends)
    llm, _ = facade("openai:local-model", openai_base_url=server.url + "/v1", request_timeout=0.5, max_retries=3)
    heard: list[tuple[str, dict[str, object]]] = []
    with listening(lambda kind, data: heard.append((kind, data))), pytest.raises(LLMError) as err:
        llm.complete(MESSAGES)
    assert len(server.wait_for_requests(1)) == 1  # the server may still be generating it: a retry would queue behind it
    assert "not asked again" in str(err.value) and "--request-timeout" in str(err.value)
    assert [kind for kind, _ in heard] == ["llm_timeout"] and heard[0][1]["seconds"] == 0.5


def test_a_hosted_model_that_timed_out_is_retried_and_each_timeout_told(server: LoopbackServer) -> None:
    server.handler = lambda req: hang(120)  # answers only after the test (the server ends)
    llm, _ = facade("openai:gpt-4.1-mini", openai_base_url=server.url + "/v1", openai_api_key="sk-test",
                    request_timeout=0.5, max_retries=1)
    heard: list[str] = []
    with listening(lambda kind, data: heard.append(kind)), pytest.raises(LLMError):
        llm.complete(MESSAGES)
    assert len(server.wait_for_requests(2)) == 2 and heard == ["llm_timeout", "llm_retry", "llm_timeout"]


def test_a_slow_call_is_heard_from_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_module, "WAIT_NOTICE", 0.01)
    heard_once = threading.Event()
    events: list[Event] = []

    def on_event(event: Event) -> None:
        events.append(event)
        if event.kind == "llm_waiting":
            heard_once.set()

    def slow(messages: object) -> str:
        assert heard_once.wait(10)  # the reply comes only after the first "still waiting"
        return "Final Answer: 4"

    ReActAgent(ScriptedLLM([slow]), [], on_event=on_event).run("What is 2+2?")
    waiting = next(e for e in events if e.kind == "llm_waiting")
    assert waiting.step == 1 and waiting.data["model"] == "scripted-model"
    notice = step_events(1, waiting)  # what `ask` and the web app show of it
    assert notice[0].kind == "notice" and "still waiting for the reply" in notice[0].text


@tool
def noop() -> str:
    """Do nothing and say so."""
    return "ok"


def test_parallel_slow_calls_are_each_heard_and_never_after_their_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several tasks' calls at once (a batch's workers): each hears its own "still waiting", none after its reply
    came, and fast replies start no thread of their own."""
    monkeypatch.setattr(agent_module, "WAIT_NOTICE", 0.01)
    lines: dict[int, list[str]] = {n: [] for n in range(4)}

    def task(n: int) -> None:
        heard_once = threading.Event()

        def on_event(event: Event) -> None:
            lines[n].append(event.kind)
            if event.kind == "llm_waiting":
                heard_once.set()

        def slow(messages: object) -> str:
            assert heard_once.wait(10)
            return "Final Answer: 4"

        ReActAgent(ScriptedLLM([slow]), [], on_event=on_event).run("What is 2+2?")

    workers = [threading.Thread(target=task, args=(n,)) for n in lines]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(20)
    time.sleep(0.05)  # five more periods: a heartbeat of an ended call would show up in its lines now
    for kinds in lines.values():
        assert "llm_waiting" in kinds and kinds.index("llm_waiting") < kinds.index("llm_call")
        assert "llm_waiting" not in kinds[kinds.index("llm_call"):]
    started: list[str] = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), start(self))[1])
    fast = ReActAgent(ScriptedLLM(["Thought: go\nAction: noop\nAction Input: {}"] * 200 + ["Final Answer: 4"]),
                      [noop], max_steps=201).run("Call noop")
    assert fast.status == "answered" and started == []


def test_a_server_that_drops_the_system_prompt_is_warned_about_once(server: LoopbackServer, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def handle(req: Request) -> Response:
        if req.path == "/v1/models":
            return llama_cpp_python("models")
        if req.path.endswith("/chat/completions"):
            return llama_cpp_python("dropped_system")  # 16 prompt tokens counted for the whole prompt sent
        return Response(404, {"detail": "Not Found"})

    server.handler = handle
    run_batch(server, tmp_path, "openai:gemma-dropped", "--max-steps", "1")
    out = capsys.readouterr()
    shown = (out.out + out.err).count("counted 16 prompt tokens")
    assert shown == 1  # two tasks, several calls: one line
    assert "chat template" in out.out + out.err
    assert any(e["kind"] == "warning" for e in trace_events(tmp_path))
