"""How a run ends as a user meets it through main.py: stopped runs say so and why, and every run ends with a
summary (issue 25, items 5 and 6). The model is a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from providers.reachability import Reachability, ServerUnreachableError
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import FakeClock, openai_error, openai_reply

ROOT = Path(__file__).resolve().parent.parent
GUARD = 120.0  # a hung run fails the test instead of hanging it; no assertion depends on speed


def _env(server: LoopbackServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))
           and not k.startswith("AGENT_")}
    return {**env, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1",
            "AGENT_ENV_FILE": "/nonexistent.env", **extra}


def _main(tmp_path: Path, server: LoopbackServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=tmp_path, env=_env(server, **env),
                          capture_output=True, text=True, timeout=GUARD)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _task(req: Request) -> str:
    found = re.search(r"task (\d+)", json.dumps(req.json()))
    return found.group(0) if found else "?"


def test_a_model_server_that_dies_mid_run_is_named_and_every_report_says_stopped(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("\n\n".join(f"task {n}" for n in range(1, 6)) + "\n")
    holder: dict[str, LoopbackServer] = {}

    def answer_two_then_die(req: Request) -> Response:
        if req.method != "POST":  # a probe of the server's context window
            return Response(404, "not found")
        if _task(req) == "task 2":  # the server goes away after this answer, as a crashed vLLM does
            srv = holder["server"]
            threading.Thread(target=lambda: (srv.httpd.shutdown(), srv.httpd.server_close())).start()
            return Response(**{**openai_reply("Final Answer: two").__dict__, "headers": {"Connection": "close"}})
        return openai_reply(f"Final Answer: answer of {_task(req)}")

    server = LoopbackServer(answer_two_then_die)
    holder["server"] = server
    with server:
        proc = _main(tmp_path, server, "tasks.txt", "--model", "openai:m", "-o", "results.md")
    err = proc.stderr
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    # One line names the server's URL and the error, and the run stopped (tasks 3-5 never ran).
    named = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(named) == 1 and server.url in named[0] and "stopped answering (connection refused" in named[0]
    header, *records = _lines(tmp_path / "results.jsonl")
    assert [r["answer"] for r in records] == ["answer of task 1", "two"]  # tasks 3-5 never ran
    assert header["run"] == "stopped" and server.url in header["reason"]
    assert header["resume"].endswith("main.py tasks.txt --model openai:m -o results.md --resume")
    md, page = (tmp_path / "results.md").read_text(), (tmp_path / "results.html").read_text()
    for report in (md, page):
        assert "Run stopped" in report and "Run finished" not in report and "stopped answering" in report
        assert "--resume" in report
    assert f"resume: {header['resume']}" in err


def test_a_key_rejected_mid_run_stops_it_and_the_reports_say_why(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n\ntask 2\n\ntask 3\n")

    def revoke_after_one(req: Request) -> Response:
        if _task(req) == "task 1":
            return openai_reply("Final Answer: one")
        return openai_error(401, "Incorrect API key provided", type_="invalid_api_key")

    with LoopbackServer(revoke_after_one) as server:
        proc = _main(tmp_path, server, "tasks.txt", "--model", "openai:gpt-4.1-mini", "-q")
    assert proc.returncode == 2, proc.stderr
    header, record = _lines(tmp_path / "results.jsonl")
    assert header["run"] == "stopped" and "OPENAI_API_KEY" in header["reason"] and record["status"] == "answered"
    assert "Run stopped" in (tmp_path / "results.md").read_text()
    assert "OPENAI_API_KEY" in (tmp_path / "results.html").read_text()


def test_a_key_rejected_at_the_first_call_leaves_the_previous_report_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n")
    (tmp_path / "results.md").write_text("earlier results\n")
    with LoopbackServer(lambda req: openai_error(401, "Incorrect API key", type_="invalid_api_key")) as server:
        proc = _main(tmp_path, server, "tasks.txt", "--model", "openai:gpt-4.1-mini", "-q")
    assert proc.returncode == 2
    assert (tmp_path / "results.md").read_text() == "earlier results\n"
    assert not (tmp_path / "results.jsonl").exists()


def test_a_finished_run_ends_with_a_summary_of_counts_accuracy_cost_outliers_and_paths(tmp_path: Path) -> None:
    tasks = [{"id": f"q{n}", "question": f"task {n}", "answer": str(n)} for n in range(1, 5)]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))

    def answers(req: Request) -> Response:  # task 4 is answered wrongly; task 3 is the dearest and slowest
        n = int(_task(req).split()[1])
        reply = openai_reply(f"Final Answer: {n if n != 4 else 5}", prompt_tokens=1000 * n, completion_tokens=10)
        return Response(**{**reply.__dict__, "delay": 0.3 if n == 3 else 0.0})

    with LoopbackServer(answers) as server:
        proc = _main(tmp_path, server, "set.jsonl", "--model", "openai:gpt-4.1-mini", "-o", "out/results.md")
    err = proc.stderr
    assert proc.returncode == 0, err
    assert re.search(r"run finished in \d+ s: 4 of 4 tasks · 4 answered", err)
    assert "accuracy: 3/4 = 75.0%" in err
    assert re.search(r"cost \$0\.\d{4} · 10,040 tokens \(10,000 prompt \+ 40 completion\)", err)
    # The slowest is whichever record took longest (q3 waits 0.3 s, but a loaded machine may slow another).
    records = [r for r in _lines(tmp_path / "out/results.jsonl") if r.get("id")]
    slowest = max(records, key=lambda r: r["seconds"])
    assert re.search(rf"slowest: {slowest['id']} \({slowest['seconds']:.1f} s\) · most expensive: q4 \(\$", err)
    assert "reports: out/results.md · out/results.html · out/results.jsonl" in err
    assert "resume:" not in err and "Run finished" in (tmp_path / "out/results.md").read_text()
    assert not _lines(tmp_path / "out/results.jsonl")[0].get("run")  # a finished run's file holds only records


def test_a_server_refusing_for_a_few_seconds_after_it_answered_is_named_as_gone() -> None:
    clock = FakeClock()
    reach = Reachability(clock=clock)
    refused = ConnectionRefusedError(111, "Connection refused")
    with pytest.raises(ServerUnreachableError, match="cannot reach"):  # never answered: at once
        reach.check_attempt(refused, "openai:m")
    reach.succeeded()
    reach.check_attempt(refused, "openai:m")  # answered before: a restart may be under way
    clock.sleep(2.0)
    reach.check_attempt(refused, "openai:m")
    reach.succeeded()  # it came back: the clock starts again
    reach.check_attempt(refused, "openai:m")
    clock.sleep(2.0)
    reach.check_attempt(refused, "openai:m")
    clock.sleep(1.0)
    with pytest.raises(ServerUnreachableError, match=r"stopped answering \(connection refused, every attempt for 3 s"):
        reach.check_attempt(refused, "openai:m")


def test_main_py_report_rebuilds_a_stopped_run_still_saying_why(tmp_path: Path) -> None:
    header = {"run": "stopped", "reason": "Ctrl-C (SIGINT)", "resume": "python main.py tasks.txt --resume",
              "stopped_at": "2026-11-25 18:00 UTC"}
    record = {"key": "k1", "id": "t1", "index": 1, "task": "What is 2+2?", "status": "answered", "answer": "4"}
    (tmp_path / "results.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(record) + "\n")
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "report", "results.jsonl"], cwd=tmp_path,
                          env={**os.environ, "AGENT_ENV_FILE": "/nonexistent.env"}, capture_output=True, text=True,
                          timeout=GUARD)
    assert proc.returncode == 0, proc.stderr
    assert "(1 tasks" in proc.stdout  # the run line is not a task
    for name in ("results.md", "results.html"):
        text = (tmp_path / name).read_text()
        assert "Run stopped 2026-11-25 18:00 UTC: Ctrl-C (SIGINT)" in text
        assert "python main.py tasks.txt --resume" in text


def test_a_resume_that_completes_a_stopped_run_drops_its_stopped_line(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n\ntask 2\n")
    with LoopbackServer(lambda req: openai_reply("Final Answer: ok")) as server:
        assert _main(tmp_path, server, "tasks.txt", "--model", "openai:gpt-4.1-mini", "-q").returncode == 0
        records = (tmp_path / "results.jsonl").read_text()
        stopped = {"run": "stopped", "reason": "SIGTERM", "resume": "python main.py tasks.txt --resume"}
        (tmp_path / "results.jsonl").write_text(json.dumps(stopped) + "\n" + records)  # stopped after the last task
        proc = _main(tmp_path, server, "tasks.txt", "--model", "openai:gpt-4.1-mini", "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "run finished" in proc.stderr
    assert (tmp_path / "results.jsonl").read_text() == records  # the task records, and no stopped line
    for name in ("results.md", "results.html"):
        text = (tmp_path / name).read_text()
        assert "Run finished" in text and "Run stopped" not in text
