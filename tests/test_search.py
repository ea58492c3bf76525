"""The search tool: Serper against a loopback server, DuckDuckGo through an injected fake (other backends and the
failover between them: tests/test_search_backends.py)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tools.base import ToolOutput, ToolRegistry
from tools.web.search import SearchTool

SERPER_BODY = {
    "answerBox": {"title": "Eiffel Tower height", "answer": "330 m", "link": "https://example.org/eiffel"},
    "knowledgeGraph": {"title": "Eiffel Tower", "type": "Tower", "description": "Wrought-iron lattice tower.",
                       "descriptionLink": "https://en.wikipedia.org/wiki/Eiffel_Tower",
                       "attributes": {"Height": "330 m", "Opened": "31 March 1889"}},
    "organic": [
        {"title": f"Result {i}", "link": f"https://site{i}.example/page", "snippet": f"Snippet   number {i}.",
         **({"date": "Mar 3, 2024"} if i == 1 else {})}
        for i in range(1, 11)
    ],
}


class FakeDDGS:
    """Stands in for ddgs.DDGS: records queries, returns canned results or raises."""

    def __init__(self, results: list[dict[str, Any]] | Exception) -> None:
        self.results = results
        self.calls: list[tuple[str, int]] = []

    def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
        self.calls.append((query, max_results))
        if isinstance(self.results, Exception):
            raise self.results
        return self.results[:max_results]


DDG_RESULTS = [{"title": f"Duck {i}", "href": f"https://duck{i}.example/", "body": f"Duck snippet {i}"}
               for i in range(1, 8)]


def serper_tool(server: LoopbackServer, ddgs: FakeDDGS | None = None) -> SearchTool:
    settings = Settings(serper_api_key="test-key", serper_base_url=server.url)
    fake = ddgs or FakeDDGS(RuntimeError("DuckDuckGo must not be called"))
    return SearchTool(settings, ddgs_factory=lambda: fake)


def test_serper_sends_key_and_query_and_formats_everything() -> None:
    with LoopbackServer(routes({"/search": Response(body=SERPER_BODY)})) as server:
        out = serper_tool(server).run(query="eiffel tower height", num_results=3)
    request: Request = server.requests[0]
    assert request.method == "POST" and request.headers["x-api-key"] == "test-key"
    assert request.json() == {"q": "eiffel tower height", "num": 3}
    assert "Answer box: Eiffel Tower height: 330 m" in out and "https://example.org/eiffel" in out
    assert "Knowledge graph: Eiffel Tower (Tower)" in out and "- Opened: 31 March 1889" in out
    first = "1. Result 1\n   URL: https://site1.example/page\n   Date: Mar 3, 2024\n   Snippet number 1."
    assert first in out
    assert "3. Result 3" in out and "4. Result 4" not in out


def test_num_results_defaults_to_five_and_is_capped_by_the_schema() -> None:
    with LoopbackServer(routes({"/search": Response(body=SERPER_BODY)})) as server:
        out = serper_tool(server).run(query="q")
    assert server.requests[0].json()["num"] == 5
    assert "5. Result 5" in out and "6. Result 6" not in out
    registry = ToolRegistry([SearchTool(Settings())])
    with pytest.raises(Exception, match="num_results"):
        registry.prepare("search", {"query": "q", "num_results": 50})
    assert registry.prepare("search", "plain string query")[1] == {"query": "plain string query"}


@pytest.mark.parametrize(("status", "expected"), [
    (401, "Serper rejected the API key (HTTP 401); check SERPER_API_KEY"),
    (403, "Serper rejected the API key (HTTP 403)"),
])
def test_bad_key_is_named_and_the_next_backend_answers(status: int, expected: str) -> None:
    ddgs = FakeDDGS(DDG_RESULTS)
    with LoopbackServer(routes({"/search": Response(status, {"message": "Unauthorized."})})) as server:
        out = serper_tool(server, ddgs).run(query="q")
    assert isinstance(out, ToolOutput) and out.text.startswith("Note: ") and expected in out.text
    assert "Unauthorized." in out.failures[0] and ddgs.calls == [("q", 5)]


@pytest.mark.parametrize(("status", "expected"), [
    (429, "Serper quota or rate limit exceeded (HTTP 429)"),
    (500, "Serper answered HTTP 500: boom"),
])
def test_quota_and_server_errors_fall_back_to_duckduckgo(status: int, expected: str) -> None:
    ddgs = FakeDDGS(DDG_RESULTS)
    with LoopbackServer(routes({"/search": Response(status, "boom")})) as server:
        out = serper_tool(server, ddgs).run(query="q", num_results=2)
    assert isinstance(out, ToolOutput) and out.failures[0].startswith(expected)
    assert out.text.startswith(f"Note: {expected}") and "Results from DuckDuckGo instead" in out.text
    assert "1. Duck 1" in out.text and "2. Duck 2" in out.text and "3. Duck 3" not in out.text


def test_quota_error_with_duckduckgo_also_failing_names_both() -> None:
    with LoopbackServer(routes({"/search": Response(429, "slow down")})) as server:
        out = serper_tool(server, FakeDDGS(RuntimeError("engine down"))).run(query="q")
    assert out.startswith("Error: every search backend failed: Serper quota or rate limit exceeded")
    assert "DuckDuckGo search failed: engine down" in out


def test_connection_refused_is_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(serper_api_key="k", serper_base_url=f"http://127.0.0.1:{port}")
    out = SearchTool(settings, ddgs_factory=lambda: FakeDDGS(RuntimeError("offline"))).run(query="q")
    assert out.startswith("Error: every search backend failed: ")
    assert f"could not reach Serper at http://127.0.0.1:{port}/search" in out


def test_malformed_body_and_empty_results() -> None:
    table = {"/search": lambda req: Response(body="<html>not json</html>", content_type="text/html")
             if req.json()["q"] == "bad" else Response(body={"organic": []})}
    with LoopbackServer(routes(table)) as server:
        tool = serper_tool(server, FakeDDGS([]))
        malformed = tool.run(query="bad")
        empty = tool.run(query="nothing here")
    assert isinstance(malformed, ToolOutput) and "Serper returned a malformed (non-JSON) response" in malformed.text
    assert empty == 'No results found for "nothing here". Try fewer or different keywords.'


def test_without_key_duckduckgo_is_used_with_the_same_shape() -> None:
    ddgs = FakeDDGS(DDG_RESULTS)
    out = SearchTool(Settings(), ddgs_factory=lambda: ddgs).run(query="  python   asyncio ", num_results=3)
    assert ddgs.calls == [("python asyncio", 3)]
    assert out.startswith('Search results for "python asyncio" (DuckDuckGo):')
    assert "1. Duck 1\n   URL: https://duck1.example/\n   Duck snippet 1" in out
    assert "3. Duck 3" in out and "4. Duck 4" not in out


def test_duckduckgo_failures_and_no_results_are_observations() -> None:
    class RatelimitException(Exception):
        pass

    def run_with(result: list[dict[str, Any]] | Exception) -> str:
        return SearchTool(Settings(), ddgs_factory=lambda: FakeDDGS(result)).run(query="q")

    limited = run_with(RatelimitException("202 Ratelimit"))
    assert limited == "Error: DuckDuckGo search rate-limited: 202 Ratelimit"
    assert run_with(Exception("No results found.")).startswith('No results found for "q"')
    assert run_with([]).startswith('No results found for "q"')
