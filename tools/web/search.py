"""The search tool: web search through Serper (Google) when a key is set, else DuckDuckGo via ddgs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from config import Settings
from providers.common import parse_retry_after
from providers.ratelimit import DEFAULT_PAUSE, Limiter
from tools.base import Tool
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.domains import DomainRules
from tools.web.session import session_for

DEFAULT_RESULTS = 5
MAX_RESULTS = 20


class SearchBackendError(Exception):
    """A search backend failed; the message is written for the model. `fallback` allows trying DDG."""

    def __init__(self, message: str, fallback: bool = True) -> None:
        super().__init__(message)
        self.fallback = fallback


def _default_ddgs_factory(timeout: float) -> Any:
    try:
        from ddgs import DDGS
    except ImportError as exc:
        raise SearchBackendError("DuckDuckGo search needs the ddgs package: pip install ddgs", False) from exc
    return DDGS(timeout=max(1, int(timeout)))


class SearchTool(Tool):
    """Web search returning numbered results (title, URL, snippet) plus any direct answer."""

    name = "search"
    description = (
        "Search the web. Returns numbered results, each with title, URL, snippet and date when known, "
        "plus a direct answer box or knowledge-graph facts when the engine has them. Use it to find "
        "sources and current facts; snippets are short, so scrape a result's URL to read it in full. "
        "Write keyword queries (e.g. 'Eiffel Tower height meters'), not questions to a person."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The search query (keywords)."},
            "num_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS,
                            "description": f"How many results to return (default {DEFAULT_RESULTS})."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, settings: Settings, *, ddgs_factory: Callable[[], Any] | None = None) -> None:
        self.settings = settings
        self.guard = SecretGuard(settings)  # settings are frozen: the secrets are read once
        self.timeout = settings.scrape_timeout
        self.ddgs_factory = ddgs_factory or (lambda: _default_ddgs_factory(self.timeout))

    def run(self, **kwargs: Any) -> str:
        """Search `query` and format the results; every failure comes back as an observation string."""
        return DomainRules.of(self.settings.allow_domains, self.settings.block_domains).filter_results(
            self._search(**kwargs))  # --allow-domains / --block-domains: results elsewhere are dropped

    def _search(self, **kwargs: Any) -> str:
        query = " ".join(str(kwargs.get("query") or "").split())
        if not query:
            return "Error: the search query is empty."
        try:
            self.guard.check(query, "search query")
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        num = max(1, min(int(kwargs.get("num_results") or DEFAULT_RESULTS), MAX_RESULTS))
        if not self.settings.serper_api_key:
            return self._ddg_or_error(query, num, prefix="")
        try:
            return self._serper(query, num)
        except SearchBackendError as exc:
            if not exc.fallback:
                return f"Error: {exc}"
            return self._ddg_or_error(query, num, prefix=f"Note: {exc} Results from DuckDuckGo instead.\n\n",
                                      serper_error=str(exc))

    def _ddg_or_error(self, query: str, num: int, prefix: str, serper_error: str | None = None) -> str:
        try:
            return prefix + self._ddg(query, num)
        except SearchBackendError as exc:
            if serper_error:
                return f"Error: {serper_error} DuckDuckGo also failed: {exc}"
            return f"Error: {exc}"

    def _serper(self, query: str, num: int) -> str:
        """Query Serper's Google search endpoint and format organic results, answer box and graph."""
        import httpx

        url = self.settings.serper_base_url.rstrip("/") + "/search"
        headers = {"X-API-KEY": self.settings.serper_api_key or "", "Content-Type": "application/json"}
        limiter = self._turn("serper")
        try:
            response = httpx.post(url, json={"q": query, "num": num}, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException as exc:
            raise SearchBackendError(f"Serper search timed out after {self.timeout:g}s.") from exc
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise SearchBackendError(f"could not reach Serper at {url} ({reason}).") from exc
        status = response.status_code
        if status in (401, 403):
            raise SearchBackendError(f"Serper rejected the API key (HTTP {status}); check SERPER_API_KEY.",
                                     fallback=False)
        if status == 429:
            wait = parse_retry_after(response.headers) or DEFAULT_PAUSE
            limiter.pause_until(time.time() + wait, "Serper answered 429")  # every task's next search waits
            raise SearchBackendError("Serper quota or rate limit exceeded (HTTP 429).")
        if status >= 400:
            raise SearchBackendError(f"Serper answered HTTP {status}: {response.text[:200].strip()}")
        try:
            data = response.json()
        except ValueError as exc:
            raise SearchBackendError("Serper returned a malformed (non-JSON) response.") from exc
        if not isinstance(data, dict):
            raise SearchBackendError("Serper returned a malformed response (not a JSON object).")
        return format_serper(query, data, num)

    def _ddg(self, query: str, num: int) -> str:
        """Query DuckDuckGo through ddgs and format the results like Serper's organic ones."""
        limiter = self._turn("duckduckgo")
        try:
            client = self.ddgs_factory()
            raw = client.text(query, max_results=num)
        except SearchBackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - ddgs wraps many engines and raises their errors
            if "no results" in str(exc).lower():
                return _no_results(query)
            kind = "rate-limited" if "ratelimit" in type(exc).__name__.lower() else "failed"
            if kind == "rate-limited":
                limiter.pause_until(time.time() + DEFAULT_PAUSE, "DuckDuckGo rate-limited a search")
            raise SearchBackendError(f"DuckDuckGo search {kind}: {exc or type(exc).__name__}") from exc
        results = [{"title": r.get("title", ""), "link": r.get("href") or r.get("url", ""),
                    "snippet": r.get("body", ""), "date": r.get("date")}
                   for r in raw or [] if isinstance(r, dict)]
        if not results:
            return _no_results(query)
        return f'Search results for "{query}" (DuckDuckGo):\n\n' + _format_organic(results[:num])


    def _turn(self, backend: str) -> Limiter:
        """Wait for the backend's shared limiter (paused after a 429 of any task); the limiter itself."""
        limiter = session_for(self.settings).search_limits.limiter(backend, limited=False)
        limiter.acquire(0)
        return limiter


def _no_results(query: str) -> str:
    return f'No results found for "{query}". Try fewer or different keywords.'


def format_serper(query: str, data: dict[str, Any], num: int) -> str:
    """Serper's JSON as text: answer box, knowledge graph, then numbered organic results."""
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
    organic = [r for r in data.get("organic") or [] if isinstance(r, dict)][:num]
    if organic:
        sections.append(_format_organic(organic))
    if not sections:
        return _no_results(query)
    return f'Search results for "{query}" (Google via Serper):\n\n' + "\n\n".join(sections)


def _format_organic(results: list[dict[str, Any]]) -> str:
    blocks = []
    for i, result in enumerate(results, 1):
        lines = [f"{i}. {result.get('title') or '(untitled)'}", f"   URL: {result.get('link') or ''}"]
        if result.get("date"):
            lines.append(f"   Date: {result['date']}")
        if result.get("snippet"):
            lines.append(f"   {' '.join(str(result['snippet']).split())}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
