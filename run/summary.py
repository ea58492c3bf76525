"""The run's end: why it stopped (if it did), the command that resumes it, and the summary it prints."""

from __future__ import annotations

import shlex
import signal
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.text import money
from report.markdown import DONE_STATUSES, TaskRecord, plural, total_cost
from report.paths import records_path
from report.sources import without_sources
from run.progress import duration


@dataclass
class Ending:
    """How the run ended: `stopped` is the reason (None: it finished), `resume` the command that continues it."""

    stopped: str | None = None
    resume: str = ""

    def meta(self) -> dict[str, str]:
        """The report meta of a stopped run (report/stopped.py), or {}."""
        if not self.stopped:
            return {}
        return {"stopped": self.stopped, "resume": self.resume,
                "stopped_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}


def stop_reason(signum: int | None, fatal: BaseException | None, budget: Any) -> str | None:
    """Why the run ended early: a fatal model error, a stop signal, or the run's cost cap; None if it did not."""
    if fatal is not None:
        return str(fatal)
    if signum is not None:
        return "Ctrl-C (SIGINT)" if signum == signal.SIGINT else f"{signal.Signals(signum).name}"
    if budget is not None and budget.skipped:  # the run's cost cap kept tasks from starting
        return str(budget.exhausted or "the run's cost cap was reached")
    return None


def resume_command(argv: list[str] | None) -> str:
    """The exact command that continues this run: the same command line with --resume."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--resume" not in args:
        args.append("--resume")
    return command_line(args)


def command_line(args: list[str]) -> str:
    """`python main.py ARGS` as the shell reads it back (main.py as this run was started)."""
    program = sys.argv[0] if Path(sys.argv[0]).name == "main.py" else "main.py"
    return shlex.join(["python", program, *args])


def ending(signum: int | None, fatal: BaseException | None, budget: Any, argv: list[str] | None) -> Ending:
    """The run's Ending."""
    reason = stop_reason(signum, fatal, budget)
    return Ending(reason, resume_command(argv) if reason else "")


def report_paths(output: Path, html: Path | None) -> list[Path]:
    """The reports this run wrote: results.md, results.html (when written) and results.jsonl."""
    return [p for p in (output, html, records_path(output)) if p is not None and p.is_file()]


def cost_line(records: list[TaskRecord], cap: float | None) -> str:
    """`cost $0.4120 of the $1.00 cap`; `cost n/a (2 of 5 tasks without a known price; $0.0100 for the rest)`.

    `cap` is the run's cost cap when it can be enforced (None without one, or without a price to check it by).
    """
    unpriced = sum(1 for r in records if r.cost is None)
    if not unpriced:
        cost = money(total_cost(r.cost for r in records))
        return f"cost {cost}" + (f" of the {money(cap)} cap" if cap is not None else "")
    rest = sum(r.cost or 0.0 for r in records)
    return (f"cost n/a ({unpriced} of {plural(len(records), 'task')} without a known price"
            + (f"; {money(rest)} for the rest)" if rest else ")"))


def summary_lines(records: list[TaskRecord], total: int, seconds: float, cap: float | None,
                  paths: list[Path], end: Ending) -> list[str]:
    """What the run prints at its end: counts, accuracy, cost and tokens, wall time, outliers, reports."""
    by_status: dict[str, int] = {}
    for r in records:
        by_status[r.status] = by_status.get(r.status, 0) + 1
    bare = sum(without_sources(r.sourced, r.status in DONE_STATUSES) for r in records)
    head = "stopped" if end.stopped else "finished"
    counts = [f"{n} {s}" for s, n in sorted(by_status.items())] + ([f"{bare} without sources"] if bare else [])
    lines = [f"run {head} in {duration(seconds)}: {len(records)} of {total} tasks"
             + (" · " + " · ".join(counts) if counts else "")]
    graded = [r for r in records if r.correct is not None]
    if graded:
        right = sum(1 for r in graded if r.correct)
        lines.append(f"accuracy: {right}/{len(graded)} = {right / len(graded):.1%}")
    lines.append(cost_line(records, cap) + f" · {sum(r.tokens for r in records):,} tokens ("
                 f"{sum(r.prompt_tokens for r in records):,} prompt + {sum(r.completion_tokens for r in records):,}"
                 " completion)")
    if records:
        slowest = max(records, key=lambda r: r.seconds)
        dearest = max(records, key=lambda r: r.cost or 0.0)
        line = f"slowest: {slowest.id} ({slowest.seconds:.1f} s)"
        if dearest.cost:
            line += f" · most expensive: {dearest.id} ({money(dearest.cost)})"
        lines.append(line)
    if paths:
        lines.append("reports: " + " · ".join(str(p) for p in paths))
    if end.stopped:
        lines += [f"stopped: {end.stopped}", f"resume: {end.resume}"]
    return lines
