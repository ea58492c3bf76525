"""The wikipedia tool against a loopback MediaWiki action API: search, a page, one section, the page at a date."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response
from tools.base import ToolOutput
from tools.builtin import default_tools
from tools.web.wikipedia import WikipediaTool, end_of

# Shapes of MediaWiki's action API with format=json&formatversion=2 (www.mediawiki.org/wiki/API:Search,
# API:Revisions, API:Parsing_wikitext): query.searchinfo.totalhits and query.search[] (title, pageid,
# snippet with <span class="searchmatch">); query.pages[].revisions[] (revid, timestamp); parse (title, pageid,
# revid, text, sections[]: toclevel, level, line, number, index, anchor); error {code, info}.
SEARCH = {"batchcomplete": True, "continue": {"sroffset": 2, "continue": "-||"}, "query": {
    "searchinfo": {"totalhits": 1234},
    "search": [{"ns": 0, "title": "Mercedes Sosa", "pageid": 476992, "size": 53134, "wordcount": 5000,
                "snippet": "<span class=\"searchmatch\">Mercedes</span> Sosa was an Argentine singer",
                "timestamp": "2024-01-10T10:00:00Z"},
               {"ns": 0, "title": "Cantora, un Viaje Íntimo", "pageid": 1, "size": 1, "wordcount": 1,
                "snippet": "a double album by", "timestamp": "2023-01-01T00:00:00Z"}]}}
SECTIONS = [
    {"toclevel": 1, "level": "2", "line": "Life", "number": "1", "index": "1", "fromtitle": "Mercedes_Sosa",
     "byteoffset": 1000, "anchor": "Life", "linkAnchor": "Life"},
    {"toclevel": 1, "level": "2", "line": "<i>Discography</i>", "number": "2", "index": "2",
     "fromtitle": "Mercedes_Sosa", "byteoffset": 5000, "anchor": "Discography", "linkAnchor": "Discography"},
    {"toclevel": 2, "level": "3", "line": "Studio albums", "number": "2.1", "index": "3",
     "fromtitle": "Mercedes_Sosa", "byteoffset": 6000, "anchor": "Studio_albums", "linkAnchor": "Studio_albums"},
]
LEAD = ('<p><b>Haydée Mercedes Sosa</b> was an Argentine singer who was popular throughout Latin America.'
        '<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">[1]</a></sup></p>')
LIFE = ('<div class="mw-heading mw-heading2"><h2 id="Life">Life</h2><span class="mw-editsection">'
        '<span class="mw-editsection-bracket">[</span><a href="/w/index.php?title=Mercedes_Sosa&amp;action=edit'
        '&amp;section=1">edit</a><span class="mw-editsection-bracket">]</span></span></div>'
        '<p>Sosa was born on 9 July 1935 in San Miguel de Tucumán, Argentina, of mestizo ancestry.</p>')
STUDIO_2022 = ('<div class="mw-heading mw-heading3"><h3 id="Studio_albums">Studio albums</h3></div>'
               '<table class="wikitable"><tbody><tr><th>Year</th><th>Album</th></tr>'
               '<tr><td>2005</td><td>Corazón Libre</td></tr><tr><td>2009</td><td>Cantora 1</td></tr>'
               '<tr><td>2009</td><td>Cantora 2</td></tr></tbody></table>')
STUDIO_NOW = STUDIO_2022.replace("</tbody>", "<tr><td>2011</td><td>Censurada</td></tr></tbody>")


def _html(*parts: str) -> str:
    return '<div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">' + "".join(parts) + "</div>"


def _mediawiki(req: Request) -> Response:
    q = {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}
    assert q.get("format") == "json" and q.get("formatversion") == "2", q
    if q.get("list") == "search":
        return Response(body=SEARCH)
    if q.get("prop") == "revisions":
        if q["titles"] == "Nowhere Page":
            return Response(body={"batchcomplete": True, "query": {"pages": [
                {"ns": 0, "title": "Nowhere Page", "missing": True}]}})
        assert q["rvdir"] == "older" and q["rvlimit"] == "1" and q["rvprop"] == "ids|timestamp"
        old = q["rvstart"] < "2023"
        return Response(body={"batchcomplete": True, "query": {"pages": [{"pageid": 476992, "ns": 0,
                              "title": "Mercedes Sosa", "revisions": [{"revid": 1125000000 if old else 1190000000,
                              "parentid": 1, "timestamp": "2022-11-30T08:00:00Z" if old else
                              "2024-01-02T00:00:00Z"}]}]}})
    if q.get("action") == "parse":
        old = q.get("oldid") == "1125000000"
        if q.get("page") == "Nowhere Page":
            return Response(body={"error": {"code": "missingtitle", "info": "The page you specified doesn't exist.",
                                            "docref": "See https://en.wikipedia.org/w/api.php for API usage."}})
        studio = STUDIO_2022 if old else STUDIO_NOW
        text = {"3": _html(studio)}.get(q.get("section", ""), _html(LEAD, LIFE, studio))
        return Response(body={"parse": {"title": "Mercedes Sosa", "pageid": 476992,
                                        "revid": 1125000000 if old else 1200000000, "text": text,
                                        "sections": SECTIONS, "displaytitle": "Mercedes Sosa"}})
    return Response(400, {"error": {"code": "badvalue", "info": "Unrecognized value"}})


@pytest.fixture
def wiki() -> Any:
    with LoopbackServer(_mediawiki) as server:
        settings = Settings(wikipedia_api_url=server.url + "/w/api.php", scrape_allow_private=True, host_gap=0)
        yield WikipediaTool(settings), server


def test_search_lists_titles_urls_and_plain_snippets(wiki: Any) -> None:
    tool, server = wiki
    out = tool.run(query="mercedes sosa albums")
    assert out.startswith('Wikipedia search results for "mercedes sosa albums" (1,234 pages match):')
    assert f"1. Mercedes Sosa\n   URL: {server.url}/wiki/Mercedes_Sosa\n   Mercedes Sosa was an Argentine singer" in out
    assert "srsearch=mercedes+sosa+albums" in server.requests[0].path


def test_a_page_reads_as_text_with_its_sections_and_is_a_numbered_source(wiki: Any) -> None:
    tool, server = wiki
    out = tool.run(title="https://en.wikipedia.org/wiki/Mercedes_Sosa")
    assert isinstance(out, ToolOutput)
    assert out.text.startswith(f"Wikipedia: Mercedes Sosa\nURL: {server.url}/wiki/Mercedes_Sosa\n")
    assert "Sections: 1 Life; 2 Discography; 2.1 Studio albums (pass `section` to read one)" in out.text
    assert "## Life" in out.text and "San Miguel de Tucumán" in out.text
    assert "| 2011 | Censurada |" in out.text and "edit" not in out.text and "[1]" not in out.text
    assert [(r.url, r.title) for r in out.read] == [(f"{server.url}/wiki/Mercedes_Sosa", "Mercedes Sosa — Wikipedia")]
    assert "page=Mercedes+Sosa" in server.requests[0].path and "redirects=1" in server.requests[0].path


def test_the_page_as_of_a_year_comes_from_the_revision_history(wiki: Any) -> None:
    tool, server = wiki
    out = tool.run(title="https://en.wikipedia.org/wiki/Mercedes_Sosa#Studio_albums", date="2022")
    assert isinstance(out, ToolOutput)
    revisions, sections, text = (urlsplit(r.path).query for r in server.requests)
    assert "rvstart=2022-12-31T23%3A59%3A59Z" in revisions
    assert "oldid=1125000000" in sections and "section=3" in text and "oldid=1125000000" in text
    permalink = f"{server.url}/w/index.php?title=Mercedes_Sosa&oldid=1125000000"
    assert out.text.startswith(f"Wikipedia: Mercedes Sosa\nURL: {permalink}\nRevision 1125000000 of "
                               "2022-11-30T08:00:00Z: the page as it stood at the end of 2022.\n"
                               "Section 2.1: Studio albums\n\n")
    assert "| 2009 | Cantora 2 |" in out.text and "Censurada" not in out.text and "Life" not in out.text
    assert out.read[0].url == permalink


def test_missing_pages_unknown_sections_and_bad_dates_are_observations(wiki: Any) -> None:
    tool, _ = wiki
    assert tool.run(title="Nowhere Page") == ("Error: Wikipedia: The page you specified doesn't exist. "
                                              "(missingtitle)")
    assert tool.run(title="Nowhere Page", date="2020-05") == ("Error: Wikipedia: there is no page titled "
                                                              "'Nowhere Page'; search for it first")
    assert tool.run(title="Mercedes Sosa", section="Awards").startswith(
        "Error: Wikipedia: the page has no section 'Awards'; its sections: 1 Life, 2 Discography, 2.1 Studio")
    assert tool.run(title="Mercedes Sosa", date="last spring") == ("Error: Wikipedia: date 'last spring' is not "
                                                                   "YYYY, YYYY-MM or YYYY-MM-DD")
    assert tool.run(query="a", title="b").startswith("Error: give either `query`")


def test_dates_mean_the_end_of_the_year_month_or_day() -> None:
    assert end_of("2022") == "2022-12-31T23:59:59Z" and end_of("2024-02") == "2024-02-29T23:59:59Z"
    assert end_of("2021-6-5") == "2021-06-05T23:59:59Z"
    with pytest.raises(ValueError, match="no day 31"):
        end_of("2023-04-31")


def test_the_address_policy_and_domain_rules_hold() -> None:
    private = WikipediaTool(Settings(wikipedia_api_url="http://127.0.0.1:9/w/api.php"))
    assert "non-public address" in private.run(query="x")
    ruled = WikipediaTool(Settings(wikipedia_api_url="http://127.0.0.1:9/w/api.php", scrape_allow_private=True,
                                   allow_domains=("example.org",)))
    assert "outside the allowed domains" in ruled.run(title="X")


def test_default_tools_have_wikipedia_and_arxiv_unless_search_is_off(tmp_path: Any) -> None:
    names = [t.name for t in default_tools(Settings(), tmp_path)]
    assert names[:4] == ["search", "scrape", "wikipedia", "arxiv"]
    off = [t.name for t in default_tools(Settings(search=False), tmp_path)]
    assert "scrape" in off and not {"search", "wikipedia", "arxiv"} & set(off)  # AGENT_SEARCH=0: no searching
