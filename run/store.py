"""The run store: one directory per run (batch, ask, chat, ui, research) under the runs directory, with its run.json.

A run's directory (0700: its traces, records and workspace quote what it read, the user's own documents
included) holds everything it wrote that a later run must not overwrite::

    runs/20261125-181500-a1b2c3/
        run.json        the index entry (RunInfo): id, kind, when, title, tasks, answered, cost, outputs
        settings.json   the run's settings, secrets left out (public_settings)
        results.jsonl   its task records (a batch also writes its -o report; a copy of the records lands here)
        results.html    a batch's own copy of its HTML report (named as -o's), with results_tasks/ when it has one
        traces/         one JSONL trace per task (turn-1.jsonl ... for ask and chat)
        workspace/      one workspace per task (ask and chat share one across turns)

The store trusts no run.json (a runs folder may be synced or unpacked from elsewhere): a run whose folder is a
symbolic link, or whose run.json names another id, is skipped; its traces and workspace are used (and pruned)
only where the store puts them, in its own folder or <--trace-dir>/<id> and <--workspace>/<id> of the settings
it was opened with; the web app serves only the store's own copy of a report, read without following links.

Use::

    store = RunStore.from_settings(settings)           # AGENT_RUNS_DIR, default runs/ in the current directory
    run = store.create("chat", "first question", settings)
    settings = run.apply(settings)                      # trace_dir and workspace now inside the run
    ...
    run.finish(tasks=2, answered=2, cost=0.01)          # updates run.json; prunes older runs' workspaces
    store.list_runs()                                   # newest first
    store.open("20261125-1815")                         # an id, a unique id prefix or a run directory
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from config import Settings
from core.errors import ConfigError
from core.files import atomic_write, private_folder
from core.secrets import is_url_field, secret_fields
from core.text import report_data
from tools.safe_open import WorkspacePathError, open_file

RUN_FILE, SETTINGS_FILE, RECORDS_FILE = "run.json", "settings.json", "results.jsonl"
PRIVATE = 0o700  # a run's folders: its traces, records and workspace quote the documents and pages it read
KINDS = ("batch", "ask", "chat", "ui", "research", "inspect")  # inspect: a sample of an Inspect eval (evals/)
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
_PAGE = re.compile(r"[\w.-]{1,200}\.html")  # a report page's name: no folder, no "..", only .html
_MAX_RUN_FILE = 1 << 20  # bytes: a run.json is a few hundred


@dataclass
class RunInfo:
    """A run's index entry, as run.json holds it and `main.py runs` lists it."""

    id: str
    kind: str  # batch | ask | chat | ui | research
    started: str  # ISO 8601, UTC
    title: str = ""  # the task file, or the first question
    finished: str | None = None
    status: str = "running"  # running | finished | stopped | failed (a killed process's run stays "running")
    tasks: int = 0
    answered: int = 0
    cost: float | None = None  # USD, once the run ended; None until then (a run that died) or when a price is unknown
    model: str | None = None
    outputs: list[str] = field(default_factory=list)  # report paths written outside the run directory
    report: str | None = None  # the name of the run's own copy of its HTML report, in its directory
    trace_dir: str | None = None  # absolute; None: the run wrote no traces
    workspace: str | None = None  # absolute
    workspace_pruned: bool = False
    traces_pruned: bool = False
    pid: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunInfo:
        """An entry from run.json (unknown keys are ignored, so older and newer versions read each other);
        ValueError when a known one has the wrong type or the kind or start is not one the store writes."""
        known = {f.name: f for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in known}
        for name, value in kept.items():
            if not _typed(value, str(known[name].type)):
                raise ValueError(f"run.json: {name} is not a {known[name].type}")
        info = cls(**kept)
        if info.kind not in KINDS:
            raise ValueError(f"run.json: unknown kind {info.kind!r}")
        if datetime.fromisoformat(info.started).tzinfo is None:  # ValueError when it is not a date at all
            raise ValueError("run.json: started has no time zone")
        return info


