"""The scrape tool against loopback servers: content types, saving, limits, retries and URL safety."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tools.base import ToolOutput
from tools.web import fetch
from tools.web.fetch import is_public_address
from tools.web.scrape import ScrapeTool

DATA = Path(__file__).parent / "data"
ARTICLE = (DATA / "article.html").read_text(encoding="utf-8")
PDF = (DATA / "three-pages.pdf").read_bytes()


def make_tool(tmp_path: Path, sleeps: list[float] | None = None, **settings: object) -> ScrapeTool:
    # robots.txt and the per-host gap have tests of their own (test_web_politeness.py); here they would add
    # a /robots.txt request and a 1 s wait to every scrape.
    merged: dict[str, object] = {"scrape_allow_private": True, "scrape_timeout": 2.0, "ignore_robots": True,
                                 "host_gap": 0.0, **settings}
    record = sleeps if sleeps is not None else []
    return ScrapeTool(tmp_path / "ws", Settings(**merged), sleep=record.append)  # type: ignore[arg-type]


def ok(result: str | ToolOutput) -> ToolOutput:
    assert isinstance(result, ToolOutput), result
    return result


def test_html_article_shows_title_url_and_main_content_only(tmp_path: Path) -> None:
    page = Response(body=ARTICLE, content_type="text/html; charset=utf-8")
    with LoopbackServer(routes({"/news/trains": page})) as server:
        out = ok(make_tool(tmp_path).run(url=f"{server.url}/news/trains"))
    assert out.sources == [f"{server.url}/news/trains"]
    header = out.text.split("\n\n", 1)[0]
    assert header.startswith("Title: Night Trains Return to Europe | The Example Times\n")
    assert f"URL: {server.url}/news/trains" in header
    assert "Sleeper trains are making a comeback" in out.text and "| Paris to Berlin | 185000 |" in out.text
    assert "Privacy policy" not in out.text and "Subscribe today" not in out.text
    assert server.requests[0].headers["user-agent"].startswith("Mozilla/5.0")


def test_redirects_are_followed_and_the_final_url_is_the_source(tmp_path: Path) -> None:
    table = {"/old": Response(301, headers={"Location": "/new"}),
             "/new": Response(body=ARTICLE, content_type="text/html")}
    with LoopbackServer(routes(table)) as server:
        out = ok(make_tool(tmp_path).run(url=f"{server.url}/old"))
    assert out.sources == [f"{server.url}/new"]
    assert f"URL: {server.url}/new\n(redirected from {server.url}/old)" in out.text


def test_pdf_has_page_markers_and_pages_selects_a_range(tmp_path: Path) -> None:
    with LoopbackServer(routes({"/r.pdf": Response(body=PDF, content_type="application/pdf")})) as server:
        tool = make_tool(tmp_path)
        everything = ok(tool.run(url=f"{server.url}/r.pdf")).text
        some = ok(tool.run(url=f"{server.url}/r.pdf", pages="2-3")).text
        bad = tool.run(url=f"{server.url}/r.pdf", pages="two")
        beyond = tool.run(url=f"{server.url}/r.pdf", pages="5-9")
    assert "PDF with 3 page(s)" in everything
    assert "--- page 1 ---\nAlpha page one about harbours\n\n--- page 2 ---\nBeta page two about (bridges)" \
        in everything
    assert "--- page 1 ---" not in some and "--- page 3 ---\nGamma page three about tunnels" in some
    assert bad == f"Error: could not scrape {server.url}/r.pdf: pages 'two' is not a page range like '1-3,7'"
    assert isinstance(beyond, str) and "out of range: the PDF has 3 page(s)" in beyond


def test_pdf_served_as_octet_stream_is_still_read(tmp_path: Path) -> None:
    with LoopbackServer(routes({"/get": Response(body=PDF)})) as server:
        out = ok(make_tool(tmp_path).run(url=f"{server.url}/get", pages="1"))
    assert "--- page 1 ---\nAlpha page one" in out.text


def test_csv_as_is_and_json_pretty_printed(tmp_path: Path) -> None:
    csv_body = "city,population\nVienna,1982097\nHamburg,1892122\n"
    table = {"/data.csv": Response(body=csv_body, content_type="text/csv"),
             "/api": Response(body={"name": "Vienna", "tags": ["rail", "river"]})}
    with LoopbackServer(routes(table)) as server:
        tool = make_tool(tmp_path)
        csv_out = ok(tool.run(url=f"{server.url}/data.csv")).text
        json_out = ok(tool.run(url=f"{server.url}/api")).text
    assert csv_out.endswith("\n\n" + csv_body)
    assert json_out.endswith(json.dumps({"name": "Vienna", "tags": ["rail", "river"]}, indent=2))


def test_unknown_binary_is_saved_into_downloads(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 4
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    with LoopbackServer(routes({"/files/report": Response(body=blob, content_type=xlsx)})) as server:
        tool = make_tool(tmp_path)
        first = ok(tool.run(url=f"{server.url}/files/report")).text
        second = ok(tool.run(url=f"{server.url}/files/report")).text
    assert "Binary content saved to downloads/report.xlsx (1,024 bytes) in the workspace" in first
    assert "downloads/report-1.xlsx" in second
    assert (tmp_path / "ws" / "downloads" / "report.xlsx").read_bytes() == blob


def test_save_as_keeps_the_raw_body_and_refuses_paths_outside_the_workspace(tmp_path: Path) -> None:
    with LoopbackServer(routes({"/a": Response(body=ARTICLE, content_type="text/html")})) as server:
        tool = make_tool(tmp_path)
        out = ok(tool.run(url=f"{server.url}/a", save_as="pages/article.html")).text
        escapes = [tool.run(url=f"{server.url}/a", save_as=p) for p in ("../outside.html", "/tmp/abs.html",
                                                                      "pages/../../x.html")]
    assert f"Saved the raw file to pages/article.html ({len(ARTICLE.encode()):,} bytes)" in out
    assert "Sleeper trains are making a comeback" in out
    assert (tmp_path / "ws" / "pages" / "article.html").read_text(encoding="utf-8") == ARTICLE
    for refused in escapes:
        assert isinstance(refused, str) and refused.startswith("Error:") and "workspace" in refused
    assert len(server.requests) == 1  # refused paths are checked before fetching
    assert not (tmp_path / "outside.html").exists()


def test_save_as_through_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "elsewhere")
    out = make_tool(tmp_path).run(url="http://127.0.0.1:9/x", save_as="link/file.bin")
    assert isinstance(out, str) and "'link' is a symbolic link" in out


def test_body_over_the_size_cap_stops_reading_and_says_so(tmp_path: Path) -> None:
    text = "word " * 2000
    table = {"/big.txt": Response(body=text, content_type="text/plain"),
             "/big.zip": Response(body=b"PK" + b"\0" * 5000, content_type="application/zip")}
    with LoopbackServer(routes(table)) as server:
        tool = make_tool(tmp_path, scrape_max_bytes=1000)
        partial = ok(tool.run(url=f"{server.url}/big.txt")).text
        refused = tool.run(url=f"{server.url}/big.zip")
    assert "only the first 1,000 bytes read: the body exceeds the 1,000-byte limit" in partial
    assert partial.endswith("\n\n" + text[:1000])
    assert isinstance(refused, str) and "larger than the 1,000-byte limit" in refused
    assert not (tmp_path / "ws" / "downloads").exists()


def test_slow_response_times_out_after_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The whole fetch's deadline (4 timeouts, wall clock) has tests of its own: here it would cut the third
    # attempt short whenever a busy machine delays the first two.
    monkeypatch.setattr(fetch, "DEADLINE_FACTOR", 1000)
    sleeps: list[float] = []
    with LoopbackServer(routes({"/slow": Response(body="late", delay=60)})) as server:  # answers after the test
        out = make_tool(tmp_path, sleeps, scrape_timeout=0.2).run(url=f"{server.url}/slow")
        received = server.wait_for_requests(3)
    assert out == (f"Error: could not scrape {server.url}/slow: timed out after 0.2s (ReadTimeout) "
                   "(tried 3 times)")
    assert len(received) == 3 and sleeps == [0.5, 1.0]


def test_server_error_is_retried_then_reported(tmp_path: Path) -> None:
    sleeps: list[float] = []
    with LoopbackServer(routes({"/flaky": Response(500, "oops")})) as server:
        out = make_tool(tmp_path, sleeps).run(url=f"{server.url}/flaky")
    assert out == (f"Error: could not scrape {server.url}/flaky: the server answered HTTP 500 "
                   "Internal Server Error (tried 3 times)")
    assert len(server.requests) == 3 and sleeps == [0.5, 1.0]


def test_recovering_server_and_client_errors(tmp_path: Path) -> None:
    calls: list[Request] = []

    def flaky(req: Request) -> Response:
        calls.append(req)
        return Response(503) if len(calls) == 1 else Response(body="fine now", content_type="text/plain")

    with LoopbackServer(routes({"/flaky": flaky})) as server:
        tool = make_tool(tmp_path)
        recovered = ok(tool.run(url=f"{server.url}/flaky"))
        missing = tool.run(url=f"{server.url}/missing")
    assert recovered.text.endswith("fine now") and len(calls) == 2
    assert missing == f"Error: could not scrape {server.url}/missing: the server answered HTTP 404 Not Found"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "data:text/plain,hi",
                                 "example.com"])
def test_non_http_schemes_are_refused(tmp_path: Path, url: str) -> None:
    out = make_tool(tmp_path).run(url=url)
    assert isinstance(out, str) and out.startswith(f"Error: could not scrape {url}: only http:// and https://")


@pytest.mark.parametrize("address", ["10.1.2.3", "169.254.169.254", "::1", "127.0.0.1", "192.168.0.9",
                                     "100.64.0.1", "224.0.0.1", "0.0.0.0", "::ffff:127.0.0.1", "fd00::1"])
def test_hosts_resolving_to_non_public_addresses_are_refused(tmp_path: Path, address: str) -> None:
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34", address]  # one bad address among good ones is enough to refuse

    tool = ScrapeTool(tmp_path / "ws", Settings(ignore_robots=True, host_gap=0), resolver=resolver)
    out = tool.run(url="http://intranet.example/admin")
    assert asked == ["intranet.example"]
    shown = str(ipaddress.ip_address(address))
    assert isinstance(out, str) and f"resolves to {shown}, a private" in out
    assert "non-public address; refused" in out


def test_public_addresses_pass_the_check() -> None:
    for text in ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"):
        assert is_public_address(ipaddress.ip_address(text))


def test_redirect_to_a_private_address_is_refused_on_the_hop(tmp_path: Path) -> None:
    table = {"/go-meta": Response(302, headers={"Location": "http://169.254.169.254/latest/meta-data"}),
             "/go-intranet": Response(307, headers={"Location": "http://10.0.0.7:8080/secret"}),
             "/go-file": Response(302, headers={"Location": "file:///etc/passwd"})}
    # The loopback test server stands in for a public site: only 127.0.0.1 is let through the check.
    loopback_is_public = lambda ip: str(ip) == "127.0.0.1" or is_public_address(ip)  # noqa: E731
    tool = ScrapeTool(tmp_path / "ws", Settings(ignore_robots=True, host_gap=0), address_check=loopback_is_public)
    with LoopbackServer(routes(table)) as server:
        meta = tool.run(url=f"{server.url}/go-meta")
        intranet = tool.run(url=f"{server.url}/go-intranet")
        to_file = tool.run(url=f"{server.url}/go-file")
    assert isinstance(meta, str) and "169.254.169.254 is a private/loopback/link-local" in meta
    assert isinstance(intranet, str) and "10.0.0.7 is a private/loopback/link-local" in intranet
    assert isinstance(to_file, str) and "scheme 'file' refused" in to_file
    assert [r.path for r in server.requests] == ["/go-meta", "/go-intranet", "/go-file"]


def test_connection_goes_to_the_checked_address_with_the_original_host(tmp_path: Path) -> None:
    table = {"/page": Response(body="pinned", content_type="text/plain")}
    with LoopbackServer(routes(table)) as server:
        tool = ScrapeTool(tmp_path / "ws", Settings(ignore_robots=True), resolver=lambda host, port: ["127.0.0.1"],
                          address_check=lambda ip: True)
        out = ok(tool.run(url=f"http://news.example:{server.port}/page"))
    assert out.text.endswith("pinned") and out.sources == [f"http://news.example:{server.port}/page"]
    assert server.requests[0].headers["host"] == f"news.example:{server.port}"


def test_redirect_loops_stop(tmp_path: Path) -> None:
    with LoopbackServer(routes({"/loop": Response(302, headers={"Location": "/loop"})})) as server:
        out = make_tool(tmp_path).run(url=f"{server.url}/loop")
    assert out == f"Error: could not scrape {server.url}/loop: too many redirects (more than 5)"
    assert len(server.requests) == 6


def test_long_text_is_cut_in_the_middle_and_declared_charsets_are_honoured(tmp_path: Path) -> None:
    long_text = "".join(f"line {i:06d}\n" for i in range(10_000))  # 120,000 characters
    table = {"/long.txt": Response(body=long_text, content_type="text/plain"),
             "/latin1": Response(body="Café Zürich".encode("latin-1"),
                                 content_type="text/plain; charset=iso-8859-1")}
    with LoopbackServer(routes(table)) as server:
        tool = make_tool(tmp_path)
        long_out = ok(tool.run(url=f"{server.url}/long.txt")).text
        latin = ok(tool.run(url=f"{server.url}/latin1")).text
    assert len(long_out) < 41_000 and "line 000000" in long_out and "line 009999" in long_out
    assert "characters (" in long_out and "cut; ask for fewer PDF pages, or pass save_as" in long_out
    assert latin.endswith("\n\nCafé Zürich")
