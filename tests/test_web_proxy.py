"""The browser's guard proxy on its own: only its browser may use it, and every connection is checked."""

from __future__ import annotations

import asyncio
import base64

from tests.fakes.loopback import LoopbackServer, Response, routes
from tools.web.browser.proxy import GuardProxy
from tools.web.errors import BlockedURLError


def _refuse_port_9(url: str) -> str | None:
    if ":9/" in url:
        raise BlockedURLError("127.0.0.1:9 is not for you; refused", url)
    return None


async def _ask(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


def _auth(user: str, password: str) -> bytes:
    return b"Proxy-Authorization: Basic " + base64.b64encode(f"{user}:{password}".encode()) + b"\r\n"


def test_the_proxy_serves_only_its_browser_and_checks_every_target() -> None:
    with LoopbackServer(routes({"/page": Response(body="origin text", content_type="text/plain")})) as origin:
        async def scenario() -> dict[str, bytes]:
            proxy = GuardProxy(_refuse_port_9, max_bytes=100_000)
            port = int((await proxy.start()).rsplit(":", 1)[1])
            job, log = proxy.open_job()
            get = f"GET {origin.url}/page HTTP/1.1\r\nHost: 127.0.0.1:{origin.port}\r\n".encode()
            second = f"GET {origin.url}/second HTTP/1.1\r\nHost: 127.0.0.1:{origin.port}\r\n\r\n".encode()
            answers = {
                "no password": await _ask(port, get + b"\r\n"),
                "wrong password": await _ask(port, get + _auth("agent", "guess") + b"\r\n"),
                "refused target": await _ask(port, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n" + _auth("agent", job) + b"\r\n"),
                "allowed": await _ask(port, get + _auth("agent", job) + b"\r\n" + second),
            }
            proxy.close_job(job)
            answers["closed job"] = await _ask(port, get + _auth("agent", job) + b"\r\n")
            answers["log"] = repr(log.refused).encode()
            await proxy.close()
            return answers

        answers = asyncio.run(scenario())
    assert answers["no password"].startswith(b"HTTP/1.1 407 ") and answers["wrong password"].startswith(b"HTTP/1.1 407")
    assert answers["closed job"].startswith(b"HTTP/1.1 407 ")  # a page's password dies with its context
    assert answers["refused target"].startswith(b"HTTP/1.1 403 ") and b"is not for you" in answers["refused target"]
    assert answers["allowed"].startswith(b"HTTP/1.1 200") and answers["allowed"].endswith(b"origin text")
    assert [r.path for r in origin.requests] == ["/page"]  # the second request on that connection never went out
    assert answers["log"] == b"{'127.0.0.1:9': '127.0.0.1:9 is not for you; refused'}"
