"""The ReAct loop against a scripted model: steps, limits, errors, usage, sources and events."""

from __future__ import annotations

import pytest

from agent import ANSWERED, ERROR, MAX_STEPS, TIME_LIMIT, UNFORMATTED, Event, ReActAgent
from core.chat import Completion
from core.errors import LLMError, LLMFatalError, ToolError
from tests.fakes.scripted import ScriptedLLM
from tools.base import DuplicateToolError, Tool, ToolOutput, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found: {query}"


class Fetch(Tool):
    name = "fetch"
    description = "Fetch a URL."
    parameters = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}

    def run(self, url: str) -> ToolOutput | str:  # type: ignore[override]
        if "bad" in url:
            raise ToolError(f"could not fetch {url}")
        return ToolOutput(f"page at {url}", sources=[url])


def agent_with(replies: list, **kw) -> tuple[ReActAgent, ScriptedLLM]:  # type: ignore[type-arg]
    llm = ScriptedLLM(replies)
    return ReActAgent(llm, [add, lookup, Fetch()], **kw), llm


def test_direct_final_answer() -> None:
    agent, llm = agent_with(["Thought: easy\nFinal Answer: 4"])
    result = agent.run("What is 2+2?")
    assert (result.status, result.answer) == (ANSWERED, "4")
    assert llm.calls[0].stop == ["Observation:"]
    assert llm.calls[0].messages[0]["role"] == "system" and "### add" in llm.calls[0].messages[0]["content"]
    assert llm.calls[0].messages[1] == {"role": "user", "content": "What is 2+2?"}
    assert result.usage.prompt_tokens == 10 and result.usage.completion_tokens == 5


def test_tool_step_feeds_observation_back() -> None:
    agent, llm = agent_with(['Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}',
                             "Thought: got it\nFinal Answer: 5"])
    result = agent.run("2+3?")
    assert result.answer == "5" and len(result.steps) == 2
    step = result.steps[0]
    assert (step.thought, step.action, step.arguments, step.observation) == ("add", "add", {"a": 2, "b": 3}, "5")
    assert step.duration >= 0 and step.error is None
    second = llm.calls[1].messages
    assert second[-2]["role"] == "assistant" and "Action: add" in second[-2]["content"]
    assert second[-1] == {"role": "user", "content": "Observation: 5"}


def test_hallucinated_observation_is_never_used() -> None:
    agent, llm = agent_with(['Action: lookup\nAction Input: {"query": "x"}\nObservation: FAKE\n'
                             "Final Answer: FAKE ANSWER", "Final Answer: real"])
    result = agent.run("task")
    assert result.answer == "real"
    assert result.steps[0].observation == "found: x"
    assert all("FAKE" not in m["content"] for m in llm.calls[1].messages)


def test_tool_error_becomes_observation_and_loop_goes_on() -> None:
    agent, _ = agent_with(['Action: fetch\nAction Input: {"url": "http://bad"}', "Final Answer: gave up"])
    result = agent.run("t")
    assert result.steps[0].observation == "Error: could not fetch http://bad"
    assert result.steps[0].error == "tool" and result.status == ANSWERED


def test_crashing_tool_becomes_error_observation() -> None:
    @tool
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    llm = ScriptedLLM(["Action: boom\nAction Input: {}", "Final Answer: ok"])
    result = ReActAgent(llm, [boom]).run("t")
    assert result.steps[0].observation == "Error: RuntimeError: kaput" and result.answer == "ok"


def test_unknown_tool_lists_valid_tools_with_closest_match() -> None:
    agent, _ = agent_with(['Action: lookupp\nAction Input: {"query": "x"}', "Final Answer: done"])
    result = agent.run("t")
    obs = result.steps[0].observation
    assert "Unknown tool 'lookupp'" in obs and "Did you mean 'lookup'" in obs and "add, lookup, fetch" in obs


def test_schema_failure_gives_error_and_schema() -> None:
    agent, _ = agent_with(['Action: add\nAction Input: {"a": "two", "b": 3}', "Final Answer: done"])
    obs = agent.run("t").steps[0].observation
    assert "'two' is not of type 'integer'" in obs and '"required": ["a", "b"]' in obs


