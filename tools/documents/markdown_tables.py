"""Tables as Markdown (a header row, a separator row, `|` between cells) in every reading of a page.

trafilatura writes Markdown tables itself, but only marks a header when the first row has <th> cells;
readability-lxml's reading is plain text, where a row's cells run together ("Services85,2009%78,129").
Here a data table (two rows and two columns at least, no table inside it) in an lxml tree becomes a
Markdown block, and a Markdown table that lacks its separator row gets one.
"""

from __future__ import annotations

import re
from typing import Any

_PIPE = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$")
_MAX_SPAN = 50  # a colspan above this is a layout trick, not columns


def table_rows(table: Any) -> list[list[str]]:
    """The rows of an lxml <table> as lists of cell texts (whitespace collapsed, colspan repeated as empty cells)."""
    rows: list[list[str]] = []
    for row in table.iter("tr"):
        if _closest_table(row) is not table:
            continue  # a row of a table nested in a cell
        cells: list[str] = []
        for cell in row:
            if cell.tag not in ("td", "th"):
                continue
            cells.append(" ".join(cell.text_content().split()).replace("|", "\\|"))
            cells.extend([""] * (_span(cell) - 1))
        if any(cells):
            rows.append(cells)
    return rows


def markdown_table(rows: list[list[str]]) -> str:
    """Rows as a Markdown table: the first row is the header, every row padded to the widest."""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    lines.insert(1, "|" + "---|" * width)
    return "\n".join(lines)


def replace_tables(tree: Any) -> Any:
    """`tree` with each data table replaced by a <div> holding it as a Markdown table; layout tables stay."""
    from lxml.html import Element  # the tree is lxml's: loaded already, this only names it

    for table in [t for t in tree.iter("table") if t.find(".//table") is None]:
        rows = table_rows(table)
        if len(rows) < 2 or max(len(row) for row in rows) < 2 or table.getparent() is None:
            continue  # one row or one column: a layout box, read as lines
        block = Element("div")
        caption = table.find("caption")
        title = " ".join(caption.text_content().split()) if caption is not None else ""
        # a blank line before and after (block_text ends the element before and this one with a line break)
        block.text = "\n" + (title + "\n\n" if title else "") + markdown_table(rows) + "\n"
        block.tail = table.tail
        table.getparent().replace(table, block)
    return tree


def complete_tables(text: str) -> str:
    """`text` with a separator row after the first row of every Markdown table that lacks one."""
    lines = text.split("\n")
    out: list[str] = []
    fenced = False
    for i, line in enumerate(lines):
        out.append(line)
        if line.lstrip().startswith("```"):
            fenced = not fenced  # a code block's lines are code, even when they start with a pipe
        if fenced or not _is_row(line) or (i > 0 and _is_row(lines[i - 1])):
            continue  # not the first row of a table
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if _is_row(following) and not _SEPARATOR.match(following):
            out.append("|" + "---|" * max(1, len(_PIPE.findall(line.strip())) - 1))
    return "\n".join(out)


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") and len(_PIPE.findall(stripped)) >= 2


def _closest_table(element: Any) -> Any:
    parent = element.getparent()
    while parent is not None and parent.tag != "table":
        parent = parent.getparent()
    return parent


def _span(cell: Any) -> int:
    try:
        return min(max(int(cell.get("colspan", "1")), 1), _MAX_SPAN)
    except ValueError:
        return 1
