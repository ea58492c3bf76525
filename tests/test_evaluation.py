"""Scoring answers GAIA-style, reading .jsonl question sets, and the shipped offline set's answers."""

from __future__ import annotations

import csv
import itertools
import json
import statistics
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from run.batch import TaskFileError, load_tasks
from tasks.scoring import clean_answer, score_answer
from tasks.taskfile import parse_jsonl_tasks, sanitize_id

ROOT = Path(__file__).resolve().parent.parent
OFFLINE_SET = ROOT / "benchmarks" / "offline_set.jsonl"


@pytest.mark.parametrize(("answer", "expected"), [
    ("1000", "1,000"), ("1,000", "1000"), ("$12.5", "12.50"), ("17%", "17"), ("17 %", "17"),
    ("1.0", "1"), ("-5", "-5"), ("−5", "-5"), ("-$5", "-5"), ("$-5", "-5"), ("1e3", "1000"),
    ("€1,234.50", "1234.5"), ("USD 12.50", "12.5"), ("12.50 USD", "12.5"), ("12 km", "12"),
    ("12 km/h", "12"), ("25 m²", "25"), ("12 m", "12"), ("42 apples", "42"), ("0", "0"),
])
def test_numbers_are_compared_as_numbers(answer: str, expected: str) -> None:
    assert score_answer(answer, expected)


@pytest.mark.parametrize(("answer", "expected"), [
    ("5", "-5"), ("five", "5"), ("", "0"), ("12.5", "12.4999"), ("12 million", "12"), ("12M", "12"),
    ("12k", "12"), ("about 12", "12"), ("1, 2", "12"), ("12 13", "12"), ("1,5", "15"),
])
def test_wrong_or_non_numbers_fail_a_number(answer: str, expected: str) -> None:
    assert not score_answer(answer, expected)


@pytest.mark.parametrize(("answer", "expected", "correct"), [
    ("a, b, c", "a, b, c", True),
    ("A;B ; c", "a, b, c", True),
    ("c, b, a", "a, b, c", False),  # order matters
    ("a, b", "a, b, c", False),
    ("a, b, c, d", "a, b, c", False),
    ("10,000; 20,000", "10000, 20000", True),  # thousands separators do not split
    ("10000, 20000", "10,000; 20,000", True),
    ("South, $3,177", "South, 3177", True),
    ("South, 3178", "South, 3177", False),
    ("3, 4.50", "3, 4.5", True),
    ("3, x", "3, 4.5", False),
    ("New York, St. Louis", "new york, st louis", True),
])
def test_lists_are_compared_element_by_element_in_order(answer: str, expected: str, correct: bool) -> None:
    assert score_answer(answer, expected) is correct


@pytest.mark.parametrize(("answer", "expected", "correct"), [
    ("PARIS", "Paris", True),
    ("  Sea gull ", "seagull", True),
    ("St. Louis", "St Louis", True),
    ("Washington, D.C.", "Washington DC", True),
    ("Washington DC", "Washington, D.C.", True),  # a comma before an abbreviation is no list separator
    ("Rome", "Paris", False),
    ("Paris, France", "Paris", False),
    ("2024-07", "2024-07", True),
    ("“Oakhaven”", "Oakhaven", True),
])
def test_strings_ignore_case_whitespace_and_punctuation(answer: str, expected: str, correct: bool) -> None:
    assert score_answer(answer, expected) is correct


@pytest.mark.parametrize("answer", [
    "42.", '"42"', "'42'", "`42`", "**42**", "Final Answer: 42", "**Final Answer:** 42.",
    "Thought: done\nFinal Answer: 42", "final answer : 42", "Answer: 42", ' "42". ',
])
def test_answer_wrappers_and_label_remnants_are_ignored(answer: str) -> None:
    assert clean_answer(answer) == "42"
    assert score_answer(answer, "42")
    assert score_answer(answer.replace("42", "Oakhaven"), "oakhaven")


def write(path: Path, *objects: object, raw: str = "") -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects) + raw, encoding="utf-8")
    return path


