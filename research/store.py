"""A research run in the run store (run/store.py, kind `research`): its plan, what each sub-question found.

Beside the run's run.json, settings.json, results.jsonl (one record per sub-question), traces/ and
workspace/, a research run keeps::

    plan.json            the question, its files, the sub-questions and what planning and writing cost
    found/<task id>.json each sub-question's read sources with the text each gave (the agent's `sources` event)
    report.json          the delivered report (report/research.py); sources/<n>.txt the text source n gave

so `--resume` re-runs only the sub-questions without a finished record and `main.py report RUN` rebuilds
report.md and report.html.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.files import atomic_write
from report.markdown import TaskRecord, read_records, record_line
from report.research import SubQuestion
from run.store import Run, RunStore

PLAN_FILE, FOUND_DIR = "plan.json", "found"
KIND = "research"


class ResearchRun:
    """The files of one research run."""

    def __init__(self, run: Run) -> None:
        self.run = run

    @property
    def dir(self) -> Path:
        """The run's directory."""
        return self.run.dir

    def save_plan(self, question: str, files: list[str], sub_questions: list[str], spent: float | None,
                  rounds: list[int], followed: list[int]) -> None:
        """Write plan.json: the sub-questions, each one's round (--depth) and the rounds already followed up."""
        data = {"question": question, "files": files, "sub_questions": sub_questions, "spent": spent,
                "rounds": rounds, "followed": followed}
        atomic_write(self.dir / PLAN_FILE, json.dumps(data, ensure_ascii=False, indent=1) + "\n")

    def plan(self) -> dict[str, Any] | None:
        """plan.json's content, or None before the plan was made."""
        path = self.dir / PLAN_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def save_found(self, task_id: str, sources: list[dict[str, Any]]) -> None:
        """Keep what one sub-question read, with the text of each source."""
        atomic_write(self.dir / FOUND_DIR / f"{task_id}.json", json.dumps(sources, ensure_ascii=False) + "\n")

    def found(self, task_id: str) -> list[dict[str, Any]]:
        """What a sub-question read ([] when nothing was kept)."""
        path = self.dir / FOUND_DIR / f"{task_id}.json"
        return list(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else []

    def records(self) -> dict[str, TaskRecord]:
        """The sub-questions' records so far, by task key (a later record of a key wins)."""
        return read_records(self.run.records)[0]

    def add_record(self, record: TaskRecord) -> None:
        """Append a finished sub-question's record to the run's results.jsonl."""
        with self.run.records.open("a", encoding="utf-8") as f:
            f.write(record_line(record))


def save_rounds(research: ResearchRun, question: str, files: list[Path], plan: list[SubQuestion],
                followed: list[int], spent: float | None) -> None:
    """plan.json for a plan of one or more rounds."""
    research.save_plan(question, [str(f) for f in files], [s.text for s in plan], spent, [s.round for s in plan],
                       followed)


def stored_plan(stored: dict[str, Any]) -> list[SubQuestion]:
    """The plan plan.json keeps, each sub-question in its round (1 when it names none)."""
    rounds = list(stored.get("rounds") or [])
    return [SubQuestion(i, str(q), round=int(rounds[i - 1]) if i <= len(rounds) else 1)
            for i, q in enumerate(stored["sub_questions"], start=1)]


def resumable(store: RunStore, question: str) -> Run | None:
    """The newest research run of this question in the store (None when there is none)."""
    wanted = " ".join(question.split())
    for run in store.list_runs():
        if run.info.kind != KIND:
            continue
        plan = ResearchRun(run).plan()
        if plan is not None and " ".join(str(plan.get("question", "")).split()) == wanted:
            return run
    return None
