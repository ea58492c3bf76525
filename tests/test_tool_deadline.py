"""A tool that does not return in time: an Error observation, or the end of the task at its time limit."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agent import ANSWERED, TIME_LIMIT, ReActAgent
from core.errors import ToolError
from tests.fakes.scripted import ScriptedLLM
from tools.base import Tool
from tools.call_deadline import ToolTimeoutError, call_deadline, run_tool

CALL = 'Thought: look it up\nAction: stuck\nAction Input: {"query": "q"}'


class StuckTool(Tool):
    """Blocks until released (a hung socket, a FIFO, a deadlock), like the tools this guards against."""

    name = "stuck"
    description = "Never returns."
    parameters = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def run(self, **kwargs: object) -> str:
        self.calls += 1
        self.release.wait(60)
        return "finally"


@pytest.fixture
def stuck() -> Iterator[StuckTool]:
    tool = StuckTool()
    yield tool
    tool.release.set()  # let the abandoned worker thread end


def test_a_tool_past_its_per_call_deadline_becomes_an_error_observation(stuck: StuckTool) -> None:
    llm = ScriptedLLM([CALL, "Thought: that hung\nFinal Answer: unknown"])
    result = ReActAgent(llm, [stuck], tool_timeout=0.5).run("t")
    assert (result.status, result.answer) == (ANSWERED, "unknown")
    step = result.steps[0]
    assert step.error == "tool"
    assert step.observation.startswith("Error: the stuck tool did not return within 0.5 s (the per-call limit, "
                                       "AGENT_TOOL_TIMEOUT) and was abandoned")
    assert "did not return within 0.5 s" in llm.calls[1].messages[-1]["content"]


def test_a_tool_still_running_when_the_task_time_is_spent_ends_the_task(stuck: StuckTool) -> None:
    llm = ScriptedLLM([CALL, "Final Answer: from what I have"])
    result = ReActAgent(llm, [stuck], time_limit=1.0).run("t")
    assert result.status == TIME_LIMIT and result.answer == "from what I have"
    assert "(the task's time limit)" in result.steps[0].observation
    assert stuck.calls == 1 and "no steps left" in llm.calls[-1].messages[-1]["content"]


def test_errors_and_results_of_a_call_in_time_pass_through() -> None:
    class Fails(StuckTool):
        def run(self, **kwargs: object) -> str:
            raise ToolError("bad input")

    class Quick(StuckTool):
        def run(self, **kwargs: object) -> str:
            return "fine"

    assert run_tool(Quick(), {"query": "q"}, 5.0) == "fine"
    with pytest.raises(ToolError, match="bad input"):
        run_tool(Fails(), {"query": "q"}, 5.0)
    with pytest.raises(ToolTimeoutError):
        tool = StuckTool()
        try:
            run_tool(tool, {"query": "q"}, 0.1)
        finally:
            tool.release.set()


def test_the_deadline_is_the_per_call_limit_or_the_time_left_whichever_is_sooner() -> None:
    assert call_deadline(None, None) == (None, False)
    assert call_deadline(300.0, None) == (300.0, False)
    assert call_deadline(300.0, 12.0) == (12.0, True)
    assert call_deadline(300.0, -3.0) == (0.0, True)
    assert call_deadline(None, 40.0) == (40.0, True)
    assert call_deadline(30.0, 40.0) == (30.0, False)
