"""The wikipedia tool: search Wikipedia, read a page or one of its sections, or the page as it stood at a date.

Through the MediaWiki action API (WIKIPEDIA_API_URL, English Wikipedia by default): `list=search` finds
pages, `action=parse` renders a page (or one section, or an old revision by `oldid`) to HTML, turned into
Markdown by trafilatura (tables kept); a date picks the last revision before it with `prop=revisions`
(`rvstart`, `rvdir=older`). Every request goes through the run's web session (address policy, domain rules,
per-host turns); robots.txt is not asked, see api_get.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from config import Settings
from core.text import truncate_middle
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.documents.page_text import trafilatura_extract
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.api_get import ApiError, api_json
from tools.web.fetch import AddressCheck, FetchError, Resolver
from tools.web.session import WebSession, session_for

MAX_CHARS = 40_000
_DROP = ("mw-editsection", "reference", "shortdescription", "mw-empty-elt", "navbox", "metadata", "noprint")


class WikipediaTool(Tool):
    """Search Wikipedia and read pages, one section at a time if asked, as they are or were at a date."""

    name = "wikipedia"
    brief = "Search (`query`) or read (`title`, `section`, `date`) Wikipedia."
    description = (
        "Search or read Wikipedia: `query` finds page titles; `title` reads a page (tables kept) with its list "
        "of sections, `section` only one of them, `date` the page as it stood at the end of that day, month or "
        "year."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Search words."},
            "title": {"type": "string", "description": "Page title or Wikipedia URL."},
            "section": {"type": "string", "description": "A section's heading or number, e.g. '3.2'."},
            "date": {"type": "string", "description": "YYYY, YYYY-MM or YYYY-MM-DD."},
        },
        "additionalProperties": False,
    }

    def __init__(self, settings: Settings, *, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None, sleep: Callable[[float], None] | None = None,
                 web: WebSession | None = None) -> None:
        self.settings = settings
        self.api = settings.wikipedia_api_url
        self.guard = SecretGuard(settings)
        self.web = web or session_for(settings, resolver, address_check)
        self.fetcher = self.web.fetcher(sleep=sleep or time.sleep, robots=False)  # an API: see tools/web/api_get.py

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Search (query) or read (title, section, date); failures come back as an 'Error: ...' string."""
        query, title = str(kwargs.get("query") or "").strip(), str(kwargs.get("title") or "").strip()
        if bool(query) == bool(title):
            return "Error: give either `query` (to search) or `title` (to read a page), not both or neither."
        try:
            self.guard.check(query or title, "Wikipedia request")
            if query:
                return self.search(query)
            title, _, anchor = page_title(title).partition("#")  # 'Page#Section' names a section too
            return self.read(title.strip(), str(kwargs.get("section") or anchor).strip(),
                             str(kwargs.get("date") or "").strip())
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        except (ApiError, FetchError, ValueError) as exc:
            return f"Error: Wikipedia: {exc}"

    def _call(self, **params: Any) -> dict[str, Any]:
        return api_json(self.fetcher, self.api, {**params, "format": "json", "formatversion": "2"})

    def search(self, query: str, limit: int = 8) -> str:
        """Titles, URLs and snippets of the pages matching query."""
        data = self._call(action="query", list="search", srsearch=query, srlimit=limit)
        hits = (data.get("query") or {}).get("search") or []
        if not hits:
            return f'No Wikipedia pages found for "{query}". Try other words.'
        total = ((data.get("query") or {}).get("searchinfo") or {}).get("totalhits")
        lines = [f'Wikipedia search results for "{query}"' + (f" ({total:,} pages match)" if isinstance(
            total, int) else "") + ":"]
        import lxml.html  # ~30 ms to import: at the first search, not at start-up

        for i, hit in enumerate(hits, 1):
            snippet = " ".join(lxml.html.fromstring(f"<p>{hit.get('snippet') or ''}</p>").text_content().split())
            lines.append(f"\n{i}. {hit.get('title')}\n   URL: {self.page_url(str(hit.get('title')))}"
                         + (f"\n   {snippet}" if snippet else ""))
        lines.append('\nRead one with {"title": "..."}; add "section" or "date" as needed.')
        return "\n".join(lines)

    def read(self, title: str, section: str, date: str) -> ToolOutput:
        """The page (or one section) as text, current or as of the end of `date`."""
        header: list[str] = []
        target: dict[str, Any] = {"page": title, "redirects": 1}
        if date:
            revid, stamp, title = self._revision_at(title, date)
            target = {"oldid": revid}
            header.append(f"Revision {revid} of {stamp}: the page as it stood at the end of {date}.")
        parsed = self._call(action="parse", prop="text|sections|revid|displaytitle", **target)["parse"]
        title, revid = str(parsed.get("title") or title), parsed.get("revid")
        sections = [s for s in parsed.get("sections") or [] if isinstance(s, dict)]
        html = str(parsed.get("text") or "")
        if section:
            chosen = find_section(sections, section)
            html = str(self._call(action="parse", prop="text", section=chosen["index"], **(
                {"oldid": revid} if revid else target))["parse"].get("text") or "")
            header.append(f"Section {chosen.get('number')}: {chosen.get('line')}")
        url = self.page_url(title, revid if date else None)
        body = truncate_middle(page_text(html), MAX_CHARS, "read one section at a time")
        listing = "; ".join(f"{s.get('number')} {strip_tags(str(s.get('line')))}" for s in sections)
        lines = [f"Wikipedia: {title}", f"URL: {url}", *header]
        if listing and not section:
            lines.append(f"Sections: {listing} (pass `section` to read one)")
        return ToolOutput("\n".join(lines) + "\n\n" + body, read=[Read(url, f"{title} — Wikipedia", body)])

    def _revision_at(self, title: str, date: str) -> tuple[int, str, str]:
        """The id, timestamp and title of the last revision of title made before the end of date."""
        data = self._call(action="query", prop="revisions", titles=title, rvlimit=1, rvstart=end_of(date),
                          rvdir="older", rvprop="ids|timestamp", redirects=1)
        pages = (data.get("query") or {}).get("pages") or [{}]
        page = pages[0]
        if page.get("missing") or page.get("invalid"):
            raise ApiError(f"there is no page titled {title!r}; search for it first")
        revisions = page.get("revisions") or []
        if not revisions:
            raise ApiError(f"{page.get('title', title)!r} did not exist yet at the end of {date}")
        return int(revisions[0]["revid"]), str(revisions[0].get("timestamp")), str(page.get("title") or title)

    def page_url(self, title: str, revid: int | None = None) -> str:
        """The page's address a reader can open: /wiki/Title, or a permanent link to one revision."""
        slug = quote(title.replace(" ", "_"), safe="/:()',")
        index = re.sub(r"api\.php$", "index.php", self.api.split("?", 1)[0])
        if revid is not None:
            return f"{index}?title={slug}&oldid={revid}"
        parts = urlsplit(self.api)
        if parts.path.endswith("/w/api.php"):
            return f"{parts.scheme}://{parts.netloc}{parts.path[:-len('/w/api.php')]}/wiki/{slug}"
        return f"{index}?title={slug}"