def test_format_errors_do_not_use_up_steps() -> None:
    agent, _ = agent_with(["Thought: hmm", 'Action: add\nAction Input: {"a": 1, "b": 1}', "Thought: hmm",
                           'Action: add\nAction Input: {"a": 1, "b": 2}', "Final Answer: 3"], max_steps=3)
    result = agent.run("t")
    assert result.status == ANSWERED and result.answer == "3"


def test_three_format_errors_in_a_row_end_the_task_without_crashing() -> None:
    agent, llm = agent_with(["Thought: still thinking"])
    result = agent.run("t")
    assert result.status == ERROR and "format 3 times" in (result.error or "")
    assert len(llm.calls) == 3 and len(result.steps) == 3
    assert "Action Input:" in result.steps[0].observation


def test_unlabelled_answer_asked_once_then_accepted() -> None:
    agent, llm = agent_with(["Paris is the capital.", "It is Paris."])
    result = agent.run("Capital of France?")
    assert (result.status, result.answer) == (UNFORMATTED, "It is Paris.")
    assert "Final Answer:" in llm.calls[1].messages[-1]["content"]


def test_unlabelled_then_formatted_answer_is_answered() -> None:
    agent, _ = agent_with(["Paris is the capital.", "Final Answer: Paris"])
    assert agent.run("t").status == ANSWERED


def test_max_steps_forces_a_final_answer_from_gathered_information() -> None:
    agent, llm = agent_with(['Action: lookup\nAction Input: {"query": "q"}'] * 3 + ["Final Answer: partial"],
                            max_steps=3)
    result = agent.run("t")
    assert (result.status, result.answer) == (MAX_STEPS, "partial")
    assert len(llm.calls) == 4 and "no steps left" in llm.calls[-1].messages[-1]["content"]


def test_time_limit() -> None:
    ticks = iter(range(0, 1000, 10))
    llm = ScriptedLLM(['Action: lookup\nAction Input: {"query": "q"}', "Final Answer: late"])
    result = ReActAgent(llm, [lookup], time_limit=25, clock=lambda: next(ticks)).run("t")
    assert (result.status, result.answer, len(result.steps)) == (TIME_LIMIT, "late", 1)
    assert "no steps left" in llm.calls[-1].messages[-1]["content"]


def test_llm_error_ends_the_task_with_message() -> None:
    agent, _ = agent_with([LLMError("server kept failing (503) after 6 attempts")])
    result = agent.run("t")
    assert result.status == ERROR and "503" in (result.error or "")


def test_fatal_llm_error_propagates() -> None:
    agent, _ = agent_with([LLMFatalError("OPENAI_API_KEY was rejected")])
    with pytest.raises(LLMFatalError):
        agent.run("t")


def test_sources_are_urls_fetched_successfully() -> None:
    agent, _ = agent_with(['Action: fetch\nAction Input: {"url": "http://a"}',
                           'Action: fetch\nAction Input: {"url": "http://bad"}',
                           'Action: fetch\nAction Input: {"url": "http://a"}', "Final Answer: x"])
    assert agent.run("t").sources == ["http://a"]


def test_usage_and_cost_sum_and_unknown_cost_stays_unknown() -> None:
    priced = ScriptedLLM(['Action: lookup\nAction Input: "q"', "Final Answer: x"], cost_per_call=0.01)
    result = ReActAgent(priced, [lookup]).run("t")
    assert result.usage.calls == 2 and result.cost == pytest.approx(0.02)
    unpriced = ScriptedLLM([Completion("Final Answer: y", model="m", cost=None)])
    assert ReActAgent(unpriced, [lookup]).run("t").cost is None


def test_events_in_order() -> None:
    events: list[Event] = []
    agent, _ = agent_with(['Action: lookup\nAction Input: "q"', "Final Answer: x"], on_event=events.append)
    agent.run("t")
    assert [e.kind for e in events] == ["step_start", "llm_call", "tool_call", "step_start", "llm_call", "sources",
                                       "final"]
    assert events[2].data["tool"] == "lookup" and events[1].data["messages"][1]["content"] == "t"


def test_register_tool_and_duplicates() -> None:
    agent, _ = agent_with(['Action: shout\nAction Input: {"text": "hi"}', "Final Answer: HI"])

    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    agent.register_tool(shout)
    assert agent.run("t").steps[0].observation == "HI"
    with pytest.raises(DuplicateToolError):
        agent.register_tool(shout)
