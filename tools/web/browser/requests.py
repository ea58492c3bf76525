"""What a task's pages may send: every request of the browser tool's pages is judged here, hop by hop.

Playwright's routing sees the first request of a chain only: Chromium follows a redirect itself, and a
307 or 308 re-sends the body to wherever it points. So a request that carries a body (a POST, PUT, PATCH
or DELETE, or any request with data) is sent by the agent, not by Chromium: route.fetch() with no
redirect followed, through the same guard proxy as every other connection; each redirect is judged
before it is followed. A hop that keeps the body (307, 308; 301 and 302 for anything but POST) to another
origin than the page's is refused as the direct request would be, and a top-level navigation's hop is
checked with robots.txt too. A hop that drops the body (303; 301 and 302 of a POST) is handed back to
Chromium as the redirect it is, and Chromium follows it as a GET, which the guard proxy checks like any
other connection. What is refused is said in words the model reads (`note`). No setting lifts the rule:
--allow-domains (AGENT_ALLOW_DOMAINS) says where the agent may go, never where a page may send what the
agent read (an allow list of several sites would otherwise let a page of one post to another).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urljoin

from tools.web.errors import FetchError
from tools.web.robots import origin

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_HOPS = 10


def carries_body(request: Any) -> bool:
    """Whether a request sends data: a write method, or a body of any size."""
    if request.method in WRITES:
        return True
    try:
        return bool(request.post_data_buffer)
    except Exception:  # noqa: BLE001 - a body Playwright cannot read back
        return True


def page_url_of(request: Any) -> str:
    """The URL of the page a request comes from ('' for a popup's first request: no page yet, no origin)."""
    try:
        return str(request.frame.page.url)
    except Exception:  # noqa: BLE001 - a popup's first request has no page yet
        return ""


def write_refusal(method: str, url: str, page_url: str, via: str = "") -> str | None:
    """Why data must not be sent with `method` to url from a page at page_url (another origin), or None. `via`
    names the redirect that sent it there."""
    to, page = origin(url) or "", origin(page_url) or ""
    if to == page:
        return None
    return (f"Refused a {method} to {to or url}{via} from a page of {page or 'no site'}: data is sent only to the "
            "page's own origin (whatever --allow-domains allows)")


def keeps_body(status: int, method: str) -> bool:
    """Whether a redirect with this status re-sends the method and its body (the Fetch standard's rule)."""
    return status in (307, 308) or (status in (301, 302) and method != "POST")


async def send_judging_hops(route: Any, note: Callable[[str], None],
                            navigation_check: Callable[[Any, str], Awaitable[FetchError | None]]) -> None:
    """Send a request that carries a body, judging each redirect hop before it is followed (see the module)."""
    request = route.request
    url, method, body, page_url = request.url, request.method, request.post_data_buffer, page_url_of(request)
    for _ in range(MAX_HOPS):
        response = await route.fetch(url=url, method=method, post_data=body, max_redirects=0)
        location = response.headers.get("location")
        if response.status not in REDIRECTS or not location:
            await route.fulfill(response=response)
            return
        target = urljoin(url, location)
        refused = await navigation_check(request, target)
        if refused is not None:
            note(f"Refused to go to {target} (a redirect from {url}): {refused}")
            await route.abort("blockedbyclient")
            return
        if not keeps_body(response.status, method):  # Chromium follows it as a GET, through the guard proxy
            await route.fulfill(response=response)
            return
        via = f" (where a {response.status} redirect from {url} sent it)"
        why = write_refusal(method, target, page_url, via)
        if why is not None:
            note(why)
            await route.abort("blockedbyclient")
            return
        url = target
    note(f"Refused to follow a {method} to {url}: more than {MAX_HOPS} redirects")
    await route.abort("blockedbyclient")
