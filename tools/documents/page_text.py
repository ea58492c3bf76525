"""The main content of an HTML page: trafilatura's readings, mended by readability-lxml's (extraction_choice)."""

from __future__ import annotations

import copy
import functools
import re
import threading
from typing import Any

from tools.documents.extraction_choice import (
    add_missing_lines,
    could_widen,
    link_texts,
    plain_words,
    prefer_wider,
    readability_reading,
    trim_unshared_edges,
    whole_when_short,
)
from tools.documents.markdown_tables import complete_tables

_WORD = re.compile(r"\w+")
# Classes of article-body containers that some sites split into several sibling blocks.
_BODY_CLASS = re.compile(
    r"article[-_]?body|articlebody|article[-_]?content|article[-_]?text|post[-_]?(?:body|content)"
    r"|entry[-_]content|story[-_]?body|body[-_]?text|rich[-_]?text|body__container", re.I)
# Short teaser/promo lines that sit inside article bodies ("READ MORE: ...", "Related: ...").
_PROMO_LINE = re.compile(
    r"^[*#\s]*(?:read more\b|more on this\b|don'?t miss\b|also read\b|also on [\w.]+\b"
    r"|you may also like\b|like this story\?|advertisement\W*$"
    r"|related(?: articles?| stories| posts| content| coverage| reading)?\s*(?::|\W*$))", re.I)
_INLINE_TAGS = re.compile(r"</?(?:u|sub|sup|del|s|mark|small|span|ins|kbd)>")
# Markdown escapes trafilatura adds; "_" matters (it is a word character) and \| must stay in tables.
_ESCAPES = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>~])")


def parse_html(html: str) -> Any | None:
    """The page as an lxml tree, parsed once for every reader of it (None when it is not HTML at all).

    trafilatura's loader (load_html), with a parser whose element classes are chosen in C: lxml.html's own
    chooser is a Python call for every element every reader touches (form elements get no special class,
    which no reader uses)."""
    try:
        from trafilatura.utils import is_dubious_html, repair_faulty_html  # heavy: only when a page is read
    except ImportError as exc:  # pragma: no cover - trafilatura is a hard dependency
        raise ImportError("reading web pages needs trafilatura: pip install trafilatura") from exc
    if not html.strip():
        return None
    beginning = html[:50].lower()
    html = repair_faulty_html(html, beginning)
    from lxml import html as lxml_html  # with lxml.etree ~30 ms to import: when a page is read, not at start-up

    try:
        tree = lxml_html.fromstring(html, parser=_parser())
    except ValueError:  # "Unicode strings with encoding declaration are not supported."
        tree = _parse_bytes(html)
    except Exception:  # noqa: BLE001 - lxml's "Document is empty" (a comment, a PHP tag): tried as bytes below
        tree = None
    if tree is None or len(tree) < 1:
        tree = _parse_bytes(html)
    # as trafilatura: a document without an <html> near its start that parses to one block is not HTML
    return None if tree is None or (is_dubious_html(beginning) and len(tree) < 2) else tree


def _parse_bytes(html: str) -> Any | None:
    from lxml import html as lxml_html  # imported by parse_html already: this only names it

    try:
        return lxml_html.fromstring(html.encode("utf8", "surrogatepass"), parser=_parser())
    except Exception:  # noqa: BLE001 - as trafilatura: unparseable bytes are no page
        return None


@functools.cache
def _parser() -> Any:
    """trafilatura's HTML parser settings with lxml.html's element classes looked up in C."""
    from lxml import etree  # heavy: when the first page is read
    from lxml import html as lxml_html

    parser = lxml_html.HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8",
                                  remove_comments=True, remove_pis=True)
    parser.set_element_class_lookup(etree.ElementDefaultClassLookup(
        element=lxml_html.HtmlElement, comment=lxml_html.HtmlComment, pi=lxml_html.HtmlProcessingInstruction,
        entity=lxml_html.HtmlEntity))
    return parser


# trafilatura (and readability, on the same lxml trees) from several threads at once now and then kills the
# process (SIGSEGV, or SIGABRT "double free or corruption": adbar/trafilatura#840 and #925; seen twice in this
# project's research benchmark, whose tasks scrape side by side): one page is read at a time. The reading holds
# the GIL for most of its time, so the tasks' threads lose little by it.
_READING = threading.RLock()


