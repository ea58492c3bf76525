"""Tables reach the model as Markdown tables, and a scraped page is parsed once (loopback server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lxml.etree
import pytest

from config import Settings
from tests.fakes.loopback import LoopbackServer, Response, routes
from tools.base import ToolOutput
from tools.documents.extraction_choice import add_missing_lines, readability_reading
from tools.documents.markdown_tables import complete_tables, replace_tables
from tools.documents.page_text import extract_main_content, parse_html
from tools.web.scrape import ScrapeTool

NAV = "".join(f"<li><a href='/s{i}'>Section {i} news and more</a></li>" for i in range(30))
MARKER = "parse-marker-5f1c"  # in <head>: only a parse of the whole page holds it
# A short post whose text is mostly a table: readability's reading wins here, and its cells used to run
# together ("Services85,2009%78,129").
SHORT_TABLE_PAGE = f"""<html><head><title>Quarterly results</title><meta name="generator" content="{MARKER}"></head>
<body><nav><ul>{NAV}</ul></nav>
<div class="content"><h1>Quarterly results</h1>
<p>Revenue by segment for the third quarter, in thousands of dollars.</p>
<table><tr><td>Segment</td><td>Revenue</td><td>Growth</td><td>Profit</td></tr>
<tr><td>Services</td><td>85,200</td><td>9%</td><td>78,129</td></tr>
<tr><td>Hardware</td><td>41,000</td><td>-3%</td><td>12,400</td></tr></table>
</div><footer><p>Copyright 2026 Example Corp. All rights reserved.</p></footer></body></html>"""
PARAGRAPHS = "".join(
    f"<p>Paragraph {i} of the report explains how the harbour authority counted ships, cranes and containers "
    f"during the year, and why the figures for the winter months were revised after the audit.</p>"
    for i in range(8))
# A long article whose table has no <th> header: trafilatura's reading wins and wrote no separator row.
ARTICLE_TABLE_PAGE = f"""<html><head><title>Harbour report</title></head><body><nav><ul>{NAV}</ul></nav>
<article><h1>Harbour report</h1>{PARAGRAPHS}
<table><tr><td><b>Month</b></td><td><b>Ships</b></td><td><b>Containers</b></td></tr>
<tr><td>January</td><td>412</td><td>18,300</td></tr><tr><td>February</td><td>398</td><td>17,950</td></tr></table>
{PARAGRAPHS}</article></body></html>"""
SEGMENT_TABLE = ("| Segment | Revenue | Growth | Profit |\n|---|---|---|---|\n| Services | 85,200 | 9% | 78,129 |\n"
                 "| Hardware | 41,000 | -3% | 12,400 |")


def scrape(tmp_path: Path, body: str) -> str:
    settings = Settings(scrape_allow_private=True, scrape_timeout=2.0, ignore_robots=True, host_gap=0.0)
    with LoopbackServer(routes({"/page": Response(body=body, content_type="text/html; charset=utf-8")})) as server:
        out = ScrapeTool(tmp_path / "ws", settings, sleep=lambda _s: None).run(url=f"{server.url}/page")
    assert isinstance(out, ToolOutput), out
    return out.text


def test_a_short_post_with_a_table_reaches_the_model_as_a_markdown_table(tmp_path: Path) -> None:
    text = scrape(tmp_path, SHORT_TABLE_PAGE)
    assert SEGMENT_TABLE in text
    assert "Services85" not in text and "SegmentRevenue" not in text
    assert "Revenue by segment for the third quarter" in text and "Section 3 news" not in text


def test_a_table_without_header_cells_gets_its_header_row(tmp_path: Path) -> None:
    text = scrape(tmp_path, ARTICLE_TABLE_PAGE)
    rows = [" ".join(line.replace("*", "").split()) for line in text.split("\n") if line.strip().startswith("|")]
    assert rows == ["| Month | Ships | Containers |", "|---|---|---|", "| January | 412 | 18,300 |",
                    "| February | 398 | 17,950 |"]
    assert "Paragraph 7 of the report" in text


def test_a_scraped_page_is_parsed_once_in_the_converters_child(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.documents.worker import page_reading

    # Every lxml HTML parse (trafilatura's load_html, readability's build_doc, lxml.html.fromstring) goes
    # through lxml.etree.fromstring; the marker sits in <head>, so readability's article is not counted.
    parses: list[int] = []
    parse = lxml.etree.fromstring

    def counting(text: Any, *args: Any, **kwargs: Any) -> Any:
        if MARKER in (text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")):
            parses.append(1)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(lxml.etree, "fromstring", counting)
    text = scrape(tmp_path, SHORT_TABLE_PAGE)
    assert text.startswith("Title: Quarterly results\n") and SEGMENT_TABLE in text
    assert parses == []  # not in the agent: in the converter's child (issue 58), whose reading is this one
    title, body = page_reading(SHORT_TABLE_PAGE.encode(), "https://example.org/results")
    assert title == "Quarterly results" and SEGMENT_TABLE in body
    assert len(parses) == 1


def test_readability_reads_a_parsed_tree_as_it_reads_the_html() -> None:
    assert readability_reading(parse_html(ARTICLE_TABLE_PAGE)) == readability_reading(ARTICLE_TABLE_PAGE)
    assert extract_main_content(ARTICLE_TABLE_PAGE, tree=parse_html(ARTICLE_TABLE_PAGE)) \
        == extract_main_content(ARTICLE_TABLE_PAGE)


def test_layout_tables_stay_lines_and_cells_keep_their_pipes() -> None:
    tree = parse_html("<html><body><table><tr><td><p>One box of text laid out by a table.</p></td></tr>"
                      "<tr><td>Another box below it.</td></tr></table>"
                      "<table><caption>Ranks</caption><tr><th>Name</th><th colspan='2'>Score | bonus</th></tr>"
                      "<tr><td>Ada</td><td>9</td><td>1</td></tr></table></body></html>")
    text = str(replace_tables(tree).text_content())
    assert "One box of text laid out by a table." in text and "| One box" not in text
    assert "Ranks\n\n| Name | Score \\| bonus |  |\n|---|---|---|\n| Ada | 9 | 1 |" in text


def test_a_separator_row_is_added_once() -> None:
    bare = "Intro\n| a | b |\n| 1 | 2 |\n\nafter"
    assert complete_tables(bare) == "Intro\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter"
    assert complete_tables(complete_tables(bare)) == complete_tables(bare)
    assert complete_tables("| just one row |") == "| just one row |"
    code = "```\n| grep a | sort |\n| uniq -c |\n```"
    assert complete_tables(code) == code


def test_a_table_only_readability_kept_is_added_whole() -> None:
    first = "The harbour authority published its yearly figures on Monday, with a table by month."
    last = "The authority expects the new cranes to lift the figures again next year, it said."
    table = "| Month | Ships |\n|---|---|\n| January | 412 |\n| February | 398 |"
    merged = add_missing_lines(f"{first}\n\n{last}", f"{first}\n{table}\n{last}", [])
    assert merged == f"{first}\n\n{table}\n\n{last}"
