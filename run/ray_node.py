"""What runs on a Ray node: one task in a private workspace, with the node's own keys; the results go back.

Nothing here writes where the driver's files live: the task's workspace and trace are a temporary
directory on the node, and its record, trace lines and (bounded) workspace files are returned to the driver,
which alone writes the reports, traces, workspaces and run store. No API key is ever part of what the
driver sends (Ray shows task arguments in its dashboard and logs): each node reads its keys from its own
environment or .env.
"""

from __future__ import annotations

import dataclasses
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cache.model import build_models
from cache.store import close_all, open_store
from config import Settings, load_settings, setting_name
from core.errors import ConfigError, LLMFatalError
from core.secrets import is_url_field, secret_fields, url_credentials
from providers.budget import RunBudget
from report.markdown import TaskRecord
from run.batch import BatchRunner
from run.ray_limits import ActorSpend, cluster_limits
from tasks.taskfile import Task
from tools.mcp import configured_specs, mcp_session
from tools.sandbox import prepare_sandbox
from tools.web.session import web_session

SECRET_FIELDS = secret_fields(Settings)  # keys, tokens, headers (core/secrets.py)
MAX_FILES_BYTES = 20_000_000  # workspace files one task brings back to the driver; the rest are named as cut


@dataclass(frozen=True)
class NodeJob:
    """What every task of the run needs on a node. It holds no secret: Ray shows it in its dashboard and logs."""

    settings: Settings  # the driver's, with every *_api_key cleared and the model resolved
    model_spec: str
    answer_style: str | None
    needs_keys: tuple[str, ...]  # the secret fields the run uses: a node without one fails the run's start
    limits: Any = None  # the run's LimitsKeeper actor (run/ray_limits.py)
    spend: ActorSpend | None = None  # the run's shared spend, when any cap is set
    price: tuple[float, float] | None = None
    cache_rates: tuple[float, float] = (1.0, 1.0)


@dataclass
class Outcome:
    """What one task sends back to the driver."""

    key: str
    node: str
    record: TaskRecord | None  # None: not started (the run's cost cap was reached)
    trace: list[str] = field(default_factory=list)  # the trace's JSON lines
    files: dict[str, bytes] = field(default_factory=dict)  # workspace files, by path inside the workspace
    cut: list[str] = field(default_factory=list)  # workspace files left behind (over MAX_FILES_BYTES)
    fatal: str | None = None  # an LLMFatalError: every task would fail the same way, the run stops
    cache_rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)  # --cache: the task's new entries


def credential_urls(settings: Settings) -> tuple[str, ...]:
    """The URL fields whose value carries a user name or password (https://user:pass@proxy/v1)."""
    return tuple(url_credentials(settings))


def without_secrets(settings: Settings) -> Settings:
    """The settings with every key and every URL with credentials cleared: what may travel to the cluster."""
    cleared: dict[str, Any] = dict.fromkeys(SECRET_FIELDS + credential_urls(settings))
    return dataclasses.replace(settings, **cleared)


def node_name() -> str:
    """How the node is named in messages: its host name and Ray node id."""
    import ray  # heavy optional dependency: only a run with --executor ray gets here

    return f"{socket.gethostname()} (node {ray.get_runtime_context().get_node_id()[:12]})"


def node_settings(job: NodeJob) -> Settings:
    """The job's settings with this node's own keys, from its environment and .env."""
    own = load_settings()
    mine = SECRET_FIELDS + tuple(name for name in job.needs_keys if is_url_field(name))
    return dataclasses.replace(job.settings, **{name: getattr(own, name) for name in mine})


def check_node(job: NodeJob) -> str | None:
    """None when this node can run the job's tasks, else one line naming the node and the key it lacks."""
    try:
        settings = node_settings(job)
        missing = [setting_name(k) for k in job.needs_keys if not getattr(settings, k)]
        if missing:
            return f"{node_name()} has no {', '.join(missing)} in its environment or .env"
        build_models(settings)
    except ConfigError as exc:
        return f"{node_name()}: {exc}"
    return None


def run_task(task: Task, attachment: bytes | None, job: NodeJob) -> Outcome:
    """Run one task here and return its record, trace and workspace files (the Ray task's body)."""
    outcome = Outcome(task.key, node_name(), None)
    with tempfile.TemporaryDirectory(prefix="agent-ray-") as tmp:
        root = Path(tmp)
        # Everything the task writes stays in `root`: --cache records into a private cache sent back with it.
        settings = dataclasses.replace(node_settings(job), workspace=root / "workspace",
                                       trace_dir=root / "traces" if job.settings.trace_dir else None,
                                       cache_dir=root / "cache" if job.settings.cache_dir else None)
        prepare_sandbox(settings)
        limits = cluster_limits(job.limits, settings.rpm, settings.tpm) if job.limits is not None else None
        llm, summary_llm = build_models(settings, limits=limits)
        budget = RunBudget(settings, job.price, job.model_spec, job.spend, job.cache_rates) if job.spend else None
        if attachment is not None and task.file:
            staged = root / "attachment" / Path(task.file).name
            staged.parent.mkdir()
            staged.write_bytes(attachment)
            task = dataclasses.replace(task, file=str(staged))
        records: list[TaskRecord] = []
        runner = BatchRunner(settings, llm, job.model_spec, records.append, summary_llm=summary_llm,
                             answer_style=job.answer_style, budget=budget)
        try:
            with mcp_session(configured_specs(settings)), web_session(settings):
                runner.run([task])
        except LLMFatalError as exc:
            outcome.fatal = str(exc)
        outcome.record = records[0] if records else None
        if settings.trace_dir and (trace := settings.trace_dir / f"{task.id}.jsonl").is_file():
            outcome.trace = trace.read_text(encoding="utf-8").splitlines()
        outcome.files, outcome.cut = workspace_files(root / "workspace" / task.id, skip=task.file)
        if settings.cache_dir:
            outcome.cache_rows = open_store(settings.cache_dir).rows()
            close_all()
    return outcome


def workspace_files(workspace: Path, skip: str | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The workspace's files (smallest first, up to MAX_FILES_BYTES in all) and the names of those left out."""
    if not workspace.is_dir():
        return {}, []
    paths = sorted((p for p in workspace.rglob("*") if p.is_file() and not p.is_symlink()),
                   key=lambda p: (p.stat().st_size, str(p)))
    files: dict[str, bytes] = {}
    cut: list[str] = []
    total = 0
    attached = Path(skip).name if skip else None
    for path in paths:
        name = path.relative_to(workspace).as_posix()
        if name == attached:
            continue  # the attachment: the driver has it already
        size = path.stat().st_size
        if total + size > MAX_FILES_BYTES:
            cut.append(name)
            continue
        files[name] = path.read_bytes()
        total += size
    return files, cut
