"""The task scope (deadline and stop flag) as the agent loop and tool processes see it (issue #10, items 8, 9)."""

from __future__ import annotations

import subprocess
import threading

import pytest

from agent import TIME_LIMIT, ReActAgent
from core import cancellation
from core.chat import Message
from tests.fakes.scripted import ScriptedLLM
from tools import processes
from tools.base import tool


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


STEP = 'Thought: look\nAction: lookup\nAction Input: {"query": "q"}'


def test_a_deadline_hit_inside_a_model_call_ends_the_task_as_time_limit() -> None:
    llm = ScriptedLLM([STEP, cancellation.TaskDeadlineExceeded("openai:m gave no answer before the deadline")])
    result = ReActAgent(llm, [lookup], time_limit=60).run("t")
    assert result.status == TIME_LIMIT and "gave no answer" in (result.error or "")
    assert len(result.steps) == 1 and len(llm.calls) == 2  # no last-answer call to a model that just hung


def test_a_stop_request_ends_the_task_at_the_next_step_boundary() -> None:
    stop = threading.Event()

    def reply_then_stop(messages: list[Message]) -> str:
        stop.set()  # Ctrl-C arrives while this call is in flight
        return STEP

    llm = ScriptedLLM([reply_then_stop, "Final Answer: never asked"])
    with cancellation.scope(stop=stop), pytest.raises(cancellation.StopRequested):
        ReActAgent(llm, [lookup]).run("t")
    assert len(llm.calls) == 1  # the tool ran, the step ended, and nothing more was asked


def test_an_inner_scope_cannot_outlive_the_task_unless_it_extends_it() -> None:
    with cancellation.scope(5.0):
        with cancellation.scope(100.0):
            assert (cancellation.remaining() or 0) <= 5.0
        with cancellation.scope(30.0, extend=True):
            assert (cancellation.remaining() or 0) > 5.0
    assert cancellation.remaining() is None


def test_scopes_are_per_thread() -> None:
    seen: list[float | None] = []
    with cancellation.scope(5.0):
        worker = threading.Thread(target=lambda: seen.append(cancellation.remaining()))
        worker.start()
        worker.join()
    assert seen == [None]


def test_kill_all_kills_registered_process_groups() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    processes.register(proc)
    try:
        assert processes.kill_all() >= 1
        assert proc.wait(timeout=30) == -9
    finally:
        processes.unregister(proc)
    assert proc.pid not in processes.running()
