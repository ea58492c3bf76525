"""check_setup.py's live search: a dead backend fails the run of checks, naming the backend and its error."""

from __future__ import annotations

import re
from typing import Any

import pytest

import check_setup
from tests.fakes.loopback import LoopbackServer, Response, routes
from tests.test_search import DDG_RESULTS, FakeDDGS

# What ddgs raises when name resolution fails: ddgs/http_client.py wraps the client's error as
# f"{type(ex).__name__}: {ex!r}" and ddgs/ddgs.py re-raises the last engine's error as DDGSException.
DNS_ERROR = ("ConnectError: ConnectError('error sending request for url (https://html.duckduckgo.com/html): "
             "client error (Connect): dns error: failed to lookup address information: Temporary failure in "
             "name resolution')")


class DeadDDGS:
    """ddgs.DDGS on a machine whose DNS does not answer."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
        from ddgs.exceptions import DDGSException

        self.queries.append(query)
        raise DDGSException(DNS_ERROR)


@pytest.fixture
def dead_ddg(monkeypatch: pytest.MonkeyPatch) -> DeadDDGS:
    """DuckDuckGo (the default backend without SERPER_API_KEY) fails with a DNS error."""
    dead = DeadDDGS()
    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: dead)
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")  # no model either: only search is looked at
    return dead


def _search_line(out: str) -> str:
    return next(line for line in out.splitlines() if "  search " in line)


def test_a_dead_search_backend_fails_the_check_naming_backend_and_error(
        dead_ddg: DeadDDGS, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_setup.main([]) == 1
    out = capsys.readouterr().out
    line = _search_line(out)
    assert line.startswith(" ✗") and "DuckDuckGo search failed" in line and "dns error" in line
    assert "AGENT_SEARCH=0" in out and "Not ready" in out and dead_ddg.queries


def test_offline_does_not_probe_search(dead_ddg: DeadDDGS, capsys: pytest.CaptureFixture[str]) -> None:
    check_setup.main(["--offline"])
    assert "not contacted (--offline)" in _search_line(capsys.readouterr().out) and not dead_ddg.queries


@pytest.mark.parametrize("how", ["env", "flag"])
def test_search_turned_off_is_not_probed_and_does_not_fail(
        how: str, dead_ddg: DeadDDGS, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if how == "env":
        monkeypatch.setenv("AGENT_SEARCH", "0")
    check_setup.main(["--no-search"] if how == "flag" else [])
    line = _search_line(capsys.readouterr().out)
    assert line.startswith(" ✓") and "turned off (AGENT_SEARCH=0)" in line and not dead_ddg.queries


def test_serper_rejecting_its_key_fails_the_check(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(routes({"/search": Response(403, {"message": "Unauthorized.", "statusCode": 403})})) as server:
        monkeypatch.setenv("SERPER_API_KEY", "serper-test-key")
        monkeypatch.setenv("SERPER_BASE_URL", server.url)
        monkeypatch.setenv("SEARCH_BACKENDS", "serper")  # the only backend: its failure leaves no search
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1234567890")
        assert check_setup.main(["--model", "openai:gpt-4.1-mini", "--base-url", server.url + "/v1"]) == 1
    line = _search_line(capsys.readouterr().out)
    assert line.startswith(" ✗") and "Serper search failed" in line and "HTTP 403" in line


def test_serper_down_but_duckduckgo_answering_is_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    class LiveDDGS:
        def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
            return [{"title": "Python", "href": "https://www.python.org/", "body": "The Python language."}]

    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: LiveDDGS())
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    with LoopbackServer(routes({"/search": Response(503, "upstream down")})) as server:
        monkeypatch.setenv("SERPER_API_KEY", "serper-test-key")
        monkeypatch.setenv("SERPER_BASE_URL", server.url)
        check_setup.main([])
    line = _search_line(capsys.readouterr().out)
    assert line.startswith(" !") and "order Google via Serper (SERPER_API_KEY set) → DuckDuckGo" in line
    assert "Serper search failed: Serper answered HTTP 503" in line and "(DuckDuckGo answered)" in line


def test_a_ddgs_error_naming_another_engine_says_why_the_duckduckgo_check_names_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class BraveLastDDGS:  # ddgs's "auto" backend re-raises the last engine's error: here Brave's
        def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
            from ddgs.exceptions import DDGSException
            raise DDGSException("https://search.brave.com/search?q=Python+programming+language 403 Forbidden")

    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: BraveLastDDGS())
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    assert check_setup.main([]) == 1
    line = _search_line(capsys.readouterr().out)
    assert "DuckDuckGo search failed (through the ddgs package, which also asks other engines; the last one it " \
           "asked, search.brave.com, failed)" in line


def _papers_line(out: str) -> str:
    return next(line for line in out.splitlines() if "  papers " in line)


def test_the_papers_row_says_which_service_answers_and_with_which_key(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes.scholarly import Scholarly, env_for, serve

    world = Scholarly()
    world.answers["s2"] = "semantic_scholar_429"
    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: FakeDDGS(DDG_RESULTS))
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    with serve(world):
        for name, value in {**env_for(world), "OPENALEX_MAILTO": "me@example.org",
                            "SEMANTIC_SCHOLAR_API_KEY": "s2-key-0123456789"}.items():
            monkeypatch.setenv(name, value)
        check_setup.main([])
        check_setup.main(["--offline"])
    runs = re.split(r"\n(?:Not ready|Ready): ", capsys.readouterr().out)[:2]  # each run ends with its summary
    live, offline = (_papers_line(part) for part in runs)
    order = ("OpenAlex (no OPENALEX_API_KEY: a small daily allowance, mailto me@example.org) → Semantic Scholar "
             "(SEMANTIC_SCHOLAR_API_KEY set) → Crossref (no CROSSREF_MAILTO)")
    assert live.startswith(" !") and order in live and "(OpenAlex, Crossref answered)" in live
    assert "Semantic Scholar rate limit or daily allowance spent (HTTP 429)" in live
    assert offline.startswith(" ✓") and offline.endswith(order + "; not contacted (--offline)")
    assert [s for _, s, _ in world.requests] == ["openalex", "s2", "crossref"]  # each asked once, only live


def test_papers_turned_off_are_not_probed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AGENT_PAPERS", "off")
    check_setup.main(["--offline"])
    assert "turned off (AGENT_PAPERS=off or AGENT_SEARCH=0)" in _papers_line(capsys.readouterr().out)


def test_every_scholarly_service_refused_is_said_so_each_its_own_clause_and_rows_are_whole(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes.scholarly import Scholarly, env_for, serve

    long_error = "DuckDuckGo said " + " ".join(f"word{i}" for i in range(120))  # longer than a row's clause

    class Talkative(FakeDDGS):
        def text(self, query: str, max_results: int = 10) -> list[dict[str, Any]]:
            from ddgs.exceptions import DDGSException
            raise DDGSException(long_error)

    world = Scholarly()
    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: Talkative(DDG_RESULTS))
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    with serve(world):
        for name, value in env_for(world).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SCRAPE_ALLOW_PRIVATE_URLS", "0")  # the loopback stand-ins are refused, each of them
        check_setup.main([])
    out = capsys.readouterr().out
    papers = _papers_line(out)
    assert "; every service failed: OpenAlex: " in papers and "; Semantic Scholar: " in papers
    assert "; Crossref: " in papers and world.requests == []
    search = _search_line(out)
    shown = search.split("DuckDuckGo said ")[1]
    assert shown.endswith(" …") and all(re.fullmatch(r"word\d+", w) for w in shown[:-2].split())  # cut at a word
