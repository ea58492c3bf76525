"""The arxiv tool: search arXiv, read a paper's abstract and metadata, or its full text from the PDF.

Through the arXiv API (ARXIV_API_URL, an Atom feed: `search_query` or `id_list`), paced at one request every
3 s over the whole run as arXiv's API terms ask. The PDF is fetched like any page scrape reads (robots.txt
included: arxiv.org allows /pdf) and turned into text by tools/documents' PDF reader, with page markers.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config import Settings
from core.text import truncate_middle
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits
from tools.documents.errors import ConversionError
from tools.documents.reading import pdf_shown
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.api_get import ApiError, api_get
from tools.web.fetch import AddressCheck, FetchError, Resolver
from tools.web.session import WebSession, session_for

API_GAP = 3.0  # arXiv's API terms: no more than one request every three seconds
MAX_CHARS = 40_000
_NS = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom",
       "os": "http://a9.com/-/spec/opensearch/1.1/"}
_FIELD = re.compile(r"\b(ti|au|abs|co|jr|cat|rn|id|all):", re.I)
_ID = re.compile(r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z][a-z.-]*(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)", re.I)


class Pacer:
    """Turns at the arXiv API, shared by every task of the run: at least `gap` seconds between two requests."""

    def __init__(self, gap: float = API_GAP, clock: Callable[[], float] = time.monotonic) -> None:
        self.gap, self.clock = gap, clock
        self.lock, self.last = threading.Lock(), -1e18

    def wait(self, sleep: Callable[[float], None]) -> None:
        """Sleep until the gap since the last request has passed, then take the turn."""
        with self.lock:
            left = self.last + self.gap - self.clock()
            if left > 0:
                sleep(left)
            self.last = self.clock()


_PACER = Pacer()


@dataclass
class Paper:
    """One entry of arXiv's Atom feed."""

    id: str
    title: str
    summary: str
    authors: list[str] = field(default_factory=list)
    published: str = ""
    updated: str = ""
    categories: list[str] = field(default_factory=list)
    abs_url: str = ""
    pdf_url: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # comment, journal_ref, doi


