"""End to end: `main.py set.jsonl` with a scripted model writes a scored report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import llm
import main
from core.chat import Message
from core.errors import ToolError
from prompt.protocol import CONCISE_INSTRUCTION
from tests.fakes.scripted import ScriptedLLM
from tools.base import Tool

SPEC = "openai:scripted"


class ReadTool(Tool):
    """A stand-in read_file confined to the task's workspace (the real tools are tested elsewhere)."""

    name = "read_file"
    description = "Read a file from your workspace."
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def run(self, **kwargs: Any) -> str:
        """The file's text."""
        target = self.workspace / kwargs["path"]
        if not target.is_file():
            raise ToolError(f"no file {kwargs['path']!r} in the workspace")
        return target.read_text()


def reply(messages: list[Message]) -> str:
    """Answers like a model would: reads an attachment first, then gives one answer per question."""
    task = messages[1]["content"]
    observations = [m["content"] for m in messages[2:] if m["role"] == "user"]
    attached = re.search(r"Attached file: (\S+)", task)
    if attached and not observations:
        return f'Thought: read it\nAction: read_file\nAction Input: {{"path": "{attached.group(1)}"}}'
    if attached:
        numbers = re.findall(r"\d+", observations[-1].removeprefix("Observation:"))
        return f"Thought: add them\nFinal Answer: {sum(map(int, numbers))}"
    if "600 + 400" in task:
        return "Thought: easy\nFinal Answer: 1,000."
    return "Thought: I think so\nFinal Answer: Lyon"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    """A scripted model behind main.run's model construction, and the stand-in tools."""
    scripted = ScriptedLLM(replies=[reply])

    class FakeInterface:
        @classmethod
        def from_spec(cls, spec: str, settings: Any, **kwargs: Any) -> ScriptedLLM:
            assert spec == SPEC
            return scripted

    monkeypatch.setattr(llm, "LLMInterface", FakeInterface, raising=False)
    monkeypatch.setattr(llm, "default_model", lambda settings, *a, **k: SPEC, raising=False)
    monkeypatch.setattr("run.batch.default_tools", lambda settings, workspace: [ReadTool(workspace)])
    return scripted


def write_set(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "numbers.txt").write_text("40\n2\n")
    lines = [
        {"id": "sum", "question": "What is 600 + 400?", "answer": 1000, "level": 1},
        {"id": "capital", "question": "What is the capital of France?", "answer": "Paris", "level": 1},
        {"id": "file", "question": "What is the total of the numbers in the attached file?", "answer": "42",
         "file": "data/numbers.txt", "level": 2},
    ]
    path = folder / "set.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    return path


def run_cli(tmp_path: Path, task_file: Path, *extra: str) -> int:
    return main.main([str(task_file), "-o", str(tmp_path / "out" / "results.md"), "--model", SPEC,
                      "--workspace", str(tmp_path / "ws"), "--no-trace", "-q", *extra])


def test_a_jsonl_set_with_answers_is_scored_in_results(tmp_path: Path, model: ScriptedLLM) -> None:
    code = run_cli(tmp_path, write_set(tmp_path / "bench"))
    assert code == main.EXIT_OK  # wrong answers are still answered tasks
    report = (tmp_path / "out" / "results.md").read_text()
    assert "| Correct |" in report
    assert "**Accuracy: 2/3 = 66.7%** · level 1: 1/2 = 50.0% · level 2: 1/1 = 100.0%" in report
    rows = [line for line in report.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.rstrip(" |").split("| ")[-1].strip() for row in rows] == ["✓", "✗", "✓"]
    assert "**Expected:** Paris — incorrect" in report
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [(r["id"], r["answer"], r["expected"], r["correct"], r["level"]) for r in records] == [
        ("sum", "1,000.", "1000", True, "1"),
        ("capital", "Lyon", "Paris", False, "1"),
        ("file", "42", "42", True, "2"),
    ]


def test_the_attachment_is_copied_into_the_task_workspace(tmp_path: Path, model: ScriptedLLM) -> None:
    run_cli(tmp_path, write_set(tmp_path / "bench"))
    [copied] = (tmp_path / "ws").glob("*/file/numbers.txt")  # ws/<run-id>/<task-id>/
    assert copied.read_text() == "40\n2\n"
    assert (tmp_path / "bench" / "data" / "numbers.txt").is_file()  # copied, not moved
    file_calls = [c for c in model.calls if "Attached file: numbers.txt" in c.messages[1]["content"]]
    assert len(file_calls) == 2
    assert "Observation: 40\n2" in file_calls[1].messages[-1]["content"]
    assert not list((tmp_path / "ws").glob("*/sum/numbers.txt"))


def test_answers_in_the_set_switch_to_the_concise_answer_style(tmp_path: Path, model: ScriptedLLM) -> None:
    run_cli(tmp_path, write_set(tmp_path / "bench"))
    assert model.calls
    assert all(CONCISE_INSTRUCTION in c.messages[0]["content"] for c in model.calls)


def test_without_expected_answers_the_style_stays_plain(tmp_path: Path, model: ScriptedLLM) -> None:
    unscored = tmp_path / "set.jsonl"
    unscored.write_text(json.dumps({"id": "q", "question": "What is 600 + 400?"}) + "\n")
    assert run_cli(tmp_path, unscored) == main.EXIT_OK
    assert model.calls and all(CONCISE_INSTRUCTION not in c.messages[0]["content"] for c in model.calls)
    report = (tmp_path / "out" / "results.md").read_text()
    assert "Correct" not in report and "Accuracy" not in report


def test_an_explicit_answer_style_wins_over_the_automatic_one(tmp_path: Path, model: ScriptedLLM) -> None:
    run_cli(tmp_path, write_set(tmp_path / "bench"), "--answer-style", "plain")
    assert model.calls and all(CONCISE_INSTRUCTION not in c.messages[0]["content"] for c in model.calls)


def test_a_bad_line_exits_2_naming_the_line(tmp_path: Path, model: ScriptedLLM,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "set.jsonl"
    bad.write_text('{"id": "a", "question": "A?"}\n{"id": "b", "question": "B?", "file": "nope.csv"}\n')
    assert run_cli(tmp_path, bad) == main.EXIT_USAGE
    err = capsys.readouterr().err
    assert "line 2: attachment 'nope.csv' not found" in err
    assert not model.calls
    assert not (tmp_path / "out" / "results.md").exists()
