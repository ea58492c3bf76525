"""Choosing between extractions of one page: a far longer reading that contains the shorter one wins,
readability-lxml's reading lends the lines trafilatura's precision mode dropped, and replaces a short reading."""

from __future__ import annotations

import copy
import functools
import logging
import re
from dataclasses import dataclass
from typing import Any

from tools.documents.markdown_tables import replace_tables

_WORD = re.compile(r"\w+")


Shingles = frozenset[tuple[str, ...]]


# Remembered: choosing a page's reading asks for the shingles of the same texts several times (the precision
# reading, readability's prose); enough entries to outlive a long page's lines in between.
@functools.lru_cache(maxsize=1024)
def shingles(text: str, n: int = 4) -> Shingles:
    """The set of n-word shingles of a text (lower-cased word tokens)."""
    tokens = _WORD.findall(text.lower())
    if len(tokens) <= n:  # a short text is one shingle
        return frozenset({tuple(tokens)} if tokens else ())
    return frozenset(zip(*(tokens[i:] for i in range(n)), strict=False))  # every window, built in C


def contained(part: Shingles, whole: Shingles) -> float:
    """Share of `part`'s shingles found in `whole` (1.0 for an empty part)."""
    return len(part & whole) / len(part) if part else 1.0


def prefer_wider(text: str, wider: str, *, ratio: float = 2.0, containment: float = 0.8) -> str:
    """`wider` when it is at least `ratio` times as long and holds most of `text`, else `text`.

    Precision mode sometimes keeps one block of a longer article (a lead, a late fragment); a recall-mode
    reading that is twice as long and still contains that block is then the whole article. Tuned on the
    bundled pages and a separate labelled set (benchmarks/extraction.py --heldout)."""
    short, wide = shingles(text), shingles(wider)
    if len(wide) >= ratio * max(len(short), 1) and contained(short, wide) >= containment:
        return wider
    return text


def could_widen(text: str, most_words: int, *, ratio: float = 2.0) -> bool:
    """Whether a reading of at most `most_words` words could make prefer_wider choose it over `text`.

    A text of w words has at most w shingles, so a page whose words are fewer than `ratio` times `text`'s
    shingles cannot yield the wider reading: the pass that would make it is skipped (same result, less time)."""
    return most_words >= ratio * max(len(shingles(text)), 1)


# Parts of readability's article that are not running text: captions, credits, author boxes, asides.
_NOT_PROSE = ('//figure | //figcaption | //aside | //*[contains(translate(@class, "CAPTION", "caption"), "caption")]'
              ' | //*[contains(translate(@class, "CREDIT", "credit"), "credit")] | //*[contains(@class, "bio")]')
_BLOCKS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "tr", "br", "section",
           "article", "table", "ul", "ol", "dd", "dt", "figcaption"}


@dataclass(frozen=True)
class Reading:
    """readability-lxml's reading of a page: all of it, and its running text without captions and asides."""

    whole: str = ""
    prose: str = ""


def readability_reading(page: Any) -> Reading:
    """readability-lxml's reading of a page (HTML, or a tree it may change) as plain lines; empty when it fails."""
    try:
        from lxml import html as lxml_html
    except ImportError:  # optional peer: without it extract_main_content keeps trafilatura's reading
        return Reading()
    document = _text_document(page)
    if document is None:
        return Reading()
    # readability logs a traceback for pages it cannot parse; the caller just gets no second reading.
    logging.getLogger("readability.readability").setLevel(logging.CRITICAL)
    try:
        summary = document.summary(html_partial=True)
        tree = lxml_html.fromstring(summary) if summary.strip() else None
    except Exception:  # noqa: BLE001 - any parse failure means no second reading, never a failed scrape
        return Reading()
    if tree is None:
        return Reading()
    whole = block_text(replace_tables(tree))  # data tables as Markdown, not run-together cells
    for element in tree.xpath(_NOT_PROSE):
        if element.getparent() is not None:
            element.drop_tree()
    return Reading(whole, str(tree.text_content()))


def _text_document(page: Any) -> Any | None:
    """A readability Document over the page's tree (parsed here when `page` is HTML); None without readability."""
    document_class = _text_document_class()
    if document_class is None:
        return None
    if isinstance(page, str):
        from readability.htmls import build_doc

        try:
            page = build_doc(page)[0]
        except Exception:  # noqa: BLE001 - an unparseable page has no second reading
            return None
    return document_class(page)


@functools.cache
def _text_document_class() -> type | None:
    """readability's Document for a page's text: it reads a parsed tree as it is, cleaned by readability's own
    cleaner minus the javascript: link and on* handler rewriting, which changes markup and no text (a third of
    readability's time)."""
    try:
        from readability import Document
        from readability.cleaners import html_cleaner
        from readability.readability import REGEXES
    except ImportError:  # optional peer: without it extract_main_content keeps trafilatura's reading
        return None
    cleaner = copy.copy(html_cleaner)
    cleaner.javascript = False

    class TextDocument(Document):  # type: ignore[misc, valid-type]
        def _parse(self, tree: Any) -> Any:
            # readability's own _parse, for a tree: hidden elements dropped, then a cleaned copy
            self.encoding = "utf-8"
            for element in tree.xpath("//*[@hidden]"):
                element.drop_tree()
            for element in tree.xpath("//*[@style]"):
                if REGEXES["displayNoneRe"].search(element.get("style")):
                    element.drop_tree()
            return cleaner.clean_html(tree)

    return TextDocument


