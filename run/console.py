"""What the CLI shows while it runs: a rich progress bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, TextIO

from agent import Event
from core.text import money, terminal_safe, truncate_middle
from prompt.protocol import cut_at_observation
from report.markdown import DONE_STATUSES, TaskRecord, plural
from report.sources import WITHOUT_SOURCES, without_sources
from run.progress import PlainTicker, Tally
from sources.check import claims_line
from tasks.taskfile import Task


class ConsoleReporter:
    """Turns agent events and finished records into progress output on stderr."""

    def __init__(self, total: int, *, verbose: bool = False, quiet: bool = False,
                 stream: TextIO | None = None, cap: float | None = None, priced: bool = True) -> None:
        self.total, self.verbose, self.quiet = total, verbose, quiet
        self.stream = stream or sys.stderr
        self.done = 0
        self.tally = Tally(total, cap)  # where the run stands (run/progress.py)
        self.tally.unpriced = not priced  # the model's price is unknown: its spend shows n/a from the start
        self._lock = threading.Lock()
        self._progress: Any = None
        self._bar: Any = None
        self._ticker: PlainTicker | None = None
        self._closed = False  # the stream's reader went away (`2>&1 | head`): the run goes on silently
        self._warned: set[str] = set()
        if quiet:
            return
        if not verbose and self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            # On the stream checked above (stderr), not rich's default stdout, which may be a pipe or a file.
            self._progress = Progress(TextColumn("tasks"), BarColumn(bar_width=20), _status_column(self.tally),
                                      transient=False, console=Console(file=self.stream))
            self._bar = self._progress.add_task("tasks", total=total)
        elif total > 1:  # CI, a log file: a plain line every few tasks or seconds
            self._ticker = PlainTicker(self.tally, self.line)

    def __enter__(self) -> ConsoleReporter:
        if self._progress is not None:
            self._progress.start()
        if self._ticker is not None:
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        if self._progress is not None:
            self._progress.stop()

    def line(self, text: str) -> None:
        """Print a line (through the progress bar when one is shown), control characters shown escaped: a page,
        a model or a tool cannot move the cursor, retitle the window or rewrite a line printed before."""
        text = terminal_safe(text)
        with self._lock:
            if self._closed:
                return
            try:
                if self._progress is not None:
                    self._progress.console.print(text, markup=False, highlight=False)
                else:
                    print(text, file=self.stream, flush=True)
            except BrokenPipeError:
                self._closed = True

    def on_event(self, task: Task, event: Event) -> None:
        """Count model calls for the progress line; with -v, stream each completion and observation, and each
        retry, timeout, failed call and long wait of the model. A warning is shown once a run, also without -v."""
        self.tally.on_event(task.id, event)
        if event.kind == "warning" and not self.quiet:
            self._warn_once(task.id, str(event.data.get("warning") or ""))
        if not self.verbose:
            return
        tag = f"[{task.id} step {event.step}]"
        notice = call_notice(event)
        if notice:
            self.line(f"{tag} {notice}")
        elif event.kind == "step_start":
            self.line(f"{tag} ...")
        elif event.kind == "llm_call":
            # what the agent used: anything after a made-up "Observation:" is never acted on
            waited = event.data.get("rate_wait") or 0.0  # the shared rate limit held the call
            note = f" (waited {waited:.1f} s for the rate limit)" if waited >= 0.1 else ""
            self.line(f"{tag} {event.data['model']}{note}: {_indented(cut_at_observation(event.data['completion']))}")
        elif event.kind == "tool_call":
            obs = truncate_middle(str(event.data.get("observation", "")), 800)
            self.line(f"{tag} Observation: {_indented(obs)}")
        elif event.kind == "summary":
            self.line(f"{tag} (older steps folded into the running summary)")

    def _warn_once(self, task_id: str, warning: str) -> None:
        kind = re.sub(r"[\d,]+", "", warning)  # the same warning of every task (other figures): shown once
        if warning and kind not in self._warned:
            self._warned.add(kind)
            self.line(f"warning ({task_id}): {warning}")

    def on_record(self, record: TaskRecord) -> None:
        """Report one finished task."""
        self.done += 1
        self.tally.on_record(record)
        if self._progress is not None:
            self._progress.update(self._bar, advance=1)
        if self.quiet:
            return
        self.line(f"[{self.done}/{self.total}] {record.id}: {record.status}{reason_clause(record)} · "
                  f"{plural(record.steps, 'step')} · "
                  f"{record.tokens:,} tokens · {money(record.cost)} · {record.seconds:.1f} s" + sources_note(record))
        for failure in record.tool_failures:  # each failed tool call, under its task (a dead search backend shows)
            self.line(f"    step {failure.get('step')} · {failure.get('tool')} failed: {failure.get('error')}")
        if self._ticker is not None:
            self._ticker.on_record()


def _indented(untrusted: str) -> str:
    """A model's or a tool's text with its later lines indented: none can pass for a line of the run's own."""
    return "\n    ".join(terminal_safe(untrusted.strip()).splitlines())


