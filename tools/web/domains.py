"""Domain rules for research: --allow-domains and --block-domains, each domain matching itself and its subdomains."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tools.web.errors import DomainRefusedError


def normalise_domain(entry: str) -> str:
    """'https://www.Example.org/x' or '*.example.org.' -> 'www.example.org' / 'example.org' (lower-case, IDNA)."""
    text = entry.strip().lower()
    if "://" in text:
        text = urlsplit(text).hostname or ""
    text = text.split("/", 1)[0].removeprefix("*.").removeprefix(".").rstrip(".")
    try:
        return text.encode("idna").decode("ascii") if text else ""
    except UnicodeError:
        return text


@dataclass(frozen=True)
class DomainRules:
    """Which hosts may be reached: none blocked and, when an allow list is given, only those on it."""

    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()

    @classmethod
    def of(cls, allow: Iterable[str] = (), block: Iterable[str] = ()) -> DomainRules:
        """Rules from raw entries (URLs, `*.x` and upper case are accepted)."""
        return cls(tuple(d for d in map(normalise_domain, allow) if d),
                   tuple(d for d in map(normalise_domain, block) if d))

    @property
    def active(self) -> bool:
        """True when either list is set."""
        return bool(self.allow or self.block)

    def refusal(self, host: str) -> str | None:
        """Why host may not be reached, or None when it may."""
        name = normalise_domain(host)
        blocked = next((d for d in self.block if _within(name, d)), None)
        if blocked:
            return f"{name} is in the blocked domains ({blocked}; --block-domains / AGENT_BLOCK_DOMAINS)"
        if self.allow and not any(_within(name, d) for d in self.allow):
            return (f"{name} is outside the allowed domains ({', '.join(self.allow)}; --allow-domains / "
                    "AGENT_ALLOW_DOMAINS)")
        return None

    def check(self, url: str) -> None:
        """DomainRefusedError when the URL's host may not be reached."""
        host = urlsplit(url).hostname or ""
        reason = self.refusal(host)
        if reason:
            raise DomainRefusedError(f"{reason}; refused", url)

    def filter_results(self, text: str) -> str:
        """Search results (the search tool's text) without those whose URL the rules refuse, renumbered."""
        if not self.active or text.startswith(("Error:", "No results")):
            return text
        kept: list[str] = []
        dropped = number = 0
        for block in text.split("\n\n"):
            link = _LINK.search(block)
            if link and not self.allows_url(link.group(1) or link.group(2)):
                dropped += 1
                continue
            if _NUMBERED.match(block):
                number += 1
                block = _NUMBERED.sub(f"{number}. ", block, count=1)
            kept.append(block)
        if not dropped:
            return text
        if not any(_LINK.search(b) for b in kept):
            return (f"No results within the domain rules: all {dropped} result(s) were on other sites. Try a "
                    f"query that names an allowed site ({', '.join(self.allow) or 'any site not blocked'}).")
        return "\n\n".join(kept + [f"({dropped} result(s) outside the domain rules were left out.)"])

    def allows_url(self, url: str) -> bool:
        """True when the URL's host may be reached (a URL without a host is refused when rules are set)."""
        if not self.active:
            return True
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return False
        return bool(host) and self.refusal(host or "") is None


_LINK = re.compile(r"^\s*URL: (\S+)|\(source: (\S+)\)", re.M)
_NUMBERED = re.compile(r"^\d+\. ")


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)
