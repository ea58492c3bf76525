"""`n/a` wherever a price is unknown (issue 49, item 6): a model without a known price never shows a guessed
`$0.0000`, also for a task whose calls all failed (nothing billed, at a price nobody knows)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_error, openai_reply


def test_failed_tasks_the_summary_and_runs_show_n_a_for_a_model_without_a_price(tmp_path: Path) -> None:
    lock, calls = threading.Lock(), []

    def first_answers(req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "")
        with lock:
            calls.append(req)
            if len(calls) == 1:
                return openai_reply("Final Answer: ok", model="mystery-model")
        return openai_error(400, "the server cannot do that")

    (tmp_path / "tasks.txt").write_text("one\n\ntwo\n\nthree\n")
    with LoopbackServer(first_answers) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", "openai:mystery-model", "--concurrency", "1",
                        env=clean_env(server, AGENT_MAX_RETRIES="0", AGENT_SEARCH="0"))
    assert proc.returncode == 1, proc.stderr
    assert "$0.0000" not in proc.stderr
    task_lines = [line for line in proc.stderr.splitlines() if re.match(r"\[\d/3\] task-", line)]
    assert len(task_lines) == 3 and all(" · n/a · " in line for line in task_lines), task_lines
    assert "error (openai:mystery-model rejected the request (400)" in proc.stderr
    assert re.search(r"^cost n/a \(3 of 3 tasks without a known price\)", proc.stderr, re.MULTILINE)
    listed = run_main(tmp_path, "runs")
    assert re.search(r"finished\s+1/3\s+n/a\s+tasks\.txt", listed.stdout), listed.stdout
    assert json.loads(run_main(tmp_path, "runs", "--json").stdout)["cost"] is None  # the web app's list: n/a
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["cost"] for r in records if "task" in r][1:] == [None, None]
