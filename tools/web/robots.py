"""robots.txt (RFC 9309) for the agent's user agent: fetched once per site per run, through scrape's guards.

Parsed with protego, the maintained RFC 9309 parser. A robots.txt that is missing or answers 4xx allows
everything (RFC 9309 2.3.1.3). One that cannot be reached (5xx, a network error, a timeout) also allows,
with a note in the observation: the RFC's "assume complete disallow" would make one flaky server stop
research, so this follows the common crawler choice and says so instead of hiding it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tools.web.errors import FetchError, HTTPStatusError, RobotsRefusedError

ROBOTS_MAX_BYTES = 512_000  # RFC 9309 2.5: parse at least the first 500 KiB
ROBOTS_TIMEOUT = 5.0


@dataclass
class _Rules:
    parser: Any = None  # a protego.Protego, or None: everything allowed
    note: str | None = None  # why everything is allowed, when robots.txt could not be read


def product_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: 'react-research-agent' of its User-Agent."""
    for word in user_agent.replace(";", " ").replace("(", " ").replace(")", " ").split():
        name = word.split("/", 1)[0]
        if "/" in word and name.lower() not in ("mozilla", "compatible") and name:
            return name
    words = user_agent.split()
    return words[0].split("/", 1)[0] if words else "*"


class RobotsRules:
    """robots.txt of every site the run visits, cached per origin (scheme, host and port)."""

    def __init__(self, fetch: Callable[[str], Any], user_agent: str) -> None:
        self.fetch = fetch  # GET a robots.txt URL: a SafeFetcher's get (short timeout, no robots check)
        self.agent = product_token(user_agent)
        self._rules: dict[str, _Rules] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def check(self, url: str) -> str | None:
        """RobotsRefusedError when robots.txt disallows url; else a note when robots.txt could not be read."""
        site = origin(url)
        if site is None:
            return None
        rules = self._rules_for(site)
        if rules.parser is not None and not rules.parser.can_fetch(url, self.agent):
            raise RobotsRefusedError(
                f"{site}/robots.txt disallows this URL for {self.agent}; refused (the site asks crawlers "
                "not to fetch it: try another source, or run with --ignore-robots if you may)", url)
        return rules.note

    def _rules_for(self, origin: str) -> _Rules:
        with self._lock:
            lock = self._locks.setdefault(origin, threading.Lock())
        with lock:  # one fetch per site even when many tasks ask at once
            if origin not in self._rules:
                self._rules[origin] = self._load(origin)
            return self._rules[origin]

    def _load(self, origin: str) -> _Rules:
        from protego import Protego  # imported when first used, like the other parsers

        url = origin + "/robots.txt"
        try:
            result = self.fetch(url)
        except HTTPStatusError as exc:
            if 400 <= exc.status < 500:
                return _Rules()
            return _Rules(note=f"Note: {url} could not be read (HTTP {exc.status}); treated as allowing")
        except FetchError as exc:
            return _Rules(note=f"Note: {url} could not be read ({exc}); treated as allowing")
        body = result.body[:ROBOTS_MAX_BYTES].decode("utf-8", errors="replace")
        return _Rules(parser=Protego.parse(body))


def origin(url: str) -> str | None:
    """scheme://host[:port] of an http(s) URL (the port only when it is not the scheme's), else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")
