"""A memory bound for the browser's pages: a watchdog kills a page's renderer that grows past the limit.

An rlimit does not hold for Chromium (V8 reserves terabytes of address space it never uses) and a cgroup
needs privileges the agent may not have, so a thread looks at the browser's processes a few times a second
and kills (SIGKILL) any renderer whose own memory (RssAnon + RssShmem in /proc/PID/status: what it
allocated, not the shared program) is above SCRAPE_BROWSER_MEMORY_MB. The page crashes; the render or the
browser action that used it fails with the line `limit_note()` writes, and the browser goes on serving
the other pages.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_TYPE = re.compile(rb"(?:^|[\s\0])--type=([\w-]+)")
INTERVAL = 0.2  # seconds between two looks at the browser's renderers
REFRESH = 5.0  # seconds between two walks of the whole browser for its zygotes (which start its renderers)


@dataclass(frozen=True)
class Kill:
    """A renderer the watchdog killed: its process id, the megabytes it held, when (time.monotonic())."""

    pid: int
    mb: int
    at: float


class MemoryWatch:
    """Kills the browser's renderers (descendants of `leader` started with --type=renderer) above `limit_mb`."""

    def __init__(self, leader: int, limit_mb: int, interval: float = INTERVAL) -> None:
        self.leader, self.limit_mb, self.interval = leader, limit_mb, interval
        self.kills: list[Kill] = []
        self._zygotes: list[int] = []
        self._refresh_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Watch from a daemon thread until stop()."""
        self._thread = threading.Thread(target=self._loop, name="browser-memory", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the watch (quickly: the thread wakes at once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)

    def killed_since(self, started: float) -> Kill | None:
        """The last renderer killed at or after `started` (a time.monotonic() value), if any."""
        return next((k for k in reversed(self.kills) if k.at >= started), None)

    def limit_note(self, kill: Kill) -> str:
        """What a page that was killed for its memory tells the model and the user."""
        return (f"the page used more than the browser's memory limit ({kill.mb:,} MB held, the limit is "
                f"{self.limit_mb:,} MB per page: SCRAPE_BROWSER_MEMORY_MB), so the browser closed it")

    def check_once(self) -> list[Kill]:
        """Kill every renderer above the limit now; returns what was killed."""
        killed = []
        if time.monotonic() >= self._refresh_at or not self._zygotes:
            self._zygotes = [pid for pid in descendants(self.leader, _zygote_or_browser) if _kind(pid) == "zygote"]
            self._refresh_at = time.monotonic() + REFRESH
        for pid in {p for zygote in self._zygotes for p in descendants(zygote, _zygote_or_browser)}:
            if _kind(pid) != "renderer":
                continue
            mb = private_mb(pid)
            if mb > self.limit_mb:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(Kill(pid, mb, time.monotonic()))
        self.kills.extend(killed)
        return killed

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if not Path(f"/proc/{self.leader}").exists():
                return
            self.check_once()


def descendants(pid: int, into: Callable[[int], bool] = lambda child: True) -> list[int]:
    """Every live descendant of pid (children of all its threads), looking into a child only when into(child)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError, ValueError):
                children = [int(c) for c in (task / "children").read_text().split()]
                found += children
                todo += [c for c in children if into(c)]
    return found


def private_mb(pid: int) -> int:
    """The memory pid allocated itself (RssAnon + RssShmem), in MB; 0 when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    kb = sum(int(line.split()[1]) for line in lines if line.startswith(("RssAnon:", "RssShmem:")))
    return kb // 1024


def _zygote_or_browser(pid: int) -> bool:
    """Whether a process may start renderers (the walk skips the renderers', GPU's and utilities' many threads)."""
    return _kind(pid) in ("", "zygote")


def _kind(pid: int) -> str:
    """Chromium's --type of a process ('' for the browser itself; 'gone' when it exited)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "gone"
    found = _TYPE.search(args)  # Chromium's children rewrite their command line into one space-separated string
    return found.group(1).decode(errors="replace") if found else ""
