"""serve-mcp's `deep_research` tool (run/serve_mcp.py serves it; main.py hands it this, since run/ may not
import research/): a whole research run with its checked report, returned as the report's Markdown (the
claims line, the sections, the Sources), with a progress notification as each sub-question ends."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from config import Settings
from report.markdown import TaskRecord
from report.research import SOURCES_DIR, SubQuestion, render_markdown
from research.pipeline import Progress, Research
from research.plan import MOST
from run.store import RunStore

Notify = Callable[[float, float | None, str], None]  # done, total (None: not known yet), message
MAX_BREADTH, MAX_DEPTH = 12, 4  # what a client may ask for in one call


class _Told(Progress):
    """The run's progress as MCP progress notifications: the plan, then one per sub-question that ends."""

    def __init__(self, notify: Notify | None) -> None:
        self.notify, self.total, self.done = notify, 0, 0
        self.names: dict[int, str] = {}
        self.lock = threading.Lock()

    def _tell(self, message: str) -> None:
        if self.notify is not None:
            self.notify(float(self.done), float(self.total) if self.total else None, message)

    def planned(self, plan: list[SubQuestion]) -> None:
        self.total, self.names = len(plan), {s.n: s.text for s in plan}
        self._tell(f"plan: {len(plan)} sub-questions")

    def followed_up(self, round_: int, subs: list[SubQuestion]) -> None:
        self.total += len(subs)
        self.names.update({s.n: s.text for s in subs})
        self._tell(f"round {round_}: {len(subs)} follow-up sub-question(s)")

    def on_record(self, record: TaskRecord) -> None:
        with self.lock:
            self.done += 1
            self._tell(f"sub-question {record.index} {record.status.replace('_', ' ')}: "
                       f"{self.names.get(record.index, '')}"[:300])

    def line(self, text: str) -> None:
        if text.startswith("writing"):
            self._tell(text)


class DeepResearcher:
    """deep_research(question, breadth?, depth?, docs?): a research run in the run store, its report as Markdown;
    `docs`: document folders researched with search_docs beside the web (as --docs), each one serve-mcp allows
    (run/serve_mcp.DocsAllowed checked it)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = RunStore.from_settings(settings)

    def __call__(self, question: str, breadth: int | None = None, depth: int | None = None,
                 notify: Notify | None = None, docs: tuple[Path, ...] | None = None) -> dict[str, Any]:
        breadth = max(1, min(breadth or MOST, MAX_BREADTH))
        depth = max(1, min(depth or 1, MAX_DEPTH))
        settings = replace(self.settings, docs_dirs=docs) if docs else self.settings  # search_docs reads them
        research = Research(settings, question, self.store, breadth=breadth, depth=depth, progress=_Told(notify))
        report = research.run()
        assert research.run_dir is not None
        return {"report": render_markdown(report, research.run_dir / SOURCES_DIR), "partial": report.partial,
                "sources": report.sources, "cost_usd": report.cost, "run": report.run_id,
                "sub_questions": len(report.plan), "rounds": max((s.round for s in report.plan), default=1)}
