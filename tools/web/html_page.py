"""An HTML page as scrape's text: blocked pages named, script-built pages rendered in the run's browser.

The fetched HTML goes through the usual extraction first. A challenge, CAPTCHA, login or paywall page is
refused (BlockedPageError: "blocked: <kind>; try another source"). A page whose main text is short and
that looks script-built (or any page when the model asks with `render: true`) is opened in headless
Chromium and its rendered DOM goes through the same extraction. Where no browser can run, the static text
comes back with a note saying so and how to enable rendering.
"""

from __future__ import annotations

from tools.documents.confined import DocLimits, page_reading
from tools.web.blocked import blocked_kind
from tools.web.browser.headless import RenderedPage
from tools.web.errors import (
    BlockedPageError,
    BrowserUnavailableError,
    DomainRefusedError,
    FetchError,
    HTTPStatusError,
    RenderError,
    RobotsRefusedError,
    SourceNotReadError,
)
from tools.web.fetch import FetchResult
from tools.web.script_built import script_built_reason
from tools.web.session import WebSession

NO_TEXT = "(no readable text found on this page)"


class RenderRefusedError(ValueError):
    """`render: true` was asked for and the page could not be rendered; the message says why."""


def html_text(result: FetchResult, html: str, lines: list[str], web: WebSession, force: bool, text: str) -> str:
    """The main text of a fetched HTML page, rendered first when it needs a browser; header lines go to `lines`.

    `text` is the page's main text as tools.documents.confined.page_reading read it (in the converter's child);
    a rendered page is read there too. ConversionError when a page meets a limit of its reading."""
    kind = blocked_kind(result.status, result.headers, html)
    if kind:
        raise BlockedPageError(kind, result.url, result.status)
    reason = "asked for with render: true" if force else script_built_reason(html, text)
    if reason is None:
        return text or NO_TEXT
    return _rendered_text(result, text, lines, web, reason, force)


def refusal_of(exc: FetchError, url: str) -> SourceNotReadError | None:
    """The not-read error for a robots.txt or domain refusal, or an error status whose body is a blocked page."""
    if isinstance(exc, RobotsRefusedError):
        return SourceNotReadError(f"could not scrape {url}: {exc}", kind="robots.txt", url=exc.url)
    if isinstance(exc, DomainRefusedError):
        return SourceNotReadError(f"could not scrape {url}: {exc}", kind="domain rules", url=exc.url)
    if isinstance(exc, HTTPStatusError):
        kind = blocked_kind(exc.status, exc.headers, exc.body.decode("utf-8", errors="replace"))
        return BlockedPageError(kind, exc.url, exc.status) if kind else None
    return None


def _rendered_text(result: FetchResult, text: str, lines: list[str], web: WebSession, reason: str,
                   force: bool) -> str:
    why_not = _why_not_render(web)
    if why_not is None:
        try:
            page = web.render(result.url)
        except BrowserUnavailableError as exc:
            why_not = f"rendering is unavailable: {exc}"
        except RenderError as exc:
            why_not = f"the browser failed: {exc}"
    if why_not is not None:
        if force:
            raise RenderRefusedError(why_not)
        lines.append(f"Note: the page looks script-built ({reason}) but was not rendered: {why_not}. The text "
                     "below is what its HTML holds without JavaScript.")
        return text or NO_TEXT
    kind = blocked_kind(page.status or 200, {}, page.html)
    if kind:
        raise BlockedPageError(kind, page.url, page.status)
    if page.title:
        lines[0] = f"Title: {page.title}"
    lines.extend(_render_notes(page, result.url, reason))
    return page_reading(page.html, page.url, DocLimits.of(web.settings))[1] or NO_TEXT + " (even after rendering it)"


def _render_notes(page: RenderedPage, fetched: str, reason: str) -> list[str]:
    """The header lines that say the page was rendered, what the guards refused and where it ended up."""
    note = f"Rendered in a headless browser ({reason})"
    if page.refused:
        note += (f"; the address policy and domain rules refused {len(page.refused)} of the page's connections ("
                 + ", ".join(sorted(page.refused)[:5]) + ")")
    notes = [note]
    if page.url != fetched:
        notes.append(f"(the page moved to {page.url} while rendering)")
    if page.truncated:
        notes.append("(the rendered page was cut at SCRAPE_MAX_BYTES)")
    return notes


def _why_not_render(web: WebSession) -> str | None:
    if web.settings.render == "off":
        return "rendering is off (SCRAPE_RENDER=off)"
    if web.settings.cache_replay:
        return "--replay never opens a browser (it would reach the network)"
    return None