def trafilatura_extract(document: Any, **options: Any) -> str:
    """trafilatura.extract of an HTML string or tree, one at a time in the process; '' when it finds nothing."""
    import trafilatura

    with _READING:
        return trafilatura.extract(document, **options) or ""


def extract_main_content(html: str, url: str | None = None, *, tree: Any | None = None) -> str:
    """The main content of an HTML page as Markdown (headings, lists, tables), without boilerplate.

    `tree` is the page as parse_html gave it, so that the page is parsed once; it is used up (readability
    drops its hidden elements), so read anything else from it first. One page is read at a time (_READING)."""
    with _READING:
        return _main_content(html, url, tree)


def _main_content(html: str, url: str | None, tree: Any | None) -> str:
    page = parse_html(html) if tree is None else tree
    if page is None:
        return ""
    titles = _title_candidates(page)
    most = _most_words(page)  # what no reading can exceed: a wider pass that cannot win is skipped
    _drop_unread(page)
    text = _tidy(_precise_reading(html, _mended(page), url, most), titles)
    links = link_texts(page)  # recall mode reads the page as served, without the block merging above
    # fast: without trafilatura's own readability/justext fallback, which readability-lxml's reading below stands
    # in for; the text is the same on the 311 benchmark pages and the pass takes about a quarter less time.
    if could_widen(text, most):
        text = prefer_wider(text, _tidy(_trafilatura_markdown(page, url, favor_recall=True, fast=True), titles))
    peer = readability_reading(page)  # last: it drops the tree's hidden elements
    text = whole_when_short(add_missing_lines(trim_unshared_edges(text, peer.prose), peer.prose, links), peer)
    # again: readability's lines may bring the title or a promo back; every table gets its header row
    return complete_tables(_tidy(text, titles))


def _precise_reading(html: str, mended: Any, url: str | None, most: int) -> str:
    """trafilatura's precision reading (a default one when that kept only a notice), else the page's whole text."""
    text = _trafilatura_markdown(mended, url, favor_precision=True)
    words = len(_WORD.findall(text))
    if words < 200 and most >= 5 * max(words, 1):
        # Precision mode sometimes keeps only a notice and misses the article: a far longer default
        # extraction is then the better bet.
        wider = _trafilatura_markdown(mended, url)
        if len(_WORD.findall(wider)) >= 5 * max(words, 1):
            text = wider
    if not text.strip():
        import trafilatura

        text = re.sub(r"\n\s*\n+", "\n\n", trafilatura.html2txt(html) or "")
    return text


def page_title(page: str | Any) -> str:
    """The page's <title> (else og:title, else the first <h1>), whitespace collapsed; '' if none.

    `page` is the HTML or the tree parse_html made of it."""
    tree = parse_html(page) if isinstance(page, str) else page
    if tree is None:
        return ""
    for xpath in ("//title", '//meta[@property="og:title"]/@content', "//h1"):
        for found in tree.xpath(xpath)[:1]:
            text = found if isinstance(found, str) else found.text_content()
            text = " ".join(text.split())
            if text:
                return text
    return ""


def _trafilatura_markdown(tree: Any, url: str | None, **options: Any) -> str:
    text = trafilatura_extract(
        tree, url=url, output_format="markdown", include_formatting=True, include_tables=True,
        include_links=False, include_images=False, include_comments=False, **options)
    return _ESCAPES.sub(r"\1", _INLINE_TAGS.sub("", text))


def _most_words(tree: Any) -> int:
    """At most how many words a reading of the page can hold: the words of its text outside scripts and styles,
    plus one per list item (Markdown numbers the items of ordered lists)."""
    texts = tree.xpath(".//text()[not(parent::script or parent::style)]", smart_strings=False)
    return len(_WORD.findall(" ".join(texts).lower())) + int(tree.xpath("count(.//li)"))


# Elements trafilatura's cleaning drops with their content (readability's cleaner drops the scripts and styles;
# an <svg> holds drawing labels, not prose): dropped once here, so no reader copies or scans them again. JSON-LD
# stays: trafilatura reads it (forum pages, its baseline). <link> stays: without it one page's reading changed.
_UNREAD = './/script[not(@type="application/ld+json")] | .//style | .//svg'


