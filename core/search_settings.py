"""The search tools' settings checks: the search backends' names and the key or URL each needs
(SEARCH_BACKENDS), AGENT_PAPERS=only needing search on, and `papers_mode`: the one reading of AGENT_PAPERS
with AGENT_SEARCH.

config.py runs `check_search` when it builds Settings, handing it its `setting_name` (how a user sets a field:
flag and variable) for the messages; tools/web/search_backends.py orders the backends by SEARCH_BACKEND_NAMES.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.errors import ConfigError

# The search tool's backends (tools/web/search_backends.py), in the order used when SEARCH_BACKENDS is unset.
SEARCH_BACKEND_NAMES = ("serper", "brave", "tavily", "searxng", "duckduckgo")
# backend -> (the field it needs set, that field's variable)
_NEEDS = {"serper": ("serper_api_key", "SERPER_API_KEY"), "brave": ("brave_api_key", "BRAVE_API_KEY"),
          "tavily": ("tavily_api_key", "TAVILY_API_KEY"), "searxng": ("searxng_url", "SEARXNG_URL")}


def papers_mode(s: Any) -> str:
    """What the run does with search_papers: AGENT_PAPERS (on, off, only), or off when search is (AGENT_SEARCH=0)."""
    return str(s.papers) if s.search else "off"


def check_search(s: Any, setting_name: Callable[[str], str]) -> None:
    """ConfigError when SEARCH_BACKENDS names an unknown backend or one without its key or URL, or when
    search_papers is asked for alone (AGENT_PAPERS=only, research --papers-only) with search off."""
    for name in s.search_backends:
        if name not in SEARCH_BACKEND_NAMES:
            raise ConfigError(f"{setting_name('search_backends')}: unknown backend {name!r} (choose from "
                              f"{', '.join(SEARCH_BACKEND_NAMES)})", "search_backends")
        field, variable = _NEEDS.get(name, ("", ""))
        if field and not getattr(s, field):
            raise ConfigError(f"{setting_name('search_backends')} names {name} but {variable} is not set",
                              "search_backends")
    if s.papers == "only" and not s.search:
        raise ConfigError("--papers-only needs search: AGENT_SEARCH=0 / --no-search turns search_papers off too",
                          "papers")
