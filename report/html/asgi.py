"""The guard of guard.py as ASGI middleware: every request and every answer of an app pass it (the web app of
`main.py ui`, the Streamable HTTP app of `serve-mcp --http`). Starlette is imported: only those commands import
this module."""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from report.html.guard import UNAUTHORIZED, Guard, security_headers


class GuardMiddleware:
    """Refuse a foreign Host (421) or a missing token (403; 401 for a bearer-only guard) before any route runs;
    add the security headers."""

    def __init__(self, app: ASGIApp, guard: Guard, csp: str) -> None:
        self.app, self.guard, self.headers = app, guard, security_headers(csp)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then serve it with the headers; a refusal is not an error and is not logged."""
        if scope["type"] == "websocket":  # the app has none: a page elsewhere gets nothing
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        request = Headers(scope=scope)
        verdict = self.guard.check(request.get("host"), scope.get("query_string", b"").decode("latin-1"),
                                   request.get("cookie"), request.get("authorization"), request.get("origin"))
        if not verdict.allowed:
            headers = dict(self.headers)
            if verdict.status == UNAUTHORIZED:
                headers["WWW-Authenticate"] = 'Bearer realm="react-research-agent"'
            response = PlainTextResponse(verdict.reason, verdict.status, headers=headers)
            await response(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers:
                    headers[name] = value
                if verdict.set_cookie:
                    headers.append("set-cookie", verdict.set_cookie)
            await send(message)

        await self.app(scope, receive, send_with_headers)
