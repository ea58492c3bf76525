"""The run's web state, shared by every task: URL policy, per-host turns, robots.txt and the one browser.

run/execute.py opens web_session() around the batch; scrape, look and transcribe build their fetchers from
the session, so that politeness, robots.txt and the domain rules hold across all concurrent tasks and one
headless browser serves them all. Outside a session (tests, check_setup) a tool gets a private session of
its own, whose browser starts for one render and ends with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from config import Settings
from core import cancellation
from providers.ratelimit import RateLimits
from tools.web.browser.headless import Browser, RenderedPage
from tools.web.domains import DomainRules
from tools.web.errors import RenderError
from tools.web.fetch import RETRIES, FetchResult, SafeFetcher, default_user_agent
from tools.web.policy import AddressCheck, Resolver, UrlPolicy
from tools.web.politeness import HostBusyError, HostLimiter
from tools.web.robots import ROBOTS_MAX_BYTES, ROBOTS_TIMEOUT, RobotsRules

_ACTIVE: list[WebSession] = []  # the session of the run in progress, set by web_session()


class WebSession:
    """Everything about the web that one run shares between its tasks."""

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None, shared: bool = True) -> None:
        self.settings = settings
        self.shared = shared  # False: a private session (outside a run), whose user closes it
        self.user_agent = settings.user_agent or default_user_agent()
        self.domains = DomainRules.of(settings.allow_domains, settings.block_domains)
        self.policy = UrlPolicy(settings.scrape_allow_private, resolver, address_check, self.domains)
        self.limiter = HostLimiter(settings.host_gap, settings.host_concurrency)
        self.search_limits = RateLimits()  # one limiter per search backend: a 429 pauses every task's searches
        # --replay never touches the network: the recorded pages were fetched under these rules already.
        use_robots = not (settings.ignore_robots or settings.cache_replay)
        self.robots = RobotsRules(self._get_robots, self.user_agent) if use_robots else None
        self.browser = Browser(self.policy.check, self.check_document, user_agent=self.user_agent,
                               max_pages=settings.browser_pages, max_bytes=settings.scrape_max_bytes,
                               memory_mb=settings.browser_memory_mb,
                               executable=settings.chromium, shared=shared)

    def fetcher(self, sleep: Callable[[float], None] = time.sleep, retries: int = RETRIES, *,
                robots: bool = True, holds: bool = True) -> SafeFetcher:
        """A fetcher under this run's rules: policy, domains, per-host turns, robots.txt, User-Agent.

        robots=False is for a site's documented API (MediaWiki's api.php, the arXiv API): robots.txt is
        written for crawlers, and Wikipedia's and arXiv's disallow their API paths while inviting API clients.
        holds=False leaves a Retry-After to the caller, who holds its service rather than the host."""
        s = self.settings
        check = self.robots.check if self.robots and robots else None
        return SafeFetcher(s.scrape_timeout, s.scrape_max_bytes, sleep=sleep, retries=retries, policy=self.policy,
                           limiter=self.limiter, robots=check, user_agent=self.user_agent, holds=holds)

    def check_document(self, url: str) -> None:
        """A page the browser is about to open: policy and domain rules, then robots.txt."""
        self.policy.check(url)
        if self.robots is not None:
            self.robots.check(url)

    def render(self, url: str) -> RenderedPage:
        """url rendered in the run's browser, in a turn at its host, bounded by SCRAPE_TIMEOUT and the task's time."""
        seconds = self.seconds()
        host = urlsplit(url).hostname or ""
        try:
            self.limiter.acquire(host, seconds)
        except HostBusyError as exc:
            raise RenderError(f"gave up waiting for a turn at {host} ({exc})", url) from exc
        try:
            page = self.browser.render(url, seconds)
        finally:
            self.limiter.release(host)
        if page.url != url:  # redirected while rendering: the new page's robots.txt must allow it too
            self.check_document(page.url)
        return page

    def seconds(self) -> float:
        """How long a page may take: SCRAPE_TIMEOUT, and never past the task's time (at least a second)."""
        seconds = self.settings.scrape_timeout
        left = cancellation.remaining()
        if left is not None:
            seconds = max(min(seconds, left - 1.0), 1.0)
        return seconds

    def close(self) -> None:
        """End the browser (if it was started) and everything it started."""
        self.browser.close()

    def _get_robots(self, url: str) -> FetchResult:
        """GET a robots.txt: at most ROBOTS_TIMEOUT in all, no retry, a turn at the host but no gap of its own."""
        s = self.settings
        seconds = min(ROBOTS_TIMEOUT, s.scrape_timeout)
        fetcher = SafeFetcher(seconds, ROBOTS_MAX_BYTES, retries=0, deadline=seconds, policy=self.policy,
                              limiter=self.limiter, user_agent=self.user_agent, gap=False)
        return fetcher.get(url)


@contextmanager
def web_session(settings: Settings) -> Iterator[WebSession]:
    """The run's web session: tools built inside share it; its browser ends when the block does."""
    session = WebSession(settings)
    _ACTIVE.append(session)
    try:
        yield session
    finally:
        _ACTIVE.remove(session)
        session.close()


def session_for(settings: Settings, resolver: Resolver | None = None,
                address_check: AddressCheck | None = None) -> WebSession:
    """The run's session when its web settings are these, else a private one (its browser lives for one render)."""
    if resolver is None and address_check is None and _ACTIVE and _web_fields(_ACTIVE[-1].settings) == _web_fields(
            settings):
        return _ACTIVE[-1]
    return WebSession(settings, resolver=resolver, address_check=address_check, shared=False)


_WEB_FIELDS = ("scrape_allow_private", "scrape_max_bytes", "scrape_timeout", "user_agent", "ignore_robots", "host_gap",
               "host_concurrency", "render", "browser_pages", "chromium", "allow_domains", "block_domains",
               "cache_replay", "browser_memory_mb")


def _web_fields(settings: Settings) -> tuple[object, ...]:
    """What a session is built from (a task's own max_steps or workspace does not make it another session)."""
    return tuple(getattr(settings, name) for name in _WEB_FIELDS)
