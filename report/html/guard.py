"""The door of every local server (the --serve live report, `main.py ui`, `serve-mcp --http`): loopback Host, a
per-run token, a strict CSP.

A web page the user visits can point its own domain at 127.0.0.1 (DNS rebinding) and read whatever a local
server answers; so a request is served only when its Host is the loopback address and port the URL printed,
and when it carries the random token from that URL (as Jupyter does: `?token=` once, then a cookie). A server
for programs, not browsers (serve-mcp), takes the token only as `Authorization: Bearer` and answers 401 without
it; another local user, who can connect to any loopback port, gets nothing without it either.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
import unicodedata
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

UNAUTHORIZED, MISDIRECTED, FORBIDDEN = 401, 421, 403
TOKEN_PARAM = "token"


def script_hash(script: str) -> str:
    """The CSP source that lets exactly this inline script run: 'sha256-...'."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(script_hashes: tuple[str, ...] = ()) -> str:
    """Nothing external: scripts, styles, fetches and images from this origin only; no frames, plugins or forms out."""
    scripts = " ".join(("'self'", *script_hashes))
    return (f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; font-src 'self'; frame-src 'none'; object-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


@dataclass(frozen=True)
class Verdict:
    """What to do with a request: serve it (status 0) or refuse it with `status` and a one-line `reason`."""

    status: int = 0
    reason: str = ""
    set_cookie: str | None = None  # a valid ?token= sets the cookie the page's later requests carry

    @property
    def allowed(self) -> bool:
        """True when the request may be served."""
        return self.status == 0


@dataclass(frozen=True)
class Guard:
    """The Host and token rules of one local server on `port`; `token` is random per run unless given."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    extra_hosts: tuple[str, ...] = ()  # tests may add a name; never a public one
    bearer_only: bool = False  # a server for programs: the token only as `Authorization: Bearer`, else 401
    any_host: bool = False  # bound to a network address (serve-mcp --host): reached under names it cannot know

    @property
    def cookie_name(self) -> str:
        """Cookies ignore ports, so two local servers on one machine each get their own cookie."""
        return f"agent_token_{self.port}"

    def hosts(self) -> frozenset[str]:
        """The Host header values this server answers to."""
        names = ("127.0.0.1", "localhost", "[::1]", *self.extra_hosts)
        return frozenset(f"{name}:{self.port}" for name in names)

    def url(self, path: str = "/") -> str:
        """The address to print: loopback, this port, the token."""
        return f"http://127.0.0.1:{self.port}{path}?{TOKEN_PARAM}={self.token}"

    def check(self, host: str | None, query: str, cookie: str | None, authorization: str | None = None,
              origin: str | None = None) -> Verdict:
        """Serve only a loopback Host with this port, and only with the token (query, cookie or header).

        A request another page's script sends names that page in Origin: refused, even from another
        port of 127.0.0.1 (same-site to a browser, so it would carry the cookie). With `bearer_only` there is no
        cookie to carry: only the header counts, and its absence is 401 (the browser cannot add it for a page)."""
        if not self.any_host and (host or "").strip().lower() not in self.hosts():
            return Verdict(MISDIRECTED, "this server answers only to its loopback address")
        if self.bearer_only:
            return Verdict() if self._matches(_bearer(authorization)) else Verdict(
                UNAUTHORIZED, "send the token printed when the server started as `Authorization: Bearer TOKEN`")
        if origin is not None and origin.strip().lower() not in {f"http://{h}" for h in self.hosts()}:
            return Verdict(FORBIDDEN, "requests from other pages are refused")
        given = parse_qs(query).get(TOKEN_PARAM, [""])[0]
        if given and self._matches(given):
            return Verdict(set_cookie=self.cookie_header())
        if any(self._matches(v) for v in _cookie_values(cookie, self.cookie_name)) or self._matches(
                _bearer(authorization)):
            return Verdict()
        return Verdict(FORBIDDEN, "open the address with its token, as printed when the server started")

    def cookie_header(self) -> str:
        """Set-Cookie for the token: not readable by scripts, never sent by another site's page."""
        return f"{self.cookie_name}={self.token}; Path=/; HttpOnly; SameSite=Strict"

    def _matches(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())


def security_headers(csp: str) -> list[tuple[str, str]]:
    """The headers every answer carries, refusals included."""
    return [("Content-Security-Policy", csp), ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"), ("Cache-Control", "no-store")]


def _cookie_values(header: str | None, name: str) -> list[str]:
    """Every value the Cookie header gives `name`. Read by hand: any app on 127.0.0.1 may set cookies this
    server receives (cookies ignore ports), and one that SimpleCookie cannot parse made it drop all the rest."""
    values = []
    for part in (header or "").split(";"):
        key, sep, value = part.partition("=")
        if sep and key.strip() == name:
            values.append(value.strip().strip('"'))
    return values


def loopback_url(url: str) -> bool:
    """True for an address on this machine (127.0.0.0/8 in any spelling a browser accepts, ::1, localhost,
    0.0.0.0): a page served here shows such a source as text, not a link, because the browser would send the
    token's cookie along to whatever listens on that port (cookies ignore ports)."""
    try:  # as a browser reads the host: percent-decoded, full-width forms and other dots folded (IDNA)
        host = unicodedata.normalize("NFKC", unquote(urlsplit(url.strip()).hostname or ""))
    except ValueError:
        return True  # not a URL a browser would open as one: no link either
    host = re.sub("[\u3002\uff0e\uff61]", ".", host).rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:  # 127.1, 0x7f000001, 2130706433: legacy IPv4 spellings browsers still resolve to 127.0.0.1
            address = ipaddress.ip_address(socket.inet_aton(host))
        except OSError:
            return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or address.is_unspecified or bool(mapped and mapped.is_loopback)


def _bearer(header: str | None) -> str:
    """`Authorization: token X` (Jupyter's form) or `Bearer X`."""
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() in ("token", "bearer") else ""
