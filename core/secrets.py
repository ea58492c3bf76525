"""Which settings hold secrets: keys, tokens and headers by their field names, and credentials inside URLs.

One answer for every place that must keep them out of something: the outbound guard (tools/secrets_guard.py),
the run store's settings.json (run/store.py), the settings a Ray cluster sees (run/ray_node.py) and the
spans (telemetry/attributes.py). It reads any dataclass, so it needs nothing above core.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any
from urllib.parse import unquote_plus, urlsplit

SECRET_WORDS = ("key", "token", "secret", "password", "header", "auth")  # openai_api_key, otel_headers


def secret_fields(settings: Any) -> tuple[str, ...]:
    """The string fields whose name says they hold a secret (a dataclass or its class)."""
    return tuple(f.name for f in fields(settings)
                 if any(word in f.name for word in SECRET_WORDS) and "str" in str(f.type))


def is_url_field(name: str) -> bool:
    """A field that holds a URL (base URLs, the OTLP endpoints), which may carry user:password@."""
    return name.endswith(("_url", "endpoint"))


def url_credentials(settings: Any) -> dict[str, list[str]]:
    """The URL fields whose value carries a user name or password, with those parts (percent-decoded)."""
    found: dict[str, list[str]] = {}
    for f in fields(settings):
        value = getattr(settings, f.name)
        if is_url_field(f.name) and isinstance(value, str) and value:
            parts = urlsplit(value)
            if credentials := [unquote_plus(p) for p in (parts.password, parts.username) if p]:
                found[f.name] = credentials
    return found
