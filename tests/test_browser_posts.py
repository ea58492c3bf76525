"""A page's data goes only to its own origin, whatever --allow-domains (AGENT_ALLOW_DOMAINS) allows (issue 58.9).

The rule is judged where the browser tool's pages send requests (tools/web/browser/page.py's route, and
tools/web/browser/requests.py for each redirect hop); Playwright's route and request are stood in for here, so
this runs without Chromium (tests/test_browser_tool_guards.py drives the same page in a real browser).
An allow list that names both the page's site and the collector does not let the page post to the collector.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from config import load_settings
from tools.web.browser.page import TaskBrowser
from tools.web.domains import DomainRules

SHOP, COLLECTOR = "http://shop.test:8080", "http://collector.test:9090"


@dataclass
class FakeRequest:
    url: str
    method: str = "POST"
    post_data_buffer: bytes = b"email=me%40example.org&notes=what+the+agent+read"
    resource_type: str = "document"
    page_url: str = f"{SHOP}/exfil"

    @property
    def frame(self) -> Any:
        return type("Frame", (), {"page": type("Page", (), {"url": self.page_url})()})()


@dataclass
class FakeResponse:
    status: int
    headers: dict[str, str]


@dataclass
class FakeRoute:
    """Playwright's route: what the agent did with the request (sent, fulfilled, aborted)."""

    request: FakeRequest
    replies: list[FakeResponse] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    done: str = ""

    async def fetch(self, url: str, method: str, post_data: bytes, max_redirects: int) -> FakeResponse:
        self.sent.append(f"{method} {url}")
        return self.replies.pop(0) if self.replies else FakeResponse(200, {})

    async def fulfill(self, response: FakeResponse) -> None:
        self.done = f"fulfilled {response.status}"

    async def abort(self, reason: str) -> None:
        self.done = f"aborted {reason}"

    async def continue_(self) -> None:
        self.done = "continued"


class FakeBrowser:
    async def guard(self, request: Any, job: Any, url: str | None = None) -> None:
        return None  # the address policy and the domain rules let everything through here


def routed(tmp_path: Path, route: FakeRoute) -> tuple[FakeRoute, list[str]]:
    page = TaskBrowser(FakeBrowser(), tmp_path, 2**20)  # type: ignore[arg-type]
    asyncio.run(page._route(route))
    return route, page.events


def allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DomainRules:
    """The run's domain rules with AGENT_ALLOW_DOMAINS naming the shop and the collector."""
    monkeypatch.setenv("AGENT_ALLOW_DOMAINS", "shop.test,collector.test")
    monkeypatch.setenv("AGENT_ENV_FILE", "/nonexistent.env")
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    rules = DomainRules.of(settings.allow_domains, settings.block_domains)
    assert rules.refusal("collector.test") is None and rules.refusal("shop.test") is None
    return rules


def test_a_post_to_another_origin_is_refused_with_allow_domains_naming_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    allow_list(tmp_path, monkeypatch)
    route, events = routed(tmp_path, FakeRoute(FakeRequest(f"{COLLECTOR}/collect")))
    assert route.done == "aborted blockedbyclient" and route.sent == []
    assert events == [f"Refused a POST to {COLLECTOR} from a page of {SHOP}: data is sent only to the page's own "
                      "origin (whatever --allow-domains allows)"]


def test_a_redirect_that_keeps_the_body_to_another_origin_is_refused_with_allow_domains(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allow_list(tmp_path, monkeypatch)
    bounce = FakeRoute(FakeRequest(f"{SHOP}/bounce"), [FakeResponse(307, {"location": f"{COLLECTOR}/collect"})])
    route, events = routed(tmp_path, bounce)
    assert route.sent == [f"POST {SHOP}/bounce"] and route.done == "aborted blockedbyclient"
    assert events and events[0].startswith(f"Refused a POST to {COLLECTOR} (where a 307 redirect from {SHOP}/bounce "
                                           "sent it)")


def test_a_post_to_its_own_origin_and_a_get_elsewhere_still_go(tmp_path: Path) -> None:
    own, events = routed(tmp_path, FakeRoute(FakeRequest(f"{SHOP}/comment")))
    assert own.sent == [f"POST {SHOP}/comment"] and own.done == "fulfilled 200" and events == []
    get, events = routed(tmp_path, FakeRoute(FakeRequest(f"{COLLECTOR}/pixel.gif", method="GET", post_data_buffer=b"")))
    assert get.done == "continued" and events == []
