"""The page a passage is on, in a paged source: a PDF read with its `--- page N ---` markers (scrape, arxiv,
search_papers). A citation of such a source names the page its claim was judged against."""

from __future__ import annotations

import re

from sources.reading import passages

_MARKER = re.compile(r"^--- page (\d+) ---$", re.M)
_WORDS = 12  # enough of the passage's first sentence to find it once


def page_of(text: str, passage: str) -> int | None:
    """The page of `text` holding the first sentence of `passage` (as the claim check quotes it); None when the
    text has no page markers or the sentence is not found as written."""
    if not passage or "--- page " not in text:
        return None
    first = passage.split(" … ", 1)[0].strip()
    if (head := re.match(r"--- page (\d+) ---", first)) is not None:  # the sentence runs on from its marker line
        return int(head.group(1))
    words = first.split()[:_WORDS]
    if not words:
        return None
    folded = passages(text).facts.text  # folded once per source (the claim check read it), not once per citation
    found = re.search(r"\s+".join(map(re.escape, words)), folded)
    if found is None:
        return None
    return _last_marker(folded, found.start())


def _last_marker(text: str, end: int) -> int | None:
    """The page of the last marker line before `end`, looked for backwards from it: a long PDF's markers are not
    all read again from its top for each citation."""
    at = text.rfind("--- page ", 0, end)
    while at >= 0:
        if marker := _MARKER.match(text, at, end):
            return int(marker.group(1))
        at = text.rfind("--- page ", 0, at)
    return None
