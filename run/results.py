"""Where finished tasks go: one fsync'd line per task appended to results.jsonl, results.md rendered from it."""

from __future__ import annotations

import contextlib
import math
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ResultsWriteError
from core.files import atomic_write
from report.html.paths import html_path_for
from report.markdown import TaskRecord, read_records, record_line, render_markdown
from report.note import save_note
from report.paths import records_path
from report.stopped import header_line, read_header
from run.files import ReportLock, prev_path, real, remove_stale_temp_files
from tasks.taskfile import LARGE_TASK_COUNT, Task


@dataclass
class Previous:
    """What a previous run left in the records file, as seen by this run."""

    kept: dict[str, TaskRecord] = field(default_factory=dict)  # finished tasks of this file (--resume)
    errored: dict[str, TaskRecord] = field(default_factory=dict)  # tasks of this file to run again
    others: list[TaskRecord] = field(default_factory=list)  # records of tasks not in this file
    skipped_lines: list[int] = field(default_factory=list)  # lines that are not records


def read_previous(report: Path, tasks: list[Task], resume: bool) -> Previous:
    """With --resume: the finished records of these tasks, the records of other tasks, unreadable lines."""
    if not resume:
        return Previous()
    records, skipped = read_records(records_path(report))
    by_key = {t.key: t for t in tasks}
    prev = Previous(skipped_lines=skipped)
    for key, record in records.items():
        task = by_key.get(key)
        if task is None:
            prev.others.append(record)
        else:
            record.index = task.index  # the task file may have been reordered since
            (prev.errored if record.status == "error" else prev.kept)[key] = record
    return prev