def test_jsonl_fields_become_tasks(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_text("a,b\n1,2\n")
    path = write(tmp_path / "set.jsonl",
                 {"id": "q1", "question": " What is a? ", "answer": 1.5, "file": "data/table.csv",
                  "level": 2},
                 {"id": "q 2/../x", "question": "List them.", "answer": ["a", 3]},
                 {"question": "No answer here."})
    tasks = parse_jsonl_tasks(path.read_text(), path)
    assert [t.index for t in tasks] == [1, 2, 3]
    first, second, third = tasks
    assert (first.id, first.text, first.expected, first.level) == ("q1", "What is a?", "1.5", "2")
    assert first.file == str((tmp_path / "data" / "table.csv").resolve())
    assert second.id == "q-2-..-x" and "/" not in second.id
    assert (second.expected, second.file, second.level) == ("a, 3", None, None)
    assert third.expected is None and third.id.startswith("task-003-")


def test_gaia_metadata_field_names_are_understood(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    path = write(tmp_path / "metadata.jsonl",
                 {"task_id": "c61d22de", "Question": "Q?", "Level": "1", "Final answer": "egalitarian",
                  "file_name": "f.txt"},
                 {"task_id": "17b5a6a3", "Question": "R?", "Level": 3, "Final answer": "17", "file_name": ""})
    a, b = parse_jsonl_tasks(path.read_text(), path)
    assert (a.id, a.text, a.level, a.expected) == ("c61d22de", "Q?", "1", "egalitarian")
    assert Path(a.file or "").name == "f.txt"
    assert (b.level, b.expected, b.file) == ("3", "17", None)


def test_blank_lines_are_skipped_and_line_numbers_still_count_them(tmp_path: Path) -> None:
    raw = '\n   \n{"id": "a", "question": "B?"}\n'
    path = write(tmp_path / "set.jsonl", {"id": "a", "question": "A?"}, raw=raw)
    with pytest.raises(TaskFileError) as info:
        parse_jsonl_tasks(path.read_text(), path)
    assert "line 4: duplicate id 'a'" in str(info.value)


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "x", "question": "Q?"', "line 2: not valid JSON"),
    ('["Q?"]', "line 2: expected a JSON object"),
    ('{"id": "x", "answer": "1"}', "line 2: missing 'question'"),
    ('{"id": "x", "question": "   "}', "line 2: 'question' must be a non-empty string"),
    ('{"id": "ok", "question": "Q2?"}', "line 2: duplicate id 'ok'"),
    ('{"id": "ok!", "question": "Q2?"}', "line 2: duplicate id 'ok'"),  # same id once sanitized
    ('{"id": "y", "question": "Q?"}', "line 2: same question as line 1"),
    ('{"id": "y", "question": "Q2?", "file": "missing.csv"}', "line 2: attachment 'missing.csv' not found"),
    ('{"id": "y", "question": "Q2?", "answer": ""}', "line 2: 'answer' is empty"),
    ('{"id": "y", "question": "Q2?", "answer": {"a": 1}}', "line 2: 'answer' must be a string"),
    ('{"id": ["y"], "question": "Q2?"}', "line 2: 'id' must be a string or an integer"),
])
def test_bad_lines_raise_task_file_errors_with_line_numbers(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path / "set.jsonl", {"id": "ok", "question": "Q?"}, raw=line + "\n")
    with pytest.raises(TaskFileError) as info:
        load_tasks(path)
    assert message in str(info.value)
    assert info.value.path == path


def test_sanitize_id_keeps_ids_safe_as_file_names() -> None:
    assert sanitize_id("../../etc/passwd") == "etc-passwd"
    assert sanitize_id("Task #7: sales") == "Task-7-sales"
    assert sanitize_id("x" * 100) == "x" * 64
    assert sanitize_id("///") == ""


def test_load_tasks_reads_jsonl_sets_and_still_reads_text_files(tmp_path: Path) -> None:
    jsonl = write(tmp_path / "set.jsonl", {"id": "a", "question": "A?", "answer": "1"})
    text = tmp_path / "tasks.txt"
    text.write_text("First task\nstill first\n\n# comment\nSecond task\n")
    assert [(t.id, t.expected) for t in load_tasks(jsonl)] == [("a", "1")]
    assert [t.text for t in load_tasks(text)] == ["First task\nstill first", "Second task"]
    assert all(t.expected is None for t in load_tasks(text))


# ---- the shipped offline set ------------------------------------------------------------------------
# The answers were generated by a script; these recompute each one from the attachment in another way.