class Run:
    """One run's directory and its index entry; `apply` points a run's settings into it."""

    def __init__(self, store: RunStore, directory: Path, info: RunInfo) -> None:
        self.store, self.dir, self.info = store, directory, info

    @property
    def id(self) -> str:
        """The run's id (its directory's name)."""
        return self.info.id

    @property
    def records(self) -> Path:
        """The run's results.jsonl."""
        return self.dir / RECORDS_FILE

    @property
    def trace_dir(self) -> Path | None:
        """Where the run's traces are (None: it wrote none, or run.json names a folder the store never uses)."""
        return self._own(self.info.trace_dir, "traces", self.store.trace_root)

    @property
    def workspace(self) -> Path:
        """The folder holding the run's task workspaces (its own workspace/ when run.json names another)."""
        return self._own(self.info.workspace, "workspace", self.store.workspace_root) or self.dir / "workspace"

    def _own(self, stored: str | None, name: str, root: Path | None) -> Path | None:
        """`stored` when it is where the store puts this run's folder `name`: <run dir>/<name>, or <root>/<id>.
        Compared as written, never resolved, so a link cannot make a folder elsewhere pass for one of these."""
        if not stored or not os.path.isabs(stored):
            return None
        path = Path(os.path.normpath(stored))
        allowed = [self.dir / name] + ([Path(os.path.realpath(root)) / self.id] if root is not None else [])
        return path if path in allowed else None

    @property
    def started(self) -> datetime:
        """When the run started (UTC)."""
        return datetime.fromisoformat(self.info.started)

    @property
    def ended(self) -> bool:
        """True unless the run is still going: its status says so and its process (on this machine) lives."""
        return self.info.status != "running" or not _process_alive(self.info.pid)

    def apply(self, settings: Settings) -> Settings:
        """The settings with trace_dir and workspace inside this run: its own traces/ and workspace/, or
        <--trace-dir>/<run id> and <--workspace>/<run id> when those were given; traces=False: no traces."""
        return replace(settings, trace_dir=self.trace_dir, workspace=self.workspace)

    def save(self) -> None:
        """Write run.json (atomically: a reader never sees half of it)."""
        _write_json(self.dir / RUN_FILE, asdict(self.info))

    def keep_reports(self, records: Path, html: Path | None) -> None:
        """Copy the run's records and its HTML report (with its per-task pages) into its own directory, so that
        `main.py report RUN` and the web app show this run's, also after a later run reuses the same -o."""
        if records.is_file():
            shutil.copyfile(records, self.records)
        if html is None or not html.is_file() or not _PAGE.fullmatch(html.name):
            return
        shutil.copyfile(html, self.dir / html.name)
        details = html.with_name(f"{html.stem}_tasks")
        if details.is_dir():
            shutil.copytree(details, self.dir / details.name, dirs_exist_ok=True)
        self.info.report = html.name

    def report_page(self, name: str) -> bytes | None:
        """A page of the run's own HTML report: the report itself (by its name or `results.html`) or one of its
        `<stem>_tasks/ID.html`; read inside the store without following any link; None when there is none."""
        page = self.info.report if self.info.report and _PAGE.fullmatch(self.info.report) else "results.html"
        folder, _, file = name.partition("/")
        if name not in ("results.html", page) and not (folder == page[:-5] + "_tasks" and _PAGE.fullmatch(file)):
            return None
        try:
            with open_file(self.store.root, f"{self.id}/{page if '/' not in name else name}") as f:
                return f.read()
        except WorkspacePathError:
            return None

    def finish(self, *, tasks: int, answered: int, cost: float | None, status: str = "finished",
               outputs: list[str] | None = None) -> None:
        """Record how the run ended, then prune the workspaces of runs beyond the store's retention."""
        self.info.tasks, self.info.answered, self.info.cost, self.info.status = tasks, answered, cost, status
        if outputs is not None:
            self.info.outputs = outputs
        self.info.finished = _now().isoformat(timespec="seconds")
        self.save()
        self.store.prune_workspaces()

    def discard(self) -> None:
        """Remove a run that ended before any of its tasks did because of its setup (a rejected key, an unknown
        model at the first call): its directory, traces and workspace. Nothing of it is listed or kept."""
        for path in (self.trace_dir, self.workspace, self.dir):
            if path is not None:
                _remove_tree(path)
        with contextlib.suppress(OSError):
            self.dir.parent.rmdir()  # the store's folder, when this run made it and nothing else is in it

    def prune(self, *, traces: bool) -> bool:
        """Remove this run's workspace (and its traces when asked); True when anything was removed."""
        removed = False
        if not self.ended:
            return False
        if not self.info.workspace_pruned:
            removed |= _remove_tree(self.workspace)
            self.info.workspace_pruned = True
        if traces and not self.info.traces_pruned and self.trace_dir is not None:
            removed |= _remove_tree(self.trace_dir)
            self.info.traces_pruned = True
        self.save()
        return removed


