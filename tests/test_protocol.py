"""parse_completion() reads what real models write, at the first try."""

from __future__ import annotations

import pytest

from prompt.protocol import Action, FinalAnswer, ParseError, cut_at_observation, parse_completion, render_system_prompt
from tools.base import ToolRegistry, tool


def action(text: str) -> Action:
    parsed = parse_completion(text)
    assert isinstance(parsed, Action), parsed
    return parsed


def final(text: str) -> FinalAnswer:
    parsed = parse_completion(text)
    assert isinstance(parsed, FinalAnswer), parsed
    return parsed


def test_plain_format() -> None:
    a = action('Thought: look it up\nAction: search\nAction Input: {"query": "capital of France"}')
    assert (a.tool, a.arguments, a.thought) == ("search", {"query": "capital of France"}, "look it up")


def test_bold_labels() -> None:
    a = action('**Thought:** hmm\n**Action:** search\n**Action Input:** {"query": "x"}')
    assert (a.tool, a.arguments, a.thought) == ("search", {"query": "x"}, "hmm")


def test_bold_labels_with_colon_outside() -> None:
    a = action('**Thought**: hmm\n**Action**: search\n**Action Input**: {"query": "x"}')
    assert a.arguments == {"query": "x"}


def test_any_letter_case_labels() -> None:
    a = action('THOUGHT: hmm\naction: search\nACTION INPUT: {"query": "x"}')
    assert (a.tool, a.arguments) == ("search", {"query": "x"})


def test_numbered_labels() -> None:
    a = action('Thought 2: again\nAction 2: search\nAction Input 2: {"query": "y"}')
    assert (a.tool, a.arguments, a.thought) == ("search", {"query": "y"}, "again")


def test_extra_blank_lines_and_indentation() -> None:
    a = action('\n\n   Thought: a\n\n\n     Action: search\n\n      Action Input:   {"query": "z"}\n\n')
    assert (a.tool, a.arguments) == ("search", {"query": "z"})


def test_crlf_line_endings() -> None:
    a = action('Thought: a\r\nAction: search\r\nAction Input: {"query": "z"}\r\n')
    assert (a.tool, a.arguments, a.thought) == ("search", {"query": "z"}, "a")


def test_tool_name_in_backticks() -> None:
    assert action('Action: `search`\nAction Input: {"query": "x"}').tool == "search"


def test_tool_name_in_other_case_is_resolved_by_registry() -> None:
    a = action('Action: Search\nAction Input: {"query": "x"}')
    registry = ToolRegistry([_search_tool()])
    found, args = registry.prepare(a.tool, a.arguments)
    assert found.name == "search" and args == {"query": "x"}


def test_input_on_the_next_line() -> None:
    a = action('Action: search\nAction Input:\n{"query": "next line"}')
    assert a.arguments == {"query": "next line"}


def test_input_in_json_fence() -> None:
    a = action('Action: search\nAction Input:\n```json\n{"query": "fenced"}\n```')
    assert a.arguments == {"query": "fenced"}


def test_input_in_python_fence_is_the_code() -> None:
    a = action("Action: python\nAction Input:\n```python\nimport math\nprint(math.pi)\n```")
    assert a.arguments == "import math\nprint(math.pi)"


def test_json_with_raw_newlines_inside_strings() -> None:
    a = action('Action: python\nAction Input: {"code": "for i in range(2):\n    print(i)"}')
    assert a.arguments == {"code": "for i in range(2):\n    print(i)"}


def test_single_quoted_python_literal_dict() -> None:
    a = action("Action: search\nAction Input: {'query': 'it\\'s here', 'num_results': 3}")
    assert a.arguments == {"query": "it's here", "num_results": 3}


def test_trailing_comma() -> None:
    a = action('Action: search\nAction Input: {"query": "x", "num_results": 2,}')
    assert a.arguments == {"query": "x", "num_results": 2}


def test_trailing_comma_with_json_literals() -> None:
    a = action('Action: f\nAction Input: {"flag": true, "none": null, "off": false,}')
    assert a.arguments == {"flag": True, "none": None, "off": False}


def test_text_after_the_json_is_ignored() -> None:
    a = action('Action: search\nAction Input: {"query": "x"} I will now wait for the result.')
    assert a.arguments == {"query": "x"}


