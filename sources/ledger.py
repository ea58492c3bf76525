"""The sources one task read, numbered in the order it first read them, with the text each one gave."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True)
class Work:
    """What a paper is besides its text (search_papers): its authors as the service writes them, year, title,
    venue and DOI. A claim may cite them ("Piwowar et al. (2018) estimate ..."): sources/works.py reads them."""

    authors: tuple[str, ...] = ()
    year: int | None = None
    title: str = ""
    venue: str = ""
    doi: str = ""

    @classmethod
    def of(cls, data: Work | Mapping[str, Any] | None) -> Work | None:
        """A Work from itself or from its JSON form (the trace's `sources` event, a cached tool result)."""
        if data is None or isinstance(data, Work):
            return data
        year = data.get("year")
        return cls(tuple(str(a) for a in data.get("authors") or ()), int(year) if isinstance(year, int) else None,
                   str(data.get("title") or ""), str(data.get("venue") or ""), str(data.get("doi") or ""))

    def record(self) -> dict[str, Any]:
        """As JSON holds it."""
        return asdict(self) | {"authors": list(self.authors)}


@dataclass(frozen=True)
class Read:
    """What a tool declares about one source: it read `url` (a URL or a workspace path) and got `text`.

    `text` None means the tool's whole observation is what it read. `error` set means the tool tried and
    could not read it (a DNS error, a 404, a blocked page): the source is listed as not read. `aliases` are
    other addresses of the same source, e.g. the URL asked for before a redirect. `retracted` says what marks
    a paper retracted (search_papers): every claim citing it is marked, whatever its verdict. `work` is a paper's
    authors, year, title, venue and DOI (search_papers), which a claim may cite as the paper's.
    """

    url: str
    title: str = ""
    text: str | None = None
    error: str | None = None
    aliases: tuple[str, ...] = ()
    retracted: str = ""
    work: Work | None = None

    def __post_init__(self) -> None:
        if self.work is not None and not isinstance(self.work, Work):  # its JSON form (a cached tool result)
            object.__setattr__(self, "work", Work.of(self.work))


@dataclass
class Source:
    """One source of a task: its number (None when it was never read), address, title, and what it gave."""

    n: int | None
    url: str
    title: str = ""
    read: bool = True
    error: str | None = None
    text: str = ""  # kept for the citation check; records carry only record()
    aliases: list[str] = field(default_factory=list)
    retracted: str = ""  # what marks the paper retracted (search_papers), "" for any other source
    work: Work | None = None  # a paper's authors, year, title, venue, DOI (search_papers)

    def record(self) -> dict[str, Any]:
        """The source as results.jsonl holds it: {n, url, title, read, error} (+ retracted for a retracted paper)."""
        out = {"n": self.n, "url": self.url, "title": self.title, "read": self.read, "error": self.error}
        return out | ({"retracted": self.retracted} if self.retracted else {})

    def header(self) -> str:
        """`[n] Title — URL` (a local file: `[n] path`), the line at the head of the observation that read it."""
        return f"[{self.n}] {titled(self.title, self.url)}"


def titled(title: str, url: str) -> str:
    """`Title — URL`, or the address alone when it has no title of its own (a document's `notes.md, § Notes`):
    never the address twice."""
    title = " ".join(title.split())
    return f"{title} — {url}" if title and title != url else url


def placed(url: str) -> str:
    """The line a tool writes where the numbered header of the source at `url` belongs: `[#] url`."""
    return f"[#] {url}"


_TRAILING = ".,;:!?)]}>'\"”’*_`"


def normalize_url(url: str) -> str:
    """One spelling per address: no trailing punctuation, fragment, `www.`, default port or final slash."""
    url = url.strip().rstrip(_TRAILING)
    if not re.match(r"(?i)^https?://", url):
        return url.removeprefix("./")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().removeprefix("www.")
    port = parts.port if parts.port not in (None, 80, 443) else None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit(("https", netloc, parts.path.rstrip("/"), parts.query, ""))


def failed_reads(arguments: dict[str, Any] | str | None, error: str) -> list[Read]:
    """A failed tool call's http(s) URL arguments as sources it could not read (scrape's 404, a DNS error)."""
    if "configured secret" in error:  # tools/secrets_guard.py refused it: the URL holds a key, never record it
        return []
    values = arguments.values() if isinstance(arguments, dict) else [arguments]
    return [Read(v.strip(), error=error.removeprefix("Error: ")) for v in values
            if isinstance(v, str) and re.match(r"(?i)^\s*https?://\S+\s*$", v)]


def one_line(text: str, limit: int = 150) -> str:
    """Text on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class SourceLedger:
    """The sources of one task: read ones numbered 1, 2, ... in reading order, failed ones kept unnumbered."""

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self._by_key: dict[str, Source] = {}

    def observe(self, observation: str, reads: list[Read]) -> str:
        """Note what a tool call read; the observation with `[n] Title — URL` lines for those sources on top,
        or in place of each `placed(url)` line the tool wrote (search_docs heads each passage with its source)."""
        headers = []
        for read in reads:
            source = self.note(read, observation)
            if source is None or not source.read:
                continue
            mark = placed(read.url)
            if mark in observation.splitlines():
                observation = "\n".join(source.header() if line == mark else line
                                         for line in observation.split("\n"))
            elif source.header() not in headers:
                headers.append(source.header())
        return "\n".join(headers) + "\n" + observation if headers else observation

    def note(self, read: Read, observation: str = "") -> Source | None:
        """Record one Read; returns its source (None for an empty address)."""
        if not read.url.strip():
            return None
        keys = [normalize_url(u) for u in (read.url, *read.aliases) if u.strip()]
        source = next((self._by_key[k] for k in keys if k in self._by_key), None)
        if read.error is not None:  # a source read before stays read; a failed one keeps its latest error
            if source is None:
                source = self._add(Source(None, read.url.strip(), one_line(read.title), read=False))
            if not source.read:
                source.error = one_line(read.error, 500)
        else:
            text = observation if read.text is None else read.text
            if source is None:
                source = self._add(Source(None, read.url.strip(), one_line(read.title)))
            if not source.read or source.n is None:
                source.read, source.error, source.n = True, None, len(self.read_sources()) + 1
            if text and text not in source.text:
                source.text = (source.text + "\n\n" + text) if source.text else text
            source.title = source.title or one_line(read.title)
            source.retracted = source.retracted or one_line(read.retracted, 300)
            source.work = source.work or read.work
        for key in keys:
            self._by_key.setdefault(key, source)
            if key != normalize_url(source.url) and key not in source.aliases:
                source.aliases.append(key)
        return source

    def _add(self, source: Source) -> Source:
        self.sources.append(source)
        return source

    def read_sources(self) -> list[Source]:
        """The sources read successfully, by number."""
        return sorted((s for s in self.sources if s.read and s.n is not None), key=lambda s: s.n or 0)

    def number(self, n: int) -> Source | None:
        """The read source numbered n, or None."""
        return next((s for s in self.sources if s.read and s.n == n), None)

    def find(self, url: str) -> Source | None:
        """The source at this address (or an alias of it), read or not; None when the task never tried it."""
        return self._by_key.get(normalize_url(url))

    def was_read(self, url: str) -> bool:
        """True when this address (or an alias of it) was read successfully."""
        source = self._by_key.get(normalize_url(url))
        return source is not None and source.read

    @property
    def sourced(self) -> bool:
        """True when at least one source was read successfully."""
        return any(s.read for s in self.sources)

    def texts(self) -> list[dict[str, Any]]:
        """The read sources with the text each gave and its other addresses: what a report built from several
        tasks checks its citations against (the agent's `sources` event carries it to the trace), with a paper's
        `work`."""
        return [{**s.record(), "text": s.text, "aliases": list(s.aliases)} | ({"work": s.work.record()} if s.work
                                                                               else {}) for s in self.read_sources()]

    def records(self) -> list[dict[str, Any]]:
        """Every source as results.jsonl holds it: read ones by number, then the ones that failed."""
        return [s.record() for s in self.read_sources()] + [s.record() for s in self.sources if not s.read]
