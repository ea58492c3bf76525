"""The app's routes: the page, ask (with an attachment), the event stream, stop, the history and past runs."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from core.errors import ConfigError
from report.html.assets import SCRIPT as REPORT_SCRIPT
from report.html.guard import Guard, content_security_policy, script_hash
from run.conversation import Conversation
from run.store import Run, RunStore
from ui.middleware import GuardMiddleware
from ui.sessions import Busy, Hub, LiveConversation
from ui.views import history, past_session

STATIC = Path(__file__).resolve().parent / "static"
MAX_UPLOAD = 100 * 1024 * 1024  # bytes: an attachment larger than this is refused (413)
MAX_QUESTION = 20_000  # characters
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")
_RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,80}")


def build_app(store: RunStore, guard: Guard, new_conversation: Callable[[], Conversation]) -> Starlette:
    """The app behind its guard: nothing is served to a foreign Host or without the token."""
    hub = Hub(new_conversation)
    app = _Routes(hub, store)
    routes = [Route("/", app.index), Route("/api/history", app.history), Route("/api/ask", app.ask, methods=["POST"]),
              Route("/api/conversations/{run_id}", app.conversation), Route("/api/events/{key}", app.events),
              Route("/api/stop/{key}", app.stop, methods=["POST"]),
              Route("/runs/{run_id}/{name:path}", app.results), Mount("/static", StaticFiles(directory=STATIC))]
    csp = content_security_policy((script_hash(REPORT_SCRIPT),))  # a batch's results.html runs its own script

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await anyio.to_thread.run_sync(hub.stop_all)  # Ctrl-C: a running question stops and keeps its record

    return Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard, csp=csp)],
                     lifespan=lifespan, max_body_size=MAX_UPLOAD + (1 << 20))


class _Routes:
    def __init__(self, hub: Hub, store: RunStore) -> None:
        self.hub, self.store = hub, store

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def history(self, request: Request) -> Response:
        return JSONResponse({"items": await anyio.to_thread.run_sync(history, self.store)})

    def _run(self, request: Request) -> Run | None:
        """The stored run the path names, by its id only (never a directory the request could choose)."""
        run_id = str(request.path_params["run_id"])
        if not _RUN_ID.fullmatch(run_id):
            return None
        return next((r for r in self.store.runs() if r.id == run_id), None)

    async def conversation(self, request: Request) -> Response:
        run = await anyio.to_thread.run_sync(self._run, request)
        if run is None:
            return _error(404, "no such run in the store")
        return JSONResponse(await anyio.to_thread.run_sync(past_session, run))

    async def results(self, request: Request) -> Response:
        """A batch run's own copy of results.html, or one of the per-task pages a large one links
        (`<stem>_tasks/ID.html`): read from the run's folder in the store, never a path run.json names."""
        run = await anyio.to_thread.run_sync(self._run, request)
        name = str(request.path_params["name"])
        page = await anyio.to_thread.run_sync(run.report_page, name) if run and run.info.kind == "batch" else None
        if page is None:
            return _error(404, "no such page of this run's report (`main.py report RUN` rebuilds it)")
        return Response(page, media_type="text/html; charset=utf-8")

    async def ask(self, request: Request) -> Response:
        """Start answering a question (a new conversation, or a follow-up in the page's one)."""
        async with request.form(max_files=1, max_fields=4) as form:
            question = str(form.get("question") or "").strip()
            if not question or len(question) > MAX_QUESTION:
                return _error(400, f"ask a question of 1 to {MAX_QUESTION:,} characters")
            try:
                live = await self._conversation(str(form.get("conversation") or ""))
            except ConfigError as exc:
                return _error(400, str(exc))
            if live is None:
                return _error(404, "that conversation is no longer running here: start a new one")
            folder = Path(tempfile.mkdtemp(prefix="agent-ui-"))
            try:
                files = await _save_upload(form.get("file"), folder)
                turn = live.start(question, files, done=lambda: shutil.rmtree(folder, ignore_errors=True))
            except (Busy, _TooLarge) as exc:
                shutil.rmtree(folder, ignore_errors=True)
                return _error(409 if isinstance(exc, Busy) else 413, str(exc))
        return JSONResponse({"conversation": live.key, "turn": turn})

    async def _conversation(self, key: str) -> LiveConversation | None:
        if not key:
            return await anyio.to_thread.run_sync(self.hub.new)  # builds and checks the models
        return self.hub.get(key)

    async def events(self, request: Request) -> Response:
        live = self.hub.get(request.path_params["key"])
        if live is None:
            return _error(404, "no such conversation running")
        return StreamingResponse(_stream(live), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def stop(self, request: Request) -> Response:
        live = self.hub.get(request.path_params["key"])
        if live is None:
            return _error(404, "no such conversation running")
        live.stop.set()  # as Ctrl-C: the task ends at its next step and is recorded as stopped
        return JSONResponse({"stopping": live.running})


async def _stream(live: LiveConversation) -> AsyncIterator[str]:
    """Server-Sent Events: the question's events from the first (a page that reconnects redraws), then `end`."""
    seen = 0
    while True:
        events, over = await anyio.to_thread.run_sync(live.wait, seen, 5.0)
        seen += len(events)
        for event in events:
            yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
        if over:
            yield "event: end\ndata: {}\n\n"
            return
        if not events:
            yield ": waiting\n\n"  # a comment: finds a closed page, keeps proxies from timing out


class _TooLarge(Exception):  # noqa: N818 (the attachment is)
    """The attachment is larger than MAX_UPLOAD."""


async def _save_upload(upload: object, folder: Path) -> list[Path]:
    """The attachment saved under its own (cleaned) name in `folder`; none when no file was sent."""
    filename = getattr(upload, "filename", None)
    if not filename:
        return []
    name = _UNSAFE_NAME.sub("_", Path(str(filename).replace("\\", "/")).name).strip(" .") or "attachment"
    target, size = folder / name, 0
    with target.open("wb") as out:
        while chunk := await upload.read(1 << 20):  # type: ignore[attr-defined]
            size += len(chunk)
            if size > MAX_UPLOAD:
                raise _TooLarge(f"the attachment is larger than {MAX_UPLOAD // (1 << 20)} MB")
            out.write(chunk)
    return [target]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
