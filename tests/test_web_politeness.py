"""robots.txt, the identifying User-Agent and per-host turns shared by every task of a run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from config import Settings, load_settings
from core.errors import ConfigError
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tools.base import ToolOutput
from tools.web.errors import SourceNotReadError
from tools.web.politeness import HostBusyError, HostLimiter, retry_after_seconds
from tools.web.robots import product_token
from tools.web.scrape import ScrapeTool
from tools.web.session import WebSession

ROBOTS = ("User-agent: react-research-agent\nDisallow: /private\n\n"
          "User-agent: *\nDisallow: /everyone-else\n")
PAGE = Response(body="plain text page", content_type="text/plain")


def settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {"scrape_allow_private": True, "scrape_timeout": 2.0, "host_gap": 0.0}
    return Settings(**{**base, **overrides})


def tool(tmp_path: Path, web: WebSession) -> ScrapeTool:
    """A task's scrape tool in a run whose web session is `web` (each task builds its own tool)."""
    return ScrapeTool(tmp_path / "ws", web.settings, web=web, sleep=lambda s: None)


def test_robots_txt_refuses_a_disallowed_url_and_is_fetched_once_per_site(tmp_path: Path) -> None:
    table = {"/robots.txt": Response(body=ROBOTS, content_type="text/plain"), "/private/report": PAGE,
             "/public": PAGE, "/everyone-else": PAGE}
    web = WebSession(settings())
    with LoopbackServer(routes(table)) as server:
        with pytest.raises(SourceNotReadError) as caught:
            tool(tmp_path, web).run(url=f"{server.url}/private/report")
        first = tool(tmp_path, web).run(url=f"{server.url}/public")
        other_group = tool(tmp_path, web).run(url=f"{server.url}/everyone-else")  # that group is not ours
    assert caught.value.kind == "robots.txt" and caught.value.url == f"{server.url}/private/report"
    assert str(caught.value) == (f"could not scrape {server.url}/private/report: {server.url}/robots.txt disallows "
                                 "this URL for react-research-agent; refused (the site asks crawlers not to fetch "
                                 "it: try another source, or run with --ignore-robots if you may)")
    assert isinstance(first, ToolOutput) and first.text.endswith("plain text page")
    assert isinstance(other_group, ToolOutput)
    assert [r.path for r in server.requests] == ["/robots.txt", "/public", "/everyone-else"]


def test_ignore_robots_fetches_what_robots_txt_disallows(tmp_path: Path) -> None:
    table = {"/robots.txt": Response(body="User-agent: *\nDisallow: /\n"), "/page": PAGE}
    with LoopbackServer(routes(table)) as server:
        refused = WebSession(settings())
        with pytest.raises(SourceNotReadError):
            tool(tmp_path, refused).run(url=f"{server.url}/page")
        allowed = tool(tmp_path, WebSession(settings(ignore_robots=True))).run(url=f"{server.url}/page")
    assert isinstance(allowed, ToolOutput) and allowed.text.endswith("plain text page")
    assert [r.path for r in server.requests] == ["/robots.txt", "/page"]


def test_a_redirect_into_a_disallowed_path_is_refused_on_the_hop(tmp_path: Path) -> None:
    table = {"/robots.txt": Response(body=ROBOTS), "/go": Response(302, headers={"Location": "/private/x"}),
             "/private/x": PAGE}
    with LoopbackServer(routes(table)) as server, pytest.raises(SourceNotReadError) as caught:
        tool(tmp_path, WebSession(settings())).run(url=f"{server.url}/go")
    assert caught.value.url == f"{server.url}/private/x" and "robots.txt disallows" in str(caught.value)
    assert [r.path for r in server.requests] == ["/robots.txt", "/go"]


@pytest.mark.parametrize("status, note", [(404, None), (403, None), (500, "HTTP 500")])
def test_missing_robots_txt_allows_and_an_unreachable_one_allows_with_a_note(tmp_path: Path, status: int,
                                                                            note: str | None) -> None:
    table = {"/robots.txt": Response(status, "nope"), "/page": PAGE}
    with LoopbackServer(routes(table)) as server:
        out = tool(tmp_path, WebSession(settings())).run(url=f"{server.url}/page")
    assert isinstance(out, ToolOutput) and out.text.endswith("plain text page")
    header = out.text.split("\n\n", 1)[0]
    if note is None:
        assert "robots.txt" not in header
    else:
        assert f"\nNote: {server.url}/robots.txt could not be read ({note}); treated as allowing\n" in header


def test_the_user_agent_identifies_the_agent_and_can_be_set(tmp_path: Path) -> None:
    table = {"/robots.txt": Response(body="User-agent: CheckBot\nDisallow: /\n"), "/page": PAGE}
    with LoopbackServer(routes(table)) as server:
        tool(tmp_path, WebSession(settings())).run(url=f"{server.url}/page")
        with pytest.raises(SourceNotReadError):  # robots.txt is matched against the configured agent's token
            tool(tmp_path, WebSession(settings(user_agent="CheckBot/2.0 (+mailto:ops@example.org)"))).run(
                url=f"{server.url}/page")
    agents = [r.headers["user-agent"] for r in server.requests]
    assert agents[0] == agents[1] and "react-research-agent/0.1.0" in agents[0]
    assert agents[2] == "CheckBot/2.0 (+mailto:ops@example.org)"
    assert product_token(agents[0]) == "react-research-agent" and product_token(agents[2]) == "CheckBot"


