"""The search_papers tool: scholarly papers from OpenAlex, then Semantic Scholar and Crossref, each a numbered source
with its DOI; a paper's open-access PDF read page by page; a retracted paper said so wherever it is shown.

The services are asked in that order (tools/web/papers/: one module each): the next one when one fails or finds nothing.
Each hit is a source of the task under its DOI link, titled `Title (year)` (`⚠ RETRACTED — Title (year)` for a
retracted one), whose text is what the hit shows (authors, venue, DOI, citations, the abstract); reading the
paper (`read`) fetches its open-access PDF like any page scrape reads (robots.txt included) and adds the PDF's
text, with its `--- page N ---` markers, to the same source, so a claim citing it is checked against the pages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

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
from tools.web.papers.client import Client, asked, clauses
from tools.web.papers.crossref import Crossref
from tools.web.papers.openalex import OpenAlex
from tools.web.papers.paper import UNTITLED, Paper, Service, bare_doi
from tools.web.papers.semantic_scholar import SemanticScholar
from tools.web.papers.shown import hit_text, source_title
from tools.web.search_backends import SearchBackendError
from tools.web.session import WebSession, session_for

DEFAULT_HITS, MAX_HITS = 5, 20
MAX_CHARS = 40_000
# Hosts whose addresses name one paper each (a DOI link, a service's page): never another record's alias.
IDENTITY_HOSTS = {"doi.org", "dx.doi.org", "www.doi.org", "openalex.org", "api.openalex.org", "www.semanticscholar.org",
                  "semanticscholar.org", "api.semanticscholar.org"}


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
        # An API (see api_get): no retry, and a 429/503 holds the service (client.py), not the host: the next one
        api = self.web.fetcher(sleep=pause, retries=0, robots=False, holds=False)
        self.pdf_fetcher = self.web.fetcher(sleep=pause)  # a paper's PDF: a page like any other, robots.txt too
        client = Client(api, self.web.limiter, SecretRedactor.of(settings))  # the keys never reach a message
        self.crossref = Crossref(settings, client)
        self.services: list[Service] = [OpenAlex(settings, client), SemanticScholar(settings, client, api),
                                        self.crossref]
        self.seen: dict[str, Paper] = {}  # the papers this task's searches showed, by key, DOI and own address
        self.owner: dict[str, str] = {}  # an address a hit gave -> the paper key it was first given for

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
                papers = asked(service, partial(service.search, query, k, years, open_access))
            except SearchBackendError as exc:
                failures.append(str(exc))
                continue
            if papers:
                return self._hits(query, service, papers[:k], failures, open_access)
        if failures and len(failures) == len(self.services):
            return "Error: every scholarly service failed: " + clauses(failures)
        return f'No papers found for "{query}"' + (f" ({clauses(failures)})" if failures else "") + \
            ". Try other keywords, or fewer filters."

    def _hits(self, query: str, service: Service, papers: list[Paper], failures: list[str],
              open_access: bool) -> ToolOutput:
        notes = [f"Note: {clauses(failures)}. Papers from {service.label} instead."] if failures else []
        notes += self._check_retractions(papers)
        if open_access and service.name == "crossref":
            notes.append("Note: Crossref cannot tell open access: these papers may have no free full text.")
        blocks, reads = [], []
        shared = _shared(papers)
        for paper in papers:
            text = hit_text(paper)
            blocks.append(f"{placed(paper.url)}\n{text}")
            aliases = self._own(paper, shared)
            reads.append(Read(paper.url, source_title(paper), text, aliases=aliases,
                              retracted=paper.retracted, work=work_of(paper)))
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
                found = asked(self.crossref, partial(self.crossref.retractions, dois))
            except SearchBackendError as exc:
                return [f"Note: retractions not checked ({exc})."]
            for paper in unchecked:
                paper.retracted, paper.checked = found.get(paper.doi, ""), bool(paper.doi)
        missing = sum(not p.checked for p in unchecked)
        return [f"Note: {missing} paper(s) without a DOI could not be checked for retraction."] if missing else []

    def _own(self, paper: Paper, shared: set[str], *more: str) -> tuple[str, ...]:
        """The addresses that are this paper's alone (its PDF, landing page, the service's page, `more`), kept to
        find it again: none that another hit gave, none that names another paper (a DOI link, a service's page)."""
        mine = []
        for address in dict.fromkeys((*_aliases(paper), *(m for m in more if m and m != paper.url))):
            owner = self.owner.setdefault(address.lower(), paper.key)
            if owner == paper.key and address.lower() not in shared and not _names_a_paper(address, paper):
                mine.append(address)
        for key in (paper.key, paper.doi, paper.url, *mine):
            if key:
                self.seen[key.lower()] = paper
        return tuple(mine)

    def read(self, wanted: str, pages: str | None) -> str | ToolOutput:
        """The paper's open-access PDF as text, page-marked, added to the paper's own source. A retracted paper's
        mark leads whatever answer this gives, a failure's too."""
        paper = self.seen.get(wanted.lower()) or self.seen.get("doi:" + bare_doi(wanted)) or self._lookup(wanted)
        if not paper.pdf_url:
            where = f" Its landing page: {paper.landing_url}." if paper.landing_url else ""
            return self._failed(paper, f"no open-access PDF is known for {paper.title} ({paper.url}).{where}")
        try:
            result = self.pdf_fetcher.get(paper.pdf_url)
        except FetchError as exc:
            return self._failed(paper, f"could not read the open-access PDF at {paper.pdf_url}: {exc}")
        if result.truncated:
            return self._failed(paper, f"the PDF is larger than SCRAPE_MAX_BYTES "
                                       f"({self.settings.scrape_max_bytes:,} bytes)")
        if result.kind() != "pdf":
            return self._failed(paper, f"{paper.pdf_url} answered {result.content_type or 'something'} that is not a "
                                       f"PDF; the paper's page is {paper.url}")
        try:
            text, said = pdf_shown(result.body, pages, DocLimits.of(self.settings))  # in a child, under its limits
        except ConversionError as exc:
            return self._failed(paper, f"could not read the PDF of {paper.title}: {exc}")
        lines = [*([f"⚠ RETRACTED — {paper.retracted}"] if paper.retracted else []),
                 f"{paper.title} — full text from its open-access PDF", f"PDF: {result.url}", *said]
        body = truncate_middle(text, MAX_CHARS, "ask for fewer pages")
        return ToolOutput("\n".join(lines) + "\n\n" + body, read=[Read(
            paper.url, source_title(paper), body, aliases=self._own(paper, set(), result.url),
            retracted=paper.retracted, work=work_of(paper))])

    def _failed(self, paper: Paper, why: str) -> str | ToolOutput:
        """A read that failed: one 'Error: ...' line; for a retracted paper, its mark and record as its source."""
        if not paper.retracted:
            return f"Error: {why}"
        text = hit_text(paper)
        return ToolOutput(f"{placed(paper.url)}\n{text}\n\nThe paper's full text was not read: {why}",
                          read=[Read(paper.url, source_title(paper), text, aliases=self._own(paper, set()),
                                     retracted=paper.retracted, work=work_of(paper))],
                          failures=[why])

    def _lookup(self, wanted: str) -> Paper:
        """The paper with this DOI from the first service that knows it (OpenAlex's lookup by DOI is free)."""
        doi = bare_doi(wanted)
        if not doi:
            raise ValueError(f"{wanted!r} is no DOI (10.<registrant>/<suffix>, like 10.1038/nature12373); search "
                             "first, then read a hit's DOI")
        failures: list[str] = []
        found: list[Paper] = []
        for service in self.services:
            try:
                paper = asked(service, partial(service.by_doi, doi))
            except SearchBackendError as exc:
                failures.append(str(exc))
                continue
            if paper is not None:
                found.append(paper)
                if paper.pdf_url:
                    break
        if not found and len(failures) == len(self.services):
            raise SearchBackendError(f"every scholarly service failed to look up the DOI {doi}: {clauses(failures)}")
        if not found:
            raise SearchBackendError(f"no scholarly service knows the DOI {doi}" + (
                f" ({clauses(failures)})" if failures else ""))
        paper = next((p for p in found if p.pdf_url), found[0])
        paper.retracted = next((p.retracted for p in found if p.retracted), "")  # any service that says so
        paper.title = next((p.title for p in found if p.title != UNTITLED), paper.title)
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


def _shared(papers: list[Paper]) -> set[str]:
    """The addresses two papers of one answer both give (lower-cased): they tell neither apart."""
    givers: dict[str, set[str]] = {}
    for paper in papers:
        for address in (paper.url, *_aliases(paper)):
            givers.setdefault(address.lower(), set()).add(paper.key)
    return {address for address, keys in givers.items() if len(keys) > 1}


def work_of(paper: Paper) -> Work:
    """What the claim check may hold a claim naming the paper to: its authors, year, title, venue, DOI."""
    return Work(tuple(paper.authors), paper.year, paper.title, paper.venue, paper.doi)


def _names_a_paper(address: str, paper: Paper) -> bool:
    """A DOI link or a service's page of a paper other than this one's own: it names that paper, not this one."""
    host = (urlsplit(address).hostname or "").lower()
    return host in IDENTITY_HOSTS and address != paper.page_url