def _sales(folder: Path) -> list[dict[str, str]]:
    with (folder / "sales.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _rev(row: dict[str, str]) -> float:
    return int(row["units"]) * float(row["unit_price"])


def _top(values: dict[str, float]) -> str:
    ranked = sorted(values, key=values.__getitem__, reverse=True)
    assert values[ranked[0]] != values[ranked[1]], "a tie makes the question ambiguous"
    return ranked[0]


def _sales_answers(sales: list[dict[str, str]]) -> dict[str, str]:
    product: dict[str, float] = defaultdict(float)
    month: dict[int, float] = defaultdict(float)
    growth: dict[str, float] = defaultdict(float)
    for r in sales:
        product[r["product"]] += _rev(r)
        if r["returned"] == "no":
            m = int(r["date"][5:7])
            month[m] += _rev(r)
            growth[r["region"]] += _rev(r) if m > 6 else -_rev(r)
    region = _top(growth)
    best_month = int(_top({str(m): month[m] - month[m - 1] for m in range(2, 13)}))
    return {
        "offline-01": str(sum(r["region"] == "West" for r in sales)),
        "offline-02": str(sum(int(r["units"]) for r in sales)),
        "offline-06": f"{sum(_rev(r) for r in sales if r['date'][5:7] in ('04', '05', '06')):.2f}",
        "offline-07": _top(product),
        "offline-12": f"{region}, {round(growth[region])}",
        "offline-13": datetime(2024, best_month, 1).strftime("%B"),
    }


def _city_answers(cities: list[dict[str, Any]]) -> dict[str, str]:
    pop: Counter[str] = Counter()
    area: dict[str, float] = defaultdict(float)
    for c in cities:
        pop[c["country"]] += c["population"]
        area[c["country"]] += c["area_km2"]
    density = {k: pop[k] / area[k] for k in pop}
    corvath = [c["elevation_m"] for c in cities if c["country"] == "Corvath"]
    return {
        "offline-03": max(cities, key=lambda c: c["population"])["name"],
        "offline-05": str(sum(c["coastal"] for c in cities)),
        "offline-08": f"{sum(corvath) / len(corvath):.1f}",
        "offline-11": ", ".join(c["name"] for c in sorted(cities, key=lambda c: c["founded"])[:3]),
        "offline-15": f"{_top(density)}, {round(max(density.values()))}",
    }


def _log_answers(log: list[list[str]]) -> dict[str, str]:
    errors = [f for f in log if f[1] == "ERROR"]
    stamps = [datetime.fromisoformat(f[0].replace("Z", "+00:00")) for f in errors]
    search_ok = [int(f[6].split("=")[1]) for f in log if f[4] == "/api/search" and f[5] == "status=200"]
    return {
        "offline-04": str(len(errors)),
        "offline-09": _top(dict(Counter(f[2] for f in errors))),
        "offline-10": str(statistics.median(search_ok)),
        "offline-14": str(max(int((b - a).total_seconds()) for a, b in itertools.pairwise(stamps))),
    }


def _recompute(folder: Path) -> dict[str, str]:
    log = [line.split() for line in (folder / "server.log").read_text().splitlines()]
    return {**_sales_answers(_sales(folder)), **_city_answers(json.loads((folder / "cities.json").read_text())),
            **_log_answers(log)}


def test_offline_set_loads_with_levels_and_small_attachments() -> None:
    tasks = load_tasks(OFFLINE_SET)
    assert len(tasks) == 15
    assert {t.level for t in tasks} == {"1", "2", "3"}
    assert all(t.expected for t in tasks)
    files = {Path(t.file) for t in tasks if t.file}
    assert {f.name for f in files} == {"sales.csv", "cities.json", "server.log"}
    assert all(t.file for t in tasks)
    assert all(f.stat().st_size < 50_000 for f in files)
    assert all(Path(t.file or "").name in t.text or "attached" in t.text for t in tasks)


def test_offline_set_answers_match_a_recomputation_from_the_attachments() -> None:
    tasks = {t.id: t for t in load_tasks(OFFLINE_SET)}
    recomputed = _recompute(OFFLINE_SET.parent / "offline_set")
    assert set(recomputed) == set(tasks)
    for task_id, value in recomputed.items():
        expected = tasks[task_id].expected or ""
        assert score_answer(value, expected), (task_id, value, expected)
        assert not score_answer("0", expected), task_id  # a wrong answer would not pass
