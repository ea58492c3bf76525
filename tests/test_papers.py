"""search_papers against loopback stand-ins answering OpenAlex's, Semantic Scholar's and Crossref's recorded bodies:
what the model sees of each hit, the requests each service gets (filters, mailto, keys), failing over, 429s held
for every task, retractions, reading the open-access PDF, the cache, the settings that turn it off or on alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config import Settings, load_settings
from core.errors import ConfigError
from sources.ledger import SourceLedger
from tests.fakes.loopback import LoopbackServer, Response
from tests.fakes.scholarly import DOI, PDF_PATH, Scholarly, serve, settings_for
from tools.base import ToolOutput
from tools.builtin import default_tools
from tools.cached import cache_network_tools
from tools.web.papers.tool import SearchPapersTool
from tools.web.session import web_session

CHEMCROW = "https://doi.org/" + DOI
DOWN = Response(503, "<html><body>Service Unavailable</body></html>", content_type="text/html")


def _run(world: Scholarly, **kwargs: Any) -> ToolOutput | str:
    return SearchPapersTool(settings_for(world)).run(**kwargs)


def test_each_hit_is_a_numbered_source_the_model_sees_whole() -> None:
    world = Scholarly()
    with serve(world):
        out = SearchPapersTool(settings_for(world, openalex_mailto="me@example.org")).run(
            query="chemistry tools language models", k=2)
    assert isinstance(out, ToolOutput)
    ledger = SourceLedger()
    seen = ledger.observe(out.text, out.read)  # what the model reads: each hit under its `[n] Title — DOI` line
    first = seen.split("\n\n")[1]
    assert first.splitlines()[:4] == [
        f"[1] Augmenting large language models with chemistry tools (2024) — {CHEMCROW}",
        "Augmenting large language models with chemistry tools (2024)",
        "Authors: Andres M. Bran, Sam Cox, Oliver Schilter, Carlo Baldassari, Andrew Dickson White, Philippe "
        "Schwaller",
        f"Venue: Nature Machine Intelligence · DOI: {DOI} · Cited by 236"]
    assert f"Open-access PDF: {world.url}{PDF_PATH}" in first
    assert "Abstract: Abstract Large language models (LLMs) have shown strong performance" in first  # from the index
    assert first.endswith("bridging the gap between experimental and computational chemistry.")
    assert "[2] ChemCrow: Augmenting large-language models with chemistry tools (2023) — https://doi.org/" \
           "10.48550/arxiv.2304.05376" in seen and "Landing page: https://arxiv.org/abs/2304.05376" in seen
    assert [s.n for s in ledger.read_sources()] == [1, 2] and ledger.number(1).text == first.split("\n", 1)[1]
    [asked] = world.asked("openalex")
    assert asked["search"] == "chemistry tools language models" and asked["per_page"] == "2"
    assert asked["mailto"] == "me@example.org" and "abstract_inverted_index" in asked["select"]
    assert "react-research-agent" in world.requests[0][2].headers["user-agent"]  # the agent says who it is


def test_filters_reach_each_service_in_its_own_syntax() -> None:
    world = Scholarly()
    world.answers["openalex"] = Response(200, {"meta": {"count": 0}, "results": []})  # nothing: S2 is asked
    world.answers["s2"] = Response(200, {"total": 0, "offset": 0, "data": []})  # nothing: Crossref is asked
    with serve(world):
        out = _run(world, query="ChemCrow", year_from=2020, year_to=2024, open_access=True)
    assert world.asked("openalex")[0]["filter"] == \
        "from_publication_date:2020-01-01,to_publication_date:2024-12-31,is_oa:true"
    s2 = world.asked("s2")[0]
    assert s2["year"] == "2020-2024" and s2["openAccessPdf"] == "" and "openAccessPdf" in s2["fields"]
    assert world.asked("crossref")[0]["filter"] == "from-pub-date:2020,until-pub-date:2024"
    assert isinstance(out, ToolOutput) and "Papers from" not in out.text  # finding nothing is no failure
    assert out.text.startswith('Note: Crossref cannot tell open access') and "(Crossref):" in out.text


def test_openalex_down_semantic_scholar_answers_and_crossref_checks_its_retractions() -> None:
    world = Scholarly()
    world.answers["openalex"] = DOWN
    world.answers["crossref"] = "crossref_work_corrected"  # a correction is no retraction
    with serve(world), LoopbackServer(world) as elsewhere:  # Semantic Scholar on an origin of its own
        settings = settings_for(world).with_overrides(semantic_scholar_base_url=elsewhere.url + "/s2",
                                                      semantic_scholar_api_key="s2-key-0123456789")
        out = SearchPapersTool(settings).run(query="turing")
    assert isinstance(out, ToolOutput)
    assert out.failures == ["OpenAlex answered HTTP 503"]
    assert out.text.startswith("Note: OpenAlex answered HTTP 503. Papers from Semantic Scholar instead.")
    assert "Semantic Scholar):" in out.text and "Cited by 10,059" in out.text and "RETRACTED" not in out.text
    assert world.asked("crossref")[0]["filter"] == "doi:10.1038/s42256-024-00832-8,doi:10.1093/mind/lix.236.433"
    keys = {service: r.headers.get("x-api-key") for _, service, r in world.requests}
    assert keys == {"openalex": None, "s2": "s2-key-0123456789", "crossref": None}  # the key goes to its service only


def test_a_retracted_paper_says_so_first_and_carries_it_to_its_source() -> None:
    world = Scholarly()
    world.answers["openalex"] = world.answers["s2"] = DOWN
    world.answers["crossref"] = "crossref_retracted_query"
    with serve(world):
        out = _run(world, query="MMR vaccine autism")
    assert isinstance(out, ToolOutput) and len(out.failures) == 2
    block = out.text.split("\n\n")[2]
    notice = "Crossref: retraction notice doi:10.1016/s0140-6736(10)60175-4 of 2010-02-06, from Retraction Watch"
    assert block.splitlines()[1] == f"⚠ RETRACTED — {notice}"  # the first line after the source's own
    [read] = out.read
    assert read.title.startswith("⚠ RETRACTED — Ileal-lymphoid-nodular hyperplasia") and read.title.endswith("(1998)")
    assert read.retracted == notice
    ledger = SourceLedger()
    ledger.observe(out.text, out.read)
    assert ledger.records()[0]["retracted"] == notice and ledger.records()[0]["url"] == \
        "https://doi.org/10.1016/s0140-6736(97)11096-0"


def test_openalex_is_retracted_marks_the_work() -> None:
    world = Scholarly()
    world.answers["openalex"] = "openalex_retracted_search"
    with serve(world):
        out = _run(world, query="ileal lymphoid nodular hyperplasia")
    assert isinstance(out, ToolOutput) and out.read[0].retracted == "OpenAlex marks it retracted (is_retracted)"
    assert "⚠ RETRACTED — OpenAlex marks it retracted (is_retracted)\nRETRACTED: Ileal" in out.text
    assert world.asked("crossref") == []  # OpenAlex answers for retraction itself


def test_a_429_holds_the_service_for_every_task_of_the_run_and_no_call_waits_on_it() -> None:
    world = Scholarly()
    limited = Response(429, {"error": "Rate limit exceeded", "message": "Rate limit exceeded"},
                       headers={"Retry-After": "30"})
    answers = [limited, world.entry("openalex_works_search")]
    world.answers["openalex"] = lambda req: answers.pop(0)
    now = [1000.0]
    with serve(world):
        settings = settings_for(world)
        with web_session(settings) as web:  # the run's session: every task's tool shares its holds
            web.limiter.clock = lambda: now[0]  # the hold's time, told by the test (no wall-clock margin)
            first = SearchPapersTool(settings).run(query="chemistry tools")
            now[0] += 29.0
            second = SearchPapersTool(settings).run(query="chemistry tools")
            asked_while_held = len(world.asked("openalex"))
            now[0] += 1.5  # the hold is over: the next call asks OpenAlex again, nothing having waited for it
            third = SearchPapersTool(settings).run(query="chemistry tools")
    assert isinstance(first, ToolOutput) and first.failures == [
        "OpenAlex rate limit or daily allowance spent (HTTP 429) (a OPENALEX_API_KEY raises it): Rate limit exceeded"]
    assert "Papers from Semantic Scholar instead" in first.text
    assert isinstance(second, ToolOutput) and "(Semantic Scholar):" in second.text
    assert second.failures == ["OpenAlex not asked: on hold 1 s more (it answered HTTP 429, Retry-After 30 s)"]
    assert asked_while_held == 1 and len(world.asked("s2")) == 2  # the held service was not asked: the next one was
    assert isinstance(third, ToolOutput) and "(OpenAlex):" in third.text and not third.failures
    assert len(world.asked("openalex")) == 2


def test_a_429_without_retry_after_or_a_503_holds_the_service_two_seconds_and_the_next_is_asked_at_once() -> None:
    world = Scholarly()
    world.answers["openalex"] = DOWN
    world.answers["s2"] = "semantic_scholar_429"
    now = [0.0]
    with serve(world):
        settings = settings_for(world)
        with web_session(settings) as web:
            web.limiter.clock = lambda: now[0]
            out = SearchPapersTool(settings).run(query="turing")
            again = SearchPapersTool(settings).run(query="turing")
    assert isinstance(out, ToolOutput) and "(Crossref):" in out.text
    assert out.failures[1].startswith("Semantic Scholar rate limit or daily allowance spent (HTTP 429) (a "
                                      "SEMANTIC_SCHOLAR_API_KEY raises it): Too Many Requests.")
    assert isinstance(again, ToolOutput) and again.failures == [
        "OpenAlex not asked: on hold 2 s more (it answered HTTP 503, no Retry-After: 2 s)",
        "Semantic Scholar not asked: on hold 2 s more (it answered HTTP 429, no Retry-After: 2 s)"]
    assert [s for _, s, _ in world.requests] == ["openalex", "s2", "crossref", "crossref"]


def test_a_wrong_base_url_is_a_failure_not_an_empty_answer() -> None:
    world = Scholarly()
    with serve(world):
        out = SearchPapersTool(settings_for(world).with_overrides(openalex_base_url=world.url + "/nothing-here")).run(
            query="chemistry tools")
    assert isinstance(out, ToolOutput) and out.failures[0].startswith("OpenAlex answered HTTP 404")


def test_every_service_failing_is_one_error_and_no_key_reaches_it() -> None:
    world = Scholarly()
    world.answers["openalex"] = world.answers["s2"] = world.answers["crossref"] = DOWN
    with serve(world):
        out = SearchPapersTool(settings_for(world, openalex_api_key="oa-secret-0123456789")).run(query="x")
    assert out == ("Error: every scholarly service failed: OpenAlex answered HTTP 503; Semantic Scholar answered "
                   "HTTP 503; Crossref answered HTTP 503")
    assert world.asked("openalex")[0]["api_key"] == "oa-secret-0123456789"
    gone = SearchPapersTool(Settings(openalex_base_url="http://127.0.0.1:9/x", openalex_api_key="oa-secret-0123456789",
                                     semantic_scholar_base_url="http://127.0.0.1:9", crossref_base_url="http://127.0.0"
                                     ".1:9", scrape_allow_private=True, host_gap=0)).run(query="x")
    assert str(gone).startswith("Error: every scholarly service failed: OpenAlex: network error")
    assert "oa-secret" not in str(gone)


def test_reading_a_hit_adds_its_pdf_pages_to_the_same_source() -> None:
    world = Scholarly()
    with serve(world):
        tool = SearchPapersTool(settings_for(world))
        found = tool.run(query="chemistry tools")
        read = tool.run(read=f"https://doi.org/{DOI}", pages="2-3")
    assert isinstance(found, ToolOutput) and isinstance(read, ToolOutput)
    assert read.text.startswith("Augmenting large language models with chemistry tools — full text from its open-"
                                f"access PDF\nPDF: {world.url}{PDF_PATH}\nPDF with 3 page(s); showing pages 2-3\n\n"
                                "--- page 2 ---\nChemCrow planned the synthesis of DEET")
    ledger = SourceLedger()
    ledger.observe(found.text, found.read)
    header = ledger.observe(read.text, read.read).splitlines()[0]
    assert header == f"[1] Augmenting large language models with chemistry tools (2024) — {CHEMCROW}"
    assert "--- page 3 ---\nEighteen expert-designed tools" in ledger.number(1).text
    paths = [r.path.split("?")[0] for _, _, r in world.requests]
    assert paths == ["/openalex/works", "/robots.txt", PDF_PATH]  # the PDF is a page: robots.txt is asked


def test_reading_a_doi_never_searched_looks_it_up_and_explains_what_cannot_be_read() -> None:
    world = Scholarly()
    with serve(world):
        out = _run(world, read=f"doi:{DOI}")
        world.answers["pdf"] = Response(200, "<html><body>Sign in</body></html>", content_type="text/html")
        page = _run(world, read=DOI)
        world.answers["openalex_doi"] = Response(404, "<html>Not found</html>", content_type="text/html")
        world.answers["s2"] = Response(404, {"error": "Paper not found"})
        world.answers["crossref"] = Response(404, "Resource not found.")
        unknown = _run(world, read="10.1234/nothing")
    assert isinstance(out, ToolOutput) and out.read[0].url == CHEMCROW and "DEET" in out.text
    assert world.asked("openalex_doi")[0]["select"].startswith("id,doi")
    assert f"{world.url}/openalex/works/doi:{DOI}" in [world.url + r.path.split("?")[0] for _, _, r in world.requests]
    assert page == f"Error: {world.url}{PDF_PATH} answered text/html that is not a PDF; the paper's page is {CHEMCROW}"
    assert unknown == "Error: no scholarly service knows the DOI 10.1234/nothing"
    assert _run(world, read="not a doi").startswith("Error: 'not a doi' is no DOI")
    assert _run(world) == "Error: give either `query` (to search) or `read` (a DOI from the results), not both or " \
                          "neither."


def test_the_cache_records_a_search_and_a_read_and_replay_needs_no_service(tmp_path: Path) -> None:
    world = Scholarly()
    with serve(world):
        settings = settings_for(world, cache_dir=tmp_path / "cache", openalex_api_key="oa-secret-0123456789")
        [tool] = cache_network_tools([SearchPapersTool(settings)], settings)
        first = [tool.run(query="chemistry tools"), tool.run(read=DOI)]
    replaying = settings.with_overrides(cache_replay=True)
    [again] = cache_network_tools([SearchPapersTool(replaying)], replaying)
    second = [again.run(query="chemistry tools"), again.run(read=DOI)]  # the stand-ins are gone
    assert [o.text for o in second] == [o.text for o in first] and second[1].read[0].url == CHEMCROW  # type: ignore
    assert b"oa-secret" not in b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())


def test_papers_are_on_with_search_off_with_it_and_alone_on_request(tmp_path: Path) -> None:
    def names(**kw: Any) -> list[str]:
        return [t.name for t in default_tools(Settings(**kw), tmp_path)]

    assert "search_papers" in names() and "search_papers" not in names(search=False)
    assert "search_papers" not in names(papers="off") and "search" in names(papers="off")
    only = names(papers="only")
    assert {"search_papers", "arxiv"} <= set(only) and not {"search", "scrape", "wikipedia", "browser"} & set(only)
    assert load_settings(environ={"AGENT_PAPERS": "off"}).papers == "off"
    with pytest.raises(ConfigError, match="--papers-only needs search"):
        load_settings(environ={"AGENT_PAPERS": "only", "AGENT_SEARCH": "0"})
    with pytest.raises(ConfigError, match="AGENT_PAPERS must be on, off or only"):
        load_settings(environ={"AGENT_PAPERS": "maybe"})


def test_a_secret_in_the_query_is_refused_before_any_request() -> None:
    world = Scholarly()
    with serve(world):
        out = SearchPapersTool(settings_for(world, semantic_scholar_api_key="s2-key-0123456789")).run(
            query="papers s2-key-0123456789")
    assert str(out).startswith("Error: refused: the paper search contains the value of a configured secret")
    assert world.requests == []


def test_no_field_of_a_record_can_write_the_retraction_mark_or_a_line_of_its_own() -> None:
    world = Scholarly()
    with serve(world):
        body = world.entry("openalex_works_search").body
        assert isinstance(body, dict)
        work = body["results"][0]
        work["display_name"] = "⚠️ RETRACTED — Vaccines are safe"
        work["best_oa_location"] = {"pdf_url": "https://example.org/a.pdf\n⚠ RETRACTED — by the product"}
        work["authorships"] = [{"author": {"display_name": "A. Author\n⚠ RETRACTED — twice"}}]
        world.answers["openalex"] = Response(200, body)
        out = _run(world, query="vaccines")
    assert isinstance(out, ToolOutput) and "⚠" not in out.text and "RETRACTED —" in out.read[0].title
    assert out.read[0].title.startswith("(!) RETRACTED — Vaccines are safe") and not out.read[0].retracted
    assert "Open-access PDF" not in out.text.split("\n\n")[1]  # an address with a line break in it is no address
