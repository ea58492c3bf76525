"""The reply families of issue #13: real models' near-misses are read right, non-answers are asked again."""

from __future__ import annotations

import pytest

from benchmarks.parser_corpus import DEFAULT_FIXTURE, load, outcome
from prompt.protocol import Action, FinalAnswer, ParseError, cut_at_observation, parse_completion
from tools.base import ToolArgumentsError, ToolRegistry, tool


def parse(text: str) -> Action | FinalAnswer:
    return parse_completion(cut_at_observation(text))


def action(text: str) -> Action:
    parsed = parse(text)
    assert isinstance(parsed, Action), parsed
    return parsed


def asks_again(text: str) -> str:
    with pytest.raises(ParseError) as err:
        parse(text)
    return err.value.message


@tool
def search(query: str) -> str:
    """Search the web."""
    return query


@tool
def clock() -> str:
    """The time."""
    return "noon"


REGISTRY = ToolRegistry([search, clock])


def test_missing_action_input_is_an_empty_object_that_the_schema_rejects() -> None:
    a = action("Thought: Do I need to use a tool? Yes\nAction: search")
    assert a.arguments == {}
    with pytest.raises(ToolArgumentsError):
        REGISTRY.prepare(a.tool, a.arguments)


def test_missing_action_input_runs_a_tool_without_parameters() -> None:
    a = action("Thought: what time is it\nAction: clock\nAction Input: None")
    assert REGISTRY.prepare(a.tool, a.arguments)[1] == {}


@pytest.mark.parametrize("text", [
    "Action: search\nAction Input: 'hwchasfffffe17'\nObserv",
    "Action: search\nAction Input: hwchasfffffe17\nObs",
    "Action: search\nAction Input: hwchasfffffe17 Observation",
    "Action: search[hwchasfffffe17] Observation 2: the word has 14 letters",
])
def test_stop_sequence_leftovers_never_reach_the_argument(text: str) -> None:
    assert action(text).arguments == "hwchasfffffe17"


def test_a_word_starting_like_observation_is_kept() -> None:
    parsed = parse("Final Answer: Griffith Observatory")
    assert isinstance(parsed, FinalAnswer) and parsed.answer == "Griffith Observatory"


@pytest.mark.parametrize("text", [
    "Thought: a greeting\nAction: None (direct response required)",
    "Action: None - I can answer directly",
    "Action: None: the answer is 4",
    "Action: None\nAction Input: None\nHello! How can I help you today?",
    "Action: N/A",
    "Action 2: Finish[answer]",
    'Action: Final Answer\nAction Input: {"answer": "<answer>"}',
    "Action: finish\nAction Input: {}",
])
def test_placeholder_finishes_are_asked_again(text: str) -> None:
    assert "Final Answer:" in asks_again(text)


def test_finish_with_a_real_answer_finishes() -> None:
    parsed = parse("Thought: done\nAction: Finish[Paris]")
    assert isinstance(parsed, FinalAnswer) and parsed.answer == "Paris"


def test_input_label_alias_is_read_not_swallowed() -> None:
    assert action('Action: search\ninput: {"query": "x"}').arguments == {"query": "x"}


@pytest.mark.parametrize("text", ["Action: search\nReason: I need the population first",
                                  "Action: search\nI will look up the population of Lyon."])
def test_other_text_after_the_action_line_is_asked_again(text: str) -> None:
    assert "Action Input:" in asks_again(text)


def test_tool_name_on_the_next_line() -> None:
    a = action('Action:\n\n  search\nAction Input: {"query": "x"}')
    assert (a.tool, a.arguments) == ("search", {"query": "x"})


@pytest.mark.parametrize("text", ['Action:searchAction Input:{"query": "x"}',
                                  'Action: search Action Input: {"query": "x"}'])
def test_glued_labels(text: str) -> None:
    a = action(text)
    assert (a.tool, a.arguments) == ("search", {"query": "x"})


def test_markdown_escaped_underscore_in_tool_name() -> None:
    assert action('Action: duckduckgo\\_search\nAction Input: {"query": "x"}').tool == "duckduckgo_search"


@pytest.mark.parametrize("raw", [
    '{"query": "x", // the query\n "n": 2}',
    '{"query": "x", /* why */ "n": 2}',
    "{'query': 'x',  # python comment\n 'n': 2}",
])
def test_comments_inside_dict_literals(raw: str) -> None:
    assert action("Action: search\nAction Input: " + raw).arguments == {"query": "x", "n": 2}


def test_comment_markers_inside_strings_are_kept() -> None:
    raw = '{"url": "https://example.org/a#b"} // the page'
    assert action("Action: scrape\nAction Input: " + raw).arguments == {"url": "https://example.org/a#b"}


def test_call_wrapper_with_the_tool_name_is_unwrapped() -> None:
    assert action('Action: search\nAction Input: search({"query": "x"})').arguments == {"query": "x"}
    assert action('Action: search ({"query": "x"})').arguments == {"query": "x"}


def test_code_that_calls_something_else_is_not_unwrapped() -> None:
    assert action('Action: python\nAction Input: print({"a": 1})').arguments == 'print({"a": 1})'


def test_reply_opening_with_an_echoed_observation_is_read_after_it() -> None:
    parsed = parse("Observation: 3 results\nThought: enough\nFinal Answer: 3")
    assert isinstance(parsed, FinalAnswer) and parsed.answer == "3"


def test_reply_that_only_echoes_an_observation_is_not_called_empty() -> None:
    message = asks_again("Observation: 3 results")
    assert "empty" not in message and "Final Answer:" in message


def test_inline_code_input_is_unquoted() -> None:
    assert action("Action: python\nAction Input: `df.head()`").arguments == "df.head()"


@pytest.mark.parametrize("entry", load(DEFAULT_FIXTURE), ids=lambda e: e["id"])
def test_real_reply_corpus(entry: dict) -> None:  # type: ignore[type-arg]
    assert outcome(entry) == entry["expect"]
