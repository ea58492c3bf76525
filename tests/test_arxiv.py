"""The arxiv tool against a loopback server speaking the arXiv API's Atom feed, its PDF read like scrape's."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response
from tools.base import ToolOutput
from tools.cached import cache_network_tools
from tools.web.papers.arxiv import ArxivTool, Pacer

PDF = (Path(__file__).parent / "data" / "three-pages.pdf").read_bytes()

# The feed of the arXiv API User's Manual (info.arxiv.org/help/api/user-manual.html, "Details of Atom
# Results Returned"): opensearch totals, entry id/published/updated/title/summary/author, arxiv:comment and
# arxiv:journal_ref, an alternate and a pdf link, arxiv:primary_category and category. Links point at {base}.
FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3Dall%3Aelectron" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=all:electron&amp;id_list=&amp;start=0&amp;max_results=1</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2007-10-08T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1000</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/abs/hep-ex/0307015</id>
    <published>2003-07-07T13:46:39-04:00</published>
    <updated>2003-07-07T13:46:39-04:00</updated>
    <title>Multi-Electron Production at High Transverse Momenta in ep Collisions at
  HERA</title>
    <summary>  Multi-electron production is studied at high electron transverse momentum in
positron- and electron-proton collisions using the H1 detector at HERA.
</summary>
    <author>
      <name>H1 Collaboration</name>
    </author>
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">23 pages, 8 figures and 4 tables</arxiv:comment>
    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">Eur.Phys.J. C31 (2003) 17-29</arxiv:journal_ref>
    <link href="{base}/abs/hep-ex/0307015v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="{base}/pdf/hep-ex/0307015v1" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="hep-ex"
      scheme="http://arxiv.org/schemas/atom"/>
    <category term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>
"""
# What the API answers a malformed id with (the manual's "Errors" section): an entry whose id is under /api/errors.
ERROR_FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:totalResults>
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345v</id>
    <title>Error</title>
    <summary>incorrect id format for 1234.12345v</summary>
    <updated>2007-10-12T00:00:00-04:00</updated>
    <author><name>arXiv api core</name></author>
  </entry>
