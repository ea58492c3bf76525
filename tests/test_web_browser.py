"""Script-built pages read through headless Chromium, under scrape's address policy, domain rules and bounds.

The loopback server stands in for a public site: the session's resolver maps site.test to 127.0.0.1 and its
address check lets only 127.0.0.1 through, so 127.0.0.2 (a second loopback address, where a sink counts every
connection), 169.254.169.254 and evil.test (which resolves to 127.0.0.2) play the private addresses a hostile
page reaches for, and blocked.test (which resolves to the allowed 127.0.0.1) is refused by the domain rules.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tools.base import ToolOutput
from tools.web.addresses import is_public_address
from tools.web.browser.launch import browser_processes, playwright_missing, system_chromium
from tools.web.errors import FetchError, RenderError
from tools.web.scrape import ScrapeTool
from tools.web.session import WebSession

needs_playwright = pytest.mark.skipif(playwright_missing() is not None,
                                      reason="needs Playwright (pip install -r requirements-browser.txt)")
needs_browser = pytest.mark.skipif(playwright_missing() is not None or system_chromium() is None,
                                   reason="needs Playwright (requirements-browser.txt) and Chromium (apt-get "
                                          "install chromium)")

STORY = ["Night trains are back: operators across Europe added twelve sleeper routes this year, and most of "
         "them sold out within weeks of opening their booking pages.",
         "Rail unions say the revival depends on track access charges, which in some countries cost more "
         "than the tickets bring in during the first two years of a new service.",
         "The longest new route runs from Brussels to Prague in a little over fourteen hours overnight."]
APP = ("<!doctype html><html><head><title>Loading</title><script type=\"module\" src=\"/static/app.js\"></script>"
       "</head><body><noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div>"
       "</body></html>")
APP_JS = ("fetch('/api/story').then(r => r.json()).then(d => { document.title = d.title; "
          "const root = document.getElementById('root'); const art = document.createElement('article'); "
          "for (const p of d.paragraphs) { const el = document.createElement('p'); el.textContent = p; "
          "art.appendChild(el); } root.appendChild(art); });")
GUARDED = " ".join(STORY)


class Sink:
    """A TCP listener on 127.0.0.2 that counts every connection made to it (there must be none)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.2", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


def policy_page(sink: int, port: int) -> str:
    private = f"http://127.0.0.2:{sink}"
    return f"""<!doctype html><html><head><title>Guarded</title>
<link rel="stylesheet" href="{private}/style.css"></head><body><div id="root"></div>
<iframe src="{private}/frame"></iframe><iframe src="file:///etc/passwd"></iframe>
<script>
for (const t of ['{private}/x', 'https://127.0.0.2:{sink}/tls', 'http://evil.test:{sink}/x',
                 'http://169.254.169.254/latest/meta-data/', 'http://blocked.test:{port}/tracker', '/go-private'])
  fetch(t).catch(() => 0);
try {{ new WebSocket('ws://127.0.0.2:{sink}/ws'); }} catch (e) {{}}
navigator.sendBeacon('{private}/beacon', 'x');
document.getElementById('root').innerHTML = '<article><h1>Guarded page</h1><p>{GUARDED}</p></article>';
</script></body></html>"""


SHOW = ("<html><body><div id=root></div><script>document.getElementById('root').innerHTML = '<p>cookie=[' + "
        "document.cookie + '] storage=[' + localStorage.getItem('k') + ']</p>';</script></body></html>")
SET = SHOW.replace("<script>", "<script>document.cookie = 'token=s3cret; path=/'; localStorage.setItem('k', 'v');")
SW_PAGE = ("<html><body><div id=root>waiting</div><script>const out = document.getElementById('root');"
           "if (!('serviceWorker' in navigator)) out.textContent = 'service workers: unavailable'; else "
           "navigator.serviceWorker.register('/sw.js').then(reg => out.textContent = 'service workers: ' + (reg ? "
           "'registered' : 'not registered'), () => out.textContent = 'service workers: refused');</script>"
           "</body></html>")


