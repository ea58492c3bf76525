"""What a run says it spent, through main.py as a user runs it: the cost cap's lines, the task lines, the summary
and `main.py runs` give one figure; a task the cap stopped says so (also with no step and no answer); a research
run the cap stopped is listed `stopped`; a run that died shows n/a, never $0.0000."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from core.text import money
from tests.fakes.cli import GUARD, ROOT, clean_env, run_main
from tests.fakes.deep_research import Sub, World, page
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens (providers/pricing.py)
CALL_COST = (1000 * 0.40 + 100 * 1.60) / 1_000_000  # what one scripted call below costs: $0.00056
ACTION = 'Thought: keep notes\nAction: write_file\nAction Input: {"path": "notes.txt", "content": "more"}'


def note_taker(answer_last: bool = True) -> Any:
    """A model that keeps taking notes; told it has no steps left it answers (or, answer_last=False, acts again)."""

    def handle(req: Request) -> Response:
        if req.method != "POST":  # model listing, server probes
            return Response(404, "not found")
        last = req.json()["messages"][-1]["content"]
        text = "Final Answer: best effort" if answer_last and "no steps left" in last else ACTION
        return Response(200, openai_reply(text, 1000, 100).body)

    return handle


def records(folder: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]
    return [line for line in lines if "key" in line]  # a stopped run's file starts with its run line


def runs_line(folder: Path) -> str:
    """The one run `main.py runs` lists in this folder."""
    listed = run_main(folder, "runs", env=clean_env())
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stdout.splitlines()[1:]
    return line


def test_a_run_stopped_by_its_cost_cap_says_one_figure_for_what_was_spent(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("Keep taking notes.\n\nTake more notes.\n")
    with LoopbackServer(note_taker()) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--max-steps", "50", "--max-run-cost", "0.004",
                        env=clean_env(server, AGENT_MAX_TOKENS="200"))
    err = proc.stderr
    assert proc.returncode == 1, err
    [record] = records(tmp_path)  # the second task was not started
    calls, spent = record["llm_calls"], money(record["cost"])
    assert record["status"] == "budget" and record["answer"] == "best effort" and calls >= 3
    assert spent == money(calls * CALL_COST)  # every call counted once, the final answer's too
    task_line = next(line for line in err.splitlines() if line.startswith("[1/2]"))
    # The cap's line says what was left before the final answer (every earlier call settled) and what a step
    # needed; the task's cost, the final answer included, is the one figure of what was spent.
    left = money(0.004 - (calls - 1) * CALL_COST)
    assert (f"budget (the run's cost cap of $0.0040 (--max-run-cost) could not pay for another step: {left} left, "
            "a step with room for the final answer needs at least $") in task_line
    assert f" · {spent} · " in task_line
    assert f"cost {spent} of the $0.0040 cap" in err
    assert "stopped: the run's cost cap of $0.0040 (--max-run-cost) left too little for another step\n" in err
    assert "1 task(s) not started: the run's cost cap of $0.0040 (--max-run-cost) left too little" in err
    assert not re.search(r"\$[\d.]+ spent", err)  # no figure of a moment that later calls made untrue
    line = runs_line(tmp_path)
    assert " stopped " in line and f" {spent} " in line


def test_a_task_the_cap_stops_before_its_first_step_names_the_cap_not_a_missing_answer(tmp_path: Path) -> None:
    # The first step (its prompt with room for the final answer's) does not fit $0.0020; the final answer alone
    # does, and the model acts instead of answering.
    (tmp_path / "tasks.txt").write_text("Keep taking notes.\n")
    with LoopbackServer(note_taker(answer_last=False)) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--max-run-cost", "0.002",
                        env=clean_env(server, AGENT_MAX_TOKENS="200"))
    [record] = records(tmp_path)
    assert record["status"] == "budget" and record["answer"] is None and record["llm_calls"] == 1
    task_line = next(line for line in proc.stderr.splitlines() if line.startswith("[1/1]"))
    assert task_line.startswith("[1/1] task-001-")
    assert (": budget (the run's cost cap of $0.0020 (--max-run-cost) could not pay for another step: $0.0020 "
            "left, a step with room for the final answer needs at least $") in task_line
    assert f" · 0 steps · 1,100 tokens · {money(CALL_COST)} · " in task_line
    assert record["error"].endswith("; the model gave no final answer after the last step")
    assert "$0.0000" not in proc.stderr


QUESTION = "How are the Rhine and the Danube used for shipping?"
PLAN = ["How much freight does the Rhine carry?", "How long is the navigable Danube?"]


def test_a_research_run_the_cost_cap_stopped_is_listed_stopped(tmp_path: Path) -> None:
    costly = Sub(["/rhine"], "The Rhine carried 187 million tonnes of freight in 2022 [1].", prompt_tokens=100_000)
    w = World(QUESTION, PLAN, {q: costly for q in PLAN},  # $0.04 a call: the second sub-question never starts
              {"/rhine": page("Rhine freight", "The Rhine carried 187 million tonnes of freight in 2022.")})
    env = clean_env(SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0", AGENT_SEARCH="0", AGENT_MAX_RETRIES="0",
                    OPENAI_API_KEY="sk-test")
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", QUESTION, "-o", "report.md", "--model", MODEL, "--base-url",
                        server.url + "/v1", "--max-run-cost", "0.05", "--concurrency", "1", env=env)
    assert proc.returncode == 1, proc.stderr
    assert (tmp_path / "report.md").read_text().startswith("# Partial research report:")
    line = runs_line(tmp_path)
    assert " research " in line and " stopped " in line and " finished " not in line


def test_a_run_that_died_shows_its_cost_as_unknown(tmp_path: Path) -> None:
    asked, release = threading.Event(), threading.Event()

    def stuck(req: Request) -> Response:  # the model's reply never comes before the process is killed
        if req.method != "POST":
            return Response(404, "not found")
        asked.set()
        release.wait(GUARD)
        return openai_reply("Final Answer: too late")

    with LoopbackServer(stuck) as server:
        env = clean_env(server, AGENT_SEARCH="0")
        with subprocess.Popen([sys.executable, str(ROOT / "main.py"), "ask", "Anything?", "--model",
                               "openai:local-model"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) as proc:
            try:
                assert asked.wait(GUARD), "the model was never asked"
                proc.send_signal(signal.SIGKILL)  # no word on how it ended: the run store's entry says running
            finally:
                proc.wait(GUARD)
        release.set()
    line = runs_line(tmp_path)
    assert " died " in line and " n/a " in line and "$0.0000" not in line


def test_empty_replies_billed_before_a_fallback_answered_count_against_the_cap(tmp_path: Path) -> None:
    # The main model's every reply is empty but billed (1,000 + 100 tokens, as OpenAI bills one); the fallback
    # does the work. The task's cost counts both: so must the cap, or the task spends twice what it allows.
    def handle(req: Request) -> Response:
        if req.method != "POST":
            return Response(404, "not found")
        body = req.json()
        if body["model"] == "gpt-4.1-mini":
            return Response(200, openai_reply("", 1000, 100).body)
        last = body["messages"][-1]["content"]
        return Response(200, openai_reply("Final Answer: best effort" if "no steps left" in last else ACTION,
                                          1000, 100).body)

    (tmp_path / "tasks.txt").write_text("Keep taking notes.\n")
    with LoopbackServer(handle) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--fallback-model", "openai:gpt-4.1-nano",
                        "--max-steps", "50", "--max-cost", "0.006",
                        env=clean_env(server, AGENT_MAX_TOKENS="200", AGENT_MAX_RETRIES="0"))
    [record] = records(tmp_path)
    assert record["status"] == "budget" and record["answer"] == "best effort", proc.stderr
    assert record["llm_calls"] >= 6  # each main-model reply billed, each fallback reply answered
    assert record["cost"] <= 0.006
