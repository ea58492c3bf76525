"""The search_papers tool: scholarly papers from OpenAlex, then Semantic Scholar and Crossref, each a numbered source
with its DOI; a paper's open-access PDF read page by page; a retracted paper said so wherever it is shown.

The services are asked in that order (tools/web/paper_services.py): the next one when one fails or finds nothing.
Each hit is a source of the task under its DOI link, titled `Title (year)` (`⚠ RETRACTED — Title (year)` for a
retracted one), whose text is what the hit shows (authors, venue, DOI, citations, the abstract); reading the
paper (`read`) fetches its open-access PDF like any page scrape reads (robots.txt included) and adds the PDF's
text, with its `--- page N ---` markers, to the same source, so a claim citing it is checked against the pages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from config import Settings
from core.secrets import SecretRedactor
from core.text import truncate_middle
from sources.ledger import Read, Work, placed
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits
from tools.documents.errors import ConversionError
from tools.documents.reading import pdf_shown
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.errors import FetchError
from tools.web.fetch import AddressCheck, Resolver
from tools.web.paper_services import Client, Crossref, OpenAlex, Paper, SemanticScholar, Service, bare_doi
from tools.web.search_backends import SearchBackendError
from tools.web.session import WebSession, session_for

DEFAULT_HITS, MAX_HITS = 5, 20
MAX_CHARS = 40_000
ABSTRACT_CHARS = 3_000


class SearchPapersTool(Tool):
    """Search scholarly papers (OpenAlex, Semantic Scholar, Crossref) and read a paper's open-access PDF."""

    name = "search_papers"
    brief = "Search scholarly papers (DOI, year, citations, retractions); `read` a DOI's open-access PDF."
    description = ("Scholarly papers (OpenAlex, Semantic Scholar, Crossref), each a numbered source with year, venue, "
                   "DOI, citations, abstract; a retracted one says so. `read` a hit's DOI to read its PDF by page.")
    parameters = {  # described by their names: every tool's text shares one prompt (tests/test_prompt_fit.py)
        "type": "object",
        "properties": {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": MAX_HITS},
                       "year_from": {"type": "integer"}, "year_to": {"type": "integer"},
                       "open_access": {"type": "boolean"}, "read": {"type": "string"}, "pages": {"type": "string"}},
        "additionalProperties": False,
    }
    network = True  # the whole result is cached by its arguments under --cache / --replay (the API URLs hold keys)
    fetchers = ()

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None, sleep: Callable[[float], None] | None = None,
                 web: WebSession | None = None) -> None:
        self.settings = settings
        self.guard = SecretGuard(settings)
        self.web = web or session_for(settings, resolver, address_check)
        pause = sleep or time.sleep
        api = self.web.fetcher(sleep=pause, retries=0, robots=False)  # an API (see api_get); the next service
        self.pdf_fetcher = self.web.fetcher(sleep=pause)  # a paper's PDF: a page like any other, robots.txt too
        client = Client(api, self.web.limiter, SecretRedactor.of(settings))  # the keys never reach a message
        self.crossref = Crossref(settings, client)
        self.services: list[Service] = [OpenAlex(settings, client), SemanticScholar(settings, client, api),
                                        self.crossref]
        self.seen: dict[str, Paper] = {}  # the papers this task's searches showed, by DOI and by address

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Search (query) or read (a DOI); every failure comes back as an 'Error: ...' observation."""
        query, read = " ".join(str(kwargs.get("query") or "").split()), str(kwargs.get("read") or "").strip()
        if bool(query) == bool(read):
            return "Error: give either `query` (to search) or `read` (a DOI from the results), not both or neither."
        try:
            self.guard.check(query or read, "paper search")
            if read:
                return self.read(read, str(kwargs.get("pages") or "") or None)
            years = (_year(kwargs.get("year_from")), _year(kwargs.get("year_to")))
            k = max(1, min(int(kwargs.get("k") or DEFAULT_HITS), MAX_HITS))
            return self.search(query, k, years, bool(kwargs.get("open_access")))
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        except (SearchBackendError, ValueError) as exc:
            return f"Error: {exc}"

    def search(self, query: str, k: int, years: tuple[int | None, int | None], open_access: bool) -> str | ToolOutput:
        """The first service's papers that has any; each failure before it is noted and listed under the task."""
        failures: list[str] = []
        for service in self.services:
            try:
                papers = service.search(query, k, years, open_access)
            except SearchBackendError as exc:
                failures.append(str(exc))
                continue
            if papers:
                return self._hits(query, service, papers[:k], failures, open_access)
        if failures and len(failures) == len(self.services):
            return "Error: every scholarly service failed: " + " ".join(failures)
        return f'No papers found for "{query}"' + (f" ({' '.join(failures)})" if failures else "") + \
            ". Try other keywords, or fewer filters."

    def _hits(self, query: str, service: Service, papers: list[Paper], failures: list[str],
              open_access: bool) -> ToolOutput:
        notes = [f"Note: {' '.join(failures)} Papers from {service.label} instead."] if failures else []
        notes += self._check_retractions(papers)
        if open_access and service.name == "crossref":
            notes.append("Note: Crossref cannot tell open access: these papers may have no free full text.")
        blocks, reads = [], []
        for paper in papers:
            text = hit_text(paper)
            blocks.append(f"{placed(paper.url)}\n{text}")
            reads.append(Read(paper.url, source_title(paper), text, aliases=_aliases(paper),
                              retracted=paper.retracted, work=work_of(paper)))
            for key in (paper.doi, *_aliases(paper), paper.url):
                if key:
                    self.seen[key.lower()] = paper
        head = f'Papers for "{query}" ({service.label}):'
        tail = 'Read a paper\'s open-access PDF with {"read": "<its DOI>"}; cite each paper by its number.'
        return ToolOutput("\n\n".join([*notes, head, *blocks, tail]), read=reads, failures=failures)

    def _check_retractions(self, papers: list[Paper]) -> list[str]:
        """Semantic Scholar records no retraction: its hits' DOIs are looked up in Crossref (one request)."""
        unchecked = [p for p in papers if not p.checked]
        dois = [p.doi for p in unchecked if p.doi]
        if not unchecked:
            return []
        if dois:
            try:
                found = self.crossref.retractions(dois)
            except SearchBackendError as exc:
                return [f"Note: retractions not checked ({exc})."]
            for paper in unchecked:
                paper.retracted, paper.checked = found.get(paper.doi, ""), bool(paper.doi)
        missing = sum(not p.checked for p in unchecked)
        return [f"Note: {missing} paper(s) without a DOI could not be checked for retraction."] if missing else []

    def read(self, wanted: str, pages: str | None) -> str | ToolOutput:
        """The paper's open-access PDF as text, page-marked, added to the paper's own source."""
        paper = self.seen.get(wanted.lower()) or self.seen.get(bare_doi(wanted)) or self._lookup(wanted)
        if not paper.pdf_url:
            where = f" Its landing page: {paper.landing_url}." if paper.landing_url else ""
            return f"Error: no open-access PDF is known for {paper.title} ({paper.url}).{where}"
        try:
            result = self.pdf_fetcher.get(paper.pdf_url)
        except FetchError as exc:
            return f"Error: could not read the open-access PDF at {paper.pdf_url}: {exc}"
        if result.truncated:
            return f"Error: the PDF is larger than SCRAPE_MAX_BYTES ({self.settings.scrape_max_bytes:,} bytes)"
        if result.kind() != "pdf":
            return (f"Error: {paper.pdf_url} answered {result.content_type or 'something'} that is not a PDF; the "
                    f"paper's page is {paper.url}")
        try:
            text, said = pdf_shown(result.body, pages, DocLimits.of(self.settings))  # in a child, under its limits
        except ConversionError as exc:
            return f"Error: could not read the PDF of {paper.title}: {exc}"
        lines = [*([f"⚠ RETRACTED — {paper.retracted}"] if paper.retracted else []),
                 f"{paper.title} — full text from its open-access PDF", f"PDF: {result.url}", *said]
        body = truncate_middle(text, MAX_CHARS, "ask for fewer pages")
        return ToolOutput("\n".join(lines) + "\n\n" + body, read=[Read(
            paper.url, source_title(paper), body, aliases=(*_aliases(paper), result.url), retracted=paper.retracted,
            work=work_of(paper))])

    def _lookup(self, wanted: str) -> Paper:
        """The paper with this DOI from the first service that knows it (OpenAlex's lookup by DOI is free)."""
        doi = bare_doi(wanted)
        if not doi:
            raise ValueError(f"{wanted!r} is no DOI (like 10.1038/nature12373); search first, then read a hit's DOI")
        failures: list[str] = []
        found: list[Paper] = []
        for service in self.services:
            try:
                paper = service.by_doi(doi)
            except SearchBackendError as exc:
                failures.append(str(exc))
                continue
            if paper is not None:
                found.append(paper)
                if paper.pdf_url:
                    break
        if not found:
            raise SearchBackendError(f"no scholarly service knows the DOI {doi}" + (
                f" ({' '.join(failures)})" if failures else ""))
        paper = next((p for p in found if p.pdf_url), found[0])
        paper.retracted = next((p.retracted for p in found if p.retracted), "")  # any service that says so
        paper.checked = any(p.checked for p in found)
        self._check_retractions([paper])
        return paper


