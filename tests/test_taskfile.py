"""Task files as users write them: CR-only line ends, duplicates, .json arrays, stdin, confined attachments."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import TaskFileError
from tasks.taskfile import STDIN, Task, load_tasks, task_key

ROOT = Path(__file__).resolve().parent.parent


def test_a_cr_only_file_splits_into_tasks(tmp_path: Path) -> None:
    f = tmp_path / "classic-mac.txt"
    f.write_bytes(b"# comment\rFirst task\rcontinues\r\rSecond task\r")
    assert [t.text for t in load_tasks(f)] == ["First task\ncontinues", "Second task"]


def test_a_repeated_txt_task_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "tasks.txt"
    f.write_text("Alpha\n\nBeta\n\n# again\nAlpha\n")
    with pytest.raises(TaskFileError, match=r"line 6: same task as line 1"):
        load_tasks(f)


def test_a_json_array_is_read_like_jsonl(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    f = tmp_path / "set.json"
    f.write_text(json.dumps([{"id": "q1", "question": "Two?", "answer": 2, "file": "data.csv"},
                             {"task_id": "q2", "Question": "Three?", "Final answer": "3", "Level": 2}]))
    tasks = load_tasks(f)
    assert [(t.id, t.text, t.expected, t.level) for t in tasks] == [("q1", "Two?", "2", None),
                                                                     ("q2", "Three?", "3", "2")]
    assert tasks[0].file == str((tmp_path / "data.csv").resolve())


@pytest.mark.parametrize("content, reason", [
    ('{"question": "x"}', "expected a JSON array"), ('[{"question": "x"}, 5]', "item 2: expected a JSON object"),
    ("[1,", "not valid JSON"), ('[{"question": "x"}, {"question": "x"}]', "item 2: same question as item 1"),
])
def test_bad_json_arrays_name_the_item(tmp_path: Path, content: str, reason: str) -> None:
    f = tmp_path / "set.json"
    f.write_text(content)
    with pytest.raises(TaskFileError, match=reason):
        load_tasks(f)


@pytest.mark.parametrize("escape", ["../secret.txt", "/etc/passwd", "link.txt"])
def test_attachments_outside_the_question_set_folder_are_refused(tmp_path: Path, escape: str) -> None:
    (tmp_path / "secret.txt").write_text("not for the model")
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    f = folder / "set.jsonl"
    f.write_text(json.dumps({"question": "q", "file": escape}) + "\n")
    with pytest.raises(TaskFileError, match=r"line 1: attachment .* is outside"):
        load_tasks(f)


def test_attachments_folder_can_be_given_explicitly(tmp_path: Path) -> None:
    files = tmp_path / "gaia" / "files"
    files.mkdir(parents=True)
    (files / "a.xlsx").write_text("x")
    f = tmp_path / "sets" / "set.jsonl"
    f.parent.mkdir()
    f.write_text(json.dumps({"question": "q", "file_name": "a.xlsx"}) + "\n")
    with pytest.raises(TaskFileError, match="not found"):
        load_tasks(f)
    assert load_tasks(f, attachments=files)[0].file == str((files / "a.xlsx").resolve())


def test_the_key_is_the_text_hash_and_follows_replace() -> None:
    task = Task(1, "What?", "t1")
    assert task.key == task_key("What?")
    assert dataclasses.replace(task, text="Why?").key == task_key("Why?")


@pytest.mark.parametrize("stdin, expected", [
    ("First\n\nSecond\n", ["First", "Second"]),
    ('{"question": "From a jsonl pipe"}\n', ["From a jsonl pipe"]),
    ('[{"question": "From a json pipe"}]', ["From a json pipe"]),
])
def test_dash_reads_tasks_from_stdin(stdin: str, expected: list[str]) -> None:
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
            " from tasks.taskfile import load_tasks; print([t.text for t in load_tasks(Path('-'))])")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT)], input=stdin, capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == repr(expected), proc.stderr
    assert str(TaskFileError(STDIN, "contains no tasks")) == "stdin: contains no tasks"
