"""The browser tool's downloads: counted against the task's workspace budget as they arrive.

Chromium writes a download into the browser's own directory first; Downloads (one per task) watches its
file grow and cancels it, removing what arrived, as soon as it would take the workspace past its budget
(AGENT_WORKSPACE_BUDGET_MB, counted as the python tool counts it: allocated blocks of every entry) or past
SCRAPE_MAX_BYTES. A finished download is moved into the workspace's downloads/ (a free name, through the
link-refusing writes of the file tools). At most PER_ACTION downloads are taken per action and PER_TASK
per task; the others are cancelled at once. Every outcome is one line for the model; refusals past the
first few are counted, not listed (the TaskBrowser's floods).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.safe_open import WorkspacePathError, create_new_file
from tools.sandbox import budget
from tools.web.scrape import free_names, safe_file_name

PER_ACTION = 5
PER_TASK = 30
POLL = 0.05  # seconds between two looks at an arriving download
_BLOCK = 4096

Note = Callable[[str, str], None]  # (kind, line): a line for the model, counted past the first few of its kind


def blocks(size: int) -> int:
    """The bytes a file of `size` takes in the budget's count (allocated blocks, at least one)."""
    return max(-(-size // _BLOCK) * _BLOCK, _BLOCK)


class Downloads:
    """One task's downloads: the counts, the bytes arriving, and the budget they must fit."""

    def __init__(self, workspace: Path, max_bytes: int, budget_bytes: int) -> None:
        self.workspace, self.max_bytes, self.budget_bytes = workspace, max_bytes, budget_bytes
        self.in_action = self.in_task = 0
        self._arriving: dict[int, int] = {}  # id(download) -> bytes so far

    def begin_action(self) -> None:
        """A new action: PER_ACTION more downloads may come."""
        self.in_action = 0

    async def receive(self, download: Any, note: Note) -> None:
        """Take one download into the workspace, or refuse it (and remove what arrived), saying which."""
        name = safe_file_name(download.suggested_filename or "download")
        self.in_action += 1
        self.in_task += 1
        try:
            if self.in_action > PER_ACTION or self.in_task > PER_TASK:
                await _quietly(download.cancel())
                per = "action" if self.in_action > PER_ACTION else "task"
                note("download-count", f"Refused the download of {name}: at most "
                                       f"{PER_ACTION if per == 'action' else PER_TASK} downloads per {per}")
                return
            await self._arrive(download, name, note)
        finally:
            self._arriving.pop(id(download), None)
            await _quietly(download.delete())

    async def _arrive(self, download: Any, name: str, note: Note) -> None:
        partial = _arriving_at(download)
        used = self._used()
        finished = asyncio.ensure_future(download.failure())
        while True:
            size = _size(partial)
            self._arriving[id(download)] = size
            why = self._too_much(size, used, id(download))
            if why:
                finished.cancel()
                await _quietly(download.cancel())
                for left in (partial, _growing(partial)):
                    with contextlib.suppress(OSError):
                        left.unlink()
                note("download-refused", f"Refused the download of {name}: {why}; what had arrived was removed")
                return
            if finished.done():
                break
            await asyncio.sleep(POLL)
        failure = finished.result()
        if failure:
            note("download-failed", f"A download of {name} did not complete ({failure}); nothing was saved")
            return
        await self._save(download, name, note)

    async def _save(self, download: Any, name: str, note: Note) -> None:
        path = Path(await download.path())
        try:
            size = path.stat().st_size
            if why := self._too_much(size, self._used(), id(download)):
                note("download-refused", f"Refused the download of {name}: {why}; nothing was saved")
                return
            saved = create_new_file(self.workspace, "downloads", free_names(name), path.read_bytes())
        except (OSError, WorkspacePathError) as exc:
            note("download-failed", f"A download of {name} could not be saved: {exc}")
            return
        left = f"; the workspace holds {budget.human(self._used())} of its {budget.human(self.budget_bytes)} " \
               "budget" if self.budget_bytes > 0 else ""
        note("download", f"Downloaded {name} ({size:,} bytes), saved to {saved} in the workspace: open it with "
                         f"read_file{left}")

    def _used(self) -> int:
        """The workspace's bytes now, counted exactly (the python tool's count, without stopping early)."""
        return budget.usage(str(self.workspace)).bytes if self.workspace.is_dir() else 0

    def _too_much(self, size: int, used: int, key: int) -> str | None:
        """Why a download of `size` bytes so far cannot be kept (`used`: the workspace's bytes), or None."""
        if size > self.max_bytes:
            return f"it is larger than {self.max_bytes:,} bytes (SCRAPE_MAX_BYTES)"
        others = sum(blocks(n) for k, n in self._arriving.items() if k != key)
        if self.budget_bytes > 0 and used + others + blocks(size) > self.budget_bytes:
            return (f"it would take the workspace past its budget ({budget.human(used)} used, "
                    f"{budget.human(self.budget_bytes)} in all: AGENT_WORKSPACE_BUDGET_MB)")
        return None


def _arriving_at(download: Any) -> Path:
    """Where Chromium writes the download (Playwright's artifact path; the file grows as NAME.crdownload)."""
    impl = getattr(download, "_impl_obj", download)  # the async API's object wraps Playwright's own
    with contextlib.suppress(AttributeError, TypeError):
        return Path(impl._artifact._initializer["absolutePath"])  # noqa: SLF001 - no public API says it
    return Path("/nonexistent")


def _growing(path: Path) -> Path:
    """The name Chromium gives a download while it arrives."""
    return path.with_name(path.name + ".crdownload")


def _size(path: Path) -> int:
    """The bytes of an arriving download so far (Chromium may write it under a temporary suffix)."""
    sizes = [p.stat().st_size for p in (path, _growing(path)) if p.is_file()]
    return max(sizes, default=0)


async def _quietly(step: Any) -> None:
    with contextlib.suppress(Exception):  # a download that already ended or was removed
        await step