def _hold(active: list[int], peak: list[int], lock: threading.Lock) -> Any:
    def handle(req: Request) -> Response:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.5)
        with lock:
            active[0] -= 1
        return Response(body={"ok": True})
    return handle


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[LoopbackServer, Sink, dict[str, Any]]]:
    sink = Sink()
    stats: dict[str, Any] = {"active": [0], "peak": [0], "lock": threading.Lock()}
    html = "text/html; charset=utf-8"
    with LoopbackServer(routes({})) as server:
        server.handler = routes({
            "/app": Response(body=APP, content_type=html),
            "/static/app.js": Response(body=APP_JS, content_type="application/javascript"),
            "/api/story": Response(body={"title": "Night trains return", "paragraphs": STORY}),
            "/policy": Response(body=policy_page(sink.port, server.port), content_type=html),
            "/go-private": Response(302, headers={"Location": f"http://127.0.0.2:{sink.port}/redirected"}),
            "/bounce": Response(302, headers={"Location": f"http://127.0.0.2:{sink.port}/landing"}),
            "/set": Response(body=SET, content_type=html, headers={"Set-Cookie": "server=1; Path=/"}),
            "/show": Response(body=SHOW, content_type=html),
            "/sw-page": Response(body=SW_PAGE, content_type=html),
            "/sw.js": Response(body="self.addEventListener('fetch', () => 0);", content_type="text/javascript"),
            "/file.zip": Response(body=b"PK\x05\x06" + b"\0" * 18, content_type="application/zip",
                                  headers={"Content-Disposition": 'attachment; filename="data.zip"'}),
            "/hold": Response(body="<html><body><div id=root></div><script>fetch('/api/slow').then(() => "
                                   "document.getElementById('root').textContent = 'held')</script></body></html>",
                              content_type=html),
            "/to-file": Response(body="<html><body><p id=p>stayed on the web</p><script>setTimeout(() => "
                                      "location.href = 'file:///etc/passwd', 50)</script></body></html>",
                                 content_type=html),
            "/robots.txt": Response(body="User-agent: *\nDisallow: /app\n", content_type="text/plain"),
            "/long": Response(body="<html><body><p id=p></p><script>document.getElementById('p').textContent = "
                                   "'many words '.repeat(1000)</script></body></html>", content_type=html),
            "/api/slow": _hold(stats["active"], stats["peak"], stats["lock"]),
        })
        yield server, sink, stats


def guarded_session(**overrides: Any) -> WebSession:
    hosts = {"site.test": ["127.0.0.1"], "blocked.test": ["127.0.0.1"], "evil.test": ["127.0.0.2"]}
    settings = Settings(**{"ignore_robots": True, "host_gap": 0.0, "host_concurrency": 8, "scrape_timeout": 15.0,
                           "block_domains": ("blocked.test",), **overrides})
    return WebSession(settings, resolver=lambda host, port: hosts.get(host, ["93.184.216.34"]),
                      address_check=lambda ip: ip == ipaddress.ip_address("127.0.0.1") or is_public_address(ip))


@pytest.fixture(scope="module")
def web() -> Iterator[WebSession]:
    session = guarded_session(browser_pages=1)
    yield session
    session.close()


def scrape(tmp_path: Path, web: WebSession, url: str, **args: Any) -> ToolOutput:
    out = ScrapeTool(tmp_path / "ws", web.settings, web=web).run(url=url, **args)
    assert isinstance(out, ToolOutput), out
    return out


@needs_browser
def test_a_script_built_page_is_read_through_the_browser(tmp_path: Path, web: WebSession, site: Any) -> None:
    server = site[0]
    out = scrape(tmp_path, web, f"http://site.test:{server.port}/app")
    assert out.text.startswith("Title: Night trains return\n")
    assert ("Rendered in a headless browser (an empty #root element, a noscript warning, script bundles around a "
            "body with almost no text)") in out.text
    for paragraph in STORY:
        assert paragraph in out.text
    assert out.sources == [f"http://site.test:{server.port}/app"]


@needs_browser
def test_render_true_forces_the_browser_on_any_page(tmp_path: Path, web: WebSession, site: Any) -> None:
    out = scrape(tmp_path, web, f"http://site.test:{site[0].port}/show", render=True)
    assert "Rendered in a headless browser (asked for with render: true)" in out.text
    assert "cookie=[] storage=[null]" in out.text  # the page's own script ran


@needs_browser
def test_every_connection_of_the_page_passes_the_address_policy(tmp_path: Path, web: WebSession, site: Any) -> None:
    server, sink, _ = site
    before = len(server.requests)
    out = scrape(tmp_path, web, f"http://site.test:{server.port}/policy", render=True)
    assert STORY[1] in out.text
    assert sink.connections == 0  # subresources, iframe, redirect, WebSocket, beacon, TLS: none reached 127.0.0.2
    assert "root:x:0" not in out.text
    assert not any(r.headers.get("host", "").startswith("blocked.test") for r in server.requests[before:])
    note = next(line for line in out.text.splitlines() if line.startswith("Rendered"))
    for host in (f"127.0.0.2:{sink.port}", "169.254.169.254:80", f"blocked.test:{server.port}"):
        assert host in note, note
    # The same page where private addresses are allowed does reach the sink: the test can fail.
    open_session = WebSession(Settings(ignore_robots=True, host_gap=0.0, scrape_allow_private=True))
    try:
        open_session.browser.render(f"{server.url}/policy", 15)
    finally:
        open_session.close()
    assert sink.connections > 0


@needs_browser
def test_a_main_document_redirected_to_a_private_address_is_refused(web: WebSession, site: Any) -> None:
    server, sink, _ = site
    before = sink.connections
    with pytest.raises(FetchError, match="127.0.0.2 is a private/loopback/link-local"):
        web.browser.render(f"http://site.test:{server.port}/bounce", 15)
    assert sink.connections == before


