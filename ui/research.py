"""The web app's Deep research mode: start a research (research/pipeline.py), stream its plan and each
sub-question's progress, show the report with its verdicts, open its report.html.

A research runs in a worker thread; its events are kept while it runs, as a question's are (sessions.py), and
served by the app's one event stream; the report itself is the run store's (report.json, report.html).
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from agent import Event
from config import Settings
from core.errors import ConfigError, LLMError, ResultsWriteError
from providers.ratelimit import RateLimits
from report.docx import render_docx
from report.html.research import render_html
from report.markdown import TaskRecord
from report.research import SOURCES_DIR, ResearchReport, SubQuestion, load_report
from research.pipeline import QUIET, Progress, Research
from research.plan import MOST
from research.steer import make_plan
from run.store import RunStore
from tasks.taskfile import Task
from tools.web.browser.pdf import print_pdf
from tools.web.errors import BrowserUnavailableError
from ui.sessions import EventFeed, event_stream
from ui.uploads import BadUpload, save_upload

MAX_QUESTION = 20_000  # characters
MAX_PLAN, MAX_DEPTH = 30, 4  # sub-questions of an approved plan; rounds
DOWNLOADS = {"pdf": "application/pdf",
             "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
STOP_BUTTON = "the user (Stop in the web app)"
KEEP_ENDED = 20  # ended researches whose events the app still holds (their reports are in the run store)


class ResearchJob(EventFeed, Progress):
    """One research of the app: its events for the page (plan, sub-question progress, phases, the report)."""

    def __init__(self) -> None:
        super().__init__()
        self.key = secrets.token_hex(8)
        self.running = True
        self.stop = threading.Event()
        self.stopped_by = STOP_BUTTON  # who set `stop`, as the partial report says it

    def stop_now(self, by: str) -> None:
        """Stop the research (the report is written from what was found), saying who stopped it."""
        if not self.stop.is_set():
            self.stopped_by = by
        self.stop.set()

    def push(self, event: dict[str, Any]) -> None:
        """Add an event for the page."""
        self._push(event)

    def finish(self) -> None:
        """The research is over (its last event is pushed)."""
        with self._changed:
            self.running = False
            self._wake()

    def line(self, text: str) -> None:
        self.push({"type": "phase", "text": text})

    def planned(self, plan: list[SubQuestion]) -> None:
        self.push({"type": "plan", "questions": [{"n": s.n, "text": s.text, "round": s.round} for s in plan]})

    def followed_up(self, round_: int, subs: list[SubQuestion]) -> None:
        self.push({"type": "round", "round": round_, "questions": [{"n": s.n, "text": s.text} for s in subs]})

    @contextlib.contextmanager
    def researching(self, todo: list[Task]) -> Iterator[None]:
        self.line(f"researching {len(todo)} sub-question(s) side by side")
        yield

    def on_event(self, task: Task, event: Event) -> None:
        if event.kind == "tool_call":
            self.push({"type": "sub", "n": task.index, "state": f"step {event.step}: {event.data.get('tool')}"})

    def on_record(self, record: TaskRecord) -> None:
        read = sum(1 for s in record.sources if s.get("read"))
        self.push({"type": "sub", "n": record.index, "state": record.status.replace("_", " "), "done": True,
                   "sources": read, "error": record.error})

    def ended(self, plan: list[SubQuestion]) -> None:
        """The rows of the sub-questions that ended without a record (stopped mid-task, never started) say so,
        in place of the last step they showed."""
        for s in plan:
            if s.status in QUIET:
                self.push({"type": "sub", "n": s.n, "state": s.status, "done": True, "sources": s.sources,
                           "error": s.error})


class ResearchHub:
    """The app's research jobs by key; each runs the pipeline in a worker thread."""

    def __init__(self, settings: Settings, store: RunStore, limits: RateLimits | None = None,
                 tracing: Any = None) -> None:
        self.settings, self.store, self.limits, self.tracing = settings, store, limits, tracing
        self._jobs: dict[str, ResearchJob] = {}
        self._lock = threading.Lock()

    def start(self, question: str, files: list[Path], breadth: int, done: Callable[[], None],
              plan: list[str] | None = None, depth: int = 1) -> ResearchJob:
        """Start a research in the background (with the plan the user approved, if any); its job."""
        job = ResearchJob()
        with self._lock:
            ended = [k for k, j in self._jobs.items() if not j.running]
            for k in ended[:-KEEP_ENDED]:  # a page can still read a recent one's events; older ones are let go
                del self._jobs[k]
            self._jobs[job.key] = job
        threading.Thread(target=self._run, args=(job, question, files, breadth, done, plan, depth),
                         name="ui-research", daemon=True).start()
        return job

    def get(self, key: str) -> ResearchJob | None:
        """The job with this key, if any."""
        with self._lock:
            return self._jobs.get(key)

    def stop_all(self, grace: float = 30.0) -> None:
        """Stop every running research and wait (at most `grace` s) for its report."""
        with self._lock:
            jobs = [j for j in self._jobs.values() if j.running]
        for job in jobs:
            job.stop_now("the web app shutting down")
        deadline = time.monotonic() + grace
        for job in jobs:
            job.wait_idle(max(0.0, deadline - time.monotonic()))

    def plan(self, question: str, file_names: list[str], breadth: int) -> list[str]:
        """The plan to review before research starts: one planning call (LLMError when it fails)."""
        subs, _ = make_plan(self.settings, question, file_names, breadth, None, limits=self.limits)
        return subs or [" ".join(question.split())]

    def _run(self, job: ResearchJob, question: str, files: list[Path], breadth: int, done: Callable[[], None],
             plan: list[str] | None, depth: int) -> None:
        research = Research(self.settings, question, self.store, files, breadth, progress=job, stop=job.stop,
                            limits=self.limits, tracing=self.tracing, sub_questions=plan, depth=depth,
                            stopped_by=lambda: job.stopped_by)
        try:
            report = research.run()
            job.ended(report.plan)
            job.push({"type": "report", "report": report_json(report), "html": f"/runs/{report.run_id}/report.html",
                      "downloads": {f: f"/api/research/report/{report.run_id}/report.{f}" for f in DOWNLOADS}})
        except (LLMError, ConfigError, ResultsWriteError, OSError) as exc:  # say why, stay up
            job.push({"type": "failed", "error": str(exc)})
        finally:
            done()
            job.finish()


