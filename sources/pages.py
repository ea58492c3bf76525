"""The page a passage is on, in a paged source: a PDF read with its `--- page N ---` markers (scrape, arxiv,
search_papers). A citation of such a source names the page holding the claim's figures and matched words: of a
passage across a page break (the end of page 1, the top of page 2), the page of the part that holds them; of a
passage before the first page (a paper's abstract, shown by search_papers before its PDF was read), the page
of the PDF that says it as fully, when the task read one."""

from __future__ import annotations

import re

from sources.facts import SourceText, claim_facts
from sources.reading import passages, read_words

_MARKER = re.compile(r"^--- page (\d+) ---$", re.M)
_WORDS = 12  # enough of the passage's first sentence to find it once
_SAME = 0.8  # the share of the claim's words an abstract's sentence holds that a page must hold to be cited for it


def page_of(text: str, passage: str, claim: str = "") -> int | None:
    """The page of `text` holding `passage` (as the claim check quotes it: sentences joined by " … "): of its
    sentences, the one holding most of the claim's figures and words; None when the text has no page markers or
    no sentence of it is found as written."""
    if not passage or "--- page " not in text:
        return None
    folded = passages(text).facts.text  # folded once per source (the claim check read it), not once per citation
    pieces = [p.strip() for p in passage.split(" … ") if p.strip()]
    found = [(piece, _page_at(folded, piece)) for piece in pieces]
    paged = [(piece, page) for piece, page in found if page is not None]
    if not claim:
        return found[0][1]
    if paged:
        return max(paged, key=lambda p: _weight(claim, p[0]))[1]
    return _elsewhere(folded, claim, _weight(claim, " ".join(pieces)))


def _page_at(folded: str, sentence: str) -> int | None:
    """The page of the folded text on which this sentence stands (found by its first words; where it stands
    before the pages too, as an abstract's sentence may, its place on a page)."""
    if (head := re.match(r"--- page (\d+) ---", sentence)) is not None:  # the sentence runs on from its marker line
        return int(head.group(1))
    words = sentence.split()[:_WORDS]
    if not words:
        return None
    for found in re.finditer(r"\s+".join(map(re.escape, words)), folded):
        if (page := _last_marker(folded, found.start())) is not None:
            return page
    return None


def _weight(claim: str, piece: str) -> tuple[int, int]:
    """How much of the claim a sentence holds: its figures and dates, then its content words."""
    facts = SourceText(piece)
    keys = {w.key for w in read_words(piece) if w.key}
    return sum(facts.holds(f, set()) for f in claim_facts(claim)), len({w.key for w in read_words(claim)
                                                                         if w.key} & keys)


def _elsewhere(folded: str, claim: str, held: tuple[int, int]) -> int | None:
    """The page of the paged part of the text whose best passage for the claim holds its figures and nearly all
    its words that the passage before the pages `held`: a paper's abstract sentence the task also read in its
    PDF (where its lines may cut it in two)."""
    start = folded.find("--- page ")
    if start < 0 or held == (0, 0):
        return None
    paged = passages(folded[start:])
    chosen, _ = paged.align({w.key: 1.0 for w in read_words(claim) if w.key})
    facts, words = _weight(claim, " ".join(paged.sentences[i] for i in chosen))
    if not chosen or facts < held[0] or words < _SAME * held[1]:
        return None
    return _page_at(folded, max((paged.sentences[i] for i in chosen), key=lambda s: _weight(claim, s)))


def _last_marker(text: str, end: int) -> int | None:
    """The page of the last marker line before `end`, looked for backwards from it: a long PDF's markers are not
    all read again from its top for each citation."""
    at = text.rfind("--- page ", 0, end)
    while at >= 0:
        if marker := _MARKER.match(text, at, end):
            return int(marker.group(1))
        at = text.rfind("--- page ", 0, at)
    return None
