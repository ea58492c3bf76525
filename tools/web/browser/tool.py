"""The browser tool: operate a page (click, type, select, check, press, scroll, tabs, downloads) through element refs.

One page per task, in the run's browser (headless.py), kept between steps and closed at the task's end
(close(), which the agent calls however the task ends; Ctrl-C and the run's end kill the browser itself).
Each call runs one action (actions.py) in the task's own browser context (page.py) and
the observation says what was done and what happened (a navigation, a new tab, a download saved to
downloads/NAME, a dialog answered, a request refused), then shows the page as a compact accessibility
snapshot with refs (snapshot.py). A page shown is a source like any other: numbered, `[n] Title —
URL`, and checked in citations. The same guards as the renderer hold for every request, with robots.txt
and the host's turn for what the model does; no file: or javascript: URL is opened, and the model has no
way to run JavaScript of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from config import Settings
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.browser.actions import ACTIONS, ActionError, Outcome, perform
from tools.web.browser.headless import SETTLE
from tools.web.browser.launch import playwright_missing
from tools.web.browser.page import TaskBrowser
from tools.web.errors import BrowserUnavailableError, DomainRefusedError, FetchError, RobotsRefusedError
from tools.web.html_page import refusal_of
from tools.web.policy import AddressCheck, Resolver
from tools.web.politeness import HostBusyError
from tools.web.session import WebSession, session_for

CLOSE_WAIT = 10.0
QUIET = frozenset({"snapshot", "find", "read", "tabs", "tab", "close_tab"})  # no request of their own: no turn


class BrowserTool(Tool):
    """A real browser page the model operates step by step; refs come from the snapshot after each action."""

    name = "browser"
    description = (
        'Operate a page in a real browser (one per task). {"action":"open","url":...}; each action shows the page as '
        'lines like `- button "Next" [ref=e12]`. Then click, type (text, submit), select (value), check a ref; '
        "press (key), scroll, back, find (text), read, snapshot, tabs, tab.")
    parameters = {
        "type": "object",
        "properties": {"action": {"enum": list(ACTIONS)}, "url": {"type": "string"}, "ref": {"type": "string"},
                       "text": {"type": "string"}, "submit": {"type": "boolean"}, "value": {"type": "string"},
                       "checked": {"type": "boolean"}, "key": {"type": "string"},
                       "direction": {"enum": ["down", "up"]}, "part": {"type": "integer", "minimum": 1},
                       "tab": {"type": "integer"}},
        "required": ["action"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, settings: Settings, *, web: WebSession | None = None,
                 resolver: Resolver | None = None, address_check: AddressCheck | None = None) -> None:
        self.workspace = Path(workspace)
        self.settings = settings
        self.guard = SecretGuard(settings)
        self.web = web or session_for(settings, resolver, address_check)
        self._page: TaskBrowser | None = None

    def unavailable(self) -> str | None:
        """Why there is no browser here: SCRAPE_RENDER=off, or Playwright is not installed (with the fix)."""
        if self.settings.render == "off":
            return "the browser is off here (SCRAPE_RENDER=off)"
        return playwright_missing()

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """One action; an observation with the page's state, or `Error: ...` (with a new snapshot when it helps)."""
        action = str(kwargs["action"])
        if self.settings.cache_replay:
            return "Error: the browser is not used under --replay (it would reach the network)"
        try:
            for name in ("url", "text", "value"):
                if isinstance(kwargs.get(name), str):
                    self.guard.check(kwargs[name], "URL" if name == "url" else "text to type")
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        url = str(kwargs.get("url") or "").strip()
        seconds = self.web.seconds()
        try:
            with self._turn(action, url, seconds):
                seen = self.web.browser.run(lambda: self._perform(kwargs, seconds), seconds * 2 + SETTLE + 10)
        except (RobotsRefusedError, DomainRefusedError) as exc:
            refused = refusal_of(exc, url or exc.url)
            if refused is not None:
                raise refused from exc
            return f"Error: {exc}"
        except BrowserUnavailableError as exc:
            return f"Error: the browser cannot run here: {exc}"
        except (FetchError, HostBusyError) as exc:
            return f"Error: could not open {url}: {exc}" if action == "open" else f"Error: {exc}"
        except TimeoutError:
            return (f"Error: the browser did not finish {action!r} within {seconds * 2 + SETTLE:g} s; the page may "
                    'still be busy: {"action": "snapshot"} shows where it is')
        return self._observation(*seen)

    def close(self) -> None:
        """The task ended: close its tabs and context; a browser of its own (outside a run) ends too."""
        page, self._page = self._page, None
        if page is not None:
            with contextlib.suppress(Exception):  # a dead browser: the run's end or Ctrl-C kills its processes
                self.web.browser.run(page.close, CLOSE_WAIT)
        if not self.web.shared:
            self.web.close()

    async def _perform(self, args: dict[str, Any], seconds: float) -> tuple[Outcome | ActionError, list[str], str,
                                                                            str, list[int], int]:
        if self._page is None:
            page = TaskBrowser(self.web.browser, self.workspace, self.settings.scrape_max_bytes,
                               max(self.settings.workspace_budget_mb, 0) * 2**20, DocLimits.of(self.settings))
            await page.start()
            self._page = page
        page = self._page
        await page.ensure_tab()
        before = (page.current, page.tab.navigations)
        result: Outcome | ActionError
        try:
            result = await perform(page, args, seconds)
        except ActionError as exc:
            result = exc
        except FetchError:
            page.events = []  # the refusal itself is the observation
            raise
        except Exception as exc:  # noqa: BLE001 - Playwright's own (a crashed page): in words the model can act on
            result = ActionError(str(page.browser.failure_of(exc, page.page.url, page.job, page.started)))
        await page.ensure_tab()
        events = page.drain_events()
        url, title = page.page.url, ""
        with contextlib.suppress(Exception):  # a page that crashed or is closing has no title
            title = await page.page.title()
        if (page.current, page.tab.navigations) != before and before[0] == page.current and url.startswith("http") \
                and args["action"] != "open" and not isinstance(result, ActionError):
            events.insert(0, f"Navigated to {url}")
        page.url = url
        return result, events, url, title, [t.number for t in page.open_tabs], page.current

    @contextlib.contextmanager
    def _turn(self, action: str, url: str, seconds: float) -> Iterator[None]:
        """The host's turn for an action that may send requests (per-host politeness, shared with every tool)."""
        where = url if action == "open" else (self._page.url if self._page is not None else "")
        host = urlsplit(where).hostname if where.startswith(("http://", "https://")) else None
        if action in QUIET or not host:
            yield
            return
        with self.web.limiter.turn(host, seconds):
            yield

    def _observation(self, result: Outcome | ActionError, events: list[str], url: str, title: str, tabs: list[int],
                     current: int) -> str | ToolOutput:
        head = [f"On tab {current}; {len(tabs)} tabs open ({', '.join(map(str, tabs))})."] if len(tabs) > 1 else []
        head += [e if e.endswith((".", ":", ")")) else e + "." for e in events]
        web_page = url.startswith(("http://", "https://"))
        if isinstance(result, ActionError):
            shown = "\n".join(result.lines[:200]) if result.lines else ""
            text = "\n".join([f"Error: {result}", *head, *([shown] if shown else [])])
            return ToolOutput(text, read=[Read(url, title, shown)] if shown and web_page else [])
        where = [] if web_page else ['The tab shows no web page: Chromium could not load one there ({"action": "back"} '
                                     f"returns) ({url})" if url.startswith("chrome-error:") else f"The tab is on {url}"]
        text = "\n".join([result.done, *head, *where, result.body])
        read = [Read(url, title, result.source)] if result.source and web_page else []
        return ToolOutput(text, read=read)
