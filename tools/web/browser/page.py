"""One task's pages in the run's browser: a browser context of its own, its tabs, and what happened on them.

TaskBrowser lives on the browser's event loop (headless.py). start() opens the task's context: cookies of
its own, a proxy password of its own (every connection passes the address policy and domain rules there),
downloads accepted. Every request of its pages passes route(): images, media and fonts are skipped, a
top-level navigation is checked with robots.txt like the renderer's, and a POST (PUT, PATCH, DELETE) to
another origin than the page's is refused (whatever --allow-domains allows), so a hostile page cannot make
the agent send what it read elsewhere. Listeners note what the model must hear of: a new tab
(followed; at most TAB_LIMIT), a dialog (answered: OK, or Cancel for a prompt), a download (moved into the
workspace's downloads/, at most SCRAPE_MAX_BYTES), a refused request, a crash. close() ends it all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.documents.confined import DEFAULT_LIMITS, DocLimits
from tools.web.browser.downloads import Downloads
from tools.web.browser.headless import SKIPPED, Browser, Job, follow_navigations
from tools.web.browser.hidden import marked_hidden
from tools.web.browser.requests import carries_body, page_url_of, send_judging_hops, write_refusal
from tools.web.browser.snapshot import RefBook, compact, parse
from tools.web.errors import BrowserUnavailableError

TAB_LIMIT = 10
SETTLE = 3.0  # longest wait, after an action, for the page's own requests to go quiet
QUIET = 0.3  # seconds without a request in flight that count as quiet
VIEWPORT = {"width": 1280, "height": 900}
DIALOG_LIMIT = 100  # dialogs of one tab in one action: more is a loop, and the tab is closed
FLOOD_LINES = 3  # events of one kind listed one by one in an observation; the rest are counted
FLOOD_WORDS = {"dialog": "dialogs answered (OK; Cancel for a prompt)", "popup": f"popups closed (at most {TAB_LIMIT} "
               "tabs)", "tab": "new tabs opened", "closed": "tabs closed by the page", "crashed": "tabs gone",
               "refused": "requests refused", "download": "downloads saved into downloads/",
               "download-count": "downloads refused (too many)", "download-refused": "downloads refused (too large)",
               "download-failed": "downloads that did not complete"}


@dataclass
class Tab:
    """One of the task's tabs: its number (kept while it is open) and its Playwright page."""

    number: int
    page: Any
    navigations: int = 0  # how often its main frame went to another document or place
    crashed: bool = False
    dialogs: int = 0  # dialogs answered since the action began