@needs_browser
def test_no_cookie_or_storage_survives_from_one_render_to_the_next(web: WebSession, site: Any) -> None:
    server = site[0]
    first = web.render(f"http://site.test:{server.port}/set")
    second = web.render(f"http://site.test:{server.port}/show")
    assert "cookie=[server=1; token=s3cret] storage=[v]" in first.html  # cookies and storage work in a render
    assert "cookie=[] storage=[null]" in second.html
    shown = [r for r in server.requests if r.path == "/show"]
    assert "cookie" not in shown[-1].headers


@needs_browser
def test_service_workers_and_downloads_are_refused(web: WebSession, site: Any) -> None:
    server = site[0]
    page = web.render(f"{server.url}/sw-page")  # 127.0.0.1 itself: a secure context where workers would work
    assert "service workers: registered" not in page.html and "service workers:" in page.html
    with pytest.raises(RenderError):
        web.render(f"http://site.test:{server.port}/file.zip")
    assert not [r for r in server.requests if r.path == "/sw.js"]
    assert not [p for m in web.browser.markers for p in Path(m).rglob("data.zip") if m]


@needs_browser
def test_file_urls_are_never_opened(web: WebSession, site: Any) -> None:
    with pytest.raises(FetchError, match="only http:// and https://"):
        web.browser.render("file:///etc/passwd", 5)
    page = web.render(f"http://site.test:{site[0].port}/to-file")  # the page itself tries to go there
    assert page.url.startswith("http://site.test:") and "root:x:0" not in page.html


@needs_browser
def test_the_browser_follows_robots_txt_for_the_page_it_opens(site: Any) -> None:
    server = site[0]
    session = guarded_session(ignore_robots=False)
    before = len(server.requests)
    try:
        with pytest.raises(FetchError, match="robots.txt disallows this URL"):
            session.browser.render(f"http://site.test:{server.port}/app", 15)  # straight to the browser
    finally:
        session.close()
    assert [r.path for r in server.requests[before:]] == ["/robots.txt"]  # the page itself was never asked for


@needs_browser
@pytest.mark.parametrize("pages", [1, 2])
def test_the_browser_renders_at_most_its_page_limit_at_once(web: WebSession, site: Any, pages: int) -> None:
    server, _, stats = site
    session = web if pages == 1 else guarded_session(browser_pages=2)
    stats["peak"][0] = 0
    try:
        threads = [threading.Thread(target=session.render, args=(f"http://site.test:{server.port}/hold",))
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        if session is not web:
            session.close()
    assert stats["peak"][0] == pages


@needs_browser
def test_closing_the_session_ends_every_browser_process_and_removes_its_profile(site: Any) -> None:
    session = guarded_session()
    session.render(f"http://site.test:{site[0].port}/show")
    markers = [m for m in session.browser.markers if m]
    assert len(markers) >= 2 and browser_processes(markers)  # the run dir and Playwright's profile, in use
    session.close()
    assert browser_processes(markers) == []
    assert not any(Path(m).exists() for m in markers)


@needs_playwright
def test_without_a_browser_the_static_text_comes_back_with_a_note(tmp_path: Path, site: Any) -> None:
    session = guarded_session(chromium="/nonexistent/chromium")
    out = scrape(tmp_path, session, f"http://site.test:{site[0].port}/app")
    assert ("Note: the page looks script-built (an empty #root element, a noscript warning, script bundles around "
            "a body with almost no text) but was not rendered: rendering is unavailable: the headless browser did "
            "not start (SCRAPE_CHROMIUM=/nonexistent/chromium is not a file)") in out.text
    forced = ScrapeTool(tmp_path, session.settings, web=session).run(url=f"http://site.test:{site[0].port}/show",
                                                                      render=True)
    assert isinstance(forced, str) and forced.startswith(f"Error: could not scrape http://site.test:{site[0].port}"
                                                         "/show: rendering is unavailable")


def test_without_playwright_the_note_says_how_to_install_it(tmp_path: Path, site: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tools.web.browser.headless.playwright_missing",
                        lambda: "Playwright is not installed: pip install -r requirements-browser.txt (Playwright)")
    out = scrape(tmp_path, guarded_session(), f"http://site.test:{site[0].port}/app")
    assert "not rendered: rendering is unavailable: Playwright is not installed: pip install -r " \
           "requirements-browser.txt" in out.text


@needs_browser
def test_the_rendered_page_is_bounded_like_scrape(web: WebSession, site: Any) -> None:
    small = guarded_session(scrape_max_bytes=3000)
    try:
        page = small.render(f"http://site.test:{site[0].port}/long")  # a 300-byte page that writes 12,000 characters
    finally:
        small.close()
    assert page.truncated and len(page.html) == 3000