def test_plain_string_fills_the_single_required_parameter() -> None:
    a = action("Action: search\nAction Input: population of Lyon 2020")
    assert a.arguments == "population of Lyon 2020"
    _, args = ToolRegistry([_search_tool()]).prepare(a.tool, a.arguments)
    assert args == {"query": "population of Lyon 2020"}


def test_quoted_plain_string_is_unquoted() -> None:
    assert action('Action: search\nAction Input: "quoted query"').arguments == "quoted query"


def test_think_blocks_are_ignored() -> None:
    a = action('<think>Maybe Final Answer: 3?\nAction: nothing</think>\nThought: ok\nAction: search\n'
               'Action Input: {"query": "q"}')
    assert (a.tool, a.arguments) == ("search", {"query": "q"})


def test_unclosed_opening_think_tag_stripped_by_server() -> None:
    assert final("reasoning here, Action: no\n</think>\nFinal Answer: 7").answer == "7"


def test_no_thought_label() -> None:
    a = action('I should search.\nAction: search\nAction Input: {"query": "q"}')
    assert a.thought == "I should search." and a.arguments == {"query": "q"}


def test_strings_containing_braces_and_quotes() -> None:
    code = 'd = {"a": "}"}\nprint(f"{d[\'a\']} \\"quoted\\"")'
    import json

    a = action("Action: python\nAction Input: " + json.dumps({"code": code}))
    assert a.arguments == {"code": code}


def test_action_whose_code_prints_final_answer_is_an_action() -> None:
    a = action('Thought: compute\nAction: python\nAction Input: {"code": "print(\'Final Answer: 42\')"}')
    assert a.tool == "python" and "Final Answer: 42" in a.arguments["code"]  # type: ignore[index]


def test_raw_multiline_code_with_final_answer_line_is_an_action() -> None:
    a = action('Action: python\nAction Input: {"code": "x = 1\nFinal Answer: not a label\nprint(x)"}')
    assert a.tool == "python"
    assert a.arguments == {"code": "x = 1\nFinal Answer: not a label\nprint(x)"}


def test_final_answer_keeps_every_line() -> None:
    f = final("Thought: done\nFinal Answer: Line one.\n\n- item A\n- item B\n\nSources: http://x")
    assert f.answer == "Line one.\n\n- item A\n- item B\n\nSources: http://x"
    assert f.thought == "done"


def test_bold_final_answer() -> None:
    assert final("**Final Answer:** Paris").answer == "Paris"


def test_hallucinated_observation_and_answer_are_never_used() -> None:
    text = 'Action: search\nAction Input: {"query": "q"}\nObservation: made up\nFinal Answer: made up'
    a = action(text)
    assert a.arguments == {"query": "q"}
    assert "made up" not in cut_at_observation(text)


def test_observation_cut_tolerates_bold_and_case() -> None:
    assert cut_at_observation("Action: a\n**observation**: fake") == "Action: a"


def test_action_named_final_answer_finishes() -> None:
    assert final('Action: Final Answer\nAction Input: {"answer": "12"}').answer == "12"


def test_unlabelled_reply_is_a_no_labels_error() -> None:
    with pytest.raises(ParseError) as err:
        parse_completion("The capital of France is Paris.")
    assert err.value.no_labels
    assert "Final Answer:" in err.value.message


def test_thought_only_is_a_format_error_restating_the_format() -> None:
    with pytest.raises(ParseError) as err:
        parse_completion("Thought: I am thinking about it.")
    assert not err.value.no_labels
    assert "Action Input:" in err.value.message and "Final Answer:" in err.value.message


def test_broken_json_object_is_a_format_error() -> None:
    with pytest.raises(ParseError) as err:
        parse_completion('Action: search\nAction Input: {"query": "x"')
    assert "JSON" in err.value.message


def test_empty_reply_is_a_format_error() -> None:
    with pytest.raises(ParseError):
        parse_completion("  \n ")


def test_system_prompt_lists_tools_schema_and_format() -> None:
    prompt = render_system_prompt(ToolRegistry([_search_tool()]))
    assert "### search" in prompt and '"query"' in prompt and "Search the web" in prompt
    for label in ("Thought:", "Action:", "Action Input:", "Final Answer:", "Observation"):
        assert label in prompt


def _search_tool():  # type: ignore[no-untyped-def]
    @tool
    def search(query: str, num_results: int = 5) -> str:
        """Search the web.

        Args:
            query: what to look for
            num_results: how many results
        """
        return f"results for {query}"

    return search
