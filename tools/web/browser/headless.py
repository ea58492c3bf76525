"""One headless Chromium per run, shared by every task: render a page and return its DOM as HTML.

The browser runs on an event loop of its own thread (Playwright's objects belong to the loop that made
them); tasks hand it pages to render from any thread and at most `max_pages` render at once. Each render
gets a fresh browser context (no cookies or storage survive it), blocks service workers and downloads,
and skips images, media and fonts. Every connection goes through the run's guard proxy (proxy.py),
which applies scrape's address policy and domain rules; the main document is also checked here first, with
robots.txt, so a refusal is named clearly. Time and size are bounded, a page's memory too (memory.py),
and close() ends every process the browser started and removes its files, whatever state the driver is in.
Whatever fails inside Playwright comes out as a RenderError (or the refusal that caused it), never as
Playwright's own error. The browser tool (tool.py) opens its task's pages in the same browser
through new_context() and run().
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from tools import processes
from tools.web.browser.launch import (
    FLAGS,
    BrowserGroup,
    browser_processes,
    choose_executable,
    driver_artifacts,
    group_leader,
    kill_all,
    playwright_missing,
    prepare_launch,
    profile_dir,
)
from tools.web.browser.memory import MemoryWatch
from tools.web.browser.proxy import GuardProxy, ProxyLog
from tools.web.errors import BlockedURLError, BrowserUnavailableError, FetchError, RenderError

SETTLE = 5.0  # longest wait, after the document loaded, for the page's scripts to finish fetching
LAUNCH_TIMEOUT = 30.0
CLOSE_TIMEOUT = 10.0
GONE_WAIT = 2.0  # longest wait for killed browser processes to be gone before their files are removed
SKIPPED = frozenset({"image", "media", "font"})  # not needed for the text: never fetched
T = TypeVar("T")


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
class Job:
    """One browser context's guard state: what refused its last navigation, the top-level URLs it went to."""

    log: ProxyLog = field(default_factory=ProxyLog)
    refusal: FetchError | None = None
    navigations: list[str] = field(default_factory=list)