def report_json(report: ResearchReport) -> dict[str, Any]:
    """What the page shows of a report: title, partial note, body, sources, verdicts, the plan."""
    data = report.to_json()
    data["title"] = report.title()
    data["marked"] = report.marked
    for c in data["citations"]:
        c.pop("passage", None)  # report.html has them
    return data


def research_routes(hub: ResearchHub) -> list[BaseRoute]:
    """The routes of the Deep research mode."""
    r = _Routes(hub)
    return [Route("/api/research", r.start, methods=["POST"]), Route("/api/research/plan", r.plan, methods=["POST"]),
            Route("/api/research/report/{run_id}/report.{fmt}", r.download),
            Route("/api/research/{key}/events", r.events), Route("/api/research/{key}/stop", r.stop, methods=["POST"])]


class _Routes:
    def __init__(self, hub: ResearchHub) -> None:
        self.hub = hub

    async def start(self, request: Request) -> Response:
        """Start a research: the question, an optional breadth and attachment; a bad request is a 4xx with one
        line and leaves no upload folder behind."""
        folder = Path(tempfile.mkdtemp(prefix="agent-ui-research-"))
        try:
            async with request.form(max_files=1, max_fields=6) as form:
                question, breadth = _question(form), _number(form, "breadth", MOST, 20)
                depth, plan = _number(form, "depth", 1, MAX_DEPTH), _plan(form)
                files = await save_upload(form.get("file"), folder)
        except (BadUpload, HTTPException) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            status = exc.status if isinstance(exc, BadUpload) else exc.status_code
            return _error(status if 400 <= status < 500 else 400, str(exc) if isinstance(exc, BadUpload) else
                          f"bad request: {exc.detail}")
        job = self.hub.start(question, files, breadth, lambda: shutil.rmtree(folder, ignore_errors=True), plan, depth)
        return JSONResponse({"research": job.key})

    async def plan(self, request: Request) -> Response:
        """The plan of a question, to review, edit and approve before research starts (one model call)."""
        try:
            async with request.form(max_files=0, max_fields=4) as form:
                question, breadth = _question(form), _number(form, "breadth", MOST, 20)
                names = [" ".join(str(form.get("file_name") or "").split())[:200]] if form.get("file_name") else []
        except (BadUpload, HTTPException) as exc:
            return _error(400, str(exc) if isinstance(exc, BadUpload) else f"bad request: {exc.detail}")
        try:
            subs = await anyio.to_thread.run_sync(self.hub.plan, question, names, breadth)
        except (LLMError, ConfigError) as exc:
            return _error(502 if isinstance(exc, LLMError) else 400, f"the planning call failed: {exc}")
        return JSONResponse({"plan": subs})

    async def download(self, request: Request) -> Response:
        """A research run's report as PDF or DOCX, made from its report.json (by run id only)."""
        run_id, fmt = str(request.path_params["run_id"]), str(request.path_params["fmt"])
        run = next((r for r in self.hub.store.runs() if r.id == run_id and r.info.kind == "research"), None)
        report = load_report(run.dir) if run is not None and fmt in DOWNLOADS else None
        if run is None or report is None:
            return _error(404, "no such research report")
        try:
            data = await anyio.to_thread.run_sync(lambda: _export(report, fmt, run.dir, self.hub.settings))
        except (BrowserUnavailableError, RuntimeError) as exc:
            return _error(503, f"report.{fmt} could not be made: {exc}")
        return Response(data, media_type=DOWNLOADS[fmt],
                        headers={"Content-Disposition": f'attachment; filename="research-{run_id}.{fmt}"'})

    async def events(self, request: Request) -> Response:
        """The research's events as Server-Sent Events, from the first."""
        job = self.hub.get(str(request.path_params["key"]))
        if job is None:
            return _error(404, "no such research running")
        return StreamingResponse(event_stream(job), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def stop(self, request: Request) -> Response:
        """As Ctrl-C: no new sub-question starts; the report is written from what was found."""
        job = self.hub.get(str(request.path_params["key"]))
        if job is None:
            return _error(404, "no such research running")
        job.stop_now(STOP_BUTTON)
        return JSONResponse({"stopping": job.running})


def _question(form: Any) -> str:
    question = str(form.get("question") or "").strip()
    if not question or len(question) > MAX_QUESTION:
        raise BadUpload(400, f"ask a question of 1 to {MAX_QUESTION:,} characters")
    return question


def _number(form: Any, name: str, default: int, most: int) -> int:
    value = str(form.get(name) or default)
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= most:  # '²'.isdigit()
        raise BadUpload(400, f"{name}: 1 to {most}")
    return int(value)


def _plan(form: Any) -> list[str] | None:
    """The approved plan (one sub-question a line), or None to let the research plan itself."""
    text = str(form.get("plan") or "")
    subs = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if len(subs) > MAX_PLAN or any(len(q) > MAX_QUESTION // 10 for q in subs):
        raise BadUpload(400, f"a plan of at most {MAX_PLAN} sub-questions of {MAX_QUESTION // 10:,} characters")
    return subs or None


def _export(report: ResearchReport, fmt: str, run_dir: Path, settings: Settings) -> bytes:
    if fmt == "docx":
        return render_docx(report)
    return print_pdf(render_html(report, run_dir / SOURCES_DIR), settings.chromium)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