def call_notice(event: Event) -> str:
    """A model call's retry, timeout, failure or long wait as one line ("" for other events)."""
    d = event.data
    if event.kind == "llm_retry":
        return (f"{d.get('model')}: attempt {d.get('attempt')} in {d.get('wait', 0):g} s (max_tokens "
                f"{d.get('max_tokens')}) after: {d.get('error')}")
    if event.kind == "llm_timeout":
        return f"{d.get('model')}: no answer within {d.get('seconds', 0):g} s (max_tokens {d.get('max_tokens')})"
    if event.kind == "llm_error":
        return f"{d.get('model')}: the call failed: {str(d.get('error', '')).splitlines()[0]}"
    if event.kind == "llm_waiting":
        return f"{d.get('model')}: still waiting for the reply ({d.get('seconds')} s)"
    return ""


def _status_column(tally: Tally) -> Any:
    """A rich column that shows the tally's line, re-read at every refresh (elapsed time and ETA move)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class StatusColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(tally.line())

    return StatusColumn()


REASON_CHARS = 160  # the reason on a task's line is cut here, at a word; the report keeps it whole
_ENDED_BY = {"error": "", "budget": "a spend cap was reached", "time_limit": "the task's time limit was reached"}


def reason_clause(record: TaskRecord) -> str:
    """` (why)` for a task that ended in error, on a spend cap or at its time limit: the reason's first clause."""
    if record.status not in _ENDED_BY:
        return ""
    text = (record.error or _ENDED_BY[record.status]).strip()
    clause = re.split(r"; |\. |\n", text, maxsplit=1)[0].rstrip(".") if text else "no reason was recorded"
    if len(clause) > REASON_CHARS:
        clause = clause[:REASON_CHARS].rsplit(" ", 1)[0] + " …"
    return f" ({clause})"


def sources_note(record: TaskRecord) -> str:
    """What the task's line adds about sources: `⚠ answered without sources`, or its failing citations."""
    if without_sources(record.sourced, record.status in DONE_STATUSES):
        return f" · ⚠ {WITHOUT_SOURCES}"
    failing = [c for c in record.citations if c.get("verdict") not in ("supported", "unchecked")]
    return f" · {len(failing)} of {len(record.citations)} citations fail the check" if failing else ""


def sources_summary(records: list[TaskRecord]) -> list[str]:
    """The end-of-run lines about sources: citations by verdict, and answers given without reading a source."""
    answered = [r for r in records if r.status in DONE_STATUSES]
    bare = [r for r in answered if without_sources(r.sourced, True)]
    lines = [f"citations: {claims_line([c for r in records for c in r.citations])}"] if records else []
    if bare:
        lines.append(f"warning: {len(bare)} of {len(answered)} answered tasks were {WITHOUT_SOURCES} "
                     f"({', '.join(r.id for r in bare[:10])}{' …' if len(bare) > 10 else ''}): their answers come "
                     "from the model's memory")
    return lines
