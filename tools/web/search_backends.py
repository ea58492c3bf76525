"""The search engines behind the search tool: Serper, Brave, Tavily, SearXNG and DuckDuckGo.

Each backend turns a query into `Results` (numbered hits plus an answer box or knowledge-graph lines when
the engine has them) or raises SearchBackendError, whose message is written for the model and the task's
record. The search tool asks them in the order `search_order()` gives (SEARCH_BACKENDS, or every configured
one) and moves on to the next when one fails or its quota is spent. Wire formats follow each API's docs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from config import Settings
from core.search_settings import SEARCH_BACKEND_NAMES
from providers.common import parse_retry_after

if TYPE_CHECKING:
    import httpx


class SearchBackendError(Exception):
    """A search backend failed (unreachable, a rejected key, a spent quota, a malformed answer)."""


class SearchRateLimitedError(SearchBackendError):
    """The engine answered 429 (or ddgs hit DuckDuckGo's rate limit): the run's searches with it pause."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # the engine's retry-after, in seconds, when it sent one


@dataclass
class Results:
    """What one engine answered: its hits (title, link, snippet, date) and any answer-box sections."""

    engine: str
    hits: list[dict[str, Any]] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)


class Backend(Protocol):
    """One search engine: `label` names it to the model, search() asks it."""

    name: str
    label: str

    def search(self, query: str, num: int) -> Results:
        """The engine's results for query (at most num hits); SearchBackendError when it fails."""
        ...


def search_order(settings: Settings) -> tuple[str, ...]:
    """SEARCH_BACKENDS when set, else every configured backend (Serper, Brave, Tavily, SearXNG), then DuckDuckGo."""
    if settings.search_backends:
        return tuple(dict.fromkeys(settings.search_backends))  # a name given twice is asked once
    configured = {"serper": settings.serper_api_key, "brave": settings.brave_api_key,
                  "tavily": settings.tavily_api_key, "searxng": settings.searxng_url}
    return (*(name for name in SEARCH_BACKEND_NAMES if configured.get(name)), "duckduckgo")


def make_backends(settings: Settings, ddgs_factory: Callable[[], Any]) -> list[Backend]:
    """The backends of search_order(settings), ready to ask."""
    timeout = settings.scrape_timeout
    build: dict[str, Callable[[], Backend]] = {
        "serper": lambda: Serper(settings.serper_base_url, settings.serper_api_key or "", timeout),
        "brave": lambda: Brave(settings.brave_base_url, settings.brave_api_key or "", timeout),
        "tavily": lambda: Tavily(settings.tavily_base_url, settings.tavily_api_key or "", timeout),
        "searxng": lambda: SearXNG(settings.searxng_url or "", timeout),
        "duckduckgo": lambda: DuckDuckGo(ddgs_factory),
    }
    return [build[name]() for name in search_order(settings)]


def _send(label: str, method: str, url: str, timeout: float, **kwargs: Any) -> httpx.Response:
    """One request to an engine; a timeout or a connection failure is a SearchBackendError naming it."""
    import httpx  # with its command-line part (click, rich): ~40 ms, at the first search rather than at start-up

    try:
        return httpx.request(method, url, timeout=timeout, **kwargs)
    except httpx.TimeoutException as exc:
        raise SearchBackendError(f"{label} search timed out after {timeout:g}s.") from exc
    except httpx.HTTPError as exc:
        raise SearchBackendError(f"could not reach {label} at {url} ({str(exc) or type(exc).__name__}).") from exc


