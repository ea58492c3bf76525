"""Which settings hold secrets: keys, tokens and headers by their field names, and credentials inside URLs.

One answer for every place that must keep them out of something: the outbound guard (tools/secrets_guard.py),
the run store's settings.json (run/store.py), the settings a Ray cluster sees (run/ray_node.py), the
spans (telemetry/attributes.py), and `SecretRedactor`, which takes their values out of what a tool read
(agent.py's observations, the document index) and of provider errors (llm.py, check_setup.py). It reads any
dataclass, so it needs nothing above core. A field may hold one value (a string) or several, as
(VARIABLE, value) pairs (the other providers' keys and base URLs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar
from urllib.parse import unquote_plus, urlsplit

SECRET_WORDS = ("key", "token", "secret", "password", "header", "auth")  # openai_api_key, otel_headers
MIN_SECRET_CHARS = 8  # shorter values would match ordinary words; real keys are far longer
TOKEN_CHARS = 16  # a word of a header value this long is taken for its token (shorter ones are ordinary words)
# The public starts of key formats: a key written without its prefix is still the key.
PUBLIC_PREFIXES = ("sk-ant-api03-", "sk-ant-", "sk-proj-", "sk-svcacct-", "sk-or-v1-", "sk-", "gsk_", "xai-", "AIza",
                   "hf_", "ghp_", "github_pat_", "glpat-", "pplx-", "r8_", "nvapi-")


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


def header_values(headers: str | None) -> list[str]:
    """The values of a headers string such as OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2), and each word of them."""
    values: list[str] = []
    for item in (headers or "").split(","):
        _, _, value = item.partition("=")
        value = unquote_plus(value.strip())
        values += [value, *value.split()]  # "Basic abc...": the credential alone too
    return values


def named_secrets(settings: Any) -> dict[str, str]:
    """Every secret value of the settings (MIN_SECRET_CHARS or longer) -> the name it is set by: the keys and
    tokens, credentials in URLs, the values of header settings and their token-long words (`Bearer TOKEN`)."""
    found = {value: name for name, value in secret_items(settings)}
    for name, parts in url_credentials(settings).items():
        found.update(dict.fromkeys(parts, f"{name.upper()} credentials"))
    for f in fields(settings):
        value = getattr(settings, f.name)
        if f.name.endswith("headers") and isinstance(value, str):
            words = [w for w in header_values(value) if " " in w or len(w) >= TOKEN_CHARS]
            found.update(dict.fromkeys(words, f.name.upper()))
    return {v: k for v, k in found.items() if len(v) >= MIN_SECRET_CHARS}


def without_prefix(secret: str) -> str:
    """A key without its public start (`sk-proj-`, `AIza` ...), when enough of it is left to be told apart."""
    prefix = next((p for p in PUBLIC_PREFIXES if secret.lower().startswith(p.lower())), "")
    rest = secret[len(prefix):]
    return rest if len(rest) >= MIN_SECRET_CHARS else secret


E = TypeVar("E", bound=BaseException)


class SecretRedactor:
    """Replaces the value of every configured secret in a text by `[redacted NAME]`, in any letter case, whole or
    without its public prefix: what a tool read (a document, a page) and what a provider's error echoed."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        forms = {form.lower(): name for value, name in secrets.items() for form in (value, without_prefix(value))}
        self._names = forms
        ordered = sorted(forms, key=len, reverse=True)  # the whole key before the same key without its prefix
        self._pattern = re.compile("|".join(map(re.escape, ordered)), re.IGNORECASE) if ordered else None

    @classmethod
    def of(cls, settings: Any) -> SecretRedactor:
        """The redactor of the settings' secrets."""
        return cls(named_secrets(settings))

    def __call__(self, text: str) -> str:
        """The text with every secret replaced."""
        if self._pattern is None or not text:
            return text
        lowered = text.lower()
        if not any(form in lowered for form in self._names):  # substring search first: ~20x faster than the regex
            return text
        return self._pattern.sub(lambda m: f"[redacted {self._names[m.group().lower()]}]", text)

    def error(self, exc: E) -> E:
        """The same exception with its message and its text attributes (a body's description) redacted."""
        if self._pattern is not None:
            exc.args = tuple(self(a) if isinstance(a, str) else a for a in exc.args)
            for name, value in list(vars(exc).items()):
                if isinstance(value, str):
                    setattr(exc, name, self(value))
        return exc
