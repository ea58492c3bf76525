"""The app's routes: the page, ask (with an attachment), the event stream, stop, the history and past runs."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from core.errors import ConfigError
from report.html.asgi import GuardMiddleware
from report.html.assets import SCRIPT as REPORT_SCRIPT
from report.html.guard import Guard, content_security_policy, script_hash
from run.conversation import Conversation
from run.store import Run, RunStore
from ui.research import ResearchHub, research_routes
from ui.sessions import Busy, Hub, event_stream
from ui.uploads import MAX_UPLOAD, BadUpload, save_upload
from ui.views import history, past_session

STATIC = Path(__file__).resolve().parent / "static"
MAX_QUESTION = 20_000  # characters
_RUN_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,80}")


def build_app(store: RunStore, guard: Guard, new_conversation: Callable[[], Conversation],
              research: ResearchHub | None = None) -> Starlette:
    """The app behind its guard: nothing is served to a foreign Host or without the token."""
    hub = Hub(new_conversation)
    app = _Routes(hub, store)
    routes = research_routes(research) if research is not None else []  # the Deep research mode
    routes += [Route("/", app.index), Route("/api/history", app.history), Route("/api/ask", app.ask, methods=["POST"]),
              Route("/api/conversations/{run_id}", app.conversation), Route("/api/events/{key}", app.events),
              Route("/api/stop/{key}", app.stop, methods=["POST"]),
              Route("/runs/{run_id}/{name:path}", app.results), Mount("/static", StaticFiles(directory=STATIC))]
    csp = content_security_policy((script_hash(REPORT_SCRIPT),))  # a batch's results.html runs its own script

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await anyio.to_thread.run_sync(hub.stop_all)  # Ctrl-C: a running question stops and keeps its record
        if research is not None:
            await anyio.to_thread.run_sync(research.stop_all)  # ... and a research writes its partial report

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
        """A batch run's own copy of results.html (a research run's report.html), or one of the per-task pages a
        large one links (`<stem>_tasks/ID.html`): read from the run's folder in the store, never a path run.json
        names."""
        run = await anyio.to_thread.run_sync(self._run, request)
        name = str(request.path_params["name"])
        page = await anyio.to_thread.run_sync(run.report_page, name) if run and run.info.kind in ("batch", "research") \
            else None
        if page is None:
            return _error(404, "no such page of this run's report (`main.py report RUN` rebuilds it)")
        return Response(page, media_type="text/html; charset=utf-8")

    async def ask(self, request: Request) -> Response:
        """Start answering a question (a new conversation, or a follow-up in the page's one); any bad request is
        a 4xx with one line, and leaves no upload folder and no conversation behind."""
        folder = Path(tempfile.mkdtemp(prefix="agent-ui-"))
        started = False
        try:
            async with request.form(max_files=1, max_fields=4) as form:
                response, started = await self._ask(form, folder)
                return response
        except HTTPException as exc:  # a malformed or oversized form (Starlette's parser says which)
            return _error(exc.status_code if 400 <= exc.status_code < 500 else 400, f"bad request: {exc.detail}")
        finally:
            if not started:  # a started question removes it when it ends
                shutil.rmtree(folder, ignore_errors=True)

    async def _ask(self, form: FormData, folder: Path) -> tuple[Response, bool]:
        """Check the question and the upload, then start the question; the answer and whether it started."""
        question = str(form.get("question") or "").strip()
        if not question or len(question) > MAX_QUESTION:
            return _error(400, f"ask a question of 1 to {MAX_QUESTION:,} characters"), False
        try:
            files = await save_upload(form.get("file"), folder)
        except BadUpload as exc:
            return _error(exc.status, str(exc)), False
        key = str(form.get("conversation") or "")
        try:
            live = await anyio.to_thread.run_sync(self.hub.new) if not key else self.hub.get(key)
        except ConfigError as exc:
            return _error(400, str(exc)), False
        if live is None:
            return _error(404, "that conversation is no longer open here (it is kept in the history): start a "
                               "new one"), False
        try:
            turn = live.start(question, files, done=lambda: shutil.rmtree(folder, ignore_errors=True))
        except Busy as exc:
            if not key:  # a new conversation whose first question did not start
                self.hub.discard(live.key)
            return _error(409, str(exc)), False
        return JSONResponse({"conversation": live.key, "turn": turn}), True

    async def events(self, request: Request) -> Response:
        live = self.hub.get(request.path_params["key"])
        if live is None:
            return _error(404, "no such conversation running")
        return StreamingResponse(event_stream(live), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def stop(self, request: Request) -> Response:
        live = self.hub.get(request.path_params["key"])
        if live is None:
            return _error(404, "no such conversation running")
        live.stop.set()  # as Ctrl-C: the task ends at its next step and is recorded as stopped
        return JSONResponse({"stopping": live.running})


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
