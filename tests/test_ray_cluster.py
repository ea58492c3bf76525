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
from tests.fakes.ray_cluster import (
    LocalCluster,
    NumberModel,
    clean_env,
    connected,
    number_tasks,
    ray_available,
    remove_tree,
    short_temp_dir,
    take_turns,
)

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-node-key"
HEAD_CANARY, WORKER_CANARY = "sk-canary-head-env-5e1f", "sk-canary-worker-dotenv-93ab"  # the nodes' own keys
DRIVER_DOTENV_CANARY, DRIVER_ENV_CANARY = "sk-canary-driver-dotenv-77c2", "sk-ant-canary-driver-env-0d4e"
pytestmark = pytest.mark.skipif(ray_available() is not None, reason=str(ray_available()))


@pytest.fixture(scope="module")
def shared() -> Iterator[LocalCluster]:
    """The module's cluster, with a dashboard: the head's key in its environment, the worker's in its own .env."""
    root = short_temp_dir()
    (root / "worker.env").write_text(f"OPENAI_API_KEY={WORKER_CANARY}\n", encoding="utf-8")
    try:
        with LocalCluster(root / "c", env={"OPENAI_API_KEY": HEAD_CANARY},
                          worker_env={"AGENT_ENV_FILE": str(root / "worker.env")}, dashboard=True) as c:
            yield c
    finally:
        remove_tree(root)


def start_run(tmp_path: Path, cluster: LocalCluster, server: LoopbackServer, count: int, *extra: str,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """main.py over `count` number tasks on the cluster, as a user starts it."""
    (tmp_path / "tasks.txt").write_text(number_tasks(count), encoding="utf-8")
    full_env = clean_env(tmp_path / "home", AGENT_ENV_FILE=str(tmp_path / "no.env"))
    full_env |= {"OPENAI_API_KEY": KEY} if env is None else env
    cmd = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--executor", "ray",
           "--ray-address", cluster.address, "--model", "openai:gpt-x", "--base-url", server.url + "/v1",
           "--no-search", "--concurrency", "2", *extra]
    return subprocess.Popen(cmd, cwd=tmp_path, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def records(tmp_path: Path) -> list[dict[str, Any]]:
    """The task records of results.jsonl (empty before the first; a stopped run's first line is not one)."""
    path = tmp_path / "results.jsonl"
    if not path.is_file():
        return []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if "key" in line]


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


def test_the_run_cost_cap_holds_across_both_nodes(tmp_path: Path, shared: LocalCluster) -> None:
    # $1 per million tokens each way: a call may cost (prompt + 8192) / 1e6 dollars and costs about $0.005.
    (tmp_path / "prices.json").write_text(json.dumps({"gpt-x": [1.0, 1.0]}), encoding="utf-8")
    with LoopbackServer(NumberModel(latency=0.2, completion_tokens=5000)) as server:
        run = start_run(tmp_path, shared, server, 30, "--max-run-cost", "0.05", "--max-tokens", "8192",
                        env={"OPENAI_API_KEY": KEY, "AGENT_PRICES_FILE": str(tmp_path / "prices.json")})
        code, _, err = finish(run)
    lines = records(tmp_path)
    answered = [r for r in lines if r["status"] == "answered"]
    # Every call reserved its worst case from the one shared cap: a cap per node would let both spend $0.05.
    assert sum(r["cost"] or 0 for r in lines) <= 0.05, err[-2000:]
    assert 0 < len(answered) < 30 and "not started" in err and "--max-run-cost" in err
    assert code == 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_cancels_the_cluster_tasks_and_writes_the_stopped_report(tmp_path: Path, shared: LocalCluster,
                                                                        signum: int, code: int) -> None:
    cluster = shared
    with LoopbackServer(NumberModel(latency=0.5)) as server:
        run = start_run(tmp_path, cluster, server, 40)
        wait_for_records(tmp_path, run, 3)
        run.send_signal(signum)  # Ctrl-C, or SIGTERM from a scheduler
        exit_code, _, err = finish(run)
    assert exit_code == code, err[-3000:]
    assert "stopped:" in err and "--resume continues" in err
    lines = records(tmp_path)
    assert 3 <= len(lines) < 40 and len({r["key"] for r in lines}) == len(lines)
    assert f"{len(lines)} of 40" in err
    assert (tmp_path / "results.md").is_file()
    with connected(cluster.address) as ray:  # the joined cluster is left running, and the cancelled tasks
        assert sum(1 for n in ray.nodes() if n["Alive"]) == 2  # give their CPUs back
        deadline = time.monotonic() + 60
        while ray.available_resources().get("CPU", 0) < 2:
            assert time.monotonic() < deadline, f"tasks still hold CPUs: {ray.available_resources()}"
            time.sleep(0.2)


def test_a_node_without_the_key_fails_the_run_at_the_start_naming_node_and_key(tmp_path: Path,
                                                                              shared: LocalCluster) -> None:
    model = NumberModel()
    with LoopbackServer(model) as server:  # the nodes hold OpenAI keys only; the run needs Anthropic's
        run = start_run(tmp_path, shared, server, 3, "--model", "anthropic:claude-x",
                        env={"ANTHROPIC_API_KEY": DRIVER_ENV_CANARY})
        code, _, err = finish(run)
    assert code == 2
    assert err.count("has no ANTHROPIC_API_KEY in its environment or .env") == 2 and "(node " in err
    assert "docs/cluster.md" in err and not records(tmp_path) and model.keys == []  # no task ran


