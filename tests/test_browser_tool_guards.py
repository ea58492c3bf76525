"""The browser tool under the renderer's guards: address policy, domain rules, robots.txt, turns, secrets, memory.

The shop (tests/fakes/obstacle_site.py) plays a public site: the session's resolver maps shop.test and
collector.test to 127.0.0.1 and its address check lets only 127.0.0.1 through, so 127.0.0.2 plays a private
address and blocked.test (also 127.0.0.1) a host the domain rules refuse.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import Settings
from tests.fakes.loopback import Response
from tests.fakes.obstacle_site import ObstacleSite, obstacle_site
from tools.base import ToolArgumentsError, ToolOutput, ToolRegistry
from tools.web.addresses import is_public_address
from tools.web.browser.launch import playwright_missing, system_chromium
from tools.web.browser.tool import BrowserTool
from tools.web.errors import SourceNotReadError
from tools.web.session import WebSession

pytestmark = pytest.mark.skipif(playwright_missing() is not None or system_chromium() is None,
                                reason="needs Playwright (requirements-browser.txt) and Chromium (apt-get install "
                                       "chromium)")
HOSTS = {"shop.test": ["127.0.0.1"], "collector.test": ["127.0.0.1"], "blocked.test": ["127.0.0.1"],
         "private.test": ["127.0.0.2"]}
HOG = ("<html><body><p>hog</p><script>fetch('/slow'); const keep = []; setInterval(() => { if (keep.length < 100) "
       "keep.push(new Uint8Array(20 * 1024 * 1024).fill(7)); }, 20);</script></body></html>")  # busy while it grows


@pytest.fixture(scope="module")
def site() -> Iterator[ObstacleSite]:
    with obstacle_site() as running:
        handler = running.shop.handler
        extra = {"/robots.txt": Response(body="User-agent: *\nDisallow: /files\n", content_type="text/plain"),
                 "/hog": Response(body=HOG, content_type="text/html"), "/slow": Response(body="late", delay=20),
                 "/to-blocked": Response(body="<html><body><a href='http://blocked.test:PORT/shop'>Elsewhere</a>"
                                              "<img src='http://blocked.test:PORT/pixel.gif'></body></html>"
                                         .replace("PORT", str(running.shop.port)), content_type="text/html")}
        running.shop.handler = lambda req: extra.get(req.path) or handler(req)
        yield running


def tool_for(tmp_path: Path, **settings: Any) -> BrowserTool:
    values = {"ignore_robots": True, "host_gap": 0.0, "scrape_timeout": 15.0, "block_domains": ("blocked.test",),
              **settings}
    web = WebSession(Settings(**values), resolver=lambda host, port: HOSTS.get(host, ["93.184.216.34"]),
                     address_check=lambda ip: ip == ipaddress.ip_address("127.0.0.1") or is_public_address(ip),
                     shared=False)
    return BrowserTool(tmp_path / "ws", web.settings, web=web)


@pytest.fixture
def tool(tmp_path: Path) -> Iterator[BrowserTool]:
    made = tool_for(tmp_path)
    yield made
    made.close()


def text(out: str | ToolOutput) -> str:
    return out.text if isinstance(out, ToolOutput) else out


def url(site: ObstacleSite, path: str, host: str = "shop.test") -> str:
    return f"http://{host}:{site.shop.port}{path}"


@pytest.mark.parametrize("target", ["file:///etc/passwd", "javascript:alert(document.cookie)",
                                    "data:text/html,<h1>hi</h1>", "chrome://settings"])
def test_only_web_pages_can_be_opened(tool: BrowserTool, target: str) -> None:
    out = text(tool.run(action="open", url=target))
    assert out.startswith(f"Error: could not open {target}: only http:// and https:// pages can be opened")


def test_the_model_has_no_way_to_run_javascript_of_its_own(tool: BrowserTool) -> None:
    registry = ToolRegistry([tool])
    for args in ({"action": "evaluate", "script": "document.cookie"}, {"action": "open", "url": "x", "script": "1"}):
        with pytest.raises(ToolArgumentsError):
            registry.prepare("browser", args)


def test_a_private_address_is_refused_and_named(tool: BrowserTool, site: ObstacleSite) -> None:
    out = text(tool.run(action="open", url=url(site, "/shop", "private.test")))
    assert "private.test resolves to 127.0.0.2, a private/loopback/link-local" in out


def test_robots_txt_holds_for_pages_opened_and_links_clicked(tmp_path: Path, site: ObstacleSite) -> None:
    tool = tool_for(tmp_path, ignore_robots=False)
    try:
        with pytest.raises(SourceNotReadError) as refused:
            tool.run(action="open", url=url(site, "/files"))
        assert refused.value.kind == "robots.txt"
        shown = text(tool.run(action="open", url=url(site, "/shop")))
        assert "# Kettle shop" in shown
    finally:
        tool.close()
    assert not [p for p in site.paths() if p.startswith("/files")]


def test_the_domain_rules_hold_for_pages_links_and_subresources(tool: BrowserTool, site: ObstacleSite) -> None:
    with pytest.raises(SourceNotReadError) as refused:
        tool.run(action="open", url=url(site, "/shop", "blocked.test"))
    assert refused.value.kind == "domain rules"
    page = text(tool.run(action="open", url=url(site, "/to-blocked")))
    link = re.search(r'- link "Elsewhere" \[ref=(e\d+)\]', page).group(1)  # type: ignore[union-attr]
    assert "Refused to go to" not in page  # the refused open said so itself, once
    clicked = text(tool.run(action="click", ref=link))
    assert f"Refused to go to {url(site, '/shop', 'blocked.test')}: blocked.test is in the blocked domains" in clicked
    assert not [r for r in site.shop.requests if r.headers.get("host", "").startswith("blocked.test")]


def test_a_cross_origin_post_is_refused_even_when_allow_domains_names_its_origin(tmp_path: Path,
                                                                                site: ObstacleSite) -> None:
    tool = tool_for(tmp_path, allow_domains=("shop.test", "127.0.0.1"))  # issue 58.9: no setting lifts the rule
    before = len(site.collector.requests)
    try:
        page = text(tool.run(action="open", url=url(site, "/exfil")))
        field = re.search(r'- textbox "Email" \[ref=(e\d+)\]', page).group(1)  # type: ignore[union-attr]
        posted = text(tool.run(action="type", ref=field, text="me@example.org", submit=True))
    finally:
        tool.close()
    assert "Refused a POST" in posted and "whatever --allow-domains allows" in posted and "collected" not in posted
    assert site.collector.requests[before:] == []


def test_a_configured_secret_is_never_typed_or_sent(tmp_path: Path, site: ObstacleSite) -> None:
    secret = "sk-test-planted-0123456789abcdef"
    tool = tool_for(tmp_path, openai_api_key=secret)
    try:
        page = text(tool.run(action="open", url=url(site, "/shop")))
        box = re.search(r'- textbox "Search" \[ref=(e\d+)\]', page).group(1)  # type: ignore[union-attr]
        typed = text(tool.run(action="type", ref=box, text=f"my key is {secret}"))
        opened = text(tool.run(action="open", url=url(site, f"/search?q={secret}")))
    finally:
        tool.close()
    assert typed.startswith("Error: refused: the text to type contains the value of a configured secret "
                            "(OPENAI_API_KEY)")
    assert opened.startswith("Error: refused: the URL contains the value of a configured secret")
    assert not [r for r in site.shop.requests if secret in r.path]


def test_every_action_that_may_send_requests_waits_for_the_hosts_turn(tool: BrowserTool, site: ObstacleSite,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    turns: list[str] = []
    acquire = tool.web.limiter.acquire
    monkeypatch.setattr(tool.web.limiter, "acquire", lambda host, *a, **k: turns.append(host) or acquire(host, *a, **k))
    page = text(tool.run(action="open", url=url(site, "/catalog")))
    tool.run(action="click", ref=re.search(r'\[ref=(e\d+)\]', page).group(1))  # type: ignore[union-attr]
    tool.run(action="snapshot")
    tool.run(action="read")
    assert turns == ["shop.test", "shop.test"]  # open and click; reading what is there sends nothing


def test_a_page_above_the_memory_limit_is_closed_and_the_task_goes_on(tmp_path: Path, site: ObstacleSite) -> None:
    tool = tool_for(tmp_path, browser_memory_mb=200)
    try:
        hog = text(tool.run(action="open", url=url(site, "/hog")))
        after = text(tool.run(action="open", url=url(site, "/shop")))
    finally:
        tool.close()
    assert re.search(r"Tab 1 is gone: the page used more than the browser's memory limit \(\d+ MB held, the limit is "
                     r"200 MB per page: SCRAPE_BROWSER_MEMORY_MB\)", hog), hog
    assert "# Kettle shop" in after


def test_outside_a_run_the_tools_own_browser_ends_with_its_task(tmp_path: Path, site: ObstacleSite) -> None:
    tool = tool_for(tmp_path)
    tool.run(action="open", url=url(site, "/shop"))
    markers = [m for m in tool.web.browser.markers if m]
    assert markers and all(Path(m).exists() for m in markers)
    tool.close()
    assert not any(Path(m).exists() for m in markers)
