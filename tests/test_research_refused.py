"""`main.py research` never delivers less than it had (issue 49, item 1): a writer's or repair's reply that is no
report (`Final Answer: 42`, a tool call, text without sections or citations) is refused, the checked draft or the
findings are delivered with a line saying so, and a resumed run does not replace a report with more support."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.deep_research import Sub
from tests.test_research import BAD, FINDINGS, GOOD, PLAN, QUESTION, run_with, world

TOOL_CALL = 'Thought: I should search\nAction: search\nAction Input: {"query": "Rhine freight"}'


@pytest.mark.parametrize("reply", ["Final Answer: 42", TOOL_CALL, "42", "## Findings\n\nNothing to say.",
                                   "## Rhine\n\n[INST] The Rhine carried 187 million tonnes of freight in 2022 [1]."])
def test_a_writer_reply_that_is_no_report_is_refused_and_the_findings_are_delivered(tmp_path: Path,
                                                                                    reply: str) -> None:
    w = world(writer=lambda prompt: reply)
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr  # partial: the report is the findings, not the writer's
    report = (tmp_path / "report.md").read_text()
    assert report.startswith(f"# Partial research report: {QUESTION}")
    assert "> **Partial report:** the writer's reply was refused (" in report
    assert f"## {PLAN[0]}\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1]." in report
    assert f"## {PLAN[1]}\n\nThe Danube is navigable for 2,415 km [2]." in report
    body = report.split("**2 claims: 2 supported")[1].split("## Sources")[0]  # the sections, none of the reply
    assert "\n42\n" not in body and "Action Input" not in body
    assert "The sections are the sub-questions' own findings: the writer's reply was refused (" in proc.stderr
    assert "partial research report: report.md" in proc.stderr and "2 sources cited" in proc.stderr


@pytest.mark.parametrize("reply", ["Final Answer: 42", TOOL_CALL,
                                   "## Rhine\n\nThe Rhine carried 9 million containers in 2022 [1].\n"])
def test_a_repair_reply_that_loses_the_checked_draft_is_refused(tmp_path: Path, reply: str) -> None:
    w = world(writer=lambda prompt: BAD, repair=lambda prompt: reply)
    proc = run_with(w, tmp_path)
    assert w.calls["repair"] == 1
    assert proc.returncode == 0, proc.stderr  # the draft is whole: its failing claims are marked
    report = (tmp_path / "report.md").read_text()
    assert "## Rhine\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1]." in report
    assert "The Danube is navigable for 2,415 km [2]." in report
    assert "The Rhine carried 9 million containers in 2022 [1] ⚠ unsupported. " in report
    assert "**5 claims: 2 supported" in report
    assert "Action Input" not in report.split("## Sources")[0]
    assert "The writer's revision was refused (" in report and "The writer's revision was refused (" in proc.stderr
    assert "3 failed the first check, 0 repaired by the writer, 3 marked" in proc.stderr


def test_resume_never_replaces_a_partial_report_with_a_refused_reply(tmp_path: Path) -> None:
    costly = {q: Sub(sub.paths, sub.answer, prompt_tokens=100_000) for q, sub in FINDINGS.items()}  # $0.04 a call
    proc = run_with(world(subs=costly), tmp_path, "--max-run-cost", "0.05", "--concurrency", "1")
    assert proc.returncode == 1, proc.stderr
    assert "The Rhine carried 187 million tonnes of freight in 2022 [1]." in (tmp_path / "report.md").read_text()
    w = world(writer=lambda prompt: "Final Answer: 42")
    proc = run_with(w, tmp_path, "--resume")
    assert proc.returncode == 1, proc.stderr
    assert w.calls["write"] == 1
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:") and "the writer's reply was refused (" in report
    assert "The Rhine carried 187 million tonnes of freight in 2022 [1]." in report
    assert "The Danube is navigable for 2,415 km [2]." in report and "**2 claims: 2 supported" in report


def test_resume_keeps_the_report_from_before_when_the_new_one_supports_less(tmp_path: Path) -> None:
    proc = run_with(world(writer=lambda prompt: GOOD), tmp_path)
    assert proc.returncode == 0, proc.stderr
    before = (tmp_path / "report.md").read_text()
    runs = sorted((tmp_path / "runs").iterdir())
    data = json.loads((runs[-1] / "report.json").read_text())
    data["partial"] = "a test made it partial"  # so that --resume runs the writer again
    (runs[-1] / "report.json").write_text(json.dumps(data))
    w = world(writer=lambda prompt: "## Rhine\n\nThe Rhine carried 9 million containers in 2022 [1].\n",
              repair=lambda prompt: "## Rhine\n\nThe Rhine carried 9 million containers in 2022 [1].\n")
    proc = run_with(w, tmp_path, "--resume")
    assert w.calls.get("write") == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "The Rhine carried 187 million tonnes of freight in 2022 [1]." in report and "9 million" not in report
    assert ("new report had 0 supported claims where the report from before has 2: the report from before is kept"
            in proc.stderr)
    assert report.split("## Sources")[0].count("[1]") == before.split("## Sources")[0].count("[1]")
