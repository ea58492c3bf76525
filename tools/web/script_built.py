"""Does a page build its text with JavaScript? Then its HTML alone says little and a browser must render it.

A page is judged script-built when its main text is short and it shows the signs of an app shell: an
empty mount point (React's #root, Vue's #app, Next's #__next, Nuxt, Gatsby, Angular's <app-root>), a
<noscript> asking for JavaScript, or script bundles around a body with next to no text of its own.
"""

from __future__ import annotations

import re

from tools.web.blocked import visible_text

LITTLE_TEXT = 300  # characters of extracted main text below which a page may need rendering
_EMPTY_ROOT = re.compile(
    r"<(div|main|section|body)\b[^>]*\bid=[\"']?(root|app|__next|__nuxt|___gatsby|svelte|application|main|"
    r"react-root|app-root)[\"']?[^>]*>\s*(?:<!--.*?-->\s*)*</\1>|<(app-root|ng-app|my-app)\b[^>]*>\s*</\3>",
    re.I | re.S)
_NOSCRIPT_JS = re.compile(r"<noscript\b[^>]*>(?:(?!</noscript>).){0,2000}?\b(javascript|js)\b", re.I | re.S)
_BUNDLE = re.compile(r"<script\b[^>]*\bsrc=|<script\b[^>]*type=[\"']?module", re.I)


def script_built_reason(html: str, main_text: str) -> str | None:
    """Why the page looks script-built ('an empty #root element, a noscript warning'), or None."""
    if len(main_text.strip()) >= LITTLE_TEXT:
        return None
    signs = []
    root = _EMPTY_ROOT.search(html)
    if root:
        signs.append(f"an empty {'#' + root.group(2) if root.group(2) else '<' + root.group(3) + '>'} element")
    if _NOSCRIPT_JS.search(html):
        signs.append("a noscript warning")
    if _BUNDLE.search(html) and len(visible_text(html)) < LITTLE_TEXT:
        signs.append("script bundles around a body with almost no text")
    return ", ".join(signs) or None
