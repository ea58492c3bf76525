"""--allow-domains / --block-domains keep scrape, look and search results to approved sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from tests.fakes.loopback import LoopbackServer, Response, routes
from tests.test_search import FakeDDGS
from tools.base import ToolOutput
from tools.media.look import load_source
from tools.web.domains import DomainRules
from tools.web.errors import SourceNotReadError
from tools.web.scrape import ScrapeTool
from tools.web.search import SearchTool

PAGE = Response(body="approved text", content_type="text/plain")


def scrape(tmp_path: Path, **rules: Any) -> ScrapeTool:
    settings = Settings(scrape_allow_private=True, ignore_robots=True, host_gap=0.0, **rules)
    return ScrapeTool(tmp_path / "ws", settings)


def test_a_domain_covers_itself_and_its_subdomains_only() -> None:
    rules = DomainRules.of(allow=["Example.org", "https://data.gov.example/x"], block=["*.ads.example.org"])
    assert rules.allows_url("https://example.org/a") and rules.allows_url("https://www.example.org/a")
    assert rules.allows_url("http://data.gov.example/")
    assert not rules.allows_url("https://notexample.org/") and not rules.allows_url("https://example.org.evil.net/")
    assert not rules.allows_url("https://x.ads.example.org/")  # blocked wins over allowed
    assert rules.refusal("other.net") == ("other.net is outside the allowed domains (example.org, data.gov.example; "
                                          "--allow-domains / AGENT_ALLOW_DOMAINS)")
    assert DomainRules.of(block=["bad.example"]).allows_url("https://good.example/")


def test_scrape_outside_the_allowed_domains_is_refused_before_any_request(tmp_path: Path) -> None:
    with LoopbackServer(routes({"/page": PAGE})) as server:
        tool = scrape(tmp_path, allow_domains=("localhost",))
        allowed = tool.run(url=f"http://localhost:{server.port}/page")
        with pytest.raises(SourceNotReadError) as caught:
            tool.run(url=f"{server.url}/page")  # 127.0.0.1 is not localhost
    assert isinstance(allowed, ToolOutput) and allowed.text.endswith("approved text")
    assert caught.value.kind == "domain rules"
    assert str(caught.value) == (f"could not scrape {server.url}/page: 127.0.0.1 is outside the allowed domains "
                                 "(localhost; --allow-domains / AGENT_ALLOW_DOMAINS); refused")
    assert len(server.requests) == 1


def test_a_redirect_to_a_blocked_domain_is_refused_on_the_hop(tmp_path: Path) -> None:
    with LoopbackServer(routes({})) as server:  # localhost/go redirects to 127.0.0.1/page, a blocked host
        server.handler = routes({"/go": Response(302, headers={"Location": f"{server.url}/page"}), "/page": PAGE})
        with pytest.raises(SourceNotReadError) as caught:
            scrape(tmp_path, block_domains=("127.0.0.1",)).run(url=f"http://localhost:{server.port}/go")
    assert caught.value.url == f"{server.url}/page" and "blocked domains (127.0.0.1" in str(caught.value)
    assert [r.path for r in server.requests] == ["/go"]


def test_look_fetches_only_inside_the_domain_rules(tmp_path: Path) -> None:
    settings = Settings(scrape_allow_private=True, ignore_robots=True, block_domains=("127.0.0.1",))
    with pytest.raises(Exception, match="blocked domains"):
        load_source(tmp_path, settings, "http://127.0.0.1:9/chart.png")


RESULTS = [{"title": "Agency report", "href": "https://stats.gov.example/report", "body": "official"},
           {"title": "Blog", "href": "https://blog.example.net/post", "body": "opinion"},
           {"title": "Agency data", "href": "https://gov.example/data", "body": "tables"}]


def test_search_results_outside_the_rules_are_dropped_and_the_rest_renumbered() -> None:
    tool = SearchTool(Settings(allow_domains=("gov.example",)), ddgs_factory=lambda: FakeDDGS(RESULTS))
    out = tool.run(query="unemployment rate")
    assert "blog.example.net" not in out
    assert "1. Agency report\n   URL: https://stats.gov.example/report" in out
    assert "2. Agency data\n   URL: https://gov.example/data" in out
    assert out.endswith("(1 result(s) outside the domain rules were left out.)")


def test_search_with_every_result_outside_the_rules_says_so() -> None:
    tool = SearchTool(Settings(allow_domains=("wikipedia.org",)), ddgs_factory=lambda: FakeDDGS(RESULTS))
    assert tool.run(query="q") == ("No results within the domain rules: all 3 result(s) were on other sites. Try a "
                                   "query that names an allowed site (wikipedia.org).")
    unruled = SearchTool(Settings(), ddgs_factory=lambda: FakeDDGS(RESULTS)).run(query="q")
    assert "blog.example.net" in unruled and "left out" not in unruled


def test_the_flags_set_the_domain_rules() -> None:
    args = main.parse_args(["tasks.txt", "--allow-domains", "gov.example, who.int", "--block-domains", "x.gov.example",
                            "--ignore-robots", "--user-agent", "Bot/1", "--host-gap", "0.5"])
    settings = main.settings_from_args(args)
    assert settings.allow_domains == ("gov.example", "who.int") and settings.block_domains == ("x.gov.example",)
    assert settings.ignore_robots and settings.user_agent == "Bot/1" and settings.host_gap == 0.5
