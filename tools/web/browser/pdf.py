"""A page printed to PDF by the run's headless Chromium (headless.py's launch: the same executable choice, the
unprivileged user, the guard proxy and the clean-up). The page is given as HTML and set into a fresh context;
nothing is fetched (its own Content-Security-Policy and the proxy refuse any request)."""

from __future__ import annotations

from tools.web.browser.headless import Browser
from tools.web.errors import BlockedURLError, BrowserUnavailableError

PRINT_SECONDS = 60.0
MARGIN = {"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"}


def _refuse(url: str) -> str | None:
    """Every connection and document is refused: a printed report fetches nothing."""
    raise BlockedURLError("a printed report fetches nothing", url)


def _refuse_document(url: str) -> None:
    _refuse(url)


def print_pdf(html: str, executable: str | None = None, user_agent: str = "report-printer") -> bytes:
    """The PDF of the page (A4, backgrounds kept); BrowserUnavailableError when no Chromium or Playwright, any
    other failure as a RuntimeError with its reason."""
    browser = Browser(_refuse, _refuse_document, user_agent=user_agent, max_pages=1, executable=executable,
                      shared=False)

    async def work() -> bytes:
        context, _, password = await browser.new_context(java_script_enabled=False)
        try:
            page = await context.new_page()
            await page.set_content(html, wait_until="load", timeout=PRINT_SECONDS * 1000)
            await page.emulate_media(media="print")
            return bytes(await page.pdf(format="A4", print_background=True, margin=MARGIN))
        finally:
            await browser.close_context(context, password)

    try:
        return browser.run(work, PRINT_SECONDS)
    except BrowserUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - Playwright's own errors: say why, as one line
        raise RuntimeError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from exc
    finally:
        browser.close()
