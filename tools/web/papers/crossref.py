"""Crossref's works as Papers, and the retractions of a list of DOIs.

GET {CROSSREF_BASE_URL}/works?query=..&rows=..&filter=..; CROSSREF_MAILTO (mailto=) for its polite pool. A work's
`updated-by` entry of type retraction (or withdrawal, removal, partial retraction), from Retraction Watch's data or the
publisher's own notice, marks it retracted; an item whose `update-to` is one is the notice. Recorded bodies:
tests/fixtures/real_api/scholarly.json."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

from config import Settings
from tools.web.api_get import api_url
from tools.web.papers.client import Client
from tools.web.papers.paper import UNTITLED, Paper, as_int, as_text, as_url, bare_doi

# Crossref update types that take a work back, as a reader says them.
RETRACTING = {"retraction": "retraction", "partial_retraction": "partial retraction", "withdrawal": "withdrawal",
              "removal": "removal"}
_WHO = {"retraction-watch": "Retraction Watch", "publisher": "the publisher"}


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
    names = [as_text(" ".join(str(a.get(k) or "") for k in ("given", "family")) or a.get("name"))
             for a in item.get("author") or [] if isinstance(a, dict)]
    notice = next((str(u.get("DOI") or "") for u in item.get("update-to") or []
                   if isinstance(u, dict) and u.get("type") in RETRACTING), "")
    return Paper(
        title=as_text((item.get("title") or [""])[0]) or UNTITLED, service="Crossref", authors=names,
        year=as_int(parts[0]), venue=as_text((item.get("container-title") or [""])[0]),
        doi=bare_doi(str(item.get("DOI") or "")), cited_by=as_int(item.get("is-referenced-by-count")),
        landing_url=as_url(item.get("URL")), abstract=jats_text(str(item.get("abstract") or "")),
        retracted=retraction(item), notice_of=bare_doi(notice))


def retraction(item: dict[str, Any]) -> str:
    """What Crossref's `updated-by` says took the work back: 'Crossref: retraction notice doi:… of <date>, from …'."""
    for update in item.get("updated-by") or []:
        kind = RETRACTING.get(str(update.get("type"))) if isinstance(update, dict) else None
        if kind:
            updated = update.get("updated") or {}
            when = as_text(str(updated.get("date-time") or "")[:10]) or "-".join(
                f"{int(x):02d}" for x in ((updated.get("date-parts") or [[]])[0] or []) if isinstance(x, int))
            who = _WHO.get(str(update.get("source")), as_text(update.get("source")) or "its depositor")
            return (f"Crossref: {kind} notice doi:{as_text(update.get('DOI'))}" + (f" of {when}" if when else "")
                    + f", from {who}")
    return ""


def jats_text(abstract: str) -> str:
    """A Crossref abstract (JATS XML) as plain text: tags out, entities decoded, its 'Abstract' heading dropped."""
    text = re.sub(r"<jats:title>\s*Abstract\s*</jats:title>", " ", abstract, flags=re.I)
    return as_text(html.unescape(re.sub(r"<[^>]+>", " ", text)))
