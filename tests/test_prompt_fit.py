"""The system prompt fits small windows: its size with every built-in tool, the compact form for a small window or
--context-budget, tools no configured model can serve withheld, and the format error for a copied placeholder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agent import ReActAgent
from config import Settings
from prompt.memory import Memory, TokenEstimator
from prompt.protocol import ParseError, fitted_system_prompt, parse_completion, render_system_prompt
from tests.fakes.scripted import ScriptedLLM
from tools.base import Tool, ToolRegistry, UnknownToolError
from tools.builtin import default_tools
from tools.cached import cache_network_tools

PROMPT_LIMIT = 8_000  # characters of the full system prompt with every built-in tool (issue 38)


def every_tool(tmp_path: Path, **options: object) -> ToolRegistry:
    """The built-in tools with a vision and a speech model configured, so that none is withheld."""
    settings = Settings(**{"vision_model": "gemini:gemini-2.5-flash", "transcribe_model": "openai:whisper-1",
                           **options})
    tools = default_tools(settings, tmp_path)
    registry = ToolRegistry(tools)
    assert registry.names() == [t.name for t in tools]  # all offered
    return registry


@pytest.mark.parametrize("style", ["plain", "concise"])
def test_the_full_prompt_with_every_built_in_tool_stays_under_8000_characters(tmp_path: Path, style: str) -> None:
    registry = every_tool(tmp_path)
    prompt = render_system_prompt(registry, style)
    assert len(prompt) <= PROMPT_LIMIT, f"{len(prompt):,} characters for {len(registry)} tools"
    for t in registry:
        assert f"### {t.name}" in prompt  # each described in full


def test_the_compact_prompt_names_every_tool_on_one_line_with_its_input(tmp_path: Path) -> None:
    registry = every_tool(tmp_path)
    full, compact = render_system_prompt(registry), render_system_prompt(registry, compact=True)
    assert len(compact) * 2 < len(full)
    for t in registry:
        line = next(x for x in compact.splitlines() if x.startswith(f"- {t.name} "))
        assert all(f'"{key}"' in line for key in t.parameters.get("properties", {}))
    for label in ("Thought:", "Action:", "Action Input:", "Final Answer:"):
        assert label in compact


def test_a_small_context_budget_gets_the_compact_prompt_and_a_large_one_the_full(tmp_path: Path) -> None:
    registry, tokens = every_tool(tmp_path), TokenEstimator().text_tokens
    assert fitted_system_prompt(registry, "plain", 1500, tokens) == render_system_prompt(registry, compact=True)
    assert fitted_system_prompt(registry, "plain", 32_000, tokens) == render_system_prompt(registry)


def test_a_task_under_context_budget_1500_fits_a_2048_token_window_with_its_reply(tmp_path: Path) -> None:
    # What the agent sends first with --context-budget 1500: the compact prompt and the task, within the budget.
    llm = ScriptedLLM(["Final Answer: 4"])
    agent = ReActAgent(llm, every_tool(tmp_path), memory_factory=lambda: Memory(budget_tokens=1500))
    agent.run("What is 2+2?")
    sent = llm.calls[0].messages
    assert "### " not in sent[0]["content"] and "- search {" in sent[0]["content"]  # the compact form
    assert Memory(budget_tokens=1500).estimator.raw(sum(len(m["content"]) for m in sent), len(sent)) < 1500 - 512


def test_a_tool_no_configured_model_can_serve_is_not_offered_and_a_call_is_told_why(tmp_path: Path) -> None:
    settings = Settings(model="openai:gemma-3-270m", openai_base_url="http://127.0.0.1:9/v1")  # no vision, no speech
    registry = ToolRegistry(default_tools(settings, tmp_path))
    prompt = render_system_prompt(registry)
    for name in ("look", "watch", "transcribe"):
        assert name not in registry.names() and f"### {name}" not in prompt and f" {name}," not in prompt
    assert "scrape" in registry.names()
    with pytest.raises(UnknownToolError, match="not offered in this run: no vision model is configured"):
        registry.prepare("look", {"path": "chart.png", "question": "What does it show?"})


def test_the_agent_hears_why_a_withheld_tool_cannot_be_called(tmp_path: Path) -> None:
    settings = Settings(model="openai:gemma-3-270m", openai_base_url="http://127.0.0.1:9/v1")
    llm = ScriptedLLM(['Thought: the image\nAction: look\nAction Input: {"path": "a.png", "question": "what?"}',
                       "Final Answer: I cannot see images here."])
    result = ReActAgent(llm, default_tools(settings, tmp_path)).run("What is in a.png?")
    told = llm.calls[1].messages[-1]["content"]
    assert "not offered in this run" in told and "--vision-model" in told
    assert result.answer == "I cannot see images here."


def test_a_tool_added_later_declares_itself_unavailable_the_same_way(tmp_path: Path) -> None:
    class Speak(Tool):
        name, description = "speak", "Say a text aloud."

        def unavailable(self) -> str | None:
            return "no speech synthesis model is configured"

    registry = ToolRegistry([Speak()])
    assert registry.names() == [] and "speak" not in render_system_prompt(registry)


@pytest.mark.parametrize("line", ["<one of: search, scrape, python>", "`<one of: search, scrape>`",
                                  "<a tool name>", "**<one of: search>**"])
def test_a_copied_placeholder_is_named_as_such(line: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_completion(f'Thought: I will search.\nAction: {line}\nAction Input: {{"query": "x"}}')
    assert "copied the format's placeholder" in err.value.message
    assert "must be followed by a tool name" not in err.value.message


def test_a_tool_name_in_angle_brackets_is_still_a_tool_name() -> None:
    parsed = parse_completion('Thought: search\nAction: <search>\nAction Input: {"query": "x"}')
    assert getattr(parsed, "tool", None) == "search"


def test_a_cached_tool_keeps_its_brief_and_its_availability(tmp_path: Path) -> None:
    settings = dataclasses.replace(Settings(model="openai:gemma-3-270m", openai_base_url="http://127.0.0.1:9/v1"),
                                   cache_dir=tmp_path / "cache")
    names = ToolRegistry(cache_network_tools(default_tools(settings, tmp_path), settings)).names()
    assert "look" not in names and "search" in names