def test_attack_no_canary_key_reaches_ray_metadata_logs_or_dashboard(tmp_path: Path, shared: LocalCluster) -> None:
    """Guarantee: API keys (the driver's .env and environment, the nodes' own) never reach Ray's task arguments,
    runtime_env, logs, or the dashboard's listings; each node calls the model with its own key."""
    from ray.util import state

    (tmp_path / "driver.env").write_text(f"OPENAI_API_KEY={DRIVER_DOTENV_CANARY}\n", encoding="utf-8")
    model = NumberModel(latency=0.3)
    with LoopbackServer(model) as server:
        run = start_run(tmp_path, shared, server, 8, env={"AGENT_ENV_FILE": str(tmp_path / "driver.env"),
                                                          "ANTHROPIC_API_KEY": DRIVER_ENV_CANARY})
        code, _, err = finish(run)
    assert code == 0, err[-3000:]
    assert set(model.keys) == {f"Bearer {HEAD_CANARY}", f"Bearer {WORKER_CANARY}"}  # each node its own key
    listings = [state.list_tasks(address=shared.dashboard_url, detail=True, limit=1000),
                state.list_actors(address=shared.dashboard_url, detail=True),
                state.list_jobs(address=shared.dashboard_url),
                state.list_workers(address=shared.dashboard_url, detail=True, limit=1000),
                state.list_nodes(address=shared.dashboard_url, detail=True)]
    shown = json.dumps(listings, default=str)
    assert "run_task" in shown  # the listings do show the run's tasks
    for canary in (HEAD_CANARY, WORKER_CANARY, DRIVER_DOTENV_CANARY, DRIVER_ENV_CANARY):
        assert canary not in shown
        assert shared.files_holding(canary.encode()) == []  # every log and session file of both nodes


def test_the_rate_limit_and_a_429_pause_hold_for_the_whole_cluster(monkeypatch: pytest.MonkeyPatch,
                                                                   shared: LocalCluster) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from run.ray_limits import start_limits

    monkeypatch.chdir(ROOT)  # Ray's workers import from the driver's directory, as they do under main.py
    with connected(shared.address) as ray:
        actor = start_limits(ray)
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        turns = ray.remote(take_turns)
        on = [turns.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
              for node in nodes]
        assert len(on) == 2
        assert ray.get(on[0].remote(actor, 1)) == [0.0]  # a request from the first node goes at once
        wait, reason = ray.get(actor.try_acquire.remote("openai", 3, None, 100))
        assert wait > 15 and reason == "--rpm 3"  # the next one anywhere waits its turn: --rpm 3 is one in 20 s
        ray.get(on[1].remote(actor, 0, pause=600))  # a 429 on the second node ...
        wait, reason = ray.get(actor.try_acquire.remote("openai", 3, None, 100))
        assert wait > 500 and reason == "openai:gpt-x answered 429"  # ... pauses every node


def processes_mentioning(text: str) -> list[str]:
    """Command lines of the live processes that name `text` (a Ray temp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                found.append(f"{entry.name}: {cmd[:200]}")
    return found


def test_a_local_cluster_the_run_started_is_shut_down_at_its_end(tmp_path: Path) -> None:
    root = short_temp_dir()  # the run's own Ray instance keeps its files (and sockets) here
    try:
        with LoopbackServer(NumberModel()) as server:
            (tmp_path / "tasks.txt").write_text(number_tasks(3), encoding="utf-8")
            env = clean_env(root / "home", OPENAI_API_KEY=KEY, AGENT_ENV_FILE=str(tmp_path / "no.env"),
                            RAY_TMPDIR=str(root))
            del env["RAY_AUTH_MODE"]  # Ray's default for a cluster ray.init starts: token auth (in the private HOME)
            run = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--executor", "ray",
                                    "--model", "openai:gpt-x", "--base-url", server.url + "/v1", "--no-search"],
                                   cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            code, _, err = finish(run)
        assert code == 0, err[-3000:]
        assert len(records(tmp_path)) == 3
        assert any(root.iterdir())  # the run did start its own Ray instance there ...
        deadline = time.monotonic() + 30
        while (left := processes_mentioning(str(root))) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == []  # ... and none of its processes outlives the run
    finally:
        for line in processes_mentioning(str(root)):  # never leave one behind, even when the test fails
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
        remove_tree(root)


def test_a_node_killed_mid_run_loses_and_doubles_no_task(tmp_path: Path, shared: LocalCluster) -> None:
    # Last in the module: it kills the shared cluster's second node.
    cluster = shared
    model = NumberModel(latency=0.3)
    with LoopbackServer(model) as server:
        run = start_run(tmp_path, cluster, server, 40)
        wait_for_records(tmp_path, run, 6)
        cluster.nodes[1].kill_raylet()  # the second node dies as a crashed machine would
        code, _, err = finish(run)
    assert code == 0, err[-3000:]
    lines = records(tmp_path)
    assert len(lines) == 40 and len({r["key"] for r in lines}) == 40  # every task once
    assert all(r["status"] == "answered" and r["answer"] == str(r["index"] - 1) for r in lines), [
        r["error"] for r in lines if r["error"]][:3]
    assert len({r["node"] for r in lines}) == 2  # both nodes ran tasks before one died
    assert (tmp_path / "results.md").is_file() and (tmp_path / "results.html").is_file()
    traces = [p for p in (tmp_path / "runs").rglob("*.jsonl") if p.parent.name == "traces"]  # the run's own
    assert len(traces) == 40  # the driver wrote every trace
    assert set(model.keys) == {f"Bearer {HEAD_CANARY}", f"Bearer {WORKER_CANARY}"}  # each node its own key
