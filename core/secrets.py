"""Which settings hold secrets: keys, tokens and headers by their field names, and credentials inside URLs.

One answer for every place that must keep them out of something: the outbound guard (tools/secrets_guard.py),
the run store's settings.json (run/store.py), the settings a Ray cluster sees (run/ray_node.py) and the
spans (telemetry/attributes.py). It reads any dataclass, so it needs nothing above core. A field may hold
one value (a string) or several, as (VARIABLE, value) pairs (the other providers' keys and base URLs).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any
from urllib.parse import unquote_plus, urlsplit

SECRET_WORDS = ("key", "token", "secret", "password", "header", "auth")  # openai_api_key, otel_headers


def secret_fields(settings: Any) -> tuple[str, ...]:
    """The string (or string pairs) fields whose name says they hold a secret (a dataclass or its class)."""
    return tuple(f.name for f in fields(settings)
                 if any(word in f.name for word in SECRET_WORDS) and "str" in str(f.type))


def named_values(settings: Any, name: str) -> list[tuple[str, str]]:
    """A field's values with the name each is set by: (FIELD, value) for a string, (VARIABLE, value) for pairs."""
    value = getattr(settings, name)
    if isinstance(value, str):
        return [(name.upper(), value)] if value else []
    if isinstance(value, tuple):
        return [(str(k), str(v)) for k, v in (p for p in value if isinstance(p, tuple) and len(p) == 2) if v]
    return []


def secret_items(settings: Any) -> list[tuple[str, str]]:
    """Every secret the settings hold, with the name it is set by (never the other way round in a message)."""
    return [item for name in secret_fields(settings) for item in named_values(settings, name)]


def is_url_field(name: str) -> bool:
    """A field that holds a URL (base URLs, the OTLP endpoints) or URLs (provider_urls), which may carry
    user:password@."""
    return name.endswith(("_url", "_urls", "endpoint"))


def url_credentials(settings: Any) -> dict[str, list[str]]:
    """The URL fields whose value carries a user name or password, with those parts (percent-decoded)."""
    found: dict[str, list[str]] = {}
    for f in fields(settings):
        if not is_url_field(f.name):
            continue
        for _, value in named_values(settings, f.name):
            try:
                parts = urlsplit(value)
                credentials = [unquote_plus(p) for p in (parts.password, parts.username) if p]
            except ValueError:
                continue
            if credentials:
                found.setdefault(f.name, []).extend(credentials)
    return found
