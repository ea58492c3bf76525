"""--executor ray on a real two-node Ray cluster on loopback: nothing lost or doubled, Ctrl-C, shared caps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import LoopbackServer
from tests.fakes.ray_cluster import (LocalCluster, NumberModel, number_tasks, ray_available, remove_tree,
                                     short_temp_dir)

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-node-key"
pytestmark = pytest.mark.skipif(ray_available() is not None, reason=str(ray_available()))


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A head and a worker node, one CPU each, holding the model's key in their environment."""
    root = short_temp_dir()  # Ray's socket paths under it must stay within 107 bytes
    try:
        with LocalCluster(root, env={"OPENAI_API_KEY": KEY}) as c:
            yield c
    finally:
        remove_tree(root)


def start_run(tmp_path: Path, cluster: LocalCluster, server: LoopbackServer, count: int, *extra: str,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """main.py over `count` number tasks on the cluster, as a user starts it."""
    (tmp_path / "tasks.txt").write_text(number_tasks(count), encoding="utf-8")
    full_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    full_env |= {"OPENAI_API_KEY": KEY, "AGENT_ENV_FILE": str(tmp_path / "no.env"), "RAY_USAGE_STATS_ENABLED": "0"}
    full_env |= env or {}
    cmd = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--executor", "ray",
           "--ray-address", cluster.address, "--model", "openai:gpt-x", "--base-url", server.url + "/v1",
           "--no-search", "--concurrency", "2", *extra]
    return subprocess.Popen(cmd, cwd=tmp_path, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def records(tmp_path: Path) -> list[dict[str, Any]]:
    """The lines of results.jsonl (empty before the first record)."""
    path = tmp_path / "results.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def wait_for_records(tmp_path: Path, run: subprocess.Popen[str], count: int, limit: float = 120.0) -> None:
    """Wait until the report holds `count` records (the run still going)."""
    deadline = time.monotonic() + limit
    while len(records(tmp_path)) < count:
        assert run.poll() is None, f"the run ended early: {run.communicate()}"
        assert time.monotonic() < deadline, "no records came"
        time.sleep(0.1)


def finish(run: subprocess.Popen[str], limit: float = 300.0) -> tuple[int, str, str]:
    """The run's exit code, stdout and stderr (killed with its group if it hangs)."""
    try:
        out, err = run.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        out, err = run.communicate()
        pytest.fail(f"the run hung: {err[-2000:]}")
    return run.returncode, out, err


def test_a_node_killed_mid_run_loses_and_doubles_no_task(tmp_path: Path, cluster: LocalCluster) -> None:
    model = NumberModel(latency=0.3)
    with LoopbackServer(model) as server:
        run = start_run(tmp_path, cluster, server, 40)
        wait_for_records(tmp_path, run, 6)
        cluster.nodes[1].kill_raylet()  # the second node dies as a crashed machine would
        code, _, err = finish(run)
    assert code == 0, err[-3000:]
    lines = records(tmp_path)
    assert len(lines) == 40 and len({r["key"] for r in lines}) == 40  # every task once
    assert all(r["status"] == "answered" and r["answer"] == str(r["index"] - 1) for r in lines)
    assert len({r["node"] for r in lines}) == 2  # both nodes ran tasks before one died
    assert (tmp_path / "results.md").is_file() and (tmp_path / "results.html").is_file()
    assert len(list((tmp_path / "traces").glob("*.jsonl"))) == 40  # the driver wrote every trace
    assert set(model.keys) - {""} == {f"Bearer {KEY}"}  # the nodes called the model with their own key


def test_ctrl_c_cancels_the_cluster_tasks_and_writes_the_stopped_report(tmp_path: Path,
                                                                        cluster: LocalCluster) -> None:
    import ray

    with LoopbackServer(NumberModel(latency=0.5)) as server:
        run = start_run(tmp_path, cluster, server, 40)
        wait_for_records(tmp_path, run, 3)
        run.send_signal(signal.SIGINT)
        code, _, err = finish(run)
    assert code == 130, err[-3000:]
    assert "stopped:" in err and "--resume continues" in err
    lines = records(tmp_path)
    assert 3 <= len(lines) < 40 and len({r["key"] for r in lines}) == len(lines)
    assert f"{len(lines)} of 40" in err
    assert (tmp_path / "results.md").is_file()
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    try:  # the joined cluster is left running, and the cancelled tasks give their CPUs back
        assert sum(1 for n in ray.nodes() if n["Alive"]) == 2
        deadline = time.monotonic() + 60
        while ray.available_resources().get("CPU", 0) < 2:
            assert time.monotonic() < deadline, f"tasks still hold CPUs: {ray.available_resources()}"
            time.sleep(0.2)
    finally:
        ray.shutdown()


def test_the_run_cost_cap_holds_across_both_nodes(tmp_path: Path, cluster: LocalCluster) -> None:
    # $1 per million tokens each way: a call may cost (prompt + 8192) / 1e6 dollars and costs about $0.005.
    (tmp_path / "prices.json").write_text(json.dumps({"gpt-x": [1.0, 1.0]}), encoding="utf-8")
    with LoopbackServer(NumberModel(latency=0.2, completion_tokens=5000)) as server:
        run = start_run(tmp_path, cluster, server, 30, "--max-run-cost", "0.05", "--max-tokens", "8192",
                        env={"AGENT_PRICES_FILE": str(tmp_path / "prices.json")})
        code, _, err = finish(run)
    lines = records(tmp_path)
    answered = [r for r in lines if r["status"] == "answered"]
    # Every call reserved its worst case from the one shared cap: a cap per node would let both spend $0.05.
    assert sum(r["cost"] or 0 for r in lines) <= 0.05, err[-2000:]
    assert 0 < len(answered) < 30 and "not started" in err and "--max-run-cost" in err
    assert code == 1