class RunStore:
    """The runs directory: create, list, open and prune runs. Nothing is created until a run is."""

    def __init__(self, root: Path, keep_workspaces: int = 20, *, workspace_root: Path | None = None,
                 trace_root: Path | None = None) -> None:
        """`workspace_root` and `trace_root`: the --workspace and --trace-dir under which runs may keep theirs."""
        self.root, self.keep_workspaces = Path(root), keep_workspaces
        self.workspace_root, self.trace_root = workspace_root, trace_root

    @classmethod
    def from_settings(cls, settings: Settings) -> RunStore:
        """The store of AGENT_RUNS_DIR / --runs-dir, keeping AGENT_KEEP_WORKSPACES runs' workspaces."""
        return cls(settings.runs_dir, settings.keep_workspaces, workspace_root=settings.workspace,
                   trace_root=settings.trace_dir)

    def create(self, kind: str, title: str, settings: Settings) -> Run:
        """A new run directory with its run.json and settings.json; the id is its UTC start and 6 random hex."""
        if kind not in KINDS:
            raise ValueError(f"unknown run kind {kind!r}")
        started = _now()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            while True:
                run_id = f"{started:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
                with contextlib.suppress(FileExistsError):
                    (self.root / run_id).mkdir(mode=PRIVATE)
                    break
        except OSError as exc:
            raise ConfigError(f"cannot create a run directory in {self.root} ({exc.strerror}); set "
                              "AGENT_RUNS_DIR or --runs-dir to a writable folder", "runs_dir") from exc
        directory = (self.root / run_id).resolve()
        trace_dir = None if not settings.traces else (
            settings.trace_dir / run_id if settings.trace_dir else directory / "traces")
        workspace = settings.workspace / run_id if settings.workspace else directory / "workspace"
        for own in (trace_dir, workspace):  # elsewhere (--trace-dir, --workspace): as private as the run's folder
            if own is not None and not own.is_relative_to(directory):
                _private_folder(own)
        info = RunInfo(run_id, kind, started.isoformat(timespec="microseconds"), title=title[:300],
                       model=settings.model, trace_dir=str(trace_dir.resolve()) if trace_dir else None,
                       workspace=str(workspace.resolve()), pid=os.getpid())
        run = Run(self, directory, info)
        run.save()
        _write_json(directory / SETTINGS_FILE, public_settings(settings))
        return run

    def runs(self) -> Iterator[Run]:
        """Every readable run in the store, in no particular order: folders named as run ids, not links, whose
        run.json (not a link either) names the same id; any other entry is skipped."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if RUN_ID.fullmatch(entry.name) and not entry.is_symlink():
                with contextlib.suppress(OSError, ValueError, TypeError):
                    yield self._load(entry)

    def _load(self, directory: Path) -> Run:
        """The run in `directory`: ValueError (or OSError) unless its run.json is a file naming its folder."""
        fd = os.open(directory / RUN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError(f"{directory / RUN_FILE} is not a file")
            data = json.loads(f.read(_MAX_RUN_FILE).decode("utf-8"))
        info = RunInfo.from_json(data)
        real = directory.resolve()
        if info.id != real.name:
            raise ValueError(f"{directory / RUN_FILE} names run {info.id!r}, not its folder's")
        return Run(self, real, info)

    def list_runs(self) -> list[Run]:
        """Every run, newest first."""
        return sorted(self.runs(), key=lambda r: (r.info.started, r.id), reverse=True)

    def open(self, ref: str | Path) -> Run:
        """A run by id, unique id prefix or directory; ConfigError naming what was tried when none matches."""
        path = Path(ref)
        if (path / RUN_FILE).is_file():
            try:
                return self._load(path)
            except (OSError, ValueError, TypeError) as exc:
                raise ConfigError(f"{path} is not a run this store can read ({exc})", "runs_dir") from exc
        matches = [r for r in self.runs() if r.id == str(ref)] or [r for r in self.runs() if r.id.startswith(str(ref))]
        if len(matches) == 1:
            return matches[0]
        what = "matches several runs" if matches else f"is not a run in {self.root}"
        raise ConfigError(f"{ref} {what}; `main.py runs` lists them", "runs_dir")

    def prune(self, older_than: timedelta, now: datetime | None = None) -> list[Run]:
        """Remove the traces and workspaces of finished runs started more than `older_than` ago."""
        cutoff = (now or _now()) - older_than
        return [r for r in self.runs() if r.started < cutoff and r.prune(traces=True)]

    def prune_workspaces(self) -> list[Run]:
        """Remove the workspaces of finished runs beyond the newest keep_workspaces ones."""
        done = [r for r in self.list_runs() if r.ended]
        return [r for r in done[self.keep_workspaces:] if not r.info.workspace_pruned and r.prune(traces=False)]


def public_settings(settings: Settings) -> dict[str, Any]:
    """The settings as settings.json keeps them: no keys or headers, no credentials in URLs, MCP servers by
    name only."""
    out: dict[str, Any] = {}
    secret = set(secret_fields(settings))
    for f in fields(settings):
        value = getattr(settings, f.name)
        if f.name in secret:  # API keys, the OTLP headers
            continue
        if is_url_field(f.name) and isinstance(value, str):
            value = _strip_credentials(value)
        elif is_url_field(f.name) and isinstance(value, tuple):  # provider_urls: (VARIABLE, URL) pairs
            value = [[name, _strip_credentials(url) if "://" in url else url] for name, url in value]
        elif f.name == "model_aliases":  # the models file's aliases by name and what they stand for
            value = [f"{a.name}={a.spec}" for a in value]
        elif f.name == "mcp_servers":
            value = [entry.split("=", 1)[0] for entry in value]
        out[f.name] = str(value) if isinstance(value, Path) else \
            [str(v) if isinstance(v, Path) else v for v in value] if isinstance(value, tuple) else value
    return out


def _typed(value: Any, annotation: str) -> bool:
    """True when a run.json value fits its RunInfo field's annotation (str, int, bool, float, list[str], | None)."""
    if value is None:
        return "None" in annotation
    base = annotation.split(" | ")[0]
    if base == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if base in ("int", "float"):  # a float field takes an int too; bool is an int to Python, not here
        return isinstance(value, int if base == "int" else int | float) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "bool": bool}[base])


def _strip_credentials(url: str) -> str:
    """A URL without user:password@ and without its query (where tokens are often passed)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _process_alive(pid: int) -> bool:
    """True when a process with this id exists (a run killed with -9 never says it ended)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _remove_tree(path: Path) -> bool:
    """Remove a run's folder (rmtree neither follows nor deletes through a link; a link itself is left)."""
    if path.is_symlink() or not path.exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def _private_folder(path: Path) -> None:
    """A run's folder outside its own (<--trace-dir>/<id>, <--workspace>/<id>): made 0700, before anything is in it."""
    with contextlib.suppress(OSError):  # an unusable folder is reported where the run writes there
        private_folder(path)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(report_data(data), indent=1, ensure_ascii=False, default=str) + "\n")


def _now() -> datetime:
    return datetime.now(UTC)
