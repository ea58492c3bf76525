"""OpenAlex's works as Papers.

GET {OPENALEX_BASE_URL}/works?search=..&per_page=..&filter=..&select=.. and /works/doi:{doi} (free of its daily
allowance). The abstract comes as an inverted index; `is_retracted` marks a retracted work. OPENALEX_MAILTO (mailto=)
puts the requests in its polite pool; OPENALEX_API_KEY (api_key=) raises the small daily allowance it grants without
a key. Recorded bodies: tests/fixtures/real_api/scholarly.json."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from config import Settings
from tools.web.api_get import api_url
from tools.web.papers.client import Client
from tools.web.papers.paper import UNTITLED, Paper, as_int, as_text, as_url, bare_doi

OPENALEX_SELECT = ("id,doi,display_name,publication_year,authorships,primary_location,best_oa_location,open_access,"
                   "cited_by_count,is_retracted,abstract_inverted_index")


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
    work_id = str(work.get("id") or "")
    work_id = work_id if re.fullmatch(r"https://openalex\.org/W\d+", work_id) else ""  # its own page, or none
    return Paper(
        title=as_text(work.get("display_name") or work.get("title")) or UNTITLED, service="OpenAlex",
        authors=[as_text((a.get("author") or {}).get("display_name")) for a in work.get("authorships") or []
                 if isinstance(a, dict)],
        year=as_int(work.get("publication_year")), venue=as_text(venue), doi=bare_doi(str(work.get("doi") or "")),
        cited_by=as_int(work.get("cited_by_count")), pdf_url=as_url(pdf), landing_url=as_url(landing),
        page_url=work_id, service_id=work_id.rsplit("/", 1)[-1],
        abstract=inverted_abstract(work.get("abstract_inverted_index")),
        retracted="OpenAlex marks it retracted (is_retracted)" if work.get("is_retracted") is True else "")


def inverted_abstract(index: Any) -> str:
    """OpenAlex's abstract_inverted_index ({word: [positions]}) as the text it indexes; a position no word holds
    (OpenAlex leaves some out) is shown as a gap, "…", so the words either side are not read as adjacent."""
    if not isinstance(index, dict):
        return ""
    at = {p: as_text(word) for word, positions in index.items() if isinstance(positions, list)
          for p in positions if isinstance(p, int) and not isinstance(p, bool) and p >= 0}
    words, last = [], -1
    for p in sorted(at):
        if p > last + 1:
            words.append("…")
        words.append(at[p])
        last = p
    return " ".join(w for w in words if w)
