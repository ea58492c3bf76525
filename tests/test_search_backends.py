"""SearXNG, Brave and Tavily against loopback servers speaking their documented wire formats; the failover
across SEARCH_BACKENDS, the failures it records under the task, and the settings that order it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import main
from agent import ReActAgent
from config import Settings, load_settings
from core.errors import ConfigError
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tests.fakes.providers import openai_reply
from tests.fakes.scripted import ScriptedLLM
from tests.test_search import DDG_RESULTS, FakeDDGS
from tools.base import ToolOutput
from tools.web.search import SearchTool
from tools.web.search_backends import search_order

# Brave's WebSearchApiResponse, trimmed to the fields read, as in the example of
# https://api-dashboard.search.brave.com/app/documentation/web-search/responses (web.results[]: title, url,
# description with <strong> marks, age, page_age).
BRAVE_BODY = {
    "type": "search",
    "query": {"original": "eiffel tower height", "more_results_available": True},
    "web": {"type": "search", "family_friendly": True, "results": [
        {"type": "search_result", "title": "Eiffel Tower - Wikipedia", "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
         "description": "The <strong>Eiffel Tower</strong> is 330 metres tall.", "age": "March 3, 2024",
         "page_age": "2024-03-03T08:15:01", "language": "en", "family_friendly": True, "is_source_local": False,
         "meta_url": {"scheme": "https", "netloc": "en.wikipedia.org", "hostname": "en.wikipedia.org"}},
        {"type": "search_result", "title": "Tour Eiffel", "url": "https://www.toureiffel.paris/en",
         "description": "Official website.", "language": "en", "family_friendly": True},
    ]},
}
# Brave's APIErrorResponse examples from its API reference (api-dashboard.search.brave.com/api-reference/web/
# search/get): 429 QUOTA_LIMITED / RATE_LIMITED, 422 SUBSCRIPTION_TOKEN_INVALID.
BRAVE_QUOTA = {"type": "ErrorResponse", "errors": [{
    "id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d", "code": "QUOTA_LIMITED",
    "detail": "Request quota limit exceeded for plan.", "status": 429, "meta": {"component": "rate_limiter"}}],
    "time": 1663072993}
BRAVE_BAD_KEY = {"type": "ErrorResponse", "error": {
    "id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d", "code": "SUBSCRIPTION_TOKEN_INVALID",
    "detail": "The provided subscription token is invalid.", "status": 422, "meta": {"component": "authentication"}},
    "time": 1663072993}
# Tavily's POST /search response, as in the example of https://docs.tavily.com/documentation/api-reference/
# endpoint/search (query, answer with include_answer, images, results[]: title, url, content, score, raw_content).
TAVILY_BODY = {
    "query": "Who is Leo Messi?",
    "answer": "Lionel Messi, born in 1987, is an Argentine footballer widely regarded as one of the greatest.",
    "images": [],
    "results": [{"title": "Lionel Messi Facts | Britannica", "url": "https://www.britannica.com/facts/Lionel-Messi",
                 "content": "Lionel Messi, an Argentine footballer, is widely regarded as one of the greatest.",
                 "score": 0.81025416, "raw_content": None}],
    "response_time": "1.67",
    "request_id": "123e4567-e89b-12d3-a456-426614174111",
}
# Tavily's documented 432 (help.tavily.com "Errors Code"): plan limit exceeded, FastAPI's {"detail": {"error"}}.
TAVILY_PLAN_LIMIT = {"detail": {"error": "This request exceeds your plan's set usage limit. Please upgrade your plan "
                                         "or contact support@tavily.com"}}
# SearXNG's /search?format=json answer (docs.searxng.org/dev/search_api.html; searx/webapp.py): results[] with
# url, title, content, engine(s), publishedDate; answers, infoboxes, suggestions, unresponsive_engines.
SEARXNG_BODY = {
    "query": "eiffel tower", "number_of_results": 0,
    "results": [{"url": "https://en.wikipedia.org/wiki/Eiffel_Tower", "title": "Eiffel Tower - Wikipedia",
                 "content": "The Eiffel Tower is a wrought-iron lattice tower.", "engine": "duckduckgo",
                 "parsed_url": ["https", "en.wikipedia.org", "/wiki/Eiffel_Tower", "", "", ""],
                 "template": "default.html", "engines": ["duckduckgo", "google"], "positions": [1, 1],
                 "publishedDate": None, "score": 4.0, "category": "general"}],
    "answers": [], "corrections": [],
    "infoboxes": [{"infobox": "Eiffel Tower", "id": "https://en.wikipedia.org/wiki/Eiffel_Tower",
                   "content": "Wrought-iron lattice tower on the Champ de Mars in Paris.",
                   "attributes": [{"label": "Height", "value": "330 m"}], "engine": "wikipedia"}],
    "suggestions": ["eiffel tower tickets"], "unresponsive_engines": [["brave", "timeout"]],
}
SEARXNG_DEAD = {**SEARXNG_BODY, "results": [], "infoboxes": [],
                "unresponsive_engines": [["google", "CAPTCHA"], ["duckduckgo", "timeout"]]}


def test_brave_sends_the_token_and_reads_web_results() -> None:
    with LoopbackServer(routes({"/res/v1/web/search": Response(body=BRAVE_BODY)})) as server:
        settings = Settings(brave_api_key="brave-test-key", brave_base_url=server.url, search_backends=("brave",))
        out = SearchTool(settings).run(query="eiffel tower height", num_results=1)
    request = server.requests[0]
    assert request.method == "GET" and request.headers["x-subscription-token"] == "brave-test-key"
    assert "q=eiffel+tower+height" in request.path and "count=1" in request.path
    assert out == ('Search results for "eiffel tower height" (Brave Search):\n\n1. Eiffel Tower - Wikipedia\n'
                   "   URL: https://en.wikipedia.org/wiki/Eiffel_Tower\n   Date: 2024-03-03T08:15:01\n"
                   "   The Eiffel Tower is 330 metres tall.")


def test_tavily_posts_with_bearer_key_and_shows_its_answer() -> None:
    with LoopbackServer(routes({"/search": Response(body=TAVILY_BODY)})) as server:
        settings = Settings(tavily_api_key="tvly-test-key-123", tavily_base_url=server.url)
        out = SearchTool(settings).run(query="who is leo messi", num_results=3)
    request = server.requests[0]
    assert request.method == "POST" and request.headers["authorization"] == "Bearer tvly-test-key-123"
    assert request.json() == {"query": "who is leo messi", "max_results": 3, "search_depth": "basic",
                              "include_answer": True}
    assert isinstance(out, str) and out.startswith('Search results for "who is leo messi" (Tavily):')
    assert "Answer (generated by Tavily from the results): Lionel Messi, born in 1987" in out
    assert "1. Lionel Messi Facts | Britannica\n   URL: https://www.britannica.com/facts/Lionel-Messi" in out


def test_searxng_asks_for_json_and_shows_infobox_and_results() -> None:
    with LoopbackServer(routes({"/search": Response(body=SEARXNG_BODY)})) as server:
        out = SearchTool(Settings(searxng_url=server.url + "/")).run(query="eiffel tower")
    assert server.requests[0].method == "GET" and "format=json" in server.requests[0].path
    assert isinstance(out, str) and out.startswith('Search results for "eiffel tower" (SearXNG):')
    assert "Infobox: Eiffel Tower\nWrought-iron lattice tower on the Champ de Mars in Paris.\n- Height: 330 m" in out
    assert "1. Eiffel Tower - Wikipedia\n   URL: https://en.wikipedia.org/wiki/Eiffel_Tower" in out


def _servers() -> dict[str, LoopbackServer]:
    """SearXNG without format=json (403), Brave out of quota (429), Tavily over its plan (432)."""
    return {"searxng": LoopbackServer(routes({"/search": Response(403, "Forbidden", content_type="text/html")})),
            "brave": LoopbackServer(routes({"/res/v1/web/search": Response(429, BRAVE_QUOTA)})),
            "tavily": LoopbackServer(routes({"/search": Response(432, TAVILY_PLAN_LIMIT)}))}


def _failing_settings(servers: dict[str, LoopbackServer], order: tuple[str, ...]) -> Settings:
    return Settings(searxng_url=servers["searxng"].url, brave_api_key="brave-test-key",
                    brave_base_url=servers["brave"].url, tavily_api_key="tvly-test-key-123",
                    tavily_base_url=servers["tavily"].url, search_backends=order)


def test_each_failure_moves_on_to_the_next_backend_in_the_users_order() -> None:
    servers = _servers()
    ddgs = FakeDDGS(DDG_RESULTS)
    with servers["searxng"], servers["brave"], servers["tavily"]:
        settings = _failing_settings(servers, ("searxng", "brave", "tavily", "duckduckgo"))
        out = SearchTool(settings, ddgs_factory=lambda: ddgs).run(query="q", num_results=2)
    assert isinstance(out, ToolOutput)
    assert out.failures == [
        "SearXNG refused format=json (HTTP 403): add json to search.formats in the instance's settings.yml",
        "Brave Search quota or rate limit exceeded (HTTP 429): Request quota limit exceeded for plan.",
        "Tavily quota or rate limit exceeded (HTTP 432): This request exceeds your plan's set usage limit. Please "
        "upgrade your plan or contact support@tavily.com"]
    assert out.text.startswith("Note: SearXNG refused format=json") and "Results from DuckDuckGo instead." in out.text
    assert 'Search results for "q" (DuckDuckGo):\n\n1. Duck 1' in out.text and "3. Duck 3" not in out.text
    assert [len(s.requests) for s in servers.values()] == [1, 1, 1] and ddgs.calls == [("q", 2)]


def test_the_order_is_the_users_and_a_later_backend_is_not_asked() -> None:
    servers = _servers()
    with servers["searxng"], servers["brave"], servers["tavily"], \
            LoopbackServer(routes({"/search": Response(body=TAVILY_BODY)})) as tavily:
        settings = _failing_settings(servers, ("brave", "tavily", "searxng")).with_overrides(tavily_base_url=tavily.url)
        out = SearchTool(settings, ddgs_factory=lambda: FakeDDGS(RuntimeError("not asked"))).run(query="q")
    assert isinstance(out, ToolOutput) and len(out.failures) == 1 and out.failures[0].startswith("Brave Search quota")
    assert "(Tavily):" in out.text and not servers["searxng"].requests


def test_every_backend_failing_is_one_error_naming_each() -> None:
    servers = _servers()
    with servers["searxng"], servers["brave"], servers["tavily"]:
        out = SearchTool(_failing_settings(servers, ("tavily", "brave", "searxng"))).run(query="q")
    assert isinstance(out, str) and out.startswith("Error: every search backend failed: Tavily quota")
    assert "Brave Search quota" in out and "SearXNG refused format=json" in out


def test_brave_bad_key_and_searxng_without_engines_are_failures() -> None:
    with LoopbackServer(routes({"/res/v1/web/search": Response(422, BRAVE_BAD_KEY),
                                "/search": Response(body=SEARXNG_DEAD)})) as server:
        settings = Settings(brave_api_key="brave-test-key", brave_base_url=server.url, searxng_url=server.url,
                            search_backends=("brave", "searxng"))
        out = SearchTool(settings).run(query="q")
    assert out == ("Error: every search backend failed: Brave Search rejected the API key (HTTP 422); check "
                   "BRAVE_API_KEY: The provided subscription token is invalid. SearXNG's engines did not answer: "
                   "google (CAPTCHA), duckduckgo (timeout)")


def test_a_recovered_backend_failure_is_listed_under_the_task() -> None:
    with LoopbackServer(routes({"/res/v1/web/search": Response(429, BRAVE_QUOTA)})) as brave:
        settings = Settings(brave_api_key="brave-test-key", brave_base_url=brave.url)
        tool = SearchTool(settings, ddgs_factory=lambda: FakeDDGS(DDG_RESULTS))
        llm = ScriptedLLM(['Action: search\nAction Input: {"query": "eiffel tower"}', "Final Answer: 330 m"])
        result = ReActAgent(llm, [tool]).run("How tall is the Eiffel Tower?")
    assert result.answer == "330 m" and result.steps[0].error is None
    assert result.tool_failures == [{"step": 1, "tool": "search", "error": "Brave Search quota or rate limit "
                                     "exceeded (HTTP 429): Request quota limit exceeded for plan."}]
    assert "Results from DuckDuckGo instead" in result.steps[0].observation


def test_default_order_is_every_configured_backend_then_duckduckgo() -> None:
    assert search_order(Settings()) == ("duckduckgo",)
    assert search_order(Settings(serper_api_key="s" * 12, tavily_api_key="t" * 12, searxng_url="http://x")) == (
        "serper", "tavily", "searxng", "duckduckgo")
    assert search_order(Settings(search_backends=("brave", "duckduckgo", "brave"))) == ("brave", "duckduckgo")


@pytest.mark.parametrize(("env", "message"), [
    ({"SEARCH_BACKENDS": "bing,brave"}, "--search-backends / SEARCH_BACKENDS: unknown backend 'bing'"),
    ({"SEARCH_BACKENDS": "searxng,duckduckgo"}, "SEARCH_BACKENDS names searxng but SEARXNG_URL is not set"),
    ({"SEARCH_BACKENDS": "Tavily"}, "SEARCH_BACKENDS names tavily but TAVILY_API_KEY is not set"),
])
def test_search_backends_that_cannot_work_fail_the_run_in_one_line(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ=env)


def test_flag_and_environment_set_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"SEARXNG_URL": "http://127.0.0.1:8888", "BRAVE_API_KEY": "brave-test-key"}
    assert load_settings(environ={**env, "SEARCH_BACKENDS": "SearXNG, brave"}).search_backends == ("searxng", "brave")
    monkeypatch.setenv("BRAVE_API_KEY", "brave-test-key")
    args = main.parse_args(["tasks.txt", "--search-backends", "Brave,duckduckgo"])
    assert main.settings_from_args(args).search_backends == ("brave", "duckduckgo")


def test_through_a_run_the_recovered_failure_is_in_the_records_and_the_report(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def handle(req: Request) -> Response:
        if req.path.startswith("/res/v1/web/search"):
            return Response(429, BRAVE_QUOTA)
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        return openai_reply(['Action: search\nAction Input: {"query": "eiffel tower"}', "Final Answer: 330 m"][
            min(turns, 1)])

    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: FakeDDGS(DDG_RESULTS))
    (tmp_path / "tasks.txt").write_text("How tall is the Eiffel Tower?\n")
    with LoopbackServer(handle) as server:
        for name, value in {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1",
                            "BRAVE_API_KEY": "brave-test-key", "BRAVE_BASE_URL": server.url}.items():
            monkeypatch.setenv(name, value)
        code = main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "--search-backends", "brave,duckduckgo"])
    record = json.loads((tmp_path / "results.jsonl").read_text())
    assert code == 0 and record["answer"] == "330 m"
    quota = "Brave Search quota or rate limit exceeded (HTTP 429): Request quota limit exceeded for plan."
    assert record["tool_failures"] == [{"step": 1, "tool": "search", "error": quota}]
    md = (tmp_path / "results.md").read_text()  # results.md escapes the brackets of untrusted text
    assert "- step 1 · search: Brave Search quota or rate limit exceeded \\(HTTP 429\\): Request quota" in md
