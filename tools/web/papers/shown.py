"""A paper as search_papers shows it: the hit the model reads (and the source's text), the source's title."""

from __future__ import annotations

import re

from core.text import truncate_middle
from tools.web.papers.paper import Paper

ABSTRACT_CHARS = 3_000


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
    named = f"DOI: {paper.doi}" if paper.doi else f"{paper.service} id: {paper.service_id}" if paper.service_id else ""
    facts = [f"Venue: {paper.venue}" if paper.venue else "", named,
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