class Browser:
    """A lazily started headless Chromium; render() from any thread, close() at the end of the run."""

    def __init__(self, check: Callable[[str], str | None], main_check: Callable[[str], None], *,
                 user_agent: str, max_pages: int = 2, max_bytes: int = 10_000_000, memory_mb: int = 1024,
                 executable: str | None = None, shared: bool = True) -> None:
        self.check, self.main_check = check, main_check  # every connection / the main document
        self.user_agent, self.max_pages, self.max_bytes = user_agent, max(max_pages, 1), max_bytes
        self.memory_mb, self.executable, self.shared = memory_mb, executable, shared
        self.failure: str | None = None  # why the browser cannot start, once that is known
        self.markers: list[str] = []  # the run dir and the profile: every browser process names one
        self.downloads: Path | None = None  # where Chromium writes the browser tool's downloads first
        self.watch: MemoryWatch | None = None
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
        limit, started = seconds * 2 + SETTLE, time.monotonic()
        try:
            return self.run(lambda: self._render(url, seconds, limit), limit + 10)
        except FetchError:
            raise
        except TimeoutError as exc:
            raise RenderError(f"the browser gave up on the page after {time.monotonic() - started:.0f} s (it may "
                              f"take {seconds:g} s to load, SCRAPE_TIMEOUT, and {limit:g} s in all with its "
                              "scripts and the wait for a free page)", url) from exc
        except Exception as exc:  # noqa: BLE001 - Playwright's own errors become the renderer's
            raise RenderError(f"the browser failed ({first_line(exc)})", url) from exc
        finally:
            if not self.shared:
                self.close()

    def run(self, work: Callable[[], Coroutine[Any, Any, T]], seconds: float) -> T:
        """Start the browser if needed and run work() on its loop; TimeoutError after `seconds` (work is cancelled)."""
        loop = self._start()
        future = asyncio.run_coroutine_threadsafe(work(), loop)
        try:
            return future.result(seconds)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    async def new_context(self, **options: Any) -> tuple[Any, Job, str]:
        """A browser context with a proxy password of its own (its Job logs what the guards refused), routed
        through guard(); close it with close_context(context, password)."""
        assert self._proxy is not None and self._browser is not None
        password, log = self._proxy.open_job()
        job = Job(log)
        try:
            context = await self._browser.new_context(
                service_workers="block", user_agent=self.user_agent, locale="en-US",
                proxy={**self._proxy_settings, "password": password}, **options)
        except BaseException:
            self._proxy.close_job(password)
            raise
        return context, job, password

    async def close_context(self, context: Any, password: str) -> None:
        """Close a context from new_context(); its proxy password is no longer accepted."""
        await _quietly(context.close())
        if self._proxy is not None:
            self._proxy.close_job(password)

    async def guard(self, request: Any, job: Job, url: str | None = None) -> FetchError | None:
        """The refusal of a top-level navigation (address policy, domain rules, robots.txt) to url (a redirect
        hop of it) or its own URL, else None; noted in job."""
        if not (request.is_navigation_request() and is_top_level(request)):
            return None
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.main_check, url or request.url)
        except FetchError as exc:
            job.refusal = exc
            return exc
        return None

    def failure_of(self, exc: BaseException | None, url: str, job: Job, started: float) -> FetchError:
        """Why a page failed, in the renderer's words: its memory, the refusal of where it went, or the error."""
        watch = self.watch
        kill = watch.killed_since(started) if watch is not None else None
        if watch is not None and kill is not None:
            return RenderError(watch.limit_note(kill), url)
        if job.refusal is not None:
            return job.refusal
        target = job.navigations[-1] if job.navigations else url
        refused = job.log.refused.get(host_port(target))
        if refused:  # the proxy refused where the page went (a redirect, a script's navigation)
            return BlockedURLError(refused, target)
        why = first_line(exc) if exc is not None else "it showed Chromium's error page"
        return RenderError(f"the browser could not load {target} ({why})", url)

    def close(self) -> None:
        """End the browser, its driver and the proxy; kill any process of it that is left; remove its files."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None and not self.markers:
            return  # never started: nothing to end
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
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
                self.failure = f"the headless browser did not start ({first_line(exc)})"
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
        launch = prepare_launch(run_dir, executable or self._pw.chromium.executable_path)
        self.markers += [d for d in (str(launch.own), launch.env["TMPDIR"]) if not d.startswith(str(run_dir))]
        self.downloads = launch.downloads
        before = driver_artifacts()
        self._browser = await self._pw.chromium.launch(
            executable_path=launch.executable, headless=True, args=list(FLAGS), env=launch.env,
            handle_sigint=False, handle_sigterm=False, handle_sighup=False, proxy=proxy,
            chromium_sandbox=launch.sandbox, downloads_path=str(launch.downloads), timeout=LAUNCH_TIMEOUT * 1000)
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
            self.watch = MemoryWatch(leader[0], self.memory_mb)
            self.watch.start()

    async def _render(self, url: str, seconds: float, limit: float) -> RenderedPage:
        assert self._pages is not None
        async with asyncio.timeout(limit), self._pages:
            context, job, password = await self.new_context(
                accept_downloads=False, viewport={"width": 1280, "height": 1600})
            try:
                page = await self._visit(context, url, seconds, job)
            finally:
                await self.close_context(context, password)
        page.refused = dict(job.log.refused)
        return page

    async def _visit(self, context: Any, url: str, seconds: float, job: Job) -> RenderedPage:
        from playwright.async_api import Error as PlaywrightError

        await context.route("**/*", lambda route: self._route(route, job))
        page = await context.new_page()
        follow_navigations(page, job)
        page.set_default_timeout(seconds * 1000)
        started = time.monotonic()
        try:
            response = await page.goto(url, wait_until="domcontentloaded", timeout=seconds * 1000)
            await _quietly(page.wait_for_load_state("networkidle", timeout=SETTLE * 1000))
            html, title = await page.content(), await page.title()
        except PlaywrightError as exc:
            raise self.failure_of(exc, url, job, started) from None
        if urlsplit(page.url).scheme not in ("http", "https"):  # chrome-error://: where the page went failed
            raise self.failure_of(None, url, job, started)
        refused = job.log.refused.get(host_port(page.url))
        if refused:  # the document itself was redirected somewhere the proxy refused: its 403 is not the page
            raise BlockedURLError(refused, page.url)
        cut = len(html) > self.max_bytes
        return RenderedPage(page.url, html[: self.max_bytes], title,
                            response.status if response is not None else None, truncated=cut)

    async def _route(self, route: Any, job: Job) -> None:
        try:
            if route.request.resource_type in SKIPPED or await self.guard(route.request, job) is not None:
                await route.abort("blockedbyclient")
            else:
                await route.continue_()
        except Exception:  # noqa: BLE001 - the page closed meanwhile: Playwright's error must not reach stderr
            await _quietly(route.abort("failed"))

    async def _shutdown(self) -> None:
        if self._browser is not None:
            await _quietly(self._browser.close())
        if self._pw is not None:
            await _quietly(self._pw.stop())
        if self._proxy is not None:
            await self._proxy.close()
        self._browser = self._pw = None


def follow_navigations(page: Any, job: Job) -> None:
    """Note in job every URL the page's main frame is sent to (redirect hops included), so a failure names it."""
    page.on("request", lambda request: job.navigations.append(request.url)
            if request.is_navigation_request() and is_top_level(request) else None)


def is_top_level(request: Any) -> bool:
    """Whether a navigation request is for a page's main frame (a popup's first request, whose frame does not
    exist yet, is: it opens a page of its own)."""
    try:
        return request.frame.parent_frame is None
    except Exception:  # noqa: BLE001 - Playwright: "Frame for this navigation request is not available"
        return True


def host_port(url: str) -> str:
    """host:port of a URL, as the guard proxy logs its refusals."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


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


def first_line(exc: BaseException) -> str:
    """An error's first line, at most 300 characters (Playwright's errors go on with a call log)."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
