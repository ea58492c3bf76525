"""run/results.py: appended records, a throttled report, a failed write mid-run, schemas checked once."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import jsonschema
import pytest

from core.errors import ResultsWriteError
from report.markdown import TaskRecord
from run.results import Previous, ResultsStore
from tools.base import ToolRegistry, tool


def _record(index: int, status: str = "answered") -> TaskRecord:
    return TaskRecord(key=f"k{index}", id=f"t{index}", index=index, task=f"Task {index}", status=status,
                      answer=f"answer {index}", steps=1, llm_calls=1)


def test_records_are_appended_and_the_report_rendered_at_most_every_interval(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.md", {}, Previous(), resume=False, render_every=3600)
    store.add(_record(2))
    inode = (tmp_path / "r.jsonl").stat().st_ino
    store.add(_record(1))
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["t2", "t1"]  # completion order, one line each, same file
    assert (tmp_path / "r.jsonl").stat().st_ino == inode
    assert "Task 1" not in (tmp_path / "r.md").read_text()  # rendered once, at the first record
    store.close()
    assert [json.loads(x)["id"] for x in (tmp_path / "r.jsonl").read_text().splitlines()] == ["t1", "t2"]
    assert "## 1. Task 1" in (tmp_path / "r.md").read_text()


def test_a_failed_append_mid_run_leaves_whole_lines_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultsStore(tmp_path / "r.md", {}, Previous(), resume=False, render_every=3600)
    store.add(_record(1))
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 10:
            real_write(fd, bytes(data[:10]))  # part of the line reaches the disk, then it is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(ResultsWriteError, match="No space left on device.*holds the 1 task"):
        store.add(_record(2))
    monkeypatch.undo()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["t1"]


def test_tool_schemas_are_checked_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    checks: list[object] = []
    original = jsonschema.Draft202012Validator.check_schema
    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema",
                        classmethod(lambda cls, schema, **kw: (checks.append(schema), original(schema))))

    @tool
    def unique_tool_for_this_test(first_argument_xyz: str) -> str:
        """Echo.

        Args:
            first_argument_xyz: anything
        """
        return first_argument_xyz

    for _ in range(3):  # one registry per task, as the batch builds them
        registry = ToolRegistry([unique_tool_for_this_test])
        registry.prepare("unique_tool_for_this_test", {"first_argument_xyz": "x"})
    assert len(checks) == 1
