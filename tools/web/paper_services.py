"""The scholarly services behind search_papers: OpenAlex, Semantic Scholar and Crossref, each answering `Paper`s.

Wire formats follow each API's documentation (recorded bodies: tests/fixtures/real_api/scholarly.json):
- OpenAlex: GET {OPENALEX_BASE_URL}/works?search=..&per_page=..&filter=..&select=.. and /works/doi:{doi} (free of
  its daily allowance). The abstract comes as an inverted index; `is_retracted` marks a retracted work.
  OPENALEX_MAILTO (mailto=) puts the requests in its polite pool; OPENALEX_API_KEY (api_key=) raises the
  small daily allowance it grants without a key.
- Semantic Scholar: GET {SEMANTIC_SCHOLAR_BASE_URL}/graph/v1/paper/search?query=..&fields=.. and
  /graph/v1/paper/DOI:{doi}; SEMANTIC_SCHOLAR_API_KEY goes in x-api-key, to that origin only. It records no
  retraction: its hits' DOIs are looked up in Crossref for one.
- Crossref: GET {CROSSREF_BASE_URL}/works?query=..&rows=..&filter=..; CROSSREF_MAILTO (mailto=) for its polite pool.
  A work's `updated-by` entry of type retraction (or withdrawal, removal, partial retraction), from Retraction
  Watch's data or the publisher's own notice, marks it retracted; an item whose `update-to` is one is the notice.
Each request goes through the run's web session like wikipedia's and arxiv's (address policy, domain rules, per-host
turns, size cap); robots.txt is not asked (see api_get). A 429 holds the host for every task (Retry-After, else
search's 2 s) and the tool asks the next service meanwhile.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from config import Settings
from core.secrets import SecretRedactor
from providers.ratelimit import DEFAULT_PAUSE
from tools.web.api_get import Fetcher, api_url
from tools.web.errors import FetchError, HTTPStatusError
from tools.web.fetch import SafeFetcher
from tools.web.politeness import HostLimiter, retry_after_seconds
from tools.web.robots import origin
from tools.web.search_backends import SearchBackendError, SearchRateLimitedError

DOI = re.compile(r"\b(10\.\d{4,9}/\S+)", re.I)
OPENALEX_SELECT = ("id,doi,display_name,publication_year,authorships,primary_location,best_oa_location,open_access,"
                   "cited_by_count,is_retracted,abstract_inverted_index")
S2_FIELDS = "title,authors,year,venue,journal,externalIds,citationCount,openAccessPdf,abstract,url"
# Crossref update types that take a work back, as a reader says them.
RETRACTING = {"retraction": "retraction", "partial_retraction": "partial retraction", "withdrawal": "withdrawal",
              "removal": "removal"}
_WHO = {"retraction-watch": "Retraction Watch", "publisher": "the publisher"}


@dataclass
class Paper:
    """One paper as a service describes it; `retracted` says what marks it retracted ("" when nothing does)."""

    title: str
    service: str
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str = ""
    doi: str = ""
    cited_by: int | None = None
    pdf_url: str = ""
    landing_url: str = ""
    page_url: str = ""  # the service's own page of the paper
    abstract: str = ""
    retracted: str = ""
    notice_of: str = ""  # a retraction notice: the DOI it takes back
    checked: bool = True  # False: the service records no retraction and none was looked up elsewhere

    @property
    def url(self) -> str:
        """The paper's address as a source: its DOI link, else its landing page, else the service's page."""
        return doi_url(self.doi) if self.doi else self.landing_url or self.page_url


class Service(Protocol):
    """One scholarly service: `label` names it to the model; search() and by_doi() ask it."""

    name: str
    label: str

    def search(self, query: str, k: int, years: tuple[int | None, int | None], open_access: bool) -> list[Paper]:
        """Papers matching the query, most relevant first; SearchBackendError when the service fails."""
        ...

    def by_doi(self, doi: str) -> Paper | None:
        """The paper with this DOI (None when the service does not know it)."""
        ...


def doi_url(doi: str) -> str:
    """https://doi.org/DOI."""
    return f"https://doi.org/{doi}"


def bare_doi(text: str) -> str:
    """The DOI in text ('doi:10.1/x', 'https://doi.org/10.1/x', '10.1/x.'), lower-cased; "" when none."""
    match = DOI.search(text or "")
    return match.group(1).rstrip(".,;)]}>'\"").lower() if match else ""


