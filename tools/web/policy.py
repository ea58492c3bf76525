"""Which URLs the agent may reach: http(s) only, hosts inside the domain rules, public addresses only.

One policy serves scrape's fetcher (every redirect hop) and the headless browser's guard proxy (every
connection the page opens), so both refuse the same things with the same words. A host name is resolved
and every address it has must be public; the caller connects to the address that was checked, so a
second, different DNS answer cannot slip through (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

from tools.web.addresses import METADATA_HOSTS, is_metadata_address, is_public_address
from tools.web.domains import DomainRules
from tools.web.errors import BlockedURLError, FetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
AddressCheck = Callable[[IPAddress], bool]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver returns for host:port."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class UrlPolicy:
    """Scheme, domain rules and address checks of one run (SCRAPE_ALLOW_PRIVATE_URLS lifts the last, but for
    cloud metadata addresses, which stay refused)."""

    def __init__(self, allow_private: bool = False, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None, domains: DomainRules | None = None) -> None:
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver
        self.address_check = address_check or is_public_address
        self.domains = domains or DomainRules()

    def check(self, url: str) -> str | None:
        """Refuse a URL with a bad scheme, a refused domain or a non-public host; returns the address to use."""
        parts = split_url(url)
        if parts.scheme not in ("http", "https"):
            got = f"scheme {parts.scheme!r} refused" if parts.scheme else "the URL has no scheme"
            raise BlockedURLError(f"only http:// and https:// URLs can be fetched ({got})", url)
        host = parts.hostname
        if not host:
            raise BlockedURLError("the URL has no host name", url)
        self.domains.check(url)
        if host.lower().rstrip(".") in METADATA_HOSTS:
            raise BlockedURLError(f"{host} is a cloud metadata service; always refused", url)
        literal = ip_or_none(host)
        addresses = [host] if literal else self._resolve(host, parts.port, parts.scheme, url)
        for text in addresses:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
            where = f"{ip} is" if literal else f"{host} resolves to {ip},"
            if not self.allow_private and not self.address_check(ip):
                raise BlockedURLError(
                    f"{where} a private/loopback/link-local or otherwise non-public address; refused "
                    "(set SCRAPE_ALLOW_PRIVATE_URLS=1 to allow intranet URLs)", url)
            if is_metadata_address(ip):
                raise BlockedURLError(f"{where} a cloud metadata address; always refused, even with "
                                      "SCRAPE_ALLOW_PRIVATE_URLS=1", url)
        return addresses[0].split("%", 1)[0]

    def _resolve(self, host: str, port: int | None, scheme: str, url: str) -> list[str]:
        try:
            addresses = self.resolver(host, port or (443 if scheme == "https" else 80))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchError(f"could not resolve host {host!r}: {exc}", url) from exc
        if not addresses:
            raise FetchError(f"host {host!r} has no addresses", url)
        return addresses


def split_url(url: str) -> SplitResult:
    """urlsplit, with the port parsed; a malformed URL is a BlockedURLError the model can read."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise BlockedURLError(f"the URL is malformed ({exc})", url) from exc
    return parts


def ip_or_none(host: str) -> IPAddress | None:
    """The host as an IP address, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
