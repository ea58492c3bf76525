"""--replay-trace re-runs a task from its trace's recorded completions and names the first divergence."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
STEPS = [
    'Thought: save a note\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "hello"}',
    "Thought: read it back\nAction: python\nAction Input:\n```python\nprint(open('notes.txt').read().upper())\n```",
    "Thought: done\nFinal Answer: The note says HELLO.",
]


def _handle(req: Request) -> Response:
    turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
    return openai_reply(STEPS[min(turns, 2)], 100, 20)


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A recorded run's trace; afterwards no connection at all is possible."""
    (tmp_path / "tasks.txt").write_text("Save a note and read it back.\n")
    with LoopbackServer(_handle) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main.main(["tasks.txt", "--model", MODEL, "-q"]) == 0
    record = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])

    def refuse(sock: socket.socket, address: object) -> None:
        raise AssertionError(f"--replay-trace connected to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return Path(record["trace"])


def test_an_unchanged_run_matches_its_trace(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = trace.read_text()
    report_before = Path("results.md").read_text()
    assert main.main(["tasks.txt", "--model", MODEL, "-q", "--replay-trace", str(trace)]) == 0
    assert "replay-trace: no divergence: all 3 recorded model calls matched" in capsys.readouterr().err
    assert trace.read_text() == before and Path("results.md").read_text() == report_before
    replayed = json.loads(trace.with_name(f"{trace.stem}.replay.jsonl").read_text().splitlines()[0])
    assert replayed["answer"] == "The note says HELLO." and replayed["status"] == "answered"
    assert list((trace.parent / "replayed").glob(f"*/{trace.name}"))  # replayed/<run-id>/: never over the recorded


def test_a_prompt_change_is_reported_at_the_first_step_that_differs(trace: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main.main(["tasks.txt", "--model", MODEL, "-q", "--replay-trace", str(trace), "--answer-style", "concise"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"replay-trace: the run diverges from {trace.name} at step 1 (model call 1, llm_call): message 1 " \
           "(system) differs from the closest recorded call" in err


def test_a_trace_of_no_listed_task_is_a_usage_error(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("other.txt").write_text("A different task.\n")
    assert main.main(["other.txt", "--model", MODEL, "-q", "--replay-trace", str(trace)]) == 2
    assert "no task in other.txt matches trace" in capsys.readouterr().err