@dataclass
class Client:
    """The API requests of one tool: its fetcher (no robots.txt), the run's host turns, the redactor that keeps
    the configured keys out of messages."""

    fetcher: Fetcher
    limiter: HostLimiter
    redact: SecretRedactor

    def get(self, label: str, url: str, key: tuple[str, bool] = ("", False), *, missing: bool = False) -> Any:
        """The JSON answer to GET url (None for a 404 when `missing`: a DOI the service does not know);
        SearchBackendError (rate limited: SearchRateLimitedError). `key` is the service's key variable and whether
        it is set, for the messages."""
        try:
            result = self.fetcher.get(url)
        except HTTPStatusError as exc:
            if exc.status == 404 and missing:
                return None
            raise self._status_error(label, exc, url, key) from exc
        except FetchError as exc:
            raise SearchBackendError(self.redact(f"{label}: {exc}")) from exc
        try:
            return json.loads(result.text())
        except ValueError as exc:
            raise SearchBackendError(f"{label} did not answer JSON (is its base URL an API's?)") from exc

    def _status_error(self, label: str, exc: HTTPStatusError, url: str, key: tuple[str, bool]) -> SearchBackendError:
        said = _detail(exc.body)
        said = f": {self.redact(said)}" if said else ""
        variable, key_set = key
        if exc.status == 429:
            wait = retry_after_seconds(exc.headers.get("retry-after"))
            if wait is None:  # like search: every task's next request waits 2 s
                self.limiter.defer(urlsplit(url).hostname or "", DEFAULT_PAUSE)
            hint = f" (a {variable} raises it)" if variable and not key_set else ""
            return SearchRateLimitedError(f"{label} rate limit or daily allowance spent (HTTP 429){hint}{said}", wait)
        if exc.status in (401, 403) and key_set:
            return SearchBackendError(f"{label} refused the key (HTTP {exc.status}); check {variable}{said}")
        return SearchBackendError(f"{label} answered HTTP {exc.status}{said}")


def _detail(body: bytes) -> str:
    """An error body's own words: OpenAlex's error/message, Semantic Scholar's message, Crossref's message list."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return " ".join(body[:200].decode("utf-8", "replace").split()) if body[:1] not in (b"<", b"") else ""
    if isinstance(data, dict):
        said = data.get("message") or data.get("error")
        if isinstance(said, list) and said and isinstance(said[0], dict):
            said = said[0].get("message")
        return " ".join(str(said).split())[:200] if said else ""
    return ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return " ".join(str(value or "").split())


class OpenAlex:
    """OpenAlex's works: search, and one work by DOI."""

    name, label = "openalex", "OpenAlex"

    def __init__(self, settings: Settings, client: Client) -> None:
        self.base, self.client = settings.openalex_base_url.rstrip("/"), client
        self.extra = {k: v for k, v in (("mailto", settings.openalex_mailto), ("api_key", settings.openalex_api_key))
                      if v}
        self.key = ("OPENALEX_API_KEY", bool(settings.openalex_api_key))

    def search(self, query: str, k: int, years: tuple[int | None, int | None], open_access: bool) -> list[Paper]:
        """/works?search=: the most relevant works, within the years, open access only if asked."""
        filters = [f for f in (f"from_publication_date:{years[0]}-01-01" if years[0] else "",
                               f"to_publication_date:{years[1]}-12-31" if years[1] else "",
                               "is_oa:true" if open_access else "") if f]
        params: dict[str, Any] = {"search": query, "per_page": k, "select": OPENALEX_SELECT}
        if filters:
            params["filter"] = ",".join(filters)
        data = self.client.get(self.label, api_url(f"{self.base}/works", {**params, **self.extra}), self.key)
        return [openalex_paper(w) for w in (data or {}).get("results") or [] if isinstance(w, dict)]

    def by_doi(self, doi: str) -> Paper | None:
        """/works/doi:DOI."""
        url = api_url(f"{self.base}/works/doi:{quote(doi, safe='/:()')}", {"select": OPENALEX_SELECT, **self.extra})
        data = self.client.get(self.label, url, self.key, missing=True)
        return openalex_paper(data) if isinstance(data, dict) else None