def _drop_unread(tree: Any) -> None:
    """Remove the page's scripts, styles and <svg> drawings, keeping the text that follows them."""
    for element in tree.xpath(_UNREAD):
        element.drop_tree()


def _title_candidates(tree: Any) -> list[str]:
    found: list[str] = []
    for xpath in ('//meta[@property="og:title"]/@content', '//meta[@name="twitter:title"]/@content',
                  "//title", "//h1"):
        for item in tree.xpath(xpath)[:3]:
            text = plain_words(item if isinstance(item, str) else item.text_content())
            if text and len(text) < 400:
                found.append(text)
    return found


def _strip_leading_title(text: str, titles: list[str]) -> str:
    """Drop the first line when it only repeats the page title (the tool shows the title already)."""
    lines = text.split("\n")
    for i, line in enumerate(lines[:3]):
        norm = plain_words(line)
        if not norm:
            continue
        if len(norm) < 400 and any(norm == t or (len(norm.split()) >= 3 and norm in t
                                                 and len(norm) >= len(t) / 2) for t in titles):
            del lines[i]
        break
    return "\n".join(lines)


def _tidy(text: str, titles: list[str]) -> str:
    """`text` without a leading line that repeats the title and without promo lines."""
    return _drop_promo_lines(_strip_leading_title(text, titles)).strip()


def _drop_promo_lines(text: str) -> str:
    return "\n".join(line for line in text.split("\n")
                     if len(line) >= 250 or not _PROMO_LINE.match(line))


def _near_ancestors(element: Any, depth: int) -> list[Any]:
    found: list[Any] = []
    parent = element.getparent()
    while parent is not None and len(found) < depth:
        found.append(parent)
        parent = parent.getparent()
    return found


_TWEETS = '//blockquote[contains(@class, "twitter-tweet")]'


def _mended(tree: Any) -> Any:
    """The tree with split article bodies joined and tweets unwrapped: a copy when either is found, else itself."""
    if not _split_bodies(tree) and not tree.xpath(_TWEETS):
        return tree
    tree = copy.deepcopy(tree)
    _merge_split_bodies(tree)
    return _unwrap_tweets(tree)


def _split_bodies(tree: Any) -> list[list[Any]]:
    """Groups of article-body blocks that share a class and a close ancestor (bodies split around ads)."""
    groups: dict[str, list[Any]] = {}
    for element in tree.iter("div", "section"):
        cls = element.get("class") or ""
        if _BODY_CLASS.search(cls):
            groups.setdefault(cls, []).append(element)
    found = []
    for blocks in groups.values():
        first, rest = blocks[0], blocks[1:]
        close = set(_near_ancestors(first, 3))
        if not rest or not all(close & set(_near_ancestors(b, 3)) for b in rest):
            continue
        if any(b in _near_ancestors(first, 100) or first in _near_ancestors(b, 100) for b in rest):
            continue  # nested blocks, not split ones
        found.append(blocks)
    return found


def _merge_split_bodies(tree: Any) -> Any:
    """Join article-body blocks that share a class and a close ancestor into the first of them."""
    from lxml import html as lxml_html  # loaded with the page's tree: this only names it

    for first, *rest in _split_bodies(tree):
        for block in rest:
            if block.text and block.text.strip():
                lead = lxml_html.Element("p")
                lead.text = block.text
                first.append(lead)
            for child in list(block):
                first.append(child)
            block.getparent().remove(block)
    return tree


def _unwrap_tweets(tree: Any) -> Any:
    """Lift embedded tweets out of their widget wrappers, which extractors discard as social boxes."""
    for quote in tree.xpath(_TWEETS):
        quote.attrib.clear()
        own = quote.text_content().strip()
        top, parent = quote, quote.getparent()
        while parent is not None and parent.tag in ("div", "figure", "section", "aside", "span") \
                and parent.text_content().strip() == own:
            top, parent = parent, parent.getparent()
        if top is not quote and top.getparent() is not None:
            quote.tail = top.tail
            top.getparent().replace(top, quote)
    return tree
