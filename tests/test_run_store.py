"""The run store: every run keeps its own traces, `report RUN` rebuilds each, and old runs are pruned."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import main
from config import Settings
from prompt.history import PastTurn, follow_up_prompt
from run.store import RunStore, public_settings
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply


def two_runs_model(runs: list[int]) -> Any:
    """Each run writes a note, then answers; the thoughts and answers say which run they belong to."""

    def handle(req: Request) -> Response:
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        name = ["alpha", "beta"][runs[0]]
        if turns == 0:
            return openai_reply(f"Thought: {name}-run-thought\nAction: write_file\n"
                                f'Action Input: {{"path": "note.txt", "content": "{name}"}}')
        return openai_reply(f"Thought: done\nFinal Answer: {name.upper()}")

    return handle


def test_two_runs_of_one_task_file_keep_their_own_traces_and_report_rebuilds_each(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("Write a note.\n")
    runs = [0]
    with LoopbackServer(two_runs_model(runs)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]) == 0
        runs[0] = 1
        assert main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]) == 0
    newest, oldest = RunStore(tmp_path / "runs").list_runs()
    info = oldest.info
    assert (info.kind, info.title, info.tasks, info.answered) == ("batch", "tasks.txt", 1, 1)
    assert oldest.trace_dir != newest.trace_dir
    for run, mine, other in ((oldest, "alpha", "beta"), (newest, "beta", "alpha")):
        assert main.main(["report", run.id]) == 0  # by id: rebuilt in the run's own folder from its own traces
        html = (run.dir / "results.html").read_text()
        assert f"{mine}-run-thought" in html and f"{other}-run-thought" not in html
        assert mine.upper() in (run.dir / "results.md").read_text()
    # The older run's records, moved aside by the newer run, still lead to the older run's steps (the data bug).
    assert main.main(["report", "results.prev.jsonl"]) == 0
    html = (tmp_path / "results.prev.html").read_text()
    assert "alpha-run-thought" in html and "beta-run-thought" not in html
    assert main.main(["report", str(newest.dir)]) == 0
    capsys.readouterr()
    assert main.main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert listing.index(newest.id) < listing.index(oldest.id) and str(tmp_path / "results.md") in listing


def _finished(store: RunStore, kind: str = "ask") -> Any:
    run = store.create(kind, "a question", Settings())
    for folder in (run.workspace, run.trace_dir):
        assert folder is not None
        folder.mkdir(parents=True)
        (folder / "file.txt").write_text("x")
    run.finish(tasks=1, answered=1, cost=0.01)
    return run


def test_prune_removes_old_runs_traces_and_workspaces_and_keeps_their_records(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    old, running = _finished(store), store.create("chat", "still going", Settings())
    running.workspace.mkdir(parents=True)
    assert store.prune(timedelta(days=30)) == []  # nothing is 30 days old yet
    later = datetime.now(UTC) + timedelta(days=31)
    assert [r.id for r in store.prune(timedelta(days=30), now=later)] == [old.id]
    assert not old.workspace.exists() and old.trace_dir is not None and not old.trace_dir.exists()
    again = store.open(old.id)
    assert again.info.traces_pruned and again.info.workspace_pruned and again.info.answered == 1
    assert store.open(running.id).info.status == "running"
    assert running.workspace.exists()  # a live run is never pruned ...
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    running.info.pid = gone.pid  # ... but one whose process was killed (it never said it ended) is
    running.save()
    assert [r.id for r in store.prune(timedelta(days=30), now=later)] == [running.id]
    assert not running.workspace.exists()


def test_finished_runs_keep_only_the_newest_workspaces(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", keep_workspaces=2)
    runs = [_finished(store) for _ in range(4)]
    assert [r.workspace.exists() for r in runs] == [False, False, True, True]
    assert all(r.trace_dir is not None and r.trace_dir.exists() for r in runs)  # traces stay until `runs prune`


def test_runs_prune_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _finished(RunStore(tmp_path / "runs"))
    assert main.main(["runs", "prune", "--older-than", "30d"]) == 0
    assert run.workspace.exists() and "of 0 run(s)" in capsys.readouterr().out
    assert main.main(["runs", "prune", "--older-than", "0s"]) == 0
    assert not run.workspace.exists() and "of 1 run(s)" in capsys.readouterr().out
    assert main.main(["runs", "prune", "--older-than", "a month"]) == 2
    assert "is not an age such as 30d" in capsys.readouterr().err


def test_report_of_an_unknown_run_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["report", "20990101"]) == 2
    assert "is not a run in runs" in capsys.readouterr().err


def test_kept_settings_hold_no_credentials() -> None:
    kept = json.dumps(public_settings(Settings(openai_api_key="sk-secret", anthropic_api_key="sk-ant-secret",
                                               openai_base_url="https://user:pw@proxy.example/v1?token=t0k",
                                               mcp_servers=("docs=npx server --token=abc",))))
    assert "secret" not in kept and "pw@" not in kept and "t0k" not in kept and "abc" not in kept
    assert "https://proxy.example/v1" in kept and '"docs"' in kept


def test_kept_settings_hold_no_otlp_headers_and_no_password_in_any_url() -> None:
    kept = json.dumps(public_settings(Settings(otel_headers="Authorization=Basic%20cGs6c2stbGYtMTIz",
                                               otel_endpoint="https://collector:otlp-pass-99@otel.example:4318",
                                               searxng_url="https://me:searx-pass-77@searx.example/")))
    assert "cGs6c2stbGYtMTIz" not in kept and "otlp-pass-99" not in kept and "searx-pass-77" not in kept
    assert "https://otel.example:4318" in kept and "https://searx.example/" in kept


def test_a_follow_up_carries_the_newest_turns_that_fit_the_budget() -> None:
    turns = [PastTurn(f"question {n}?", f"answer {n} " + "x" * 900,
                      [{"n": 1, "url": f"https://example.org/{n}", "title": f"Page {n}", "read": True}])
             for n in range(1, 11)]
    prompt = follow_up_prompt("and in 2020?", turns, 4_000)
    assert "Question 10: question 10?" in prompt and "Question 1: question 1?" not in prompt
    assert "earlier question(s) left out to stay within the context budget" in prompt
    assert len(prompt) < 4_500 and prompt.rstrip().endswith("and in 2020?")
    assert follow_up_prompt("first?", [], 4_000) == "first?"