def openalex_paper(work: dict[str, Any]) -> Paper:
    """An OpenAlex Work as a Paper; the abstract rebuilt from its inverted index."""
    primary = work.get("primary_location") or {}
    best = work.get("best_oa_location") or {}
    venue = (primary.get("source") or {}).get("display_name") if isinstance(primary, dict) else None
    pdf = best.get("pdf_url") or (primary.get("pdf_url") if primary.get("is_oa") else None)
    landing = best.get("landing_page_url") or primary.get("landing_page_url") or \
        (work.get("open_access") or {}).get("oa_url")
    return Paper(
        title=_text(work.get("display_name") or work.get("title")) or "(untitled)", service="OpenAlex",
        authors=[_text((a.get("author") or {}).get("display_name")) for a in work.get("authorships") or []
                 if isinstance(a, dict)],
        year=_int(work.get("publication_year")), venue=_text(venue), doi=bare_doi(str(work.get("doi") or "")),
        cited_by=_int(work.get("cited_by_count")), pdf_url=str(pdf or ""), landing_url=str(landing or ""),
        page_url=str(work.get("id") or ""), abstract=inverted_abstract(work.get("abstract_inverted_index")),
        retracted="OpenAlex marks it retracted (is_retracted)" if work.get("is_retracted") is True else "")


def inverted_abstract(index: Any) -> str:
    """OpenAlex's abstract_inverted_index ({word: [positions]}) as the text it indexes."""
    if not isinstance(index, dict):
        return ""
    at = {p: word for word, positions in index.items() if isinstance(positions, list)
          for p in positions if isinstance(p, int)}
    return " ".join(at[p] for p in sorted(at))


class SemanticScholar:
    """Semantic Scholar's Graph API: paper search, and one paper by DOI."""

    name, label = "semantic_scholar", "Semantic Scholar"

    def __init__(self, settings: Settings, client: Client, fetcher: SafeFetcher) -> None:
        self.base, self.client = settings.semantic_scholar_base_url.rstrip("/"), client
        key = settings.semantic_scholar_api_key
        if key and (site := origin(self.base)):  # its origin only, never a redirect's
            fetcher.origin_headers[site] = {"x-api-key": key}
        self.key = ("SEMANTIC_SCHOLAR_API_KEY", bool(key))

    def search(self, query: str, k: int, years: tuple[int | None, int | None], open_access: bool) -> list[Paper]:
        """/graph/v1/paper/search: relevance-ranked papers, within the years, with a public PDF only if asked."""
        params: dict[str, Any] = {"query": query, "limit": k, "fields": S2_FIELDS}
        if years[0] or years[1]:
            params["year"] = f"{years[0] or ''}-{years[1] or ''}"
        if open_access:
            params["openAccessPdf"] = ""  # the parameter takes no value
        data = self.client.get(self.label, api_url(f"{self.base}/graph/v1/paper/search", params), self.key)
        return [s2_paper(p) for p in (data or {}).get("data") or [] if isinstance(p, dict)]

    def by_doi(self, doi: str) -> Paper | None:
        """/graph/v1/paper/DOI:DOI."""
        url = api_url(f"{self.base}/graph/v1/paper/DOI:{quote(doi, safe='/:()')}", {"fields": S2_FIELDS})
        data = self.client.get(self.label, url, self.key, missing=True)
        return s2_paper(data) if isinstance(data, dict) else None


def s2_paper(p: dict[str, Any]) -> Paper:
    """A Semantic Scholar paper as a Paper (it says nothing about retraction: checked=False)."""
    pdf = p.get("openAccessPdf") or {}
    venue = p.get("venue") or (p.get("journal") or {}).get("name")
    return Paper(
        title=_text(p.get("title")) or "(untitled)", service="Semantic Scholar",
        authors=[_text(a.get("name")) for a in p.get("authors") or [] if isinstance(a, dict)],
        year=_int(p.get("year")), venue=_text(venue), doi=bare_doi(str((p.get("externalIds") or {}).get("DOI") or "")),
        cited_by=_int(p.get("citationCount")), pdf_url=str(pdf.get("url") or "") if isinstance(pdf, dict) else "",
        page_url=str(p.get("url") or ""), abstract=_text(p.get("abstract")), checked=False)


