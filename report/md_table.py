"""Markdown pipe tables as rows of cells, for every renderer of a report (HTML, DOCX).

A table is a `| a | b |` line followed by a separator (`|---|:--:|`); its rows are read up to the first
line that is not a row. A malformed table (a row with more or fewer cells than the header, a missing
closing pipe, an escaped `\\|` in a cell) still gives a rectangle: short rows are padded, long ones joined
into their last cell, so no renderer ever meets a ragged table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass
class Table:
    """A table's header cells and body rows (each as long as the header)."""

    header: list[str]
    rows: list[list[str]]


def is_row(line: str) -> bool:
    """A line that can be a table row (it holds a pipe outside an escape)."""
    return bool(_SPLIT.search(line.strip())) and bool(line.strip())


def cells(line: str) -> list[str]:
    """The cells of one row (outer pipes dropped, `\\|` kept as a pipe)."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [c.strip().replace("\\|", "|") for c in _SPLIT.split(text)]


def table_at(lines: list[str], i: int) -> tuple[Table, int] | None:
    """The table starting at lines[i] and the index after it, or None when no table starts there."""
    if i + 1 >= len(lines) or not is_row(lines[i]) or not _SEPARATOR.match(lines[i + 1]):
        return None
    header = cells(lines[i])
    width, rows, j = len(header), [], i + 2
    while j < len(lines) and is_row(lines[j]) and not _SEPARATOR.match(lines[j]):
        row = cells(lines[j])
        if len(row) > width:
            row = [*row[:width - 1], " | ".join(row[width - 1:])]
        rows.append(row + [""] * (width - len(row)))
        j += 1
    return Table(header, rows), j