@dataclass
class TaskBrowser:
    """The task's browser context, its tabs, its refs and the events the next observation reports."""

    browser: Browser
    workspace: Path
    max_bytes: int
    budget_bytes: int = 0  # the workspace's budget (AGENT_WORKSPACE_BUDGET_MB); 0: none
    limits: DocLimits = DEFAULT_LIMITS  # a page's reading in the converter's child (AGENT_DOC_MEMORY_MB, ...)
    tabs: list[Tab] = field(default_factory=list)
    current: int = 0  # the number of the tab actions go to
    book: RefBook = field(default_factory=RefBook)
    events: list[str] = field(default_factory=list)
    url: str = "about:blank"  # the current tab's address, read from the tool's thread for the host's turn
    started: float = 0.0  # when the current action began (time.monotonic())
    _context: Any = None
    job: Job = field(default_factory=Job)  # the context's guard state (headless.py); start() makes the real one
    _password: str = ""
    _count: int = 0
    _quiet: bool = False
    _busy: set[asyncio.Task[None]] = field(default_factory=set)  # downloads and dialogs being handled
    _in_flight: set[Any] = field(default_factory=set)  # requests of the task's pages not finished yet
    _floods: dict[str, int] = field(default_factory=dict)  # kind -> events of that kind in this action
    downloads: Downloads | None = None

    async def start(self) -> None:
        """Open the task's context and its first (blank) tab."""
        self.downloads = Downloads(self.workspace, self.max_bytes, self.budget_bytes)
        self._context, self.job, self._password = await self.browser.new_context(
            accept_downloads=True, viewport=VIEWPORT)
        await self._context.route("**/*", self._route)
        self._context.on("page", self._on_page)
        self._context.on("request", lambda request: self._in_flight.add(request))
        self._context.on("requestfinished", lambda request: self._in_flight.discard(request))
        self._context.on("requestfailed", lambda request: self._in_flight.discard(request))
        await self._context.new_page()  # _on_page makes it tab 1

    async def close(self) -> None:
        """Close every tab and the context; pending downloads are dropped."""
        for task in list(self._busy):
            task.cancel()
        if self._context is not None:
            await self.browser.close_context(self._context, self._password)
            self._context = None

    @property
    def tab(self) -> Tab:
        """The tab actions go to."""
        return next(t for t in self.tabs if t.number == self.current)

    @property
    def page(self) -> Any:
        """The current tab's Playwright page."""
        return self.tab.page

    async def ensure_tab(self) -> None:
        """A blank tab when the page (or the tool, for a loop of dialogs) closed the last one."""
        if not self.tabs:
            self._quiet = True  # the tool's own blank tab: no "a new tab opened"
            try:
                await self._context.new_page()
            finally:
                self._quiet = False

    async def new_tab_if_closed(self) -> None:
        """A fresh tab when the current one crashed (open() goes on from there)."""
        if self.tab.crashed or self.page.is_closed():
            self.tabs.remove(self.tab)
            await self._context.new_page()

    def begin(self) -> None:
        """An action starts: forget the last action's refusal and where it went, count its events afresh."""
        self.started = time.monotonic()
        self.job.navigations.clear()
        for tab in self.tabs:
            tab.dialogs = 0
        if self.downloads is not None:
            self.downloads.begin_action()
        self.job.refusal = None

    async def settle(self, load_seconds: float) -> None:
        """Let the page load what the action started: the document, then until no request of the task's pages has
        been in flight for QUIET seconds (at most SETTLE more), and any download or dialog being handled."""
        with contextlib.suppress(Exception):  # a navigation still going after the wait is reported as it stands
            await self.page.wait_for_load_state("domcontentloaded", timeout=load_seconds * 1000)
        until, quiet_since = time.monotonic() + SETTLE, time.monotonic()
        while time.monotonic() < until:
            await asyncio.sleep(0.05)
            if self._in_flight or self._busy:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= QUIET:
                break
        if self._busy:  # a download still arriving: it may take the action's time
            await asyncio.wait(list(self._busy), timeout=load_seconds)
        self.url = self.page.url

    def note(self, kind: str, line: str) -> None:
        """An event for the next observation; past FLOOD_LINES of a kind in one action, only counted."""
        self._floods[kind] = self._floods.get(kind, 0) + 1
        if self._floods[kind] <= FLOOD_LINES:
            self.events.append(line)

    def drain_events(self) -> list[str]:
        """The action's events, each flood summed up in one line ("297 more dialogs answered"); then none."""
        events = self.events + [f"{n - FLOOD_LINES:,} more {FLOOD_WORDS.get(kind, kind + ' events')}"
                                for kind, n in self._floods.items() if n > FLOOD_LINES]
        self.events, self._floods = [], {}
        return events

    @property
    def open_tabs(self) -> list[Tab]:
        """The tabs whose page is still there (a crashed tab is not open)."""
        return [t for t in self.tabs if not t.crashed]

    async def snapshot(self) -> list[str]:
        """The current tab's compact snapshot (its refs become the tab's latest)."""
        try:
            async with marked_hidden(self.page):  # what a person does not see is left out
                raw = await self.page.aria_snapshot(mode="ai")
        except TypeError as exc:  # an older Playwright: no snapshot with refs
            raise BrowserUnavailableError("the browser tool needs Playwright 1.59 or later: pip install -U -r "
                                          "requirements-browser.txt", self.page.url) from exc
        return compact(parse(raw), self.current, self.book)

    async def _route(self, route: Any) -> None:
        request = route.request
        try:
            if request.resource_type in SKIPPED:
                await route.abort("blockedbyclient")
                return
            refused = await self.browser.guard(request, self.job)
            if refused is not None:
                self.note("refused", f"Refused to go to {request.url}: {refused}")
                await route.abort("blockedbyclient")
                return
            if not carries_body(request):
                await route.continue_()
                return
            if (why := write_refusal(request.method, request.url, page_url_of(request))) is not None:
                self.note("refused", why)
                await route.abort("blockedbyclient")
                return
            await send_judging_hops(route, lambda line: self.note("refused", line),
                                    lambda req, url: self.browser.guard(req, self.job, url))
        except Exception:  # noqa: BLE001 - the page closed meanwhile: Playwright's error must not reach stderr
            with contextlib.suppress(Exception):
                await route.abort("failed")

    def _on_page(self, page: Any) -> None:
        if len(self.open_tabs) >= TAB_LIMIT:
            self.note("popup", f"The page opened another tab ({page.url}); closed it: at most {TAB_LIMIT} tabs")
            self._track(page.close())
            return
        self._count += 1
        tab = Tab(self._count, page)
        self.tabs.append(tab)
        if self._count > 1 and not self._quiet:
            self.note("tab", f"A new tab opened (tab {tab.number}); now on it")
        self.current = tab.number
        follow_navigations(page, self.job)
        page.set_default_timeout(30_000)
        page.on("framenavigated", lambda frame: _count_navigation(tab, frame))
        page.on("dialog", lambda dialog: self._track(self._answer(dialog, tab)))
        page.on("download", lambda download: self._track(self._download(download)))
        page.on("crash", lambda _: self._crashed(tab))
        page.on("close", lambda _: self._closed(tab))

    def _track(self, step: Any) -> None:
        task = asyncio.ensure_future(step)
        self._busy.add(task)
        task.add_done_callback(self._busy.discard)

    async def _answer(self, dialog: Any, tab: Tab) -> None:
        said = json.dumps(" ".join(str(dialog.message).split())[:300], ensure_ascii=False)
        tab.dialogs += 1
        if tab.dialogs > DIALOG_LIMIT:  # a loop of dialogs would hold the tab for ever
            await dialog.dismiss()
            if tab.dialogs == DIALOG_LIMIT + 1:
                self.events.append(f"Tab {tab.number} kept opening dialogs ({DIALOG_LIMIT:,} in one action): "
                                   "closed it")
                self.tabs.remove(tab)
                if self.current == tab.number and self.tabs:
                    self.current = self.tabs[-1].number
                await tab.page.close()
            return
        if dialog.type == "prompt":
            await dialog.dismiss()
            self.note("dialog", f"A prompt dialog asked {said}: answered Cancel (nothing is typed into prompts)")
        else:
            await dialog.accept()
            self.note("dialog", f"A{'n' if dialog.type == 'alert' else ''} {dialog.type} dialog said {said}: "
                               "answered OK")

    async def _download(self, download: Any) -> None:
        if self.downloads is not None:
            await self.downloads.receive(download, self.note)

    def _closed(self, tab: Tab) -> None:
        if tab not in self.tabs:
            return  # closed by the tool itself
        self.tabs.remove(tab)
        self.note("closed", f"The page closed tab {tab.number}")
        if self.current == tab.number and self.tabs:
            self.current = self.tabs[-1].number

    def _crashed(self, tab: Tab) -> None:
        tab.crashed = True
        if tab.number != self.current:  # gone: only the current tab stays listed, until open() replaces it
            self.tabs.remove(tab)
        watch = self.browser.watch
        kill = watch.killed_since(self.started) if watch is not None else None
        why = watch.limit_note(kill) if watch is not None and kill is not None else "the page crashed"
        self.note("crashed", f"Tab {tab.number} is gone: {why}. Open a page again to go on")


def _count_navigation(tab: Tab, frame: Any) -> None:
    with contextlib.suppress(Exception):  # a frame of a page that is closing
        if frame.parent_frame is None:
            tab.navigations += 1
