"""The report and its records file: refusing dangerous -o paths, one run per report (a lock), stale temp files."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from core.errors import OutputError
from report.html.paths import html_path_for
from report.note import note_path
from report.paths import records_path
from tasks.taskfile import STDIN, Task


def real(path: Path) -> Path:
    """The path a write lands on: symlinks followed, made absolute."""
    return Path(os.path.realpath(path))


def prev_path(path: Path) -> Path:
    """Where the previous run's file is kept: results.md -> results.prev.md, results.jsonl -> results.prev.jsonl."""
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def check_outputs(report: Path, tasks_file: Path, tasks: Iterable[Task]) -> None:
    """Refuse a report (or its .jsonl records or .html twin) that is a directory, the tasks file or an attachment."""
    protected: dict[Path, str] = {}
    if tasks_file != STDIN:
        protected[real(tasks_file)] = "the tasks file"
    for task in tasks:
        if task.file:
            protected.setdefault(real(Path(task.file)), f"the attachment of task {task.id}")
    records = records_path(report)
    for path, role in ((report, "the report"), (records, "the report's records file"),
                       (prev_path(report), "the previous report's copy"),
                       (prev_path(records), "the previous records' copy"),
                       (html_path_for(report), "the HTML report"), (prev_path(html_path_for(report)),
                                                                    "the previous HTML report's copy"),
                       (note_path(records), "the run's note")):
        if path.is_dir() and path in (report, records):
            raise OutputError(f"{path} is a directory; -o names the report file, e.g. -o {path / 'results.md'}")
        what = protected.get(real(path))
        if what:
            hint = "choose another -o" + (" (the records of -o X.md go to X.jsonl, earlier results to "
                                          "X.prev.md and X.prev.jsonl)" if path != report else "")
            raise OutputError(f"{path} is {what}; writing {role} there would overwrite it: {hint}")


class ReportLock:
    """An exclusive lock on a report for the length of a run; a second run on it gets OutputError naming the first.

    The lock is `.results.md.lock` beside the report's target (flock, so a killed run never leaves it held).
    """

    def __init__(self, report: Path) -> None:
        target = real(report)
        self.report = report
        self.path = target.parent / f".{target.name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise OutputError naming the run holding it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while self._fd is None:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise OutputError(f"{self.report} is being written by another run ({holder}); wait for it "
                                      "to finish or choose another -o") from None
                if _same_file(fd, self.path):  # else the holder removed it between our open and flock
                    self._fd = fd
                else:
                    os.close(fd)
        except OSError as exc:
            raise OutputError(f"cannot lock {self.report} ({exc.strerror}): is its folder writable?") from exc
        started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": started, "argv": sys.argv}
        with contextlib.suppress(OSError):  # a full disk: the lock still holds, only its label is missing
            os.ftruncate(self._fd, 0)
            os.write(self._fd, (json.dumps(info) + "\n").encode())

    def release(self) -> None:
        """Remove the lock file, then let go of it."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ReportLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "details unknown"


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def remove_stale_temp_files(report: Path) -> list[Path]:
    """Delete temp files a killed run left beside the report and its records (call while holding the lock)."""
    removed: list[Path] = []
    for target in {real(report), real(records_path(report))}:
        # ours: .NAME.<8 hex>.tmp; older versions: .NAME.<8 mkstemp characters>
        pattern = re.compile(rf"^\.{re.escape(target.name)}\.(?:[0-9a-f]{{8}}\.tmp|[a-z0-9_]{{8}})$")
        with contextlib.suppress(OSError):
            for entry in target.parent.iterdir():
                if pattern.match(entry.name) and entry.is_file() and not entry.is_symlink():
                    entry.unlink(missing_ok=True)
                    removed.append(entry)
    return removed