def _year(value: Any) -> int | None:
    """A year argument as a number (None when absent)."""
    if value in (None, ""):
        return None
    year = int(value)
    if not 1000 <= year <= 2200:
        raise ValueError(f"year {value!r} is not a year")
    return year


def _aliases(paper: Paper) -> tuple[str, ...]:
    return tuple(dict.fromkeys(u for u in (paper.pdf_url, paper.landing_url, paper.page_url) if u and u != paper.url))


def work_of(paper: Paper) -> Work:
    """What the claim check may hold a claim naming the paper to: its authors, year, title, venue, DOI."""
    return Work(tuple(paper.authors), paper.year, paper.title, paper.venue, paper.doi)


def source_title(paper: Paper) -> str:
    """How the source list names the paper: `Title (2024)`, `⚠ RETRACTED — Title (1998)`."""
    year = f" ({paper.year})" if paper.year else ""
    if paper.retracted:  # the mark says it: a publisher's own `RETRACTED:` title prefix is not said twice
        return "⚠ RETRACTED — " + re.sub(r"(?i)^retracted(?: article)?:\s*", "", paper.title) + year
    return paper.title + year


def hit_text(paper: Paper) -> str:
    """One hit as the model reads it (and as the source's text): a retraction first, then the facts, the abstract."""
    lines = [f"⚠ RETRACTED — {paper.retracted}"] if paper.retracted else []
    if paper.notice_of:
        lines.append(f"This is the retraction notice of doi:{paper.notice_of}.")
    authors = ", ".join(paper.authors[:6]) + (f" (+{len(paper.authors) - 6} more)" if len(paper.authors) > 6 else "")
    lines.append(paper.title + (f" ({paper.year})" if paper.year else ""))
    if authors:
        lines.append(f"Authors: {authors}")
    facts = [f"Venue: {paper.venue}" if paper.venue else "", f"DOI: {paper.doi}" if paper.doi else "",
             f"Cited by {paper.cited_by:,}" if paper.cited_by is not None else ""]
    if any(facts):
        lines.append(" · ".join(f for f in facts if f))
    if paper.pdf_url:
        lines.append(f"Open-access PDF: {paper.pdf_url}")
    elif paper.landing_url and paper.landing_url != paper.url:
        lines.append(f"Landing page: {paper.landing_url}")
    if not paper.checked:
        lines.append("Retraction: not checked")
    if paper.abstract:
        lines.append("Abstract: " + truncate_middle(paper.abstract, ABSTRACT_CHARS))
    return "\n".join(lines)
