"""Which settings hold secrets: keys, tokens and headers by their field names, and credentials inside URLs.

One answer for every place that must keep them out of something: the outbound guard (tools/secrets_guard.py),
the run store's settings.json (run/store.py), the settings a Ray cluster sees (run/ray_node.py), the
spans (telemetry/attributes.py), and `SecretRedactor`, which takes their values out of what a tool read
(agent.py's observations, the document index) and of provider errors (llm.py, check_setup.py). It reads any
dataclass, so it needs nothing above core. A field may hold one value (a string) or several, as
(VARIABLE, value) pairs (the other providers' keys and base URLs).
"""

from __future__ import annotations

import base64
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import fields
from operator import methodcaller
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


# What may sit inside a key without showing: zero-width characters, the soft hyphen, and a line break with the
# indentation around it (a wrapped line); and a percent-escape, read as the character it stands for.
_HIDDEN = "\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff"
_HIDDEN_CHAR = re.compile(f"[{_HIDDEN}]")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_INVISIBLE = re.compile(rf"\r?\n[ \t]*|[ \t]+(?=\r?\n)|[{_HIDDEN}]|%[0-9A-Fa-f]{{2}}")
_STRIP_LINE = methodcaller("strip", " \t\r")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")


def base64_cores(secret: str) -> set[str]:
    """The part of the secret's base64 (standard and URL-safe) that is the same at each alignment inside a
    longer encoded text (the first and last characters also depend on the bytes around it)."""
    raw, forms = secret.encode(), set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        core = encoded[(pad * 4 + 2) // 3: len(encoded) - 2]
        if len(core) >= MIN_SECRET_CHARS:
            forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


def _unhidden(text: str) -> str:
    """The text without hidden characters and with percent-escapes decoded (line wraps stay): the quick test's
    reading, in plain string operations."""
    if any(c in text for c in _HIDDEN):
        text = _HIDDEN_CHAR.sub("", text)
    return _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text) if "%" in text else text


def _unwrapped(text: str) -> str:
    """The text with its line breaks and the spaces and tabs around them gone (as _Seen reads it)."""
    return "".join(map(_STRIP_LINE, text.split("\n"))) if "\n" in text else text


class _Seen:
    """A text as a reader takes it in (hidden characters and line wraps gone, percent-escapes decoded), with
    where each of its pieces starts in the text and how wide its characters are there (3 for an escape)."""

    def __init__(self, text: str) -> None:
        pieces: list[str] = []
        self.starts: list[int] = []  # where each piece starts in the seen text
        self.origins: list[int] = []  # ... and in the text
        self.widths: list[int] = []
        pos = size = 0
        for m in _INVISIBLE.finditer(text):
            if m.start() > pos:
                self._piece(pieces, text[pos:m.start()], size, pos, 1)
                size += m.start() - pos
            if m.group().startswith("%"):
                self._piece(pieces, chr(int(m.group()[1:], 16)), size, m.start(), 3)
                size += 1
            pos = m.end()
        if pos < len(text):
            self._piece(pieces, text[pos:], size, pos, 1)
        self.text = "".join(pieces)

    def _piece(self, pieces: list[str], piece: str, start: int, origin: int, width: int) -> None:
        pieces.append(piece)
        self.starts.append(start)
        self.origins.append(origin)
        self.widths.append(width)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Where the seen text's [start, end) is in the text."""
        first, last = bisect_right(self.starts, start) - 1, bisect_right(self.starts, end - 1) - 1
        return (self.origins[first] + (start - self.starts[first]) * self.widths[first],
                self.origins[last] + (end - 1 - self.starts[last] + 1) * self.widths[last])


def _finds(text: str, form: str) -> list[tuple[int, int]]:
    """Every place of form in text."""
    found, at = [], text.find(form)
    while at >= 0:
        found.append((at, at + len(form)))
        at = text.find(form, at + len(form))
    return found


def _whole_run(text: str, start: int, end: int) -> tuple[int, int]:
    """The base64 run around [start, end) (its `=` padding too)."""
    while start > 0 and text[start - 1] in _BASE64_CHARS:
        start -= 1
    while end < len(text) and text[end] in _BASE64_CHARS:
        end += 1
    while end < len(text) and text[end] == "=":
        end += 1
    return start, end


class SecretRedactor:
    """Replaces the value of every configured secret in a text by `[redacted NAME]`: in any letter case, whole or
    without its public prefix, wrapped over lines, with zero-width characters or soft hyphens inside,
    percent-encoded, or as its base64 (the whole encoded run goes): what a tool read (a document, a page), a
    file's name, and what a provider's error echoed. A text with no key in any of these forms costs a few
    passes of plain string operations; the positions are worked out only for a text that holds one."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        forms = {form.lower(): name for value, name in secrets.items() for form in (value, without_prefix(value))}
        # the whole key before the same key without its prefix
        self._names = dict(sorted(forms.items(), key=lambda item: len(item[0]), reverse=True))
        # A key holds its rest, and its base64 holds its rest's base64 at one of the three alignments: what is
        # tested for is the rest (a few substring tests per key), what is replaced is the longest form.
        self._tests = {without_prefix(value).lower() for value in secrets}
        self._cores = {core: name for value, name in secrets.items() for core in base64_cores(without_prefix(value))}

    @classmethod
    def of(cls, settings: Any) -> SecretRedactor:
        """The redactor of the settings' secrets."""
        return cls(named_secrets(settings))

    def __call__(self, text: str) -> str:
        """The text with every secret replaced."""
        if not self._names or not text:
            return text
        joined = _unwrapped(_unhidden(text))
        lowered = joined.lower()
        plain = any(form in lowered for form in self._tests)  # substring search first: the common case
        encoded = [core for core in self._cores if core in joined]
        if not plain and not encoded:
            return text
        return self._replace(text, self._places(_Seen(text), plain, encoded))

    def _places(self, seen: _Seen, plain: bool, encoded: list[str]) -> list[tuple[int, int, str]]:
        """Where each secret found is in the text, with its name; longer forms first, no two overlapping."""
        lowered = seen.text.lower()
        found = [(s, e, name) for f, name in self._names.items() if plain for s, e in _finds(lowered, f)]
        found += [(*_whole_run(seen.text, s, e), self._cores[c]) for c in encoded for s, e in _finds(seen.text, c)]
        found = [(*seen.span(s, e), name) for s, e, name in found]
        places: list[tuple[int, int, str]] = []
        for start, end, name in sorted(found, key=lambda p: (p[0], -p[1])):
            if places and start < places[-1][1]:
                if end > places[-1][1]:
                    places[-1] = (places[-1][0], end, places[-1][2])
                continue
            places.append((start, end, name))
        return places

    @staticmethod
    def _replace(text: str, places: list[tuple[int, int, str]]) -> str:
        parts, last = [], 0
        for start, end, name in places:
            parts += [text[last:start], f"[redacted {name}]"]
            last = end
        return "".join(parts) + text[last:]

    def error(self, exc: E) -> E:
        """The same exception with its message and its text attributes (a body's description) redacted."""
        if self._names:
            exc.args = tuple(self(a) if isinstance(a, str) else a for a in exc.args)
            for name, value in list(vars(exc).items()):
                if isinstance(value, str):
                    setattr(exc, name, self(value))
        return exc
