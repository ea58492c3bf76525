"""Task files, the results report (atomic, resumable), traces and concurrency order."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from agent import ReActAgent
from config import Settings
from core.chat import Message
from core.errors import LLMFatalError
from report.markdown import TaskRecord, load_records, write_results
from report.paths import records_path
from run.batch import BatchRunner, TaskFileError, load_tasks, parse_text_tasks
from tests.fakes.scripted import ScriptedLLM


def test_tasks_separated_by_blank_lines_may_span_lines() -> None:
    tasks = parse_text_tasks("# comment\nFirst task\n\n\nSecond task\ncontinues here\n\n  \nThird\n")
    assert [t.text for t in tasks] == ["First task", "Second task\ncontinues here", "Third"]
    assert [t.index for t in tasks] == [1, 2, 3]
    assert len({t.id for t in tasks}) == 3 and tasks[0].key != tasks[1].key


def test_crlf_task_file(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_bytes(b"One\r\ntwo\r\n\r\nThree\r\n")
    assert [t.text for t in load_tasks(f)] == ["One\ntwo", "Three"]


@pytest.mark.parametrize("content, reason", [
    (None, "no such file"), (b"", "contains no tasks"), (b"\n  \n# only a comment\n", "contains no tasks"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary"), (b"caf\xe9 au lait", "not UTF-8"),
])
def test_bad_task_files(tmp_path: Path, content: bytes | None, reason: str) -> None:
    f = tmp_path / "tasks.txt"
    if content is not None:
        f.write_bytes(content)
    with pytest.raises(TaskFileError, match=reason):
        load_tasks(f)


def _record(index: int, status: str = "answered", key: str | None = None) -> TaskRecord:
    return TaskRecord(key=key or f"k{index}", id=f"task-{index}", index=index, task=f"Task {index} | pipe",
                      status=status, answer=f"answer {index}", sources=["http://example.org/a"], steps=2,
                      prompt_tokens=100, completion_tokens=20, llm_calls=2, cost=0.001, seconds=1.5,
                      models=["m"])


def test_results_markdown_has_table_and_sections(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    write_results(out, [_record(2, "max_steps"), _record(1)], {"model": "openai:x"})
    text = out.read_text()
    assert "| 1 | Task 1 \\| pipe | answer 1 | answered | 2 | 120 | $0.0010 | 1.5 |" in text
    assert text.index("## 1. Task 1") < text.index("## 2. Task 2")
    assert "> Task 2 | pipe" in text and "answer 2" in text
    assert "1. [http://example.org/a](<http://example.org/a>)" in text  # a record's plain-URL sources still show
    assert "2 tasks · 1 answered · 1 max_steps" in text and "model `openai:x`" in text
    assert [r.index for r in load_records(out).values()] == [1, 2]


def test_results_are_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results.md"
    write_results(out, [_record(1)])
    before = out.read_text()

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError):
        write_results(out, [_record(1), _record(2)])
    assert out.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl", "results.md"]


def test_unknown_cost_shows_na_not_zero(tmp_path: Path) -> None:
    r = _record(1)
    r.cost = None
    write_results(tmp_path / "r.md", [r])
    text = (tmp_path / "r.md").read_text()
    assert "| n/a |" in text and "cost n/a" in text


def _tool_free_agent(settings, llm, workspace, spec, on_event, style, summary):  # type: ignore[no-untyped-def]
    return ReActAgent(llm, [], max_steps=settings.max_steps, on_event=on_event)


def _runner(tmp_path: Path, llm: object, records: list[TaskRecord], concurrency: int = 1) -> BatchRunner:
    settings = Settings(workspace=tmp_path / "ws", trace_dir=tmp_path / "traces", concurrency=concurrency)
    return BatchRunner(settings, llm, "scripted:model", records.append,  # type: ignore[arg-type]
                       agent_factory=_tool_free_agent)


def test_concurrency_keeps_task_file_order_in_results(tmp_path: Path) -> None:
    active, peak, lock = [0], [0], threading.Lock()

    def slow_answer(messages: list[Message]) -> str:
        task = messages[1]["content"]
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05 if task.endswith("1") else 0.01)
        with lock:
            active[0] -= 1
        return f"Final Answer: done {task}"

    records: list[TaskRecord] = []
    tasks = parse_text_tasks("\n\n".join(f"task {i}" for i in range(1, 7)))
    _runner(tmp_path, ScriptedLLM([slow_answer]), records, concurrency=3).run(tasks)
    assert peak[0] > 1
    write_results(tmp_path / "r.md", records)
    text = (tmp_path / "r.md").read_text()
    positions = [text.index(f"## {i}. task {i}") for i in range(1, 7)]
    assert positions == sorted(positions)
    assert {r.answer for r in records} == {f"done task {i}" for i in range(1, 7)}


def test_trace_records_model_and_tool_calls(tmp_path: Path) -> None:
    records: list[TaskRecord] = []
    tasks = parse_text_tasks("what?")
    _runner(tmp_path, ScriptedLLM(["Final Answer: 42"]), records).run(tasks)
    lines = [json.loads(x) for x in (tmp_path / "traces" / f"{tasks[0].id}.jsonl").read_text().splitlines()]
    call = next(x for x in lines if x["kind"] == "llm_call")
    assert call["completion"] == "Final Answer: 42" and call["messages"][1]["content"] == "what?"
    assert call["prompt_tokens"] == 10 and call["model"] == "scripted-model"
    assert lines[-1]["kind"] == "final" and lines[-1]["status"] == "answered"


def test_fatal_error_stops_the_batch(tmp_path: Path) -> None:
    records: list[TaskRecord] = []
    llm = ScriptedLLM([LLMFatalError("ANTHROPIC_API_KEY was rejected")])
    with pytest.raises(LLMFatalError):
        _runner(tmp_path, llm, records).run(parse_text_tasks("a\n\nb\n\nc"))
    assert records == [] and len(llm.calls) == 1


def test_records_path_sits_beside_results(tmp_path: Path) -> None:
    assert records_path(tmp_path / "out.md") == tmp_path / "out.jsonl"
