"""The renderer under attack: popups, refused navigations, Chromium's own traffic, its user, its memory, its time.

Each test reproduces what a hostile or heavy page did to the renderer before: a popup lost the page with a
traceback, a refused navigation was reported as "scheme 'chrome-error' refused", Chromium asked Google's
autofill service about forms, ran as root without its sandbox, held any amount of memory, and a render that
gave up after its whole allowance was reported as failing within SCRAPE_TIMEOUT.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import LoopbackServer, Response, routes
from tests.test_web_browser import guarded_session, needs_browser
from tools.web.browser.launch import browser_processes
from tools.web.errors import BlockedURLError, RenderError
from tools.web.session import WebSession

HTML = "text/html; charset=utf-8"
FORM = ("<html><body><h1>Delivery</h1><form><input name=name autocomplete=name><input name=email "
        "autocomplete=email><input name=street autocomplete=street-address><input name=zip autocomplete=postal-code>"
        "<input name=city autocomplete=address-level2><button>Send</button></form></body></html>")
HOG = ("<html><body><p>hog</p><script>fetch('/slow'); const keep = []; setInterval(() => { if (keep.length < 100) "
       "keep.push(new Uint8Array(20 * 1024 * 1024).fill(7)); }, 20);</script></body></html>")  # busy while it grows


def page(body: str) -> Response:
    return Response(body=f"<html><body><p>The page's own text.</p>{body}</body></html>", content_type=HTML)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackServer]:
    with LoopbackServer(routes({})) as server:
        server.handler = routes({
            "/popup": page("<script>window.open('/other')</script>"),
            "/blank": page("<a id=a target=_blank href='/other'>other</a><script>"
                           "document.getElementById('a').click()</script>"),
            "/other": page(""),
            "/tls-bounce": Response(302, headers={"Location": "https://127.0.0.2:8443/landing"}),
            "/script-away": page("<script>location.href = 'https://127.0.0.2:8443/x'</script>"),
            "/form": Response(body=FORM, content_type=HTML),
            "/hog": Response(body=HOG, content_type=HTML),
            "/slow": Response(body="late", delay=20),
        })
        yield server


@pytest.fixture
def hosts() -> list[str]:
    return []


@pytest.fixture
def web(hosts: list[str]) -> Iterator[WebSession]:
    session = guarded_session()
    check = session.browser.check

    def recorded(url: str) -> str | None:  # every connection the proxy is asked for
        hosts.append(url.split("/")[2])
        return check(url)

    session.browser.check = recorded
    yield session
    session.close()


@needs_browser
@pytest.mark.parametrize("path", ["/popup", "/blank"])
def test_a_page_that_opens_a_popup_is_still_read(web: WebSession, site: LoopbackServer, path: str,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    rendered = web.render(f"http://site.test:{site.port}{path}")
    assert "The page's own text." in rendered.html and rendered.url.endswith(path)
    assert any(r.path == "/other" for r in site.requests), "the popup did open (through the guard)"
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Frame for this navigation" not in err


@needs_browser
@pytest.mark.parametrize("path", ["/tls-bounce", "/script-away"])
def test_a_refused_navigation_names_the_refused_address(web: WebSession, site: LoopbackServer, path: str) -> None:
    with pytest.raises(BlockedURLError) as refused:
        web.render(f"http://site.test:{site.port}{path}")
    assert "127.0.0.2 is a private/loopback/link-local" in str(refused.value)
    assert refused.value.url.startswith("https://127.0.0.2:8443/")
    assert "chrome-error" not in str(refused.value)


@needs_browser
def test_chromium_asks_no_service_of_its_own_about_a_form(web: WebSession, site: LoopbackServer,
                                                         hosts: list[str]) -> None:
    rendered = web.render(f"http://site.test:{site.port}/form")
    assert "Delivery" in rendered.html
    assert set(hosts) == {f"site.test:{site.port}"}  # no content-autofill.googleapis.com


@needs_browser
@pytest.mark.skipif(os.geteuid() != 0, reason="the agent runs as a normal user here: so does its browser")
def test_as_root_the_browser_runs_as_nobody_inside_its_sandbox(web: WebSession, site: LoopbackServer) -> None:
    web.render(f"http://site.test:{site.port}/other")
    pids = browser_processes([m for m in web.browser.markers if m])
    assert pids
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        uid = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
        assert set(uid) == {"65534"}, (pid, uid)
        assert b"--no-sandbox" not in Path(f"/proc/{pid}/cmdline").read_bytes()


@needs_browser
def test_a_page_above_the_memory_limit_is_closed_with_a_clear_line(site: LoopbackServer) -> None:
    session = guarded_session(browser_memory_mb=200)
    try:
        with pytest.raises(RenderError, match=r"the page used more than the browser's memory limit \(\d+ MB held, "
                                              r"the limit is 200 MB per page: SCRAPE_BROWSER_MEMORY_MB\)"):
            session.render(f"http://site.test:{site.port}/hog")
        assert "The page's own text." in session.render(f"http://site.test:{site.port}/other").html  # browser lives
    finally:
        session.close()


@needs_browser
def test_a_render_that_runs_out_of_its_whole_allowance_says_how_long_it_took(
        site: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def stuck(*args: Any) -> None:
        await asyncio.sleep(60)

    monkeypatch.setattr("tools.web.browser.headless.SETTLE", 0.5)
    session = guarded_session(scrape_timeout=0.5)
    monkeypatch.setattr(session.browser, "_visit", stuck)
    try:
        with pytest.raises(RenderError) as gave_up:
            session.render(f"http://site.test:{site.port}/other")
    finally:
        session.close()
    assert "gave up on the page after" in str(gave_up.value)
    assert "0.5 s to load, SCRAPE_TIMEOUT, and 1.5 s in all" in str(gave_up.value)
