"""GET a site's documented API (MediaWiki's api.php, the arXiv API) through the run's web session.

The request takes the same path as scrape's: the address policy, the domain rules, per-host turns and
Retry-After, the size cap and the identifying User-Agent (Wikimedia's API etiquette asks for one). robots.txt
is not asked: it is written for crawlers, and Wikipedia's (`Disallow: /w/`) and arXiv's (`Disallow: /api`,
mirrors `Disallow: /`) refuse the very API paths their operators point programs to. What the API returns
(an arXiv PDF link) is fetched with robots.txt like any page.
"""

from __future__ import annotations

import json
from typing import Any, Protocol
from urllib.parse import urlencode

from tools.web.errors import HTTPStatusError
from tools.web.fetch import FetchResult


class ApiError(Exception):
    """The API answered, with an error of its own; the message is written for the model."""


class Fetcher(Protocol):
    """What api_get needs of a fetcher (SafeFetcher, or the cache's CachingFetcher around one)."""

    def get(self, url: str) -> FetchResult:
        """The response to GET url."""
        ...


def api_url(base: str, params: dict[str, Any]) -> str:
    """base?params, with the parameters in the order given (so the cache sees one URL per request)."""
    return base + ("&" if "?" in base else "?") + urlencode({k: str(v) for k, v in params.items()})


def api_get(fetcher: Fetcher, base: str, params: dict[str, Any]) -> FetchResult:
    """The API's answer to these parameters; an error status is an ApiError naming it."""
    try:
        return fetcher.get(api_url(base, params))
    except HTTPStatusError as exc:
        raise ApiError(f"the API at {base} answered HTTP {exc.status}"
                       + (" (rate limited: try again later)" if exc.status in (429, 503) else "")) from exc


def api_json(fetcher: Fetcher, base: str, params: dict[str, Any]) -> dict[str, Any]:
    """The API's JSON object; MediaWiki's {"error": {"code", "info"}} becomes an ApiError."""
    result = api_get(fetcher, base, params)
    try:
        data = json.loads(result.text())
    except ValueError as exc:
        raise ApiError(f"the API at {base} did not answer JSON (is WIKIPEDIA_API_URL an api.php?)") from exc
    if not isinstance(data, dict):
        raise ApiError(f"the API at {base} answered something other than a JSON object")
    error = data.get("error")
    if isinstance(error, dict):
        raise ApiError(f"{error.get('info') or error.get('code') or 'an error'} ({error.get('code', 'error')})")
    return data
