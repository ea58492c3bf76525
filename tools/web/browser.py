"""One headless Chromium per run, shared by every task: render a page and return its DOM as HTML.

The browser runs on an event loop of its own thread (Playwright's objects belong to the loop that made
them); tasks hand it pages to render from any thread and at most `max_pages` render at once. Each render
gets a fresh browser context (no cookies or storage survive it), blocks service workers and downloads,
and skips images, media and fonts. Every connection goes through the run's guard proxy (browser_proxy.py),
which applies scrape's address policy and domain rules; the main document is also checked here first, with
robots.txt, so a refusal is named clearly. Time and size are bounded, and close() ends every process the
browser started and removes its profile, whatever state the driver is in.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tools import processes
from tools.web.browser_launch import (
    FLAGS,
    BrowserGroup,
    browser_env,
    browser_processes,
    choose_executable,
    driver_artifacts,
    group_leader,
    kill_all,
    playwright_missing,
    profile_dir,
)
from tools.web.browser_proxy import GuardProxy, ProxyLog
from tools.web.errors import BlockedURLError, BrowserUnavailableError, FetchError, RenderError

SETTLE = 5.0  # longest wait, after the document loaded, for the page's scripts to finish fetching
LAUNCH_TIMEOUT = 30.0
CLOSE_TIMEOUT = 10.0
GONE_WAIT = 2.0  # longest wait for killed browser processes to be gone before their files are removed
SKIPPED = frozenset({"image", "media", "font"})  # not needed for the text: never fetched


@dataclass
class RenderedPage:
    """The DOM of a rendered page as HTML, its final URL and title, and what the guards refused on the way."""

    url: str
    html: str
    title: str
    status: int | None = None
    refused: dict[str, str] = field(default_factory=dict)
    truncated: bool = False


@dataclass
class _Job:
    refusal: FetchError | None = None


class Browser:
    """A lazily started headless Chromium; render() from any thread, close() at the end of the run."""

    def __init__(self, check: Callable[[str], str | None], main_check: Callable[[str], None], *,
                 user_agent: str, max_pages: int = 2, max_bytes: int = 10_000_000,
                 executable: str | None = None, shared: bool = True) -> None:
        self.check, self.main_check = check, main_check  # every connection / the main document
        self.user_agent, self.max_pages, self.max_bytes = user_agent, max(max_pages, 1), max_bytes
        self.executable, self.shared = executable, shared
        self.failure: str | None = None  # why the browser cannot start, once that is known
        self.markers: list[str] = []  # the run dir and the profile: every browser process names one
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pw: Any = None
        self._browser: Any = None
        self._proxy: GuardProxy | None = None
        self._pages: asyncio.Semaphore | None = None
        self._group: BrowserGroup | None = None
        self._proxy_settings: dict[str, str] = {}

    def render(self, url: str, seconds: float) -> RenderedPage:
        """Render url (navigation bounded by `seconds`, then SETTLE for scripts); RenderError on failure."""
        if urlsplit(url).scheme not in ("http", "https"):  # file:// and the like would never reach the proxy
            raise BlockedURLError(f"only http:// and https:// pages are rendered (not {url[:60]!r})", url)
        loop = self._start()
        future = asyncio.run_coroutine_threadsafe(self._render(url, seconds), loop)
        try:
            return future.result(seconds * 2 + SETTLE + 10)  # the coroutine times itself out first
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise RenderError(f"the browser did not finish within {seconds:g} s", url) from exc
        finally:
            if not self.shared:
                self.close()

    def close(self) -> None:
        """End the browser, its driver and the proxy; kill any process of it that is left; remove its files."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None:
            with contextlib.suppress(Exception):  # a dead or hung driver: its processes are killed below
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(CLOSE_TIMEOUT)
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(CLOSE_TIMEOUT)
        kill_all(browser_processes(self.markers))
        if self._group is not None:
            processes.unregister(self._group)  # type: ignore[arg-type]
            self._group = None
        self._remove_files()
        self.markers = []

    def _remove_files(self) -> None:
        """Remove the run's browser directories once its killed processes are gone (also from a signal handler)."""
        markers = [m for m in self.markers if m]
        until = time.monotonic() + GONE_WAIT
        while (left := browser_processes(markers)) and time.monotonic() < until:
            kill_all(left)  # the crash handler has a process group of its own; a dying process may still write
            time.sleep(0.02)
        for marker in markers:
            shutil.rmtree(marker, ignore_errors=True)

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._starting:  # the first caller launches; the others wait for it, then share the browser
            with self._lock:
                if self.failure:
                    raise BrowserUnavailableError(self.failure, "")
                if self._loop is not None:
                    return self._loop
            missing = playwright_missing()
            if missing:
                self.failure = missing
                raise BrowserUnavailableError(missing, "")
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_run_loop, args=(loop,), name="browser", daemon=True)
            thread.start()
            with self._lock:
                self._loop, self._thread = loop, thread
            try:
                asyncio.run_coroutine_threadsafe(self._launch(), loop).result(LAUNCH_TIMEOUT + 10)
            except Exception as exc:  # noqa: BLE001 - any launch failure means: no rendering in this run
                self.close()
                self.failure = f"the headless browser did not start ({_first_line(exc)})"
                raise BrowserUnavailableError(self.failure, "") from exc
            return loop

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright  # heavy optional dependency: loaded when first used

        run_dir = Path(tempfile.mkdtemp(prefix="agent-browser-"))
        self.markers.append(str(run_dir))
        self._proxy = GuardProxy(self.check, self.max_bytes)
        proxy = {"server": await self._proxy.start(), "bypass": "<-loopback>",  # loopback goes through it too
                 "username": self._proxy.user, "password": self._proxy.password}
        self._proxy_settings = proxy
        self._pw = await async_playwright().start()
        executable = choose_executable(self._pw.chromium.executable_path, self.executable)
        before = driver_artifacts()
        env = browser_env(run_dir)
        if not env["TMPDIR"].startswith(str(run_dir)):
            self.markers.append(env["TMPDIR"])  # a short temporary directory of its own: removed at close too
        self._browser = await self._pw.chromium.launch(
            executable_path=executable, headless=True, args=list(FLAGS), env=env,
            handle_sigint=False, handle_sigterm=False, handle_sighup=False, proxy=proxy,
            chromium_sandbox=os.geteuid() != 0,  # Chromium refuses its sandbox as root
            downloads_path=str(run_dir / "downloads"), timeout=LAUNCH_TIMEOUT * 1000)
        self._pages = asyncio.Semaphore(self.max_pages)
        made = driver_artifacts() - before
        if len(made) == 1:  # the driver's own scratch directory: removed with ours if the driver cannot
            self.markers.append(made.pop())
        leader = [pid for pid in browser_processes(self.markers) if group_leader(pid)]
        if leader:
            self._group = BrowserGroup(leader[0])
            self.markers.append(profile_dir(leader[0]) or "")
            processes.register(self._group)  # type: ignore[arg-type]  # Ctrl-C kills it with the tool processes
            processes.after_kill(self._group, self._remove_files)  # type: ignore[arg-type]  # ... and its files

    async def _render(self, url: str, seconds: float) -> RenderedPage:
        assert self._pages is not None and self._proxy is not None
        async with asyncio.timeout(seconds * 2 + SETTLE), self._pages:
            password, log = self._proxy.open_job()  # this context's own proxy password: its own log
            context = await self._browser.new_context(
                service_workers="block", accept_downloads=False, user_agent=self.user_agent, locale="en-US",
                viewport={"width": 1280, "height": 1600}, proxy={**self._proxy_settings, "password": password})
            try:
                page = await self._visit(context, url, seconds, log)
            finally:
                await _quietly(context.close())
                self._proxy.close_job(password)
        page.refused = dict(log.refused)
        return page

    async def _visit(self, context: Any, url: str, seconds: float, log: ProxyLog) -> RenderedPage:
        from playwright.async_api import Error as PlaywrightError

        job = _Job()
        await context.route("**/*", lambda route: self._route(route, job))
        page = await context.new_page()
        page.set_default_timeout(seconds * 1000)
        try:
            response = await page.goto(url, wait_until="domcontentloaded", timeout=seconds * 1000)
        except PlaywrightError as exc:
            if job.refusal is not None:
                raise job.refusal from None
            raise RenderError(f"the browser could not load the page ({_first_line(exc)})", url) from exc
        final = urlsplit(page.url)
        refused = log.refused.get(f"{final.hostname}:{final.port or (443 if final.scheme == 'https' else 80)}")
        if refused:  # the document itself was redirected somewhere the proxy refused: its 403 is not the page
            raise BlockedURLError(refused, page.url)
        await _quietly(page.wait_for_load_state("networkidle", timeout=SETTLE * 1000))
        html = await page.content()
        cut = len(html) > self.max_bytes
        return RenderedPage(page.url, html[: self.max_bytes], await page.title(),
                            response.status if response is not None else None, truncated=cut)

    async def _route(self, route: Any, job: _Job) -> None:
        request = route.request
        if request.resource_type in SKIPPED:
            await route.abort("blockedbyclient")
            return
        if request.is_navigation_request() and request.frame.parent_frame is None:
            try:  # the main document: address policy, domain rules and robots.txt, refused with their reason
                await asyncio.get_running_loop().run_in_executor(None, self.main_check, request.url)
            except FetchError as exc:
                job.refusal = exc
                await route.abort("blockedbyclient")
                return
        await route.continue_()

    async def _shutdown(self) -> None:
        if self._browser is not None:
            await _quietly(self._browser.close())
        if self._pw is not None:
            await _quietly(self._pw.stop())
        if self._proxy is not None:
            await self._proxy.close()
        self._browser = self._pw = None


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


async def _quietly(step: Any) -> None:
    """Await a clean-up step whose failure changes nothing (the page or browser is already gone)."""
    with contextlib.suppress(Exception):  # closing something already closed, or a settle wait that timed out
        await step


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