def page_title(text: str) -> str:
    """A title as the model gave it: 'Eiffel Tower', 'Eiffel_Tower' or https://en.wikipedia.org/wiki/Eiffel_Tower."""
    if re.match(r"(?i)^https?://", text) and "/wiki/" in text:
        text = unquote(text.split("/wiki/", 1)[1].split("?", 1)[0])
    return text.replace("_", " ").strip()


def end_of(date: str) -> str:
    """The last second of a year, month or day as MediaWiki's timestamp: '2022' -> '2022-12-31T23:59:59Z'."""
    match = re.fullmatch(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?(?:[T ].*)?", date.strip())
    if not match:
        raise ValueError(f"date {date!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    year, month, day = int(match.group(1)), int(match.group(2) or 12), match.group(3)
    if not 1 <= month <= 12:
        raise ValueError(f"date {date!r} has no month {month}")
    last = calendar.monthrange(year, month)[1]
    day_n = int(day) if day else last
    if not 1 <= day_n <= last:
        raise ValueError(f"date {date!r} has no day {day_n}")
    return f"{year:04d}-{month:02d}-{day_n:02d}T23:59:59Z"


def find_section(sections: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    """The section whose number, heading or anchor is `wanted` (case and spacing ignored)."""
    key = " ".join(wanted.lower().replace("_", " ").split())
    for s in sections:
        names = {str(s.get("number")), strip_tags(str(s.get("line") or "")).lower(),
                 str(s.get("anchor") or "").replace("_", " ").lower()}
        if key in names:
            return s
    known = ", ".join(f"{s.get('number')} {strip_tags(str(s.get('line')))}" for s in sections[:40]) or "none"
    raise ApiError(f"the page has no section {wanted!r}; its sections: {known}")


def strip_tags(text: str) -> str:
    """A section heading without its markup (<i>, <span>)."""
    return re.sub(r"<[^>]+>", "", text).strip()


def page_text(html: str) -> str:
    """Parsed page HTML as Markdown: edit links, footnote marks and navigation boxes dropped, headings kept."""
    if not html.strip():
        return ""
    import lxml.html  # heavy: at the first page read

    root = lxml.html.fragment_fromstring(html, create_parent="div")
    condition = " or ".join(f"contains(concat(' ', normalize-space(@class), ' '), ' {c} ')" for c in _DROP)
    for element in root.xpath(f"//*[{condition}]"):
        element.drop_tree()
    for wrapper in root.xpath("//div[contains(concat(' ', normalize-space(@class), ' '), ' mw-heading ')]"):
        wrapper.drop_tag()  # newer MediaWiki wraps each heading in a div the extractor would skip
    body = lxml.html.tostring(root, encoding="unicode")
    # The parser's output is all article (no menus or ads): recall mode keeps every paragraph, list and table.
    text = trafilatura_extract(f"<html><body><article>{body}</article></body></html>", output_format="markdown",
                               include_formatting=True, include_tables=True, include_links=False,
                               include_images=False, include_comments=False, favor_recall=True,
                               deduplicate=False)
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>~])", r"\1", text)  # trafilatura's Markdown escapes