class Crossref:
    """Crossref's works: a query, one work by DOI, and the retractions of a list of DOIs."""

    name, label = "crossref", "Crossref"

    def __init__(self, settings: Settings, client: Client) -> None:
        self.base, self.client = settings.crossref_base_url.rstrip("/"), client
        self.extra = {"mailto": settings.crossref_mailto} if settings.crossref_mailto else {}

    def search(self, query: str, k: int, years: tuple[int | None, int | None], open_access: bool) -> list[Paper]:
        """/works?query=: the best matching works within the years (Crossref cannot tell open access)."""
        filters = [f for f in (f"from-pub-date:{years[0]}" if years[0] else "",
                               f"until-pub-date:{years[1]}" if years[1] else "") if f]
        params: dict[str, Any] = {"query": query, "rows": k, **({"filter": ",".join(filters)} if filters else {})}
        data = self.client.get(self.label, api_url(f"{self.base}/works", {**params, **self.extra}))
        items = ((data or {}).get("message") or {}).get("items") or []
        return [crossref_paper(item) for item in items if isinstance(item, dict)]

    def by_doi(self, doi: str) -> Paper | None:
        """/works/DOI."""
        data = self.client.get(self.label, api_url(f"{self.base}/works/{quote(doi, safe='/:()')}", self.extra),
                               missing=True)
        message = (data or {}).get("message")
        return crossref_paper(message) if isinstance(message, dict) else None

    def retractions(self, dois: list[str]) -> dict[str, str]:
        """DOI -> what marks it retracted, for those of the DOIs Crossref marks (one request, DOIs ORed)."""
        params = {"filter": ",".join(f"doi:{d}" for d in dois), "rows": len(dois), "select": "DOI,updated-by"}
        data = self.client.get(self.label, api_url(f"{self.base}/works", {**params, **self.extra}))
        items = ((data or {}).get("message") or {}).get("items") or []
        return {bare_doi(str(i.get("DOI"))): note for i in items if isinstance(i, dict) and (note := retraction(i))}


def crossref_paper(item: dict[str, Any]) -> Paper:
    """A Crossref work as a Paper: its retraction from `updated-by`, a notice's target from `update-to`."""
    parts = ((item.get("issued") or item.get("published") or {}).get("date-parts") or [[None]])[0] or [None]
    names = [_text(" ".join(str(a.get(k) or "") for k in ("given", "family")) or a.get("name"))
             for a in item.get("author") or [] if isinstance(a, dict)]
    notice = next((str(u.get("DOI") or "") for u in item.get("update-to") or []
                   if isinstance(u, dict) and u.get("type") in RETRACTING), "")
    return Paper(
        title=_text((item.get("title") or [""])[0]) or "(untitled)", service="Crossref", authors=names,
        year=_int(parts[0]), venue=_text((item.get("container-title") or [""])[0]),
        doi=bare_doi(str(item.get("DOI") or "")), cited_by=_int(item.get("is-referenced-by-count")),
        landing_url=str(item.get("URL") or ""), abstract=jats_text(str(item.get("abstract") or "")),
        retracted=retraction(item), notice_of=bare_doi(notice))


def retraction(item: dict[str, Any]) -> str:
    """What Crossref's `updated-by` says took the work back: 'Crossref: retraction notice doi:… of <date>, from …'."""
    for update in item.get("updated-by") or []:
        kind = RETRACTING.get(str(update.get("type"))) if isinstance(update, dict) else None
        if kind:
            updated = update.get("updated") or {}
            when = str(updated.get("date-time") or "")[:10] or "-".join(
                f"{int(x):02d}" for x in ((updated.get("date-parts") or [[]])[0] or []) if isinstance(x, int))
            who = _WHO.get(str(update.get("source")), str(update.get("source") or "its depositor"))
            return (f"Crossref: {kind} notice doi:{update.get('DOI')}" + (f" of {when}" if when else "")
                    + f", from {who}")
    return ""


def jats_text(abstract: str) -> str:
    """A Crossref abstract (JATS XML) as plain text: tags out, entities decoded, its 'Abstract' heading dropped."""
    text = re.sub(r"<jats:title>\s*Abstract\s*</jats:title>", " ", abstract, flags=re.I)
    return _text(html.unescape(re.sub(r"<[^>]+>", " ", text)))
