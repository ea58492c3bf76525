"""--executor ray: the batch's tasks run as Ray tasks on a cluster; this process alone writes what a run writes.

The driver (this process) hands out at most --concurrency tasks at a time; each runs on some node
(run/ray_node.py) and sends back its record, trace and workspace files, which the driver writes exactly as
a local run does (reports, traces, workspaces, run store), so `report`, `--resume` and `--serve` work the
same. A node that dies mid-task has its tasks retried elsewhere (Ray's retries, bounded by RETRIES); the
driver keeps one record per task key; a task lost on every try is recorded as failed with the reason.
Ctrl-C cancels the outstanding Ray tasks. A cluster the run joined is left running; one it started ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import Event
from cache.store import open_store
from config import Settings
from core.chat import split_spec
from core.errors import ConfigError, LLMFatalError
from core.search_settings import papers_mode
from report.markdown import TaskRecord
from run.batch import BatchRunner, attachment_name, stage_attachment
from run.ray_limits import ActorSpend, SettledSpend, start_limits
from run.ray_node import (
    SECRET_FIELDS,
    NodeJob,
    Outcome,
    check_node,
    credential_urls,
    run_task,
    without_secrets,
)
from tasks.taskfile import Task
from tools.safe_open import WorkspacePathError, replace_file

RETRIES = 3  # Ray's retries of a task whose worker or node died; then it is recorded as failed
POLL = 0.5  # seconds between looks at the stop flag while waiting for tasks
INSTALL_HINT = "--executor ray needs Ray: pip install -r requirements-ray.txt"


def import_ray() -> Any:
    """The ray module, or a ConfigError saying how to install it."""
    try:
        import ray  # heavy optional dependency: only a run with --executor ray imports it
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT, "executor") from exc
    return ray


def connect(ray: Any, settings: Settings) -> None:
    """Join the cluster at settings.ray_address (auto: the running one), or start a local one for the run."""
    quiet = {"log_to_driver": False, "logging_level": logging.ERROR}
    if settings.ray_address:
        reachable(settings.ray_address)
    main_thread = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    try:
        if settings.ray_address:
            ray.init(address=settings.ray_address, **quiet)
        else:
            ray.init(num_cpus=settings.concurrency, include_dashboard=False, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = settings.ray_address or "a local cluster"
        raise ConfigError(f"cannot reach the Ray cluster at {where}: {exc}", "ray_address") from exc
    finally:
        if main_thread:  # ray.init makes SIGTERM exit at once: the run's own handler stops it cleanly (143)
            signal.signal(signal.SIGTERM, sigterm)


def check_supported(settings: Settings, replay_trace: object) -> None:
    """ConfigError for what --executor ray cannot do: the nodes answer from no cache and replay no trace."""
    if settings.executor != "ray":
        return
    if settings.cache_replay or replay_trace:
        raise ConfigError("--replay and --replay-trace run with the thread executor only (drop --executor ray)",
                          "executor")
    import_ray()  # the install hint now, before anything is built


def reachable(address: str, timeout: float = 5.0) -> None:
    """ConfigError at once when a HOST:PORT address does not answer (Ray itself would retry for minutes)."""
    host, _, port = address.rpartition(":")
    if "://" in address or not host or not (port.isascii() and port.isdigit()):
        return  # auto, ray://...: Ray's own lookup
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc} (is `ray start "
                          "--head` running there, and is this its GCS port?)", "ray_address") from exc


def keys_needed(settings: Settings, specs: list[str]) -> tuple[str, ...]:
    """The *_api_key fields this run uses that the driver has: every node must have them too."""
    providers = {split_spec(spec)[0] for spec in specs if spec}
    needed = [f"{p}_api_key" for p in providers if f"{p}_api_key" in SECRET_FIELDS]
    if settings.search:
        needed.append("serper_api_key")
        if papers_mode(settings) != "off":  # search_papers' keys
            needed += ["openalex_api_key", "semantic_scholar_api_key"]
    return tuple(sorted(name for name in set(needed) if getattr(settings, name)))


def check_nodes(ray: Any, job: NodeJob) -> None:
    """Run check_node on every live node; ConfigError naming the node and the key it lacks."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    check = ray.remote(check_node)
    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
    refs = [check.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
                          ).remote(job) for node in nodes]
    problems = [p for p in ray.get(refs) if p]
    if problems:
        raise ConfigError(f"{'; '.join(problems)}: give every node its keys (docs/cluster.md)", "executor")


