"""--executor ray without a cluster: what travels to the nodes, what comes back, and how the driver keeps it."""

from __future__ import annotations

import json
import pickle
import re
import signal
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import llm
import main
from cache.store import CacheStore
from config import Settings, load_settings
from core.errors import ConfigError
from report.markdown import TaskRecord
from run import ray_node
from run.ray_executor import RayBatchRunner, check_supported, keys_needed
from run.ray_node import Outcome, workspace_files
from tasks.taskfile import Task
from tests.fakes.scripted import ScriptedLLM

CANARIES = {"openai_api_key": "sk-canary-openai-1f", "anthropic_api_key": "sk-ant-canary-2e",
            "gemini_api_key": "canary-gemini-3d", "serper_api_key": "canary-serper-4c"}


class NodeDied(Exception):
    """Stands in for ray.exceptions.NodeDiedError."""


class FakeRay:
    """The two things _collect asks of ray: get() and the exception classes."""

    exceptions = SimpleNamespace(RayError=NodeDied, TaskCancelledError=KeyboardInterrupt)

    def get(self, ref: Any) -> Any:
        if isinstance(ref, BaseException):
            raise ref
        return ref


def runner(tmp_path: Path, **settings: Any) -> tuple[RayBatchRunner, list[TaskRecord]]:
    """A RayBatchRunner whose records land in a list."""
    records: list[TaskRecord] = []
    s = Settings(workspace=tmp_path / "ws", trace_dir=tmp_path / "traces", executor="ray", **settings)
    return RayBatchRunner(s, object(), "openai:gpt-x", records.append), records  # type: ignore[arg-type]


def record(task: Task, answer: str) -> TaskRecord:
    return TaskRecord(key=task.key, id=task.id, index=task.index, task=task.text, status="answered", answer=answer)


def test_no_key_travels_to_the_nodes(tmp_path: Path) -> None:
    """Guarantee: the job every Ray task carries (task arguments show in Ray's dashboard) holds no API key."""
    r, _ = runner(tmp_path, model="openai:gpt-x", search=True,
                  anthropic_base_url="https://me:canary-proxy-pass-5b@proxy.example/v1", **CANARIES)
    job = r.node_job(None, None)
    blob = pickle.dumps(job)
    assert not any(canary.encode() in blob for canary in [*CANARIES.values(), "canary-proxy-pass-5b"])
    assert job.settings.model == "openai:gpt-x" and job.settings.workspace == tmp_path / "ws"
    # What the run uses, not every key it has; a URL with a password is the node's own too.
    assert job.needs_keys == ("openai_api_key", "serper_api_key", "anthropic_base_url")


def test_a_node_reads_its_own_keys_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    r, _ = runner(tmp_path, model="openai:gpt-x", **CANARIES)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-nodes-own")
    settings = ray_node.node_settings(r.node_job(None, None))
    assert settings.openai_api_key == "sk-the-nodes-own" and settings.anthropic_api_key is None


def test_keys_needed_skips_keys_the_driver_does_not_use() -> None:
    s = Settings(model="anthropic:claude-x", search=False, **CANARIES)
    assert keys_needed(s, ["anthropic:claude-x", "gemini:gemini-x"]) == ("anthropic_api_key", "gemini_api_key")
    assert keys_needed(Settings(), ["openai:gpt-x"]) == ()  # a local server without a key: none needed
    papers = Settings(openalex_api_key="oa-key", semantic_scholar_api_key="s2-key")
    assert keys_needed(papers, []) == ("openalex_api_key", "semantic_scholar_api_key")  # search_papers' keys
    assert keys_needed(papers.with_overrides(papers="off"), []) == ()


def test_a_retried_tasks_second_report_is_dropped(tmp_path: Path) -> None:
    r, records = runner(tmp_path)
    task = Task(0, "What is 2+2?", "task-001")
    r._collect(FakeRay(), Outcome(task.key, "node-a", record(task, "4")), task)
    r._collect(FakeRay(), Outcome(task.key, "node-b", record(task, "four")), task)
    assert [(x.answer, x.node) for x in records] == [("4", "node-a")]


def test_a_task_lost_on_every_try_is_recorded_failed_with_the_reason(tmp_path: Path) -> None:
    r, records = runner(tmp_path)
    task = Task(0, "What is 2+2?", "task-001")
    r._collect(FakeRay(), NodeDied("The node with node id abc has died"), task)
    assert records[0].status == "error" and records[0].key == task.key
    assert records[0].error == ("the Ray cluster did not finish the task (tried up to 4 times): "
                                "NodeDied: The node with node id abc has died")


def test_a_cancelled_task_is_not_recorded(tmp_path: Path) -> None:
    r, records = runner(tmp_path)
    task = Task(0, "What is 2+2?", "task-001")
    r._collect(FakeRay(), KeyboardInterrupt(), task)
    assert records == []


def test_the_driver_writes_the_trace_and_workspace_files_that_came_back(tmp_path: Path) -> None:
    r, records = runner(tmp_path)
    task = Task(0, "What is 2+2?", "task-001")
    outcome = Outcome(task.key, "node-a", record(task, "4"), trace=['{"time": 1, "kind": "final", "step": 1}'],
                      files={"out/table.csv": b"a,b\n", "../../escape.txt": b"no"}, cut=["big.bin"])
    r._collect(FakeRay(), outcome, task)
    workspace = tmp_path / "ws" / "task-001"
    assert (workspace / "out" / "table.csv").read_bytes() == b"a,b\n"
    assert not (tmp_path / "escape.txt").exists()  # a name from a node never leaves the task's workspace
    assert (tmp_path / "traces" / "task-001.jsonl").read_text() == '{"time": 1, "kind": "final", "step": 1}\n'
    assert records[0].files_cut == ["big.bin"] and records[0].workspace == str(workspace.resolve())