def _json_object(label: str, response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as exc:
        raise SearchBackendError(f"{label} returned a malformed (non-JSON) response.") from exc
    if not isinstance(data, dict):
        raise SearchBackendError(f"{label} returned a malformed response (not a JSON object).")
    return data


def _detail(response: httpx.Response) -> str:
    """The error's own words: Brave's error(s)[].detail, Tavily's detail.error, else the body's start."""
    try:
        data = response.json()
    except ValueError:
        return " ".join(response.text[:200].split())
    if isinstance(data, dict):
        errors = data.get("errors") or [data.get("error")]
        first = errors[0] if isinstance(errors, list) and errors else None
        detail = data.get("detail")
        for candidate in (first, detail):
            if isinstance(candidate, dict):
                text = candidate.get("detail") or candidate.get("error") or candidate.get("message")
                if text:
                    return " ".join(str(text).split())[:200]
            elif isinstance(candidate, str) and candidate:
                return candidate[:200]
        if data.get("message"):
            return str(data["message"])[:200]
    return " ".join(response.text[:200].split())


def _check_status(label: str, response: httpx.Response, key: str | None, quota: tuple[int, ...]) -> None:
    """A rejected key, a spent quota or rate limit, or any other error status as a SearchBackendError."""
    status = response.status_code
    if status < 400:
        return
    detail = _detail(response)
    said = f": {detail}" if detail else ""
    if key and status in (401, 403):
        raise SearchBackendError(f"{label} rejected the API key (HTTP {status}); check {key}{said}")
    if status == 429:
        raise SearchRateLimitedError(f"{label} quota or rate limit exceeded (HTTP {status}){said}",
                                     parse_retry_after(response.headers))
    if status in quota:
        raise SearchBackendError(f"{label} quota or rate limit exceeded (HTTP {status}){said}")
    raise SearchBackendError(f"{label} answered HTTP {status}{said}")


class Serper:
    """Google results through Serper (POST {base}/search, X-API-KEY)."""

    name, label = "serper", "Google via Serper"

    def __init__(self, base_url: str, key: str, timeout: float) -> None:
        self.url, self.key, self.timeout = base_url.rstrip("/") + "/search", key, timeout

    def search(self, query: str, num: int) -> Results:
        """Organic results, answer box and knowledge graph."""
        headers = {"X-API-KEY": self.key, "Content-Type": "application/json"}
        response = _send("Serper", "POST", self.url, self.timeout, json={"q": query, "num": num}, headers=headers)
        _check_status("Serper", response, "SERPER_API_KEY", (429,))
        data = _json_object("Serper", response)
        organic = [r for r in data.get("organic") or [] if isinstance(r, dict)][:num]
        return Results(self.label, organic, serper_extras(data))


def serper_extras(data: dict[str, Any]) -> list[str]:
    """Serper's answer box and knowledge graph as text sections."""
    sections: list[str] = []
    answer = data.get("answerBox")
    if isinstance(answer, dict):
        text = answer.get("answer") or answer.get("snippet") or ""
        if answer.get("title") and answer.get("title") != text:
            text = f"{answer['title']}: {text}" if text else str(answer["title"])
        if text:
            source = f"\n(source: {answer['link']})" if answer.get("link") else ""
            sections.append(f"Answer box: {text}{source}")
    graph = data.get("knowledgeGraph")
    if isinstance(graph, dict) and graph.get("title"):
        lines = [f"Knowledge graph: {graph['title']}" + (f" ({graph['type']})" if graph.get("type") else "")]
        if graph.get("description"):
            lines.append(str(graph["description"]))
        for key, value in (graph.get("attributes") or {}).items():
            lines.append(f"- {key}: {value}")
        link = graph.get("descriptionLink") or graph.get("website")
        if link:
            lines.append(f"(source: {link})")
        sections.append("\n".join(lines))
    return sections


class Brave:
    """Brave Search's web search API (GET {base}/res/v1/web/search, X-Subscription-Token)."""

    name, label = "brave", "Brave Search"

    def __init__(self, base_url: str, key: str, timeout: float) -> None:
        self.url, self.key, self.timeout = base_url.rstrip("/") + "/res/v1/web/search", key, timeout

    def search(self, query: str, num: int) -> Results:
        """web.results[] as hits (description as the snippet, page_age or age as the date)."""
        headers = {"Accept": "application/json", "X-Subscription-Token": self.key}
        response = _send(self.label, "GET", self.url, self.timeout, params={"q": query, "count": min(num, 20)},
                         headers=headers)
        if response.status_code == 422 and "SUBSCRIPTION_TOKEN" in response.text:  # Brave's answer to a bad key
            raise SearchBackendError(f"Brave Search rejected the API key (HTTP 422); check BRAVE_API_KEY: "
                                     f"{_detail(response)}")
        _check_status(self.label, response, "BRAVE_API_KEY", (402, 429))  # 429: RATE_LIMITED or QUOTA_LIMITED
        web = _json_object(self.label, response).get("web") or {}
        raw = web.get("results") if isinstance(web, dict) else None
        hits = [{"title": r.get("title", ""), "link": r.get("url", ""), "snippet": _strip_tags(r.get("description")),
                 "date": r.get("page_age") or r.get("age")} for r in raw or [] if isinstance(r, dict)]
        return Results(self.label, hits[:num])


class Tavily:
    """Tavily's search API (POST {base}/search, Authorization: Bearer)."""

    name, label = "tavily", "Tavily"

    def __init__(self, base_url: str, key: str, timeout: float) -> None:
        self.url, self.key, self.timeout = base_url.rstrip("/") + "/search", key, timeout

    def search(self, query: str, num: int) -> Results:
        """results[] as hits, and Tavily's generated answer (include_answer) as an answer box."""
        body = {"query": query, "max_results": num, "search_depth": "basic", "include_answer": True}
        response = _send(self.label, "POST", self.url, self.timeout, json=body,
                         headers={"Authorization": f"Bearer {self.key}"})
        _check_status(self.label, response, "TAVILY_API_KEY", (429, 432, 433))  # 432 plan, 433 pay-as-you-go limit
        data = _json_object(self.label, response)
        hits = [{"title": r.get("title", ""), "link": r.get("url", ""), "snippet": r.get("content", ""),
                 "date": r.get("published_date")} for r in data.get("results") or [] if isinstance(r, dict)]
        answer = data.get("answer")
        extras = [f"Answer (generated by Tavily from the results): {answer}"] if isinstance(answer, str) and answer \
            else []
        return Results(self.label, hits[:num], extras)


class SearXNG:
    """A SearXNG instance's JSON API (GET {SEARXNG_URL}/search?q=..&format=json); no key."""

    name, label = "searxng", "SearXNG"

    def __init__(self, base_url: str, timeout: float) -> None:
        self.url, self.timeout = base_url.rstrip("/") + "/search", timeout

    def search(self, query: str, num: int) -> Results:
        """results[] as hits, answers and infoboxes as extras; every engine unresponsive is a failure."""
        response = _send(self.label, "GET", self.url, self.timeout, params={"q": query, "format": "json"})
        if response.status_code == 403:
            raise SearXNGFormatError()
        _check_status(self.label, response, None, (429,))  # 429: the instance's limiter
        data = _json_object(self.label, response)
        hits = [{"title": r.get("title", ""), "link": r.get("url", ""), "snippet": r.get("content", ""),
                 "date": r.get("publishedDate")} for r in data.get("results") or [] if isinstance(r, dict)]
        extras = [f"Answer: {text}" for text in map(_answer_text, data.get("answers") or []) if text]
        extras += [_infobox(box) for box in data.get("infoboxes") or [] if isinstance(box, dict) and box.get("infobox")]
        dead = [e for e in data.get("unresponsive_engines") or [] if isinstance(e, list | tuple) and e]
        if not hits and not extras and dead:
            engines = ", ".join(f"{e[0]} ({e[1]})" if len(e) > 1 else str(e[0]) for e in dead[:5])
            raise SearchBackendError(f"SearXNG's engines did not answer: {engines}")
        return Results(self.label, hits[:num], extras)


class SearXNGFormatError(SearchBackendError):
    """The instance refuses format=json (403): its settings.yml does not list json under search.formats."""

    def __init__(self) -> None:
        super().__init__("SearXNG refused format=json (HTTP 403): add json to search.formats in the "
                         "instance's settings.yml")


def _answer_text(answer: Any) -> str:
    """An answer as text: a string (older SearXNG) or {"answer": ..., "url": ...} (newer)."""
    if isinstance(answer, dict):
        text = str(answer.get("answer") or "")
        return f"{text}\n(source: {answer['url']})" if text and answer.get("url") else text
    return str(answer or "")


def _infobox(box: dict[str, Any]) -> str:
    lines = [f"Infobox: {box['infobox']}"]
    if box.get("content"):
        lines.append(" ".join(str(box["content"]).split()))
    for attribute in box.get("attributes") or []:
        if isinstance(attribute, dict) and attribute.get("label") and attribute.get("value"):
            lines.append(f"- {attribute['label']}: {attribute['value']}")
    if box.get("id"):
        lines.append(f"(source: {box['id']})")
    return "\n".join(lines)


def _strip_tags(text: Any) -> str:
    """Brave marks query words with <strong>; the model reads plain text."""
    return str(text or "").replace("<strong>", "").replace("</strong>", "")


class DuckDuckGo:
    """DuckDuckGo through the ddgs package (no key)."""

    name, label = "duckduckgo", "DuckDuckGo"

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def search(self, query: str, num: int) -> Results:
        """ddgs text results as hits; its 'No results found' is an empty answer, not a failure."""
        try:
            raw = self.factory().text(query, max_results=num)
        except SearchBackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - ddgs wraps many engines and raises their errors
            if "no results" in str(exc).lower():
                return Results(self.label)
            if "ratelimit" in type(exc).__name__.lower():
                raise SearchRateLimitedError(f"DuckDuckGo search rate-limited: {exc or type(exc).__name__}") from exc
            raise SearchBackendError(f"DuckDuckGo search failed{_via(exc)}: {exc or type(exc).__name__}") from exc
        hits = [{"title": r.get("title", ""), "link": r.get("href") or r.get("url", ""),
                 "snippet": r.get("body", ""), "date": r.get("date")} for r in raw or [] if isinstance(r, dict)]
        return Results(self.label, hits[:num])


def _via(exc: Exception) -> str:
    """Which engine ddgs last asked, when its error names one that is not DuckDuckGo (ddgs spreads a query over
    several engines and raises the last one's error, e.g. a search.brave.com URL)."""
    hosts = [h for h in re.findall(r"https?://([\w.-]+)", str(exc)) if "duckduckgo" not in h.lower()]
    return f" (through the ddgs package, which also asks other engines; the last one it asked, {hosts[-1]}, " \
           "failed)" if hosts else ""


def default_ddgs_factory(timeout: float) -> Any:
    """A ddgs.DDGS client (the package is imported when DuckDuckGo is first asked)."""
    try:
        from ddgs import DDGS
    except ImportError as exc:
        raise SearchBackendError("DuckDuckGo search needs the ddgs package: pip install ddgs") from exc
    return DDGS(timeout=max(1, int(timeout)))
