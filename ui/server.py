"""`python main.py ui [--port PORT]`: the local web app on 127.0.0.1, its URL printed with its token."""

from __future__ import annotations

import contextlib
import socket
import sys

from config import Settings
from core.errors import ConfigError
from providers.ratelimit import RateLimits
from report.html.guard import Guard
from run.conversation import Conversation
from run.store import RunStore
from telemetry.setup import start_tracing

INSTALL_HINT = "the web app needs Starlette and uvicorn: pip install -r requirements-ui.txt"


def serve(settings: Settings, port: int) -> int:
    """Serve until Ctrl-C; exit 2 with one line when the app cannot start (ConfigError: main.py says it)."""
    try:
        import uvicorn  # start-up: an optional dependency, only this command needs it

        from ui.app import build_app  # start-up: Starlette, likewise
        from ui.research import ResearchHub  # start-up: Starlette, likewise
    except ImportError as exc:
        print(f"error: {INSTALL_HINT} ({exc.name} is missing)", file=sys.stderr)
        return 2
    sock = _listen(port)
    store = RunStore.from_settings(settings)
    guard = Guard(int(sock.getsockname()[1]))
    tracing = start_tracing(settings)  # with an OTLP endpoint each question is a task span of its own trace
    limits = RateLimits(settings.rpm, settings.tpm)  # one limiter per provider for every conversation of the app
    app = build_app(store=store, guard=guard, new_conversation=lambda: Conversation(
        settings, store, kind="ui", tracing=tracing, limits=limits),
        research=ResearchHub(settings, store, limits, tracing))  # the Deep research mode
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    print(f"web app: {guard.url()}  (Ctrl-C stops it; keep the token private)", flush=True)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises Ctrl-C again after its shutdown: the end
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        if tracing is not None:
            tracing.shutdown()
    print("web app stopped; its conversations are in the run store (`main.py runs`)", file=sys.stderr)
    return 0


def _listen(port: int) -> socket.socket:
    """A socket on 127.0.0.1:port, bound now so the printed URL names the real port (also for port 0)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); choose another --port",
                          "port") from exc
    sock.listen(128)  # the browser may connect as soon as the URL is printed: it waits in the backlog
    return sock
