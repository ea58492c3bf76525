"""A paper as a scholarly service describes it (`Paper`), what a service answers (`Service`), DOIs as text.

Papers are told apart by DOI, else by the service's own id (`Paper.key`), never by an address two records may share:
a record's PDF or landing address is the record's say, and may be another paper's. A DOI is checked against the DOI
syntax before it goes into any request (`bare_doi`): no path segment of its own, no character a URL reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

DOI = re.compile(r"\b(10\.\d{4,9}/\S+)", re.I)
# Crossref's pattern for modern DOIs (it covers nearly all registered ones), with the brackets a few old ones hold.
DOI_SYNTAX = re.compile(r"10\.\d{4,9}/[-._;()/:a-z0-9<>\[\]+]+")
UNTITLED = "(untitled)"  # a record without a title
_MARK = re.compile("\u26a0\ufe0f?")  # the warning sign the product marks a retraction with


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
    service_id: str = ""  # the service's own id of the paper (OpenAlex's W…, Semantic Scholar's paperId)
    abstract: str = ""
    retracted: str = ""
    notice_of: str = ""  # a retraction notice: the DOI it takes back
    checked: bool = True  # False: the service records no retraction and none was looked up elsewhere

    @property
    def url(self) -> str:
        """The paper's address as a source: its DOI link, else the service's page of it, else its landing page
        (never a DOI link: without a DOI of its own, a record naming one names another paper)."""
        if self.doi:
            return doi_url(self.doi)
        return self.page_url or ("" if bare_doi(self.landing_url) else self.landing_url)

    @property
    def key(self) -> str:
        """What tells the paper apart: `doi:…`, else the service and its id, else its address."""
        if self.doi:
            return "doi:" + self.doi
        return f"{self.service}:{self.service_id}" if self.service_id else self.url


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
    """The DOI in text ('doi:10.1234/x', 'https://doi.org/10.1234/x', '10.1234/x.'), lower-cased; "" when none, or
    when it breaks the DOI syntax (a `..` or `.` path segment, `?`, `#`, `%`, a backslash...)."""
    match = DOI.search(text or "")
    if not match:
        return ""
    doi = match.group(1).rstrip(".,;)]}>'\"").lower()
    segments = doi.split("/")[1:]
    if not DOI_SYNTAX.fullmatch(doi) or any(s in ("", ".", "..") for s in segments):
        return ""
    return doi



def as_url(value: Any) -> str:
    """An http(s) address a record gives, "" for anything else (a line break or a space in it included)."""
    url = str(value or "") if isinstance(value, str) else ""
    return url if re.fullmatch(r"https?://[^\s\u26a0]+", url) else ""


def as_int(value: Any) -> int | None:
    """A whole number a record gives, None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_text(value: Any) -> str:
    """A record's text on one line, the product's warning sign shown as `(!)`: a title reading "⚠ RETRACTED — …" is
    the record's own words, and must not pass for the mark the product puts on a retracted paper."""
    return _MARK.sub("(!)", " ".join(str(value or "").split())) if value else ""
