"""What main.run adds for spend caps (providers/budget.py) and --replay-trace (cache/trace_replay.py), in one place."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from cache.store import DB_NAME, close_all
from cache.trace_replay import TraceReplay
from config import Settings
from core.errors import ConfigError
from providers.budget import RunBudget


@dataclass
class RunExtras:
    """The run's tasks, models and settings after --replay-trace, and its spend caps."""

    tasks: list[Any]
    llm: Any
    summary_llm: Any
    settings: Settings
    budget: RunBudget | None = None
    replay: TraceReplay | None = None

    @classmethod
    def build(cls, args: argparse.Namespace, settings: Settings, tasks: list[Any], llm: Any,
              summary_llm: Any) -> RunExtras:
        """Apply --replay-trace (one task, recorded completions) and create the run's budget."""
        if settings.cache_replay and settings.cache_dir and not (settings.cache_dir / DB_NAME).is_file():
            raise ConfigError(f"--replay {settings.cache_dir}: no cache there ({DB_NAME} is missing); record one "
                              "first with --cache DIR", "cache_dir")
        extras = cls(tasks, llm, summary_llm, settings)
        if getattr(args, "replay_trace", None):
            extras.replay = TraceReplay.start(args, tasks, llm)
            extras.tasks, extras.llm, extras.summary_llm = extras.replay.tasks, extras.replay, None
            extras.settings = extras.replay.adjust(settings)
        extras.budget = RunBudget.from_settings(extras.settings, extras.llm)
        return extras

    def notes(self) -> list[str]:
        """Lines to show once at start."""
        return self.budget.notes() if self.budget else []

    def before_close(self, meta: dict[str, Any]) -> None:
        """Put the skipped-tasks line into the report's last render."""
        note = self.budget.report_note() if self.budget else None
        if note:
            meta["skipped"] = note

    def finish(self) -> int | None:
        """Print the skipped-tasks and replay lines; exit code 1 when the replay diverged, else None."""
        close_all()  # the run's cache connections (the worker threads are gone)
        note = self.budget.report_note() if self.budget else None
        for line in ([note] if note else []) + (self.replay.verdict() if self.replay else []):
            print(line, file=sys.stderr)
        return 1 if self.replay is not None and self.replay.diverged else None
