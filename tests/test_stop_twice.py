"""After one Ctrl-C or two (a second one while a model call is in flight, or two SIGINTs close together as
`timeout` sends them), results.html is written beside results.md, titled stopped, and the run store keeps every
finished task: `runs` lists it as stopped with its counts and `report RUN` finds its records (issue 49, item 7)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.test_stop_signals import GUARD, _records, _start, _task_of, _until

ROOT = Path(__file__).resolve().parent.parent


def _in_flight(req: Request) -> Response:
    """Quick tasks answer at once; a slow task's model call takes far longer than the test (it is in flight)."""
    if "quick" in _task_of(req):
        return openai_reply(f"Thought: easy\nFinal Answer: {_task_of(req)} answered")
    return dataclasses.replace(openai_reply("Final Answer: too late"), delay=GUARD)


def _main(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_ENV_FILE": "/nonexistent.env"}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=GUARD)


@pytest.mark.parametrize("together", [False, True], ids=["second-while-a-call-is-in-flight", "two-close-together"])
def test_a_run_stopped_at_once_keeps_its_html_report_and_its_run_store_records(tmp_path: Path,
                                                                                together: bool) -> None:
    with LoopbackServer(_in_flight) as server:
        proc = _start(tmp_path, server, "--concurrency", "1")
        _until(lambda: len(_records(tmp_path)) == 2 and len(server.requests) >= 3, proc)
        os.killpg(proc.pid, signal.SIGINT)
        if together:
            time.sleep(0.01)
        else:
            _until(lambda: "stopping:" in (tmp_path / "stderr.txt").read_text(), proc)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=GUARD)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 130, err
    assert "stopped at once" in err and "Traceback" not in err
    html = (tmp_path / "results.html").read_text()
    assert re.search(r'class="run-state stopped"><b>Run stopped [^<]*Ctrl-C \(SIGINT\)', html), html[-3000:]
    assert "another quick task answered" in html
    listed = json.loads(_main(tmp_path, "runs", "--json").stdout)
    assert (listed["status"], listed["tasks"], listed["answered"]) == ("stopped", 7, 2), listed
    again = _main(tmp_path, "report", listed["id"], "-o", "again.md")
    assert again.returncode == 0, again.stderr
    report = (tmp_path / "again.md").read_text()
    assert "quick task answered" in report and "another quick task answered" in report