def test_at_most_two_requests_are_in_flight_per_host_across_tasks(tmp_path: Path) -> None:
    def measure(limit: int) -> tuple[int, int]:
        active, peak, lock = [0], [0], threading.Lock()

        def slow(req: Request) -> Response:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.2)
            with lock:
                active[0] -= 1
            return PAGE

        web = WebSession(settings(ignore_robots=True, host_concurrency=limit))
        with LoopbackServer(slow) as server:
            outs: list[Any] = []
            threads = [threading.Thread(target=lambda n=n: outs.append(tool(tmp_path, web).run(
                url=f"{server.url}/task{n}"))) for n in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert all(isinstance(o, ToolOutput) for o in outs)
        return peak[0], len(server.requests)

    assert measure(2) == (2, 6)
    assert measure(6)[0] > 2  # the same six tasks overlap more when the limit allows it


def test_the_gap_between_requests_to_one_host_is_kept_and_other_hosts_do_not_wait() -> None:
    now = [100.0]
    limiter = HostLimiter(gap=1.0, max_in_flight=2, clock=lambda: now[0])
    with limiter.turn("news.example"):
        pass
    assert limiter.wait_for("news.example") == 1.0
    assert limiter.wait_for("other.example") == 0.0
    with pytest.raises(HostBusyError, match="next turn"):
        limiter.acquire("news.example", timeout=0.5)  # the turn is further away than the caller can wait
    now[0] += 1.0
    assert limiter.wait_for("news.example") == 0.0
    limiter.acquire("news.example", gap=False)  # robots.txt takes a slot but neither waits nor moves the gap
    assert limiter.wait_for("news.example") == 0.0


def test_a_host_whose_gap_outlasts_the_fetch_is_not_asked_again(tmp_path: Path) -> None:
    web = WebSession(settings(ignore_robots=True, host_gap=30.0, scrape_timeout=0.25))
    with LoopbackServer(routes({"/a": PAGE, "/b": PAGE})) as server:
        first = tool(tmp_path, web).run(url=f"{server.url}/a")
        second = tool(tmp_path, web).run(url=f"{server.url}/b")
        elsewhere = tool(tmp_path, web).run(url=f"http://localhost:{server.port}/b")  # another host name
    assert isinstance(first, ToolOutput) and isinstance(elsewhere, ToolOutput)
    assert isinstance(second, str) and "gave up waiting for a turn at 127.0.0.1" in second
    assert [r.path for r in server.requests] == ["/a", "/b"]


def test_retry_after_on_429_is_waited_out_then_retried(tmp_path: Path) -> None:
    answers = iter([Response(429, "slow down", headers={"Retry-After": "1"}), PAGE])
    web = WebSession(settings(ignore_robots=True))
    with LoopbackServer(lambda req: next(answers)) as server:
        out = tool(tmp_path, web).run(url=f"{server.url}/data")
    assert isinstance(out, ToolOutput) and out.text.endswith("plain text page")
    assert len(server.requests) == 2


def test_a_long_retry_after_holds_the_host_for_every_task(tmp_path: Path) -> None:
    busy = Response(503, "maintenance", headers={"Retry-After": "3600"})
    web = WebSession(settings(ignore_robots=True))
    with LoopbackServer(routes({"/a": busy, "/b": PAGE})) as server:
        first = tool(tmp_path, web).run(url=f"{server.url}/a")
        other_task = tool(tmp_path, web).run(url=f"{server.url}/b")
    assert first == (f"Error: could not scrape {server.url}/a: the server answered HTTP 503 Service Unavailable; "
                     "the server asked to wait 3600 s (Retry-After)")
    assert isinstance(other_task, str) and "the server asked to wait" in other_task
    assert [r.path for r in server.requests] == ["/a"]  # neither retried nor asked again


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


@pytest.mark.parametrize("variable, value, message", [
    ("SCRAPE_HOST_GAP", "-1", "--host-gap / SCRAPE_HOST_GAP must be at least 0, not -1"),
    ("SCRAPE_HOST_CONCURRENCY", "0", "SCRAPE_HOST_CONCURRENCY must be at least 1, not 0"),
    ("SCRAPE_BROWSER_PAGES", "0", "SCRAPE_BROWSER_PAGES must be at least 1, not 0"),
    ("SCRAPE_RENDER", "always", "SCRAPE_RENDER must be auto or off"),
    ("SCRAPE_IGNORE_ROBOTS", "maybe", "SCRAPE_IGNORE_ROBOTS='maybe' is not valid"),
])
def test_bad_web_settings_are_one_line_errors(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={variable: value})
    assert str(caught.value).startswith(message)
