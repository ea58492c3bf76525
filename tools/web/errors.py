"""The errors of tools/web, at the bottom of the package: every module here may raise and catch them.

Two families. FetchError and its kin say why a URL could not be fetched; scrape turns them into an
`Error: could not scrape ...` observation. SourceNotReadError (a ToolError) says that a source was reached
but must not be read: a challenge, CAPTCHA, login or paywall page (BlockedPageError), a robots.txt
refusal or a host outside the domain rules. Each carries `kind` and `url`, so that whoever keeps the
task's sources can record the page as not read, with the reason.
"""

from __future__ import annotations

from core.errors import ToolError


class FetchError(Exception):
    """A URL could not be fetched; the message is written for the model."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class BlockedURLError(FetchError):
    """The URL (or a redirect hop) has a refused scheme or resolves to a non-public address."""


class DomainRefusedError(BlockedURLError):
    """The host is outside --allow-domains or inside --block-domains."""


class RobotsRefusedError(BlockedURLError):
    """The site's robots.txt disallows the URL for the agent's user agent."""


class HTTPStatusError(FetchError):
    """The server answered with an error status; `body` holds the start of its error page, if any."""

    def __init__(self, message: str, url: str, status: int, body: bytes = b"",
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message, url)
        self.status = status
        self.body = body
        self.headers = headers or {}


class RenderError(FetchError):
    """The headless browser could not render the page (a timeout, a crash, a refused navigation)."""


class BrowserUnavailableError(RenderError):
    """No headless browser can be used here; the message says how to enable one."""


class SourceNotReadError(ToolError):
    """A source was reached but not read; `kind` names why ('robots.txt', 'domain rules', or a blocked kind)."""

    def __init__(self, message: str, *, kind: str, url: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.url = url


class BlockedPageError(SourceNotReadError):
    """The page is a challenge, CAPTCHA, login or paywall page, not the content asked for."""

    def __init__(self, kind: str, url: str, status: int | None = None) -> None:
        answered = f"HTTP {status}" if status else "a page"
        super().__init__(f"blocked: {kind}; try another source ({url} answered {answered} that is a {kind} "
                         "page, not its content)", kind=kind, url=url)
        self.status = status