@dataclass
class RayBatchRunner(BatchRunner):
    """BatchRunner's interface, with each task run on a Ray cluster and its results written here."""

    retries: int = RETRIES
    seen: set[str] = field(default_factory=set)  # task keys recorded: a retried task's second report is dropped

    def run(self, tasks: list[Task]) -> None:
        """Run every task on the cluster; an LLMFatalError on any node stops the batch and propagates."""
        if not tasks:
            return
        ray = import_ray()
        connect(ray, self.settings)
        spend = None
        try:
            if self.budget is not None:  # the driver's budget asks the cluster's one spend too
                spend = self.budget.spend = ActorSpend.start(ray, self.settings.max_run_cost)
            job = self.node_job(spend, start_limits(ray))
            check_nodes(ray, job)
            self._dispatch(ray, tasks, ray.put(job))
        finally:
            if self.budget is not None and spend is not None:
                self.budget.spend = SettledSpend(spend.totals())  # the report reads it after the cluster is gone
            ray.shutdown()  # leaves a joined cluster running; ends one that ray.init started

    def node_job(self, spend: ActorSpend | None, limits: Any) -> NodeJob:
        """What the nodes need, without a key: the model is pinned to the one the driver resolved."""
        s = self.settings
        settings = without_secrets(s.with_overrides(  # a relative path means nothing in a node's working directory
            model=s.model or self.model_spec, prices_file=s.prices_file and s.prices_file.resolve(),
            mcp_config=s.mcp_config and s.mcp_config.resolve()))
        specs = [settings.model or "", *s.fallback_models, s.summary_model or "", s.vision_model or "",
                 s.transcribe_model or "", s.judge_model or ""]
        b = self.budget
        needs = keys_needed(s, specs) + credential_urls(s)  # a proxy's password stays on the nodes too
        return NodeJob(settings, self.model_spec, self.answer_style, needs, limits, spend,
                       b.price if b else None, b.cache_rates if b else (1.0, 1.0))

    def _dispatch(self, ray: Any, tasks: list[Task], job: Any) -> None:
        remote = ray.remote(run_task).options(num_cpus=1, max_retries=self.retries, retry_exceptions=False)
        in_flight: dict[Any, Task] = {}
        queue = iter(tasks)
        try:
            while True:
                while not self.stop.is_set() and len(in_flight) < self.settings.concurrency:
                    task = next(queue, None)
                    if task is None:
                        break
                    if self.budget is None or self.budget.may_start():
                        in_flight[remote.remote(task, attachment(task), job)] = task
                if not in_flight or self.stop.is_set():
                    return
                done, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL)
                for ref in done:
                    self._collect(ray, ref, in_flight.pop(ref))
        finally:
            for ref in in_flight:  # Ctrl-C or a fatal error: the outstanding tasks are cancelled, not recorded
                ray.cancel(ref, force=True)

    def _collect(self, ray: Any, ref: Any, task: Task) -> None:
        try:
            outcome: Outcome = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return
        except ray.exceptions.RayError as exc:
            outcome = Outcome(task.key, "", lost_record(task, exc, self.retries))
        if outcome.fatal:
            self.stop.set()
            raise LLMFatalError(outcome.fatal)
        if outcome.record is None or task.key in self.seen:
            return
        self.seen.add(task.key)
        self.write_back(task, outcome)
        with self.write_lock:
            self.on_record(outcome.record)

    def write_back(self, task: Task, outcome: Outcome) -> None:
        """Write the task's trace and workspace files here, as a local run would have."""
        record = outcome.record
        assert record is not None
        assert self.settings.workspace is not None  # the run store's run.apply always sets it
        workspace = (self.settings.workspace / task.id).resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(WorkspacePathError):  # the node staged it; this copy is for the reports
            stage_attachment(task, workspace, attachment_name(Path(task.file), self.settings) if task.file else None)
        for name, data in outcome.files.items():
            with contextlib.suppress(WorkspacePathError):  # a name from a node never leaves the task's workspace
                replace_file(workspace, name, data)
        record.workspace, record.node, record.files_cut = str(workspace), outcome.node or None, outcome.cut
        if self.settings.cache_dir and outcome.cache_rows:
            open_store(self.settings.cache_dir).add_rows(outcome.cache_rows)
        if self.settings.trace_dir and outcome.trace:
            self.settings.trace_dir.mkdir(parents=True, exist_ok=True)
            text = "".join(line + "\n" for line in outcome.trace)
            trace = self.settings.trace_dir / f"{task.id}.jsonl"
            trace.write_text(text, encoding="utf-8")
            record.trace = str(trace.resolve())  # report finds this run's own trace
        if self.on_event is not None:
            for line in outcome.trace:
                self.on_event(task, trace_event(line))


def attachment(task: Task) -> bytes | None:
    """The task's attached file, which travels with the task to its node."""
    if task.file and Path(task.file).is_file():
        return Path(task.file).read_bytes()
    return None


def trace_event(line: str) -> Event:
    """A trace line back into the Event the console shows."""
    data = json.loads(line)
    data.pop("time", None)
    return Event(str(data.pop("kind", "")), int(data.pop("step", 0) or 0), data)


def lost_record(task: Task, exc: BaseException, retries: int) -> TaskRecord:
    """The record of a task the cluster could not finish on any try, with the reason."""
    cause = getattr(exc, "cause", None) or exc
    reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:300]
    return TaskRecord(key=task.key, id=task.id, index=task.index, task=task.text, status="error",
                      error=f"the Ray cluster did not finish the task (tried up to {retries + 1} times): "
                            f"{type(cause).__name__}: {reason}", level=task.level, expected=task.expected)
