"""The live page's door: loopback Host and token only, strict CSP; waits for the first task, keeps the end."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from main import parse_args
from report.html.guard import Guard
from report.html.live import LiveReport


def raw_get(port: int, path: str, host: str | None = None, cookie: str | None = None,
            ) -> tuple[int, dict[str, str], str]:
    """GET over plain HTTP with the Host header a browser on a rebound domain would send."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": f"127.0.0.1:{port}" if host is None else host}
    if cookie:
        headers["Cookie"] = cookie
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveReport]:
    server = LiveReport(tmp_path / "results.jsonl", [], {}, 0).start()
    try:
        yield server
    finally:
        server.stop()


def _record(path: Path, answer: str) -> None:
    row = {"key": "k1", "id": "t1", "index": 1, "task": "What is the answer?", "status": "answered", "answer": answer,
           "steps": 1, "seconds": 1.0, "prompt_tokens": 5, "completion_tokens": 5, "cost": 0.0}
    path.write_text(json.dumps(row) + "\n")


def test_a_bare_serve_never_takes_the_task_file_as_its_port() -> None:
    args = parse_args(["--serve", "tasks.txt"])
    assert args.serve == 8765 and args.tasks == Path("tasks.txt")
    assert parse_args(["tasks.txt", "--serve=0"]).serve == 0
    assert parse_args(["tasks.txt"]).serve is None
    assert parse_args(["--", "--serve"]).tasks == Path("--serve")  # after "--" it is a file name


@pytest.mark.parametrize("host", ["attacker.example:{port}", "attacker.example", "127.0.0.1:1", "localhost",
                                  "192.168.1.10:{port}", ""])
def test_dns_rebinding_a_foreign_host_is_refused_with_421(live: LiveReport, host: str) -> None:
    port = live.guard.port
    status, headers, body = raw_get(port, f"/?token={live.guard.token}", host=host.format(port=port))
    assert status == 421 and "results" not in body.lower()
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_loopback_names_with_the_token_are_served(live: LiveReport, host: str) -> None:
    port = live.guard.port
    status, headers, body = raw_get(port, f"/?token={live.guard.token}", host=host.format(port=port))
    assert status == 200 and 'id="live"' in body


def test_without_the_token_nothing_is_served(live: LiveReport) -> None:
    port = live.guard.port
    for path in ("/", "/state", "/?token=wrong", f"/state?token={live.guard.token[:-1]}"):
        status, _, body = raw_get(port, path)
        assert status == 403 and "version" not in body, path
    assert raw_get(port, "/state", cookie=f"{live.guard.cookie_name}=nope")[0] == 403
    assert raw_get(port, "/state", cookie=f"agent_token_1={live.guard.token}")[0] == 403  # another server's


def test_the_token_url_sets_a_cookie_that_serves_later_requests(live: LiveReport) -> None:
    port = live.guard.port
    assert live.url == f"http://127.0.0.1:{port}/?token={live.guard.token}"
    status, headers, _ = raw_get(port, f"/?token={live.guard.token}")
    cookie = headers["set-cookie"]
    assert status == 200 and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, _, body = raw_get(port, "/state", cookie=cookie.split(";", 1)[0])
    assert status == 200 and json.loads(body)["done"] is False


def test_the_page_allows_nothing_external(live: LiveReport) -> None:
    _, headers, _ = raw_get(live.guard.port, f"/?token={live.guard.token}")
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-src 'none'" in csp and "connect-src 'self'" in csp
    assert "http" not in csp and "*" not in csp
    assert headers["x-content-type-options"] == "nosniff"


def test_the_page_waits_for_the_first_task_then_keeps_the_end(live: LiveReport, tmp_path: Path) -> None:
    url = f"/?token={live.guard.token}"
    assert "waiting for the first task" in raw_get(live.guard.port, url)[2]
    _record(tmp_path / "results.jsonl", "forty-two")
    page = raw_get(live.guard.port, url)[2]
    assert "forty-two" in page and "waiting" not in page and "data-done" not in page
    live.finish(tmp_path / "results.html")
    state = json.loads(raw_get(live.guard.port, url.replace("/?", "/state?"))[2])
    page = raw_get(live.guard.port, url)[2]
    assert state["done"] is True and "forty-two" in page and 'data-done="1"' in page
    assert (tmp_path / "results.html").as_uri() in page and "The run is over" in page


def test_each_server_gets_its_own_random_token() -> None:
    a, b = Guard(9000), Guard(9000)
    assert a.token != b.token and len(a.token) >= 32
    assert a.check("127.0.0.1:9000", "", None, f"token {a.token}").allowed
    assert not a.check("127.0.0.1:9000", "", None, f"token {b.token}").allowed


def test_another_pages_script_is_refused_even_from_a_loopback_port() -> None:
    guard = Guard(9000)
    for origin in ("http://127.0.0.1:9001", "http://evil.example", "null"):
        assert guard.check("127.0.0.1:9000", f"token={guard.token}", None, None, origin).status == 403
    assert guard.check("127.0.0.1:9000", f"token={guard.token}", None, None, "http://localhost:9000").allowed
