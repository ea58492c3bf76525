"""Is this page a challenge, CAPTCHA, login or paywall page rather than the content asked for?

The markers are the ones the services themselves publish or serve:
- Cloudflare: the `cf-mitigated: challenge` response header (developers.cloudflare.com, "Detect a
  Challenge Page response"); its challenge page's `window._cf_chl_opt`, `/cdn-cgi/challenge-platform/`,
  title "Just a moment..." and noscript "Enable JavaScript and cookies to continue"; the older
  "Checking your browser before accessing" and "Attention Required! | Cloudflare" block page.
- hCaptcha and reCAPTCHA: their widget scripts (js.hcaptcha.com, google.com/recaptcha) and the
  `h-captcha` / `g-recaptcha` elements of their documented embeds; DataDome's captcha-delivery.com,
  PerimeterX's px-captcha.
- Akamai's "Access Denied ... You don't have permission to access ... Reference #18...".
- Paywalls: schema.org `"isAccessibleForFree": false` (Google's paywalled-content structured data).
A page whose own text is long is content even when a weak marker appears (an article about CAPTCHAs,
a comment form with reCAPTCHA, a paywalled article whose text is served anyway); the strong markers
(Cloudflare's header and `_cf_chl_opt`) and error statuses name a page blocked whatever its length.
"""

from __future__ import annotations

import html as html_lib
import re

SHORT_TEXT = 600  # characters of visible text: less than this and a weak marker makes it a blocked page
_HEAD = 300_000  # characters of the page that are searched

_STRONG = (("Cloudflare challenge", re.compile(r"window\._cf_chl_opt|__cf_chl_(?:jschl|captcha)_tk__")),)
_WEAK: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Cloudflare challenge", re.compile(
        r"<title>\s*just a moment\.\.\.\s*</title>|enable javascript and cookies to continue|"
        r"/cdn-cgi/challenge-platform/h/|cf-browser-verification|checking your browser before accessing|"
        r"challenges\.cloudflare\.com/turnstile", re.I)),
    ("Cloudflare block", re.compile(r"<title>\s*attention required! \| cloudflare|sorry, you have been blocked",
                                    re.I)),
    ("CAPTCHA (hCaptcha)", re.compile(r"js\.hcaptcha\.com/1/api\.js|class=[\"'][^\"']*\bh-captcha\b", re.I)),
    ("CAPTCHA (reCAPTCHA)", re.compile(
        r"(?:google|recaptcha)\.(?:com|net)/recaptcha/|class=[\"'][^\"']*\bg-recaptcha\b", re.I)),
    ("CAPTCHA (DataDome)", re.compile(r"captcha-delivery\.com", re.I)),
    ("CAPTCHA (PerimeterX)", re.compile(r"px-captcha|perimeterx", re.I)),
    ("bot check", re.compile(r"verify (?:that )?you are (?:a )?human|are you a robot|unusual traffic from your "
                             r"computer network|pardon our interruption", re.I)),
    ("access denied", re.compile(r"<title>\s*access denied\s*</title>|you don't have permission to access .{0,300}"
                                 r"on this server", re.I | re.S)),
    ("paywall", re.compile(r"[\"']isAccessibleForFree[\"']\s*:\s*(?:false|[\"']false[\"'])|"
                           r"subscribe to (?:continue|keep) reading|to continue reading,? (?:subscribe|sign in|log in)",
                           re.I)),
)
_LOGIN_TITLE = re.compile(r"<title>[^<]{0,80}\b(?:sign in|log ?in|sign-in|login required)\b", re.I)
_PASSWORD = re.compile(r"<input[^>]+type=[\"']?password", re.I)
_BLOCK_STATUSES = (401, 403, 429, 503)


def blocked_kind(status: int, headers: dict[str, str], html: str) -> str | None:
    """The kind of blocked page this is ('Cloudflare challenge', 'CAPTCHA (hCaptcha)', 'paywall', ...) or None."""
    if headers.get("cf-mitigated", "").strip().lower() == "challenge":
        return "Cloudflare challenge"
    head = html[:_HEAD]
    for kind, pattern in _STRONG:
        if pattern.search(head):
            return kind
    short = status in _BLOCK_STATUSES or len(visible_text(head)) < SHORT_TEXT
    if not short:
        return None
    for kind, pattern in _WEAK:
        if pattern.search(head):
            return kind
    if _PASSWORD.search(head) and (_LOGIN_TITLE.search(head) or status == 401):
        return "login wall"
    return None


_INVISIBLE = re.compile(r"<(script|style|noscript|template|svg|head)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")


def visible_text(html: str) -> str:
    """The page's text without tags, scripts, styles and the head: a cheap measure of how much it says."""
    text = _TAG.sub(" ", _INVISIBLE.sub(" ", html))
    return " ".join(html_lib.unescape(text).split())
