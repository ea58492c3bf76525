"""The notes tool: what the model keeps survives the summarising memory and reaches the record, trace and page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import ANSWERED, Event, ReActAgent
from core.chat import Completion, Message
from core.errors import ToolError
from prompt.memory import Memory
from report.html import write_html
from report.markdown import load_records, write_results
from run.batch import record_from_result
from tasks.taskfile import Task
from tests.fakes.scripted import Reply, ScriptedLLM
from tests.test_memory import honest, page
from tools.base import tool
from tools.notes import MAX_TOTAL_CHARS, Notes, NotesTool

FACT = "The 1987 report (https://example.org/report p. 12) puts the widget count at 4,118."
PLAN = "Plan: check pages 1-12, then compare with the 1987 report."


@tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return page(n)


class ForgetfulSummarizer:
    """A summary model that keeps nothing of the folded steps: only the notes can carry the fact on."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        self.calls += 1
        return Completion("Facts found: some pages were read.", "stop", 50, 7, "summary-model")


def note_action(arguments: dict[str, object]) -> str:
    return f"Thought: keep this\nAction: notes\nAction Input: {json.dumps(arguments)}"


def test_notes_add_list_replace_delete_and_say_what_they_hold() -> None:
    notes = NotesTool()
    assert "Added note 1." in str(notes.run(add=FACT))
    assert "Added note 2." in str(notes.run(add="draft"))
    out = str(notes.run(replace=2, text=PLAN))
    assert "Replaced note 2." in out and f"1. {FACT}\n2. {PLAN}" in out
    assert f"2. {PLAN}" in str(notes.run())
    out = str(notes.run(delete=1))
    assert FACT not in out and f"1. {PLAN}" in out and "(1 note, " in out


@pytest.mark.parametrize("arguments, message", [
    ({"delete": 3}, "there is no note 3: there are notes 1 to 1"),
    ({"replace": 1}, '"replace": N} needs "text"'),
    ({"text": "x"}, '"text" goes with "replace"'),
    ({"add": "a", "delete": 1}, "one change per call"),
    ({"add": "   "}, "a note needs some text"),
])
def test_a_wrong_call_is_an_observation_that_says_what_to_do(arguments: dict[str, object], message: str) -> None:
    notes = NotesTool()
    notes.run(add="one")
    with pytest.raises(ToolError, match=message.replace("{", r"\{").replace("(", r"\(").replace(")", r"\)")):
        notes.run(**arguments)
    assert notes.notes.items == ["one"]  # nothing changed


def test_full_notes_refuse_more_with_a_clear_message_and_keep_what_they_hold() -> None:
    notes = Notes()
    for _ in range(MAX_TOTAL_CHARS // 1000):
        notes.add("x" * 1000)
    with pytest.raises(ToolError, match=r"the notes are full \(4,000 of 4,000 characters used.*delete notes first"):
        notes.add("one more fact")
    with pytest.raises(ToolError, match="at most 1,000 characters"):
        notes.replace(1, "y" * 1001)
    notes.replace(1, "short")  # making room works
    assert notes.add("one more fact") == 5


def test_notes_stay_verbatim_in_the_prompt_when_older_steps_are_summarised(tmp_path: Path) -> None:
    """The model notes a fact at step 1; twelve long pages later the summary kept nothing, the note is there."""
    replies: list[Reply] = [honest(note_action({"add": FACT})), honest(note_action({"add": PLAN})),
                            honest(note_action({"replace": 2, "text": PLAN + " Pages 1-3 done."}))]
    replies += [honest(f'Thought: read\nAction: fetch\nAction Input: {{"n": {i}}}') for i in range(1, 13)]
    llm = ScriptedLLM([*replies, honest("Thought: done\nFinal Answer: 4,118 widgets")])
    summarizer = ForgetfulSummarizer()
    memories: list[Memory] = []

    def factory() -> Memory:
        memories.append(Memory(6_000, tmp_path, summarizer=summarizer))
        return memories[-1]

    events: list[Event] = []
    agent = ReActAgent(llm, [fetch, NotesTool()], max_steps=20, memory_factory=factory, on_event=events.append)
    result = agent.run("How many widgets are there?")
    assert result.status == ANSWERED and summarizer.calls
    memory = memories[0]
    assert {1, 2, 3} <= set(memory.summarized + memory.dropped)  # the notes calls themselves were folded
    last = llm.calls[-1].messages
    assert all("Action: notes" not in m["content"] for m in last[2:])  # ... out of the verbatim steps
    assert f"1. {FACT}\n2. {PLAN} Pages 1-3 done." in last[1]["content"]  # yet the notes are there, verbatim
    assert result.notes == [FACT, PLAN + " Pages 1-3 done."]
    assert events[-1].kind == "final" and events[-1].data["notes"] == result.notes  # in the task's trace


def test_each_task_starts_with_no_notes(tmp_path: Path) -> None:
    llm = ScriptedLLM([note_action({"add": FACT}), "Thought: ok\nFinal Answer: a",
                       note_action({}), "Thought: ok\nFinal Answer: b"])
    agent = ReActAgent(llm, [NotesTool()], max_steps=5)
    assert agent.run("first").notes == [FACT]
    second = agent.run("second")
    assert second.notes == [] and "(no notes yet)" in llm.calls[-1].messages[-1]["content"]


def test_notes_are_in_results_jsonl_and_results_html(tmp_path: Path) -> None:
    llm = ScriptedLLM([note_action({"add": "<b>bold</b> claim from https://example.org"}),
                       "Thought: ok\nFinal Answer: done"])
    result = ReActAgent(llm, [NotesTool()], max_steps=5).run("task")
    record = record_from_result(Task(index=1, text="task", id="task-001"), result)
    write_results(tmp_path / "results.md", [record])
    assert load_records(tmp_path / "results.md")[record.key].notes == ["<b>bold</b> claim from https://example.org"]
    write_html(tmp_path / "results.jsonl", tmp_path / "results.html", [], {})
    html = (tmp_path / "results.html").read_text()
    assert "<h4>Notes</h4>" in html and "&lt;b&gt;bold&lt;/b&gt; claim from" in html and "<b>bold</b>" not in html