def test_workspace_files_are_bounded_and_the_cut_ones_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ray_node, "MAX_FILES_BYTES", 10)
    (tmp_path / "small.txt").write_bytes(b"12345")
    (tmp_path / "big.txt").write_bytes(b"x" * 20)
    (tmp_path / "report.pdf").write_bytes(b"%PDF")  # the attachment: the driver has it already
    files, cut = workspace_files(tmp_path, skip="/data/report.pdf")
    assert files == {"small.txt": b"12345"} and cut == ["big.txt"]


def test_cache_entries_recorded_on_a_node_join_the_drivers_cache(tmp_path: Path) -> None:
    node, driver = CacheStore(tmp_path / "node"), CacheStore(tmp_path / "driver")
    node.put_completion("k1", "openai:gpt-x", "t", {"text": "4"}, {"messages": []})
    node.put_tool("t1", "scrape", {"url": "u"}, True, {"status": 200}, b"page")
    driver.put_tool("t1", "scrape", {"url": "u"}, False, {"error": "timeout"}, None)
    driver.add_rows(node.rows())
    assert driver.get_completion("k1") == {"text": "4"}
    entry = driver.get_tool("t1")
    assert entry is not None and entry.ok and entry.body == b"page"  # a success replaces an earlier failure


def test_replay_and_a_missing_ray_are_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="thread executor only"):
        check_supported(Settings(executor="ray", cache_dir=tmp_path, cache_replay=True), None)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if it were not installed
    with pytest.raises(ConfigError, match="pip install -r requirements-ray.txt"):
        check_supported(Settings(executor="ray"), None)
    check_supported(Settings(), None)  # threads: nothing to check


def test_the_executor_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    args = main.parse_args(["t.txt", "--executor", "ray", "--ray-address", "127.0.0.1:6379"])
    settings = main.settings_from_args(args)
    assert (settings.executor, settings.ray_address) == ("ray", "127.0.0.1:6379")
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    monkeypatch.setenv("AGENT_EXECUTOR", "ray")
    assert (load_settings().executor, load_settings().ray_address) == ("ray", "auto")
    monkeypatch.setenv("AGENT_EXECUTOR", "dask")
    with pytest.raises(ConfigError, match="threads or ray"):
        load_settings()
    assert Settings().executor == "threads"  # the thread executor stays the default


def read_note_then_answer(messages: list[Any]) -> str:
    """Like a model: read the attachment, write a note, answer with what the attachment said."""
    observations = [m["content"] for m in messages[2:] if m["role"] == "user" and "Observation" in m["content"]]
    if not observations:
        return 'Thought: read it\nAction: read_file\nAction Input: {"path": "note.txt"}'
    if len(observations) == 1:
        return 'Thought: keep it\nAction: write_file\nAction Input: {"path": "out/summary.txt", "content": "7431"}'
    code = re.search(r"code is (\d+)", observations[0])
    return f"Thought: done\nFinal Answer: {code.group(1) if code else 'unknown'}"


def test_a_task_on_a_node_gets_its_attachment_and_sends_back_record_trace_and_files(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ray_node, "node_name", lambda: "node-x")  # Ray's node id: there is no Ray here
    monkeypatch.setattr(llm, "build_llm", lambda settings, **kwargs: ScriptedLLM([read_note_then_answer]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-nodes-own")
    driver = Settings(model="openai:gpt-x", search=False, workspace=tmp_path / "driver-ws",
                      trace_dir=tmp_path / "driver-traces")
    job = ray_node.NodeJob(driver, "openai:gpt-x", None, ("openai_api_key",))
    task = Task(0, "What is the code in the attached note?", "task-001", file="/on/the/driver/note.txt")
    out = ray_node.run_task(task, b"the code is 7431", job)
    assert out.record is not None and out.record.answer == "7431" and out.node == "node-x"
    assert out.files == {"out/summary.txt": b"7431"}  # the attachment itself is not sent back
    assert [json.loads(line)["kind"] for line in out.trace][-1] == "final"
    assert not (tmp_path / "driver-ws").exists() and not (tmp_path / "driver-traces").exists()  # one writer


def test_a_cluster_address_that_does_not_answer_fails_at_once() -> None:
    from run.ray_executor import reachable

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        reachable(f"127.0.0.1:{port}")
    reachable("auto")  # Ray's own lookup


def test_joining_a_cluster_keeps_the_runs_sigterm_handler() -> None:
    from run.ray_executor import connect

    def ours(signum: int, frame: object) -> None:
        """The run's clean stop (run/stopping.py) stands here."""

    class Ray:
        def init(self, **kwargs: Any) -> None:  # as ray.init does: SIGTERM now exits at once
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))

    previous = signal.signal(signal.SIGTERM, ours)
    try:
        connect(Ray(), Settings(executor="ray"))
        assert signal.getsignal(signal.SIGTERM) is ours  # SIGTERM still stops the batch cleanly (exit 143)
    finally:
        signal.signal(signal.SIGTERM, previous)
