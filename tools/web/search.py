"""The search tool: web search through the backends the user ordered, failing over from one to the next."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from config import Settings
from providers.ratelimit import DEFAULT_PAUSE
from tools.base import Tool, ToolOutput
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.domains import DomainRules
from tools.web.search_backends import (
    Backend,
    Results,
    SearchBackendError,
    SearchRateLimitedError,
    default_ddgs_factory,
    make_backends,
)
from tools.web.session import session_for

DEFAULT_RESULTS = 5
MAX_RESULTS = 20


def _default_ddgs_factory(timeout: float) -> Any:
    return default_ddgs_factory(timeout)


class SearchTool(Tool):
    """Web search returning numbered results (title, URL, snippet) plus any direct answer."""

    name = "search"
    brief = "Search the web; scrape a result's URL to read it."
    description = (
        "Search the web: numbered results (title, URL, snippet, date) and answer-box facts when the engine "
        "has them. Snippets are short: scrape a result's URL to read it. Write keyword queries, not questions."
    )
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The search query (keywords)."},
            "num_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS,
                            "description": f"How many results (default {DEFAULT_RESULTS})."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, settings: Settings, *, ddgs_factory: Callable[[], Any] | None = None) -> None:
        self.settings = settings
        self.guard = SecretGuard(settings)  # settings are frozen: the secrets are read once
        factory = ddgs_factory or (lambda: _default_ddgs_factory(settings.scrape_timeout))
        self.backends: list[Backend] = make_backends(settings, factory)  # SEARCH_BACKENDS, in the user's order

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Search `query` and format the results; every failure comes back as an observation string."""
        out = self._search(**kwargs)
        rules = DomainRules.of(self.settings.allow_domains, self.settings.block_domains)
        if isinstance(out, str):
            return rules.filter_results(out)
        out.text = rules.filter_results(out.text)  # --allow-domains / --block-domains: results elsewhere dropped
        return out

    def _search(self, **kwargs: Any) -> str | ToolOutput:
        query = " ".join(str(kwargs.get("query") or "").split())
        if not query:
            return "Error: the search query is empty."
        try:
            self.guard.check(query, "search query")
        except SecretInRequestError as exc:
            return f"Error: {exc}"
        num = max(1, min(int(kwargs.get("num_results") or DEFAULT_RESULTS), MAX_RESULTS))
        failures: list[str] = []
        for backend in self.backends:
            try:
                results = self._ask(backend, query, num)
            except SearchBackendError as exc:
                failures.append(str(exc))  # ... and the next backend is asked
                continue
            text = format_results(query, results)
            if failures:
                text = f"Note: {' '.join(failures)} Results from {results.engine} instead.\n\n{text}"
            # each failed backend is listed under the task, beside the answer of the one that worked
            return ToolOutput(text, failures=failures) if failures else text
        if len(failures) == 1:
            return f"Error: {failures[0]}"
        return f"Error: every search backend failed: {' '.join(failures)}"


    def _ask(self, backend: Backend, query: str, num: int) -> Results:
        """One engine's results, in a turn of its limiter, which the run's tasks share: after a 429 every
        task's next search with that engine waits out the retry-after (2 s when none was sent)."""
        limiter = session_for(self.settings).search_limits.limiter(backend.name, limited=False)
        limiter.acquire(0)
        try:
            return backend.search(query, num)
        except SearchRateLimitedError as exc:
            limiter.pause_until(time.time() + (exc.retry_after or DEFAULT_PAUSE), f"{backend.label} answered 429")
            raise


def _no_results(query: str) -> str:
    return f'No results found for "{query}". Try fewer or different keywords.'


def format_results(query: str, results: Results) -> str:
    """One engine's answer as text: answer-box sections, then numbered hits, under a line naming the engine."""
    sections = [*results.extras]
    if results.hits:
        sections.append(_format_organic(results.hits))
    if not sections:
        return _no_results(query)
    return f'Search results for "{query}" ({results.engine}):\n\n' + "\n\n".join(sections)


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
