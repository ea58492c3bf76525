"""Every line the CLI prints is true and every flag does what it says (issue 39, items 1, 2, 3, 5 and 6),
through main.py as a subprocess against a loopback OpenAI-compatible server that records what it receives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import clean_env, refuse_all, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response, free_port, gone_after_one_answer
from tests.fakes.providers import openai_error, openai_reply

PRICED = "openai:gpt-4.1-mini"  # in the price table
UNPRICED = "openai:local-model"  # a local server's model: no known price


def _tasks(tmp_path: Path, n: int = 2) -> None:
    (tmp_path / "tasks.txt").write_text("\n\n".join(f"task {i}" for i in range(1, n + 1)) + "\n")


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --- item 1: ask and chat take only the flags they honour; --estimate calls no model ------------------------

@pytest.mark.parametrize("command, stdin", [(["ask", "What is 6 x 7?"], None), (["chat"], "What is 6 x 7?\n")])
def test_ask_and_chat_estimate_print_the_price_and_call_no_model(tmp_path: Path, command: list[str],
                                                                 stdin: str | None) -> None:
    with LoopbackServer(refuse_all) as server:
        proc = run_main(tmp_path, *command, "--estimate", "--model", PRICED, "--max-cost", "0.05",
                        env=clean_env(server), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == ("1 question, model openai:gpt-4.1-mini, $0.40 in / $1.60 out per "
                                           "million tokens")
    assert "worst case: $0.0500 (1 x --max-cost $0.0500" in proc.stdout
    assert "6 x 7" not in proc.stdout and server.requests == []  # not answered: nothing was asked of the model
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # and no run was kept


@pytest.mark.parametrize("flag", [["--concurrency", "2"], ["--executor", "ray"], ["--ray-address", "auto"],
                                  ["--replay-trace", "t.jsonl"]])
def test_ask_refuses_the_flags_only_a_task_file_has_in_one_line(tmp_path: Path, flag: list[str]) -> None:
    with LoopbackServer(refuse_all) as server:
        proc = run_main(tmp_path, "ask", "What is 6 x 7?", *flag, "--model", PRICED, env=clean_env(server))
    assert proc.returncode == 2 and proc.stdout == ""
    assert _lines(proc.stderr) == [f"main.py ask: error: unrecognized arguments: {' '.join(flag)} ({flag[0]} is a "
                                   "flag of `main.py TASKS`, not of `main.py ask`); see main.py ask --help"]
    assert server.requests == [] and not (tmp_path / "runs").exists()


# --- item 2: a setup error at the first model call is one line, exit 2, nothing written, no run kept -------

def _model_not_found(req: Request) -> Response:
    return openai_error(404, "The model `nope` does not exist", code="model_not_found")


def _key_rejected(req: Request) -> Response:
    return openai_error(401, "Incorrect API key provided", type_="invalid_api_key")


@pytest.mark.parametrize("handler, names", [(_model_not_found, "--model / AGENT_MODEL"),
                                            (_key_rejected, "Check OPENAI_API_KEY")])
def test_a_setup_error_at_the_first_call_is_one_line_and_leaves_nothing(tmp_path: Path, handler: Any,
                                                                        names: str) -> None:
    _tasks(tmp_path)
    with LoopbackServer(handler) as server:
        proc = run_main(tmp_path, "tasks.txt", "-o", "r.md", "--model", "openai:nope", env=clean_env(server))
    assert proc.returncode == 2
    assert len(_lines(proc.stderr)) == 1 and proc.stderr.startswith("error: ") and names in proc.stderr
    assert "wrote" not in proc.stderr and "resume" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.txt"]  # no report, no runs/ folder
    listing = run_main(tmp_path, "runs")
    assert listing.stdout.startswith("no runs kept")


def test_an_unreachable_server_names_only_its_own_base_url_variable(tmp_path: Path) -> None:
    _tasks(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = run_main(tmp_path, "tasks.txt", "--model", "openai:m", "--base-url", url)
    assert proc.returncode == 2 and len(_lines(proc.stderr)) == 1
    assert "connection refused" in proc.stderr and "(--base-url or OPENAI_BASE_URL)" in proc.stderr
    assert "ANTHROPIC_BASE_URL" not in proc.stderr and "OLLAMA_BASE_URL" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.txt"]


def test_a_server_that_dies_before_the_first_task_ends_says_no_report_was_written(tmp_path: Path) -> None:
    _tasks(tmp_path)
    server = gone_after_one_answer(
        openai_reply('Thought: note\nAction: write_file\nAction Input: {"path": "a.txt", "content": "x"}'))
    with server:
        proc = run_main(tmp_path, "tasks.txt", "-o", "r.md", "--model", "openai:m", env=clean_env(server))
    assert proc.returncode == 2
    assert _lines(proc.stderr)[-1].startswith("error: the model server for openai:m at")
    assert "stopped answering" in proc.stderr and "wrote" not in proc.stderr and "resume" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.txt"]


def test_ask_with_a_rejected_key_is_one_line_and_keeps_no_run(tmp_path: Path) -> None:
    with LoopbackServer(_key_rejected) as server:
        proc = run_main(tmp_path, "ask", "What is 6 x 7?", "--model", PRICED, env=clean_env(server))
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(_lines(proc.stderr)) == 1 and "OPENAI_API_KEY was rejected (401)" in proc.stderr
    assert not (tmp_path / "runs").exists()


# --- item 3: a task's line carries its reason; reasons are whole sentences; ask's failures go to stderr ----

def _format_errors(req: Request) -> Response:
    return openai_reply("Thought: hmm\nAction:\n")


def test_each_failed_tasks_line_says_why(tmp_path: Path) -> None:
    _tasks(tmp_path, 1)
    with LoopbackServer(_format_errors) as server:
        formats = run_main(tmp_path, "tasks.txt", "--model", PRICED, "-o", "a.md", env=clean_env(server))
        (tmp_path / "long.txt").write_text("word " * 2000 + "\n")  # over 1,000 tokens even with the compact prompt
        budget = run_main(tmp_path, "long.txt", "--model", PRICED, "-o", "b.md", "--context-budget", "1000",
                          env=clean_env(server))
    assert formats.returncode == budget.returncode == 1, formats.stderr + budget.stderr
    format_line = next(line for line in formats.stderr.splitlines() if line.startswith("[1/1]"))
    budget_line = next(line for line in budget.stderr.splitlines() if line.startswith("[1/1]"))
    assert ": error (the model did not follow the ReAct format 3 times in a row) · 3 steps" in format_line
    assert re.search(r": error \(the system prompt and the task alone need about [\d,]+ tokens, over the context "
                     r"budget of 1,000\) · 0 steps", budget_line), budget_line
    record = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])
    assert record["error"].endswith("last problem: `Action:` must be followed by a tool name.")  # a whole sentence


def test_a_task_at_its_time_limit_says_so_on_its_line(tmp_path: Path) -> None:
    _tasks(tmp_path, 1)
    with LoopbackServer(lambda req: Response(**{**openai_reply("Final Answer: late").__dict__, "delay": 3.0})) as srv:
        proc = run_main(tmp_path, "tasks.txt", "--model", PRICED, "--task-timeout", "1", env=clean_env(srv))
    assert proc.returncode == 1
    line = next(line for line in proc.stderr.splitlines() if line.startswith("[1/1]"))
    assert ": time_limit (time limit of 1 s reached" in line


def test_ask_writes_a_failure_to_stderr_not_as_the_answer(tmp_path: Path) -> None:
    with LoopbackServer(_format_errors) as server:
        proc = run_main(tmp_path, "ask", "-q", "What is 6 x 7?", "--model", PRICED, env=clean_env(server))
    assert proc.returncode == 1 and proc.stdout == ""  # `ask ... > answer.txt` saves nothing
    assert proc.stderr.startswith("(no answer: error: the model did not follow the ReAct format")


# --- item 5: an unknown price is n/a everywhere, never $0.0000 --------------------------------------------

def test_an_unknown_price_is_na_everywhere_and_the_cap_says_it_cannot_be_enforced(tmp_path: Path) -> None:
    _tasks(tmp_path, 11)  # without a terminal, a progress line comes after 10 tasks
    with LoopbackServer(lambda req: openai_reply("Final Answer: 42", model="local-model")) as server:
        env = clean_env(server)
        proc = run_main(tmp_path, "tasks.txt", "--model", UNPRICED, "--max-run-cost", "2", "--cache", "c", env=env)
        estimate = run_main(tmp_path, "tasks.txt", "--model", UNPRICED, "--max-cost", "0.01", "--estimate", env=env)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "no price is known for openai:local-model: --max-cost / --max-run-cost cannot be enforced" in err
    assert "$0.0000" not in err and "of the $2.00 cap" not in err and "$2.00 cap" not in err
    assert re.search(r"\[1/11\] task-001-\w+: answered · 1 step · 15 tokens · n/a ·", err)
    assert "progress: 10/11 done · 10 answered · 0 failed · 10 without sources · n/a · " in err
    assert "cost n/a (11 of 11 tasks without a known price) · 165 tokens" in err
    runs = run_main(tmp_path, "runs")
    assert "n/a" in runs.stdout and "$0.0000" not in runs.stdout
    page = (tmp_path / "results.html").read_text()
    assert "max $" not in page and "n/a for 11 without a known price" in page
    assert "worst case: unknown (no known price, so --max-cost / --max-run-cost cannot be enforced)" in estimate.stdout
    assert "$0.1100" not in estimate.stdout  # 11 x --max-cost would be a dollar figure no cap can hold
    stats = run_main(tmp_path, "cache", "stats", "--dir", "c")
    assert "model calls: 11 (recorded cost n/a, 11 without a known price)" in stats.stdout


# --- item 6: every validation message names the flag, its variable and the bad value -----------------------

@pytest.mark.parametrize("args, env, message", [
    (["--max-cost", "-1"], {}, "error: --max-cost / AGENT_MAX_COST must be more than 0, not -1"),
    (["--max-run-cost", "0"], {}, "error: --max-run-cost / AGENT_MAX_RUN_COST must be more than 0, not 0"),
    ([], {"AGENT_MAX_STEPS": "0"}, "error: --max-steps / AGENT_MAX_STEPS must be at least 1, not 0"),
    (["--concurrency", "0"], {}, "error: --concurrency / AGENT_CONCURRENCY must be at least 1, not 0"),
    ([], {"AGENT_CONCURRENCY": "two"}, "error: AGENT_CONCURRENCY='two' is not valid for --concurrency / "
                                       "AGENT_CONCURRENCY: expected a whole number"),
    ([], {"AGENT_ANSWER_STYLE": "long"}, "error: --answer-style / AGENT_ANSWER_STYLE must be plain or concise, "
                                         "not 'long'"),
    (["--max-cost", "abc"], {}, "main.py: error: argument --max-cost (AGENT_MAX_COST): expected a number, not 'abc'"),
    # int('٣') is 3 and '²'.isdigit() is True: numbers take ASCII digits only (issue 47)
    (["--max-steps", "٣"], {}, "main.py: error: argument --max-steps (AGENT_MAX_STEPS): expected a whole number, "
                              "not '٣'"),
    (["--max-steps", "²"], {}, "main.py: error: argument --max-steps (AGENT_MAX_STEPS): expected a whole number, "
                              "not '²'"),
    (["--task-timeout", "1_0"], {}, "main.py: error: argument --task-timeout (AGENT_TASK_TIMEOUT): expected a number, "
                                    "not '1_0'"),
    ([], {"AGENT_MAX_STEPS": "²"}, "error: AGENT_MAX_STEPS='²' is not valid for --max-steps / AGENT_MAX_STEPS: "
                                   "expected a whole number"),
    ([], {"AGENT_TASK_TIMEOUT": "１.５"}, "error: AGENT_TASK_TIMEOUT='１.５' is not valid for --task-timeout / "
                                        "AGENT_TASK_TIMEOUT: expected a number"),
])
def test_a_bad_value_names_its_flag_variable_and_value(tmp_path: Path, args: list[str], env: dict[str, str],
                                                        message: str) -> None:
    _tasks(tmp_path)
    with LoopbackServer(refuse_all) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", PRICED, *args, env=clean_env(server, **env))
    assert proc.returncode == 2 and len(_lines(proc.stderr)) == 1, proc.stderr
    assert proc.stderr.startswith(message), proc.stderr
    assert server.requests == [] and sorted(p.name for p in tmp_path.iterdir()) == ["tasks.txt"]