def block_text(tree: Any) -> str:
    """Text of an lxml tree with a line break after every block element (the tree's tails are changed)."""
    for element in tree.iter():
        if isinstance(element.tag, str) and element.tag in _BLOCKS:
            element.tail = "\n" + element.tail if element.tail else "\n"
    return str(tree.text_content())


def link_texts(tree: Any) -> list[str]:
    """The distinct texts of a page's links (lower-cased words), longest first."""
    found = {plain_words(a.text_content()) for a in tree.iter("a")} if tree is not None else set()
    found.discard("")
    return sorted(found, key=len, reverse=True)


def link_share(line: str, links: list[str]) -> float:
    """How much of a line (in characters of its words) is the text of the page's links."""
    words = plain_words(line)
    rest, linked = f" {words} ", 0
    for link in links:
        if len(link) + 2 <= len(rest) and f" {link} " in rest:
            linked += len(link) * rest.count(f" {link} ")
            rest = rest.replace(f" {link} ", "  ")
    return min(linked, len(words)) / len(words) if words else 0.0


def plain_words(text: str) -> str:
    """The lower-cased words of a text joined by single spaces (punctuation and markup dropped)."""
    return " ".join(_WORD.findall(text.lower()))


def add_missing_lines(text: str, other: str, links: list[str], *, inner_words: int = 5, edge_words: int = 10,
                      covered: float = 0.3, max_links: float = 0.3) -> str:
    """`text` plus the lines of `other` that it lacks, each placed after its neighbour.

    A line of `other` is added when at most `covered` of its shingles are already in `text`, less than
    `max_links` of it is link text (menus, related stories), and it has at least `inner_words` words between
    lines both readings share, or `edge_words` before or after them (headlines and bylines at the edges are
    shorter than the paragraphs trafilatura's precision mode drops in the middle). Tuned on the bundled set,
    the 2025 LLM-labelled set and Dragnet; scored on CleanEval, CleanPortalEval, L3S-GN1 and Readability's pages."""
    have = shingles(text)
    lines = text.split("\n")
    index: dict[str, int] = {}
    for i, line in enumerate(lines):
        index.setdefault(plain_words(line), i)
    index.pop("", None)
    theirs = _units(other)
    shared = [j for j, line in enumerate(theirs) if plain_words(line) in index]
    first, last_shared = (shared[0], shared[-1]) if shared else (len(theirs), -1)
    after: dict[int, list[str]] = {}
    last = -1
    for j, line in enumerate(theirs):
        norm = plain_words(line)
        if norm in index:
            last = max(last, index[norm])
            continue
        if len(norm.split()) < (inner_words if first < j < last_shared else edge_words):
            continue
        own = shingles(line)
        if own and len(own & have) / len(own) <= covered and link_share(line, links) < max_links:
            after.setdefault(last, []).append(line)
            have |= own
    return _insert(lines, after) if after else text


def _units(text: str) -> list[str]:
    """The lines of `text`, whitespace collapsed; the rows of a Markdown table stay together as one unit."""
    units: list[str] = []
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if line.startswith("|") and units and units[-1].startswith("|"):
            units[-1] += "\n" + line  # a table is added whole or not at all
        else:
            units.append(line)
    return units


def _insert(lines: list[str], after: dict[int, list[str]]) -> str:
    out = [part for line in after.get(-1, []) for part in (line, "")]
    for i, line in enumerate(lines):
        out.append(line)
        out.extend(part for extra in after.get(i, []) for part in ("", extra))
    return "\n".join(out)


def whole_when_short(text: str, reading: Reading, *, short: int = 150, min_other: int = 9,
                     shared: float = 0.7) -> str:
    """readability's whole reading when `text` is short, readability found prose, and the two mostly differ.

    A short trafilatura reading that is largely absent from readability's is more often a navigation or footer
    block ("Previous post: ...") than the post itself (a video with its blurb, a notice of a few lines); when
    the short readings agree, trafilatura's (Markdown, title and promos removed) is kept. Tuned on Dragnet."""
    mine = shingles(text)
    if len(mine) < short and len(shingles(reading.prose)) >= min_other \
            and contained(mine, shingles(reading.whole)) < shared:
        return reading.whole
    return text


def trim_unshared_edges(text: str, other: str, *, agree: float = 0.95, covered: float = 0.1,
                        min_other: int = 50) -> str:
    """`text` without its leading and trailing lines that `other` lacks, when `other` lies almost wholly inside it.

    When readability's reading (`other`) is at least `agree` contained in trafilatura's, lines at the edges of
    trafilatura's that share at most `covered` of their shingles with it are bylines, share prompts and footers.
    Nothing is cut when `other` is short or the cut would drop half the text. Tuned like add_missing_lines."""
    mine, theirs = shingles(text), shingles(other)
    if len(theirs) < min_other or not mine or len(mine & theirs) / len(theirs) < agree:
        return text
    lines = text.split("\n")
    kept = [i for i, line in enumerate(lines) if _WORD.search(line) and contained(shingles(line), theirs) > covered]
    if not kept:
        return text
    trimmed = "\n".join(lines[kept[0]:kept[-1] + 1])
    return trimmed if len(shingles(trimmed)) >= 0.5 * len(mine) else text
