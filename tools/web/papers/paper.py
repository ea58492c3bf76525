"""A paper as a scholarly service describes it (`Paper`), what a service answers (`Service`), DOIs as text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

DOI = re.compile(r"\b(10\.\d{4,9}/\S+)", re.I)


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

def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_text(value: Any) -> str:
    return " ".join(str(value or "").split())