class ResultsStore:
    """Appends each finished record to the records file and renders the report at most every few seconds.

    Nothing is written before the first record, so a run that fails earlier leaves both files as they were.
    Without --resume, a non-empty previous pair is first moved to results.prev.md / results.prev.jsonl.
    """

    def __init__(self, report: Path, meta: dict[str, Any], previous: Previous, *, resume: bool,
                 render_every: float = 2.0) -> None:
        self.report, self.records_file = real(report), real(records_path(report))
        self.meta, self.previous, self.resume = meta, previous, resume
        self.records: dict[str, TaskRecord] = {**previous.errored, **previous.kept}
        self.render_every = render_every
        self.rotated: list[Path] = []
        self.rendered = False  # this run wrote the report (the summary says "wrote" only then)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._appended = 0
        self._last_render = -math.inf  # the first record renders at once
        self._render_cost = 0.0
        self._modes: dict[Path, int] = {}  # modes of the files moved aside, for their successors
        self._created = False  # this run created the records file ...
        self._opened_size = 0  # ... or found it this long
        self._rewrite = False  # rewrite the pair at close though no record was added (mark_end)

    def add(self, record: TaskRecord) -> None:
        """Save one finished record (fsync'd) and re-render the report if the last render is old enough."""
        with self._lock:
            if self._fd is not None:
                self._save(record)
                return
            try:  # the first record: if it cannot be saved, the previous files go back as they were
                self._open()
                self._save(record)
            except (OSError, ResultsWriteError) as exc:
                self._undo_open()
                failed = exc.path if isinstance(exc, ResultsWriteError) else self.records_file
                cause = exc.__cause__ if isinstance(exc, ResultsWriteError) else exc
                raise ResultsWriteError(failed, cause, None, self.records_file) from cause  # type: ignore[arg-type]

    def _save(self, record: TaskRecord) -> None:
        self._append(record)
        self.records[record.key] = record
        # Rendering is O(tasks): keep it under ~10% of the run however large the batch grows.
        if time.monotonic() - self._last_render >= max(self.render_every, 10 * self._render_cost):
            self._render()

    def close(self) -> None:
        """Render the report one last time and rewrite the records file compacted, in task order."""
        with self._lock:
            if self._fd is None:
                return
            os.close(self._fd)
            self._fd = None
            if not self._appended and not self._rewrite:
                return
            self._render()
            ordered = sorted(self.records.values(), key=lambda r: r.index) + self.previous.others
            try:  # a stopped run's file starts with the line that says so (report/stopped.py)
                atomic_write(self.records_file, header_line(self.meta) + "".join(record_line(r) for r in ordered))
            except OSError as exc:  # the appended file is complete; it is just not in task order
                raise ResultsWriteError(self.records_file, exc, len(self.records), self.records_file) from exc
            save_note(self.records_file, self.meta)  # tasks a cap skipped, for `main.py report` (report/note.py)

    def mark_end(self, fields: dict[str, Any]) -> None:
        """Record how the run ended (fields: a stopped run's meta, or {} for one that finished), so that the
        last render and the records file's first line say so (report/stopped.py).

        A run stopped before its first record writes nothing when there is no record to show (a rejected key
        at the first call leaves the previous report as it was). A resumed run with nothing left to do that
        finishes a stopped one rewrites both without the stopped line.
        """
        with self._lock:
            self.meta.update(fields)
            self._rewrite = bool(fields) or bool(read_header(self.records_file))
            if self._fd is None and self.records and self._rewrite:
                try:
                    self._open()
                except OSError as exc:
                    self._undo_open()
                    raise ResultsWriteError(self.records_file, exc, len(self.records), self.records_file) from exc

    def render(self) -> None:
        """Render the report now (a resumed run with nothing left to do)."""
        with self._lock:
            self._render()

    def _open(self) -> None:
        if not self.resume:
            self._rotate_previous()
        self._created = not self.records_file.exists()
        self._fd = os.open(self.records_file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        if self.records_file in self._modes:
            os.fchmod(self._fd, self._modes[self.records_file])
        self._opened_size = os.fstat(self._fd).st_size
        self._ensure_newline()

    def _undo_open(self) -> None:
        """Put the records file and the moved-aside pair back as they were before this run's first record."""
        with contextlib.suppress(OSError):
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None
            if self._created:
                self.records_file.unlink(missing_ok=True)
            else:
                os.truncate(self.records_file, self._opened_size)
            for original in (self.report, self.records_file, html_path_for(self.report)):
                if prev_path(original) in self.rotated:
                    os.replace(prev_path(original), original)
        self.rotated.clear()
        self.records = {**self.previous.errored, **self.previous.kept}
        self._appended = 0

    def _rotate_previous(self) -> None:
        """Move a non-empty previous report aside (results.prev.md / .jsonl / .html), remembering their modes."""
        for path in (self.report, self.records_file, html_path_for(self.report)):
            if path.is_file() and path.stat().st_size > 0:
                self._modes[path] = stat.S_IMODE(path.stat().st_mode)
                os.replace(path, prev_path(path))
                self.rotated.append(prev_path(path))

    def _ensure_newline(self) -> None:
        """A run killed mid-write may have left half a line: start ours on a fresh line."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")

    def _append(self, record: TaskRecord) -> None:
        assert self._fd is not None
        data = record_line(record).encode("utf-8")
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)  # no half line: the file stays as it was before this record
            raise ResultsWriteError(self.records_file, exc, len(self.records), self.records_file) from exc
        self._appended += 1

    def _render(self) -> None:
        started = time.monotonic()
        meta = dict(self.meta)
        if self.previous.others:
            meta["note"] = (f"{self.records_file.name} also keeps {len(self.previous.others)} record(s) of tasks "
                            "that are not in this run's task file.")
        ordered = sorted(self.records.values(), key=lambda r: r.index)
        try:
            atomic_write(self.report, render_markdown(ordered, meta))
            if self.report in self._modes:
                os.chmod(self.report, self._modes.pop(self.report))
        except OSError as exc:  # the previous report stays as it was (atomic_write removed its temp file)
            raise ResultsWriteError(self.report, exc, len(self.records), self.records_file) from exc
        self.rendered = True
        self._last_render = time.monotonic()
        self._render_cost = self._last_render - started


@contextlib.contextmanager
def open_results(report: Path, tasks: list[Task], *, resume: bool, meta: dict[str, Any]) -> Iterator[ResultsStore]:
    """Lock the report, clear stale temp files, read what --resume keeps; close (final render) on the way out."""
    with ReportLock(report):
        remove_stale_temp_files(report)
        store = ResultsStore(report, meta, read_previous(report, tasks, resume), resume=resume)
        try:
            yield store
        finally:
            store.close()


def start_notices(store: ResultsStore, tasks: list[Task], todo: list[Task], *, quiet: bool = False) -> list[str]:
    """What the user should know before the run starts: what --resume kept, unreadable records, a huge file.

    With quiet, only the warnings.
    """
    prev, name = store.previous, store.records_file.name
    lines = []
    if prev.kept:
        lines.append(f"resuming: {len(prev.kept)} finished task(s) kept, {len(todo)} to run")
    if prev.others:
        lines.append(f"resuming: {len(prev.others)} record(s) in {name} are of tasks not in this task file; "
                     "they are kept there (not shown in the report)")
    if prev.skipped_lines:
        shown = ", ".join(map(str, prev.skipped_lines[:10])) + (" …" if len(prev.skipped_lines) > 10 else "")
        lines.append(f"warning: {name} line(s) {shown} are not valid records and were skipped "
                     "(they are left out when this run rewrites the file)")
    if len(tasks) > LARGE_TASK_COUNT:
        lines.append(f"warning: {len(tasks):,} tasks in one file; this is a long and possibly costly run "
                     "(Ctrl-C stops it, --resume continues)")
    return [line for line in lines if line.startswith("warning:")] if quiet else lines


def finish_notices(store: ResultsStore) -> list[str]:
    """What the run moved aside."""
    if not store.rotated:
        return []
    return [f"the previous results were kept as {', '.join(p.name for p in store.rotated)}"]
