"""Semantic Scholar's Graph API papers as Papers.

GET {SEMANTIC_SCHOLAR_BASE_URL}/graph/v1/paper/search?query=..&fields=.. and /graph/v1/paper/DOI:{doi};
SEMANTIC_SCHOLAR_API_KEY goes in x-api-key, to that origin only. It records no retraction: its hits' DOIs are looked
up in Crossref for one. Recorded bodies: tests/fixtures/real_api/scholarly.json."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from config import Settings
from tools.web.api_get import api_url
from tools.web.fetch import SafeFetcher
from tools.web.papers.client import Client
from tools.web.papers.paper import UNTITLED, Paper, as_int, as_text, as_url, bare_doi
from tools.web.robots import origin

PAGES = "https://www.semanticscholar.org/paper/"
S2_FIELDS = "title,authors,year,venue,journal,externalIds,citationCount,openAccessPdf,abstract,url"


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
        title=as_text(p.get("title")) or UNTITLED, service="Semantic Scholar",
        authors=[as_text(a.get("name")) for a in p.get("authors") or [] if isinstance(a, dict)],
        year=as_int(p.get("year")), venue=as_text(venue),
        doi=bare_doi(str((p.get("externalIds") or {}).get("DOI") or "")),
        cited_by=as_int(p.get("citationCount")), pdf_url=as_url(pdf.get("url")) if isinstance(pdf, dict) else "",
        page_url=s2_page(p), service_id=as_text(p.get("paperId")), abstract=as_text(p.get("abstract")), checked=False)


def s2_page(p: dict[str, Any]) -> str:
    """The paper's page at Semantic Scholar: the record's `url` if it is one, else made from its paperId."""
    url, paper_id = as_url(p.get("url")), str(p.get("paperId") or "")
    if url.startswith(PAGES):
        return url
    return PAGES + paper_id if re.fullmatch(r"[0-9a-fA-F]{40}|CorpusId:\d+", paper_id) else ""