class ArxivTool(Tool):
    """Search arXiv and read papers: the abstract and metadata, or the full text of the PDF."""

    name = "arxiv"
    brief = "Search (`query`) or read (`id`, `pdf`) arXiv papers."
    fetchers = ("fetcher", "pdf_fetcher")  # both answered from the cache under --cache / --replay
    description = (
        "Search or read arXiv papers: `query` searches (keywords, or fields such as 'ti:transformer AND "
        "au:vaswani'); `id` gives a paper's title, authors, dates and abstract, and with `pdf` its full text."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords or an arXiv field query."},
            "id": {"type": "string", "description": "An arXiv id (e.g. '1706.03762') or URL."},
            "pdf": {"type": "boolean", "description": "With id: the PDF's text ('--- page N ---' markers)."},
            "pages": {"type": "string", "description": "With pdf: pages, e.g. '1-3,7'."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 20,
                            "description": "With query: how many papers (default 5)."},
        },
        "additionalProperties": False,
    }

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None, sleep: Callable[[float], None] | None = None,
                 web: WebSession | None = None, pacer: Pacer = _PACER) -> None:
        self.settings, self.api, self.pacer = settings, settings.arxiv_api_url, pacer
        self.sleep = sleep or time.sleep
        self.guard = SecretGuard(settings)
        self.web = web or session_for(settings, resolver, address_check)
        self.fetcher = self.web.fetcher(sleep=self.sleep, robots=False)  # the API: see tools/web/api_get.py
        self.pdf_fetcher = self.web.fetcher(sleep=self.sleep)  # the PDF: a page like any other, robots.txt too

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Search (query) or read (id, pdf, pages); failures come back as an 'Error: ...' string."""
        query, paper_id = str(kwargs.get("query") or "").strip(), str(kwargs.get("id") or "").strip()
        if bool(query) == bool(paper_id):
            return "Error: give either `query` (to search) or `id` (to read a paper), not both or neither."
        try:
            self.guard.check(query or paper_id, "arXiv request")
            if query:
                return self.search(query, int(kwargs.get("max_results") or 5))
            paper = self.paper(paper_id)
            if kwargs.get("pdf"):
                return self.read_pdf(paper, kwargs.get("pages") or None)
            return abstract_output(paper)
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        except (ApiError, FetchError, ConversionError) as exc:
            return f"Error: arXiv: {exc}"

    def _feed(self, params: dict[str, Any]) -> tuple[list[Paper], int | None]:
        self.pacer.wait(self.sleep)
        result = api_get(self.fetcher, self.api, params)
        return parse_feed(result.body)

    def search(self, query: str, limit: int) -> str:
        """The papers matching query, most relevant first."""
        search = query if _FIELD.search(query) else " AND ".join(f"all:{w}" for w in query.split())
        papers, total = self._feed({"search_query": search, "start": 0, "max_results": max(1, min(limit, 20)),
                                    "sortBy": "relevance", "sortOrder": "descending"})
        if not papers:
            return f'No arXiv papers found for "{query}". Try other words or fields (ti:, au:, abs:, cat:).'
        head = f'arXiv search results for "{query}"' + (f" ({total:,} papers match)" if total else "") + ":"
        blocks = [head]
        for i, p in enumerate(papers, 1):
            authors = ", ".join(p.authors[:4]) + (f" (+{len(p.authors) - 4} more)" if len(p.authors) > 4 else "")
            about = " · ".join(x for x in (p.id, p.published[:10], ", ".join(p.categories[:3])) if x)
            blocks.append(f"{i}. {p.title}\n   arXiv: {about}\n   Authors: {authors}\n   URL: {p.abs_url}\n"
                          f"   {truncate_middle(p.summary, 300)}")
        blocks.append('Read one with {"id": "..."} (its abstract) or {"id": "...", "pdf": true} (its full text).')
        return "\n\n".join(blocks)

    def paper(self, text: str) -> Paper:
        """The paper with this id (or arxiv.org URL)."""
        match = _ID.search(text)
        if not match:
            raise ApiError(f"{text!r} is not an arXiv id (like 1706.03762 or hep-th/9901001)")
        papers, _ = self._feed({"id_list": match.group(1), "start": 0, "max_results": 1})
        if not papers:
            raise ApiError(f"no paper with id {match.group(1)}")
        return papers[0]

    def read_pdf(self, paper: Paper, pages: str | None) -> ToolOutput:
        """The paper's full text from its PDF, through tools/documents' PDF reader."""
        result = self.pdf_fetcher.get(paper.pdf_url)
        if result.truncated:
            raise ApiError(f"the PDF is larger than SCRAPE_MAX_BYTES ({self.settings.scrape_max_bytes:,} bytes)")
        text, said = pdf_shown(result.body, pages, DocLimits.of(self.settings))  # in a child, under its limits
        lines = [f"arXiv: {paper.title} (full text from the PDF)", f"URL: {result.url}", *said]
        body = truncate_middle(text, MAX_CHARS, "ask for fewer pages")
        return ToolOutput("\n".join(lines) + "\n\n" + body, read=[Read(result.url, paper.title, body,
                                                                       aliases=(paper.pdf_url,))])


def abstract_output(p: Paper) -> ToolOutput:
    """The paper's metadata and abstract, a numbered source under its abstract page's URL."""
    lines = [f"arXiv: {p.title}", f"URL: {p.abs_url}", f"arXiv id: {p.id}", f"Authors: {', '.join(p.authors)}",
             f"Published: {p.published}" + (f"; updated: {p.updated}" if p.updated != p.published else "")]
    if p.categories:
        lines.append(f"Categories: {', '.join(p.categories)}")
    for key, label in (("journal_ref", "Journal reference"), ("doi", "DOI"), ("comment", "Comment")):
        if p.extra.get(key):
            lines.append(f"{label}: {p.extra[key]}")
    if p.pdf_url:
        lines.append(f"PDF: {p.pdf_url} (read it with {{\"id\": \"{p.id}\", \"pdf\": true}})")
    text = "\n".join(lines) + "\n\nAbstract:\n" + p.summary
    return ToolOutput(text, read=[Read(p.abs_url, p.title, text)])


def parse_feed(body: bytes) -> tuple[list[Paper], int | None]:
    """arXiv's Atom feed as papers, and opensearch:totalResults; arXiv's error entry is an ApiError."""
    from lxml import etree  # ~30 ms to import: at the first search, not at start-up

    untrusted = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        root = etree.fromstring(body, untrusted)
    except etree.XMLSyntaxError as exc:
        raise ApiError(f"the API did not answer an Atom feed ({exc})") from exc
    papers = []
    for entry in root.findall("a:entry", _NS):
        entry_id = _text(entry, "a:id")
        if "/api/errors" in entry_id:  # arXiv reports a bad query as an entry titled Error
            raise ApiError(_text(entry, "a:summary") or "the API reported an error")
        links = {(link.get("title") or link.get("rel") or ""): link.get("href") or "" for link in entry.findall(
            "a:link", _NS)}
        papers.append(Paper(
            id=re.sub(r"^.*/abs/", "", entry_id), title=_text(entry, "a:title"), summary=_text(entry, "a:summary"),
            authors=[_text(a, "a:name") for a in entry.findall("a:author", _NS)],
            published=_text(entry, "a:published"), updated=_text(entry, "a:updated"),
            categories=[c.get("term") or "" for c in entry.findall("a:category", _NS)],
            abs_url=links.get("alternate") or entry_id, pdf_url=links.get("pdf", ""),
            extra={k: _text(entry, f"arxiv:{k}") for k in ("comment", "journal_ref", "doi")}))
    total = root.findtext("os:totalResults", namespaces=_NS)
    return papers, int(total) if total and total.strip().isdigit() else None


def _text(element: Any, path: str) -> str:
    """The element's text at path, on one line."""
    return " ".join((element.findtext(path, namespaces=_NS) or "").split())
