"""GAIA's own layout through main.py: metadata.jsonl / metadata.parquet with attachments beside them.

Field names follow GAIA's dataset card (huggingface.co/datasets/gaia-benchmark/GAIA, README "Dataset Format
update (October 2025)": task_id, Question, Level, Final answer, file_name, file_path, Annotator Metadata;
the test split's answers are "?").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import llm
import main
from core.chat import Message
from core.errors import TaskFileError
from tasks.taskfile import load_tasks
from tests.fakes import documents as fx
from tests.fakes.scripted import ScriptedLLM

SPEC = "openai:scripted"
UNITS = [17, 25, 1000]


def sum_sheet(messages: list[Message]) -> str:
    """Like a model: read the attachment, then add up column B of the Sales sheet from the Markdown table."""
    task = messages[1]["content"]
    attached = re.search(r"Attached file: (\S+)", task)
    observations = [m["content"] for m in messages[2:] if m["role"] == "user" and "Observation" in m["content"]]
    if attached is None:
        return "Thought: no file\nFinal Answer: unknown"
    if not observations:
        return f'Thought: read it\nAction: read_file\nAction Input: {{"path": "{attached.group(1)}"}}'
    sales = observations[-1].split("## Sheet: Sales", 1)[1].split("## Sheet:", 1)[0]
    units = [float(m.group(1)) for m in re.finditer(r"^\| \d+ \| R\d+ \| ([\d.]+) \|", sales, re.M)]
    return f"Thought: the units add up\nFinal Answer: {sum(units):g}"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    scripted = ScriptedLLM(replies=[sum_sheet], model=SPEC)
    monkeypatch.setattr(llm, "build_llm", lambda settings, **kwargs: scripted)
    return scripted


def gaia_rows(answer: str) -> list[dict[str, Any]]:
    return [
        {"task_id": "c526d8d6-5987-4da9-b24c-83466fa172f3", "Question": "How many units were sold in total, "
         "according to the attached spreadsheet?", "Level": 2, "Final answer": answer,
         "file_name": "c526d8d6-5987-4da9-b24c-83466fa172f3.xlsx",
         "file_path": "2023/validation/c526d8d6-5987-4da9-b24c-83466fa172f3.xlsx",
         "Annotator Metadata": {"Steps": "Open the file; add up the Units column.", "Number of steps": "2"}},
        {"task_id": "e1fc63a2-da7a-432f-be78-7c4a95598703", "Question": "A question with no attachment.",
         "Level": 1, "Final answer": "?", "file_name": "", "file_path": "",
         "Annotator Metadata": {"Steps": "", "Number of steps": ""}},
    ]


def write_gaia(folder: Path, answer: str = "1042") -> Path:
    folder.mkdir(parents=True)
    (folder / "c526d8d6-5987-4da9-b24c-83466fa172f3.xlsx").write_bytes(fx.xlsx_bytes("unused", values=UNITS))
    path = folder / "metadata.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in gaia_rows(answer)))
    return path


def run_cli(tmp_path: Path, task_file: Path) -> int:
    return main.main([str(task_file), "-o", str(tmp_path / "out" / "results.md"), "--model", SPEC,
                      "--workspace", str(tmp_path / "ws"), "--no-trace", "-q"])


def records(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]


def test_gaia_metadata_jsonl_runs_and_the_spreadsheet_sum_is_scored_correct(tmp_path: Path,
                                                                             model: ScriptedLLM) -> None:
    code = run_cli(tmp_path, write_gaia(tmp_path / "GAIA" / "2023" / "validation"))
    assert code == main.EXIT_OK
    first, second = records(tmp_path)
    assert (first["id"], first["answer"], first["expected"], first["correct"], first["level"]) == (
        "c526d8d6-5987-4da9-b24c-83466fa172f3", "1042", "1042", True, "2")
    # The real read_file converted the attachment: the scripted model only saw a Markdown table.
    read = [c for c in model.calls if len(c.messages) > 2 and "Observation" in c.messages[-1]["content"]]
    assert "## Sheet: Sales" in read[0].messages[-1]["content"]
    assert second.get("expected") is None and second.get("correct") is None  # "?" = hidden answer, unscored


def test_gaia_metadata_parquet_reads_the_same_set(tmp_path: Path, model: ScriptedLLM) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow reads .parquet question sets")
    import pyarrow.parquet as pq

    folder = tmp_path / "GAIA" / "2023" / "validation"
    write_gaia(folder)
    pq.write_table(pa.Table.from_pylist(gaia_rows("1042")), folder / "metadata.parquet")
    from_parquet = load_tasks(folder / "metadata.parquet")
    from_jsonl = load_tasks(folder / "metadata.jsonl")
    assert from_parquet == from_jsonl and from_parquet[0].file is not None
    assert run_cli(tmp_path, folder / "metadata.parquet") == main.EXIT_OK
    assert records(tmp_path)[0]["correct"] is True


def test_parquet_without_pyarrow_is_a_one_line_error_with_the_install_hint(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]
                                                                          ) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    (tmp_path / "metadata.parquet").write_bytes(b"PAR1")
    with pytest.raises(TaskFileError, match="pip install pyarrow"):
        load_tasks(tmp_path / "metadata.parquet")
    assert main.main([str(tmp_path / "metadata.parquet"), "-o", str(tmp_path / "r.md")]) == main.EXIT_USAGE
    assert "pip install pyarrow" in capsys.readouterr().err


def test_gaia_attachments_stay_in_the_set_folder(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("no")
    row = {"task_id": "t1", "Question": "Q?", "Level": 1, "Final answer": "1", "file_name": "../secret.txt"}
    (folder / "metadata.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskFileError, match="outside"):
        load_tasks(folder / "metadata.jsonl")


@pytest.mark.parametrize("name, tool", [("chart.png", "look(path='chart.png'"), ("talk.mp3", "transcribe(path="),
                                        ("data.xlsx", "read_file (documents are shown as Markdown)")])
def test_the_task_prompt_names_the_tool_that_opens_the_attachment(name: str, tool: str) -> None:
    from run.batch import Task, task_prompt

    prompt = task_prompt(Task(1, "What is shown?", "t1", file=f"/sets/{name}"))
    assert f"Attached file: {name} (in your workspace; " in prompt and tool in prompt
