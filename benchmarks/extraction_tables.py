"""Cell recall of the tables in an extraction, for benchmarks/extraction.py.

The reference tables of a page are built from its HTML: a <table> with no table inside it, at least two rows
and two columns, most of whose cells (TABLE_SHARE) appear in the page's reference text (so the labellers kept
it as part of the article; layout and navigation tables are left out). A reference cell is recalled when the
extraction has a Markdown table row with that cell (same words, lower-cased, formatting dropped); cells are
counted with multiplicity. Recall "as text" counts a cell found anywhere in the extraction's words: the gap
between the two is the table's structure lost (cells run together or split over lines).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from lxml import html as lxml_html

TABLE_SHARE = 0.8  # share of a table's cells the reference text must hold for it to count as the article's
_WORD = re.compile(r"\w+")
_PIPE = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class TableScore:
    """How many reference tables and cells a page has, and how many cells the extraction kept."""

    pages: int = 0  # pages with at least one reference table
    tables: int = 0
    cells: int = 0
    in_tables: int = 0  # cells found as cells of a Markdown table
    as_text: int = 0  # cells found anywhere in the text

    def __add__(self, other: TableScore) -> TableScore:
        return TableScore(self.pages + other.pages, self.tables + other.tables, self.cells + other.cells,
                          self.in_tables + other.in_tables, self.as_text + other.as_text)


def words(text: str) -> str:
    """The lower-cased words of a text joined by single spaces."""
    return " ".join(_WORD.findall(text.lower()))


def reference_tables(html: str, reference: str) -> list[list[str]]:
    """The cells (as words) of each table of the page that the reference text holds."""
    try:
        tree = lxml_html.fromstring(html)
    except (ValueError, lxml_html.etree.ParserError):
        return []
    text = f" {words(reference)} "
    found = []
    for table in tree.iter("table"):
        if table.find(".//table") is not None:
            continue
        rows = [[words(cell.text_content()) for cell in row if cell.tag in ("td", "th")]
                for row in table.iter("tr")]
        rows = [row for row in rows if any(row)]
        cells = [cell for row in rows for cell in row if cell]
        if len(rows) < 2 or max(len(row) for row in rows) < 2:
            continue
        if sum(f" {cell} " in text for cell in cells) >= TABLE_SHARE * len(cells):
            found.append(cells)
    return found


def markdown_cells(text: str) -> list[str]:
    """The cells (as words) of every Markdown table row in `text` (separator rows left out)."""
    cells = []
    for line in text.split("\n"):
        line = line.strip()
        if not line.startswith("|") or len(_PIPE.findall(line)) < 2:
            continue
        cells += [words(cell) for cell in _PIPE.split(line)[1:-1] if words(cell)]
    return cells


def score_tables(tables: list[list[str]], extracted: str) -> TableScore:
    """The page's tables and cells, and how many of the cells the extraction kept in tables and as text."""
    if not tables:
        return TableScore()
    expected = Counter(cell for table in tables for cell in table)
    in_tables = sum((expected & Counter(markdown_cells(extracted))).values())
    text = f" {words(extracted)} "
    as_text = sum(min(count, len(re.findall(f"(?= {re.escape(cell)} )", text))) for cell, count in expected.items())
    return TableScore(1, len(tables), sum(expected.values()), in_tables, as_text)
