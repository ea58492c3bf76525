"""The progress line of a run: where it stands, spend against the cap, ETA; rich on a terminal, plain lines
in a log (issue 25, item 4)."""

from __future__ import annotations

import io
import time

import pytest

from agent import Event
from report.markdown import TaskRecord
from run.console import ConsoleReporter
from run.progress import PlainTicker, Tally, duration
from tasks.taskfile import Task
from tests.fakes.providers import FakeClock


def _record(n: int, status: str = "answered", cost: float = 0.01, sourced: bool = True) -> TaskRecord:
    return TaskRecord(key=f"k{n}", id=f"t{n}", index=n, task=f"task {n}", status=status, cost=cost,
                      prompt_tokens=900, completion_tokens=100, sourced=sourced, steps=2, seconds=1.0)


def _call(cost: float, tokens: int = 500) -> Event:
    return Event("llm_call", 1, {"cost": cost, "prompt_tokens": tokens, "completion_tokens": 0})


def test_the_line_counts_done_answered_failed_unsourced_spend_tokens_and_eta() -> None:
    clock = FakeClock()
    tally = Tally(4, cap=1.0, clock=clock)
    assert tally.line().startswith("0/4 done · 0 answered · 0 failed · 0 without sources · $0.0000 of $1.00 cap")
    assert tally.line().endswith("ETA —")
    tally.on_event("t1", _call(0.004))  # a running task's calls count before it ends ...
    tally.on_event("t2", _call(0.002))
    assert "$0.0060 of $1.00 cap · 1,000 tokens" in tally.line()
    clock.sleep(60)
    tally.on_record(_record(1, cost=0.01))  # ... and its record's figures replace them when it does
    tally.on_record(_record(2, status="error", cost=0.0))
    tally.on_record(_record(3, sourced=False, cost=0.02))
    line = tally.line()
    assert line.startswith("3/4 done · 2 answered · 1 failed · 1 without sources · $0.0300 of $1.00 cap")
    assert "3,000 tokens" in line and "1 m 00 s elapsed" in line and "ETA 20 s" in line


def test_without_a_cap_the_line_shows_the_spend_alone_and_extra_text_shows_a_wait() -> None:
    console = ConsoleReporter(3, stream=io.StringIO())
    note = ["waiting 12 s: openai rate limit"]
    console.tally.extra_from = lambda: note[0]  # as the run's rate limiters say it (RateLimits.note)
    assert "$0.0000 · 0 tokens" in console.tally.line() and "cap" not in console.tally.line()
    assert console.tally.line().endswith("· waiting 12 s: openai rate limit")
    note[0] = ""
    assert "waiting" not in console.tally.line()


def test_without_a_terminal_a_plain_progress_line_every_few_tasks() -> None:
    out = io.StringIO()
    with ConsoleReporter(25, stream=out) as console:
        for n in range(1, 22):
            console.on_record(_record(n))
    progress = [line for line in out.getvalue().splitlines() if line.startswith("progress: ")]
    assert [p.split(" · ")[0] for p in progress] == ["progress: 10/25 done", "progress: 20/25 done"]
    assert "20 answered" in progress[1] and "$0.2000" in progress[1]


def test_without_a_terminal_a_plain_line_also_comes_with_time_when_no_task_ends() -> None:
    lines: list[str] = []
    tally = Tally(5)
    ticker = PlainTicker(tally, lines.append, every_seconds=0.0).start()
    try:
        end = time.monotonic() + 30
        while not lines and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        ticker.stop()
    assert lines and lines[0].startswith("progress: 0/5 done")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_live_status_line_is_drawn_on_stderr_not_stdout(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # the whole line on one row, so that it can be read back
    term = _Terminal()
    task = Task(index=1, text="task 1", id="t1")
    with ConsoleReporter(2, stream=term, cap=0.5) as console:
        console.on_event(task, _call(0.1))
        console.on_record(_record(1, cost=0.1))
    shown = term.getvalue()
    assert "1/2 done · 1 answered · 0 failed · 0 without sources · $0.1000 of $0.5000 cap" in shown
    assert "t1: answered" in shown
    assert capsys.readouterr().out == ""


def test_durations_read_as_people_write_them() -> None:
    assert [duration(s) for s in (4.4, 65, 3725)] == ["4 s", "1 m 05 s", "1 h 02 m"]