</feed>
"""
EMPTY_FEED = ('<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom"><opensearch:totalResults'
              ' xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:totalResults></feed>')


def _arxiv(base: dict[str, str], robots: str = "") -> Any:
    def handle(req: Request) -> Response:
        path, q = urlsplit(req.path).path, {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}
        if path == "/robots.txt":
            return Response(200, robots) if robots else Response(404, "none")
        if path.startswith("/pdf/"):
            return Response(200, PDF, content_type="application/pdf")
        if path == "/api/query":
            if q.get("id_list") == "1234.12345":
                return Response(200, ERROR_FEED, content_type="application/atom+xml")
            if q.get("id_list") == "2401.00001":
                return Response(200, EMPTY_FEED, content_type="application/atom+xml")
            return Response(200, FEED.replace("{base}", base["url"]), content_type="application/atom+xml")
        return Response(404, "not found")

    return handle


@pytest.fixture
def arxiv() -> Any:
    base: dict[str, str] = {}
    with LoopbackServer(lambda req: _arxiv(base)(req)) as server:
        base["url"] = server.url
        settings = Settings(arxiv_api_url=server.url + "/api/query", scrape_allow_private=True, host_gap=0)
        yield ArxivTool(settings, pacer=Pacer(0)), server


def test_search_sends_an_all_fields_query_and_lists_papers(arxiv: Any) -> None:
    tool, server = arxiv
    out = tool.run(query="electron HERA", max_results=3)
    q = parse_qs(urlsplit(server.requests[0].path).query)
    assert q["search_query"] == ["all:electron AND all:HERA"] and q["max_results"] == ["3"]
    assert out.startswith('arXiv search results for "electron HERA" (1,000 papers match):\n\n1. Multi-Electron '
                          "Production at High Transverse Momenta in ep Collisions at HERA\n   arXiv: "
                          "hep-ex/0307015 · 2003-07-07 · hep-ex\n   Authors: H1 Collaboration\n")
    assert tool.run(query="ti:transformer AND cat:cs.CL") and "search_query=ti%3Atransformer+AND+cat%3Acs.CL" in \
        server.requests[1].path  # arXiv's own field syntax is passed as written


def test_an_abstract_is_a_numbered_source_with_its_metadata(arxiv: Any) -> None:
    tool, server = arxiv
    out = tool.run(id="https://arxiv.org/abs/hep-ex/0307015")
    assert isinstance(out, ToolOutput) and "id_list=hep-ex%2F0307015" in server.requests[0].path
    assert out.text.startswith(f"arXiv: Multi-Electron Production at High Transverse Momenta in ep Collisions at "
                               f"HERA\nURL: {server.url}/abs/hep-ex/0307015v1\narXiv id: hep-ex/0307015\n"
                               "Authors: H1 Collaboration\nPublished: 2003-07-07T13:46:39-04:00\n")
    assert "Journal reference: Eur.Phys.J. C31 (2003) 17-29" in out.text and "Comment: 23 pages" in out.text
    assert out.text.endswith("Abstract:\nMulti-electron production is studied at high electron transverse momentum "
                             "in positron- and electron-proton collisions using the H1 detector at HERA.")
    assert [r.url for r in out.read] == [f"{server.url}/abs/hep-ex/0307015v1"]


def test_the_pdf_is_read_through_the_document_path_and_robots_txt(arxiv: Any) -> None:
    tool, server = arxiv
    out = tool.run(id="hep-ex/0307015", pdf=True, pages="2-3")
    assert isinstance(out, ToolOutput)
    assert out.text.startswith("arXiv: Multi-Electron Production at High Transverse Momenta in ep Collisions at "
                               f"HERA (full text from the PDF)\nURL: {server.url}/pdf/hep-ex/0307015v1\n"
                               "PDF with 3 page(s); showing pages 2-3\n\n")
    assert "--- page 2 ---" in out.text and "Gamma page three" in out.text and "Alpha page one" not in out.text
    assert out.read[0].url == f"{server.url}/pdf/hep-ex/0307015v1"
    paths = [urlsplit(r.path).path for r in server.requests]
    assert paths == ["/api/query", "/robots.txt", "/pdf/hep-ex/0307015v1"]  # the API itself asks no robots.txt


def test_a_pdf_robots_txt_refuses_is_not_read() -> None:
    base: dict[str, str] = {}
    with LoopbackServer(lambda req: _arxiv(base, "User-agent: *\nDisallow: /pdf\n")(req)) as server:
        base["url"] = server.url
        tool = ArxivTool(Settings(arxiv_api_url=server.url + "/api/query", scrape_allow_private=True, host_gap=0),
                         pacer=Pacer(0))
        out = tool.run(id="hep-ex/0307015", pdf=True)
    assert isinstance(out, str) and out.startswith("Error: arXiv: ") and "robots.txt disallows" in out
    assert not any(r.path.startswith("/pdf/") for r in server.requests)


def test_bad_ids_unknown_papers_and_the_api_pace(arxiv: Any) -> None:
    tool, _ = arxiv
    assert tool.run(id="1234.12345v") == "Error: arXiv: incorrect id format for 1234.12345v"
    assert tool.run(id="2401.00001") == "Error: arXiv: no paper with id 2401.00001"
    assert tool.run(id="not an id").startswith("Error: arXiv: 'not an id' is not an arXiv id")
    waits: list[float] = []
    pacer = Pacer(clock=lambda: 100.0)  # a clock that stands still: every request after the first waits 3 s
    for _ in range(2):  # two tasks' tools share the run's pacer
        ArxivTool(tool.settings, sleep=waits.append, pacer=pacer).run(query="electron")
    assert waits == [3.0]


def test_cache_records_the_api_and_the_pdf_and_replay_reads_them_offline(tmp_path: Path) -> None:
    base: dict[str, str] = {}
    with LoopbackServer(lambda req: _arxiv(base)(req)) as server:
        base["url"] = server.url
        settings = Settings(arxiv_api_url=server.url + "/api/query", scrape_allow_private=True, host_gap=0,
                            cache_dir=tmp_path / "cache")
        [recorded] = cache_network_tools([ArxivTool(settings, pacer=Pacer(0))], settings)
        first = recorded.run(id="hep-ex/0307015", pdf=True)
    replaying = settings.with_overrides(cache_replay=True)
    [replayed] = cache_network_tools([ArxivTool(replaying, pacer=Pacer(0))], replaying)
    again = replayed.run(id="hep-ex/0307015", pdf=True)  # the server is gone: only the cache can answer
    assert isinstance(first, ToolOutput) and isinstance(again, ToolOutput)
    assert again.text == first.text and "Gamma page three" in again.text
