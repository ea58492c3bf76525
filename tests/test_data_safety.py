"""A batch run never loses or overwrites the user's files: main.py as a subprocess against a loopback model."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_error, openai_reply

ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai:gpt-4.1-mini"


def _turns(req: Request) -> int:
    return sum(1 for m in req.json().get("messages", []) if m.get("role") == "assistant")


def one_step(req: Request) -> Response:
    """list_files once, then answer: every task takes 1 step and 2 model calls."""
    if _turns(req) == 0:
        return openai_reply("Thought: look\nAction: list_files\nAction Input: {}", 10, 2)
    return openai_reply("Thought: done\nFinal Answer: ok", 10, 2)


@pytest.fixture
def model(server: LoopbackServer) -> Iterator[LoopbackServer]:
    server.handler = one_step
    yield server


def cli(server: LoopbackServer, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run main.py in the test's folder against the loopback server; -q unless told otherwise."""
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full_env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1", "AGENT_MODEL": MODEL, **env})
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=Path.cwd(), env=full_env,
                          input=stdin, capture_output=True, text=True, timeout=120)


def snapshot(*paths: str) -> dict[str, bytes | None]:
    return {p: Path(p).read_bytes() if Path(p).exists() else None for p in paths}


def records(path: str = "results.jsonl") -> list[dict[str, object]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


# ---- 1: the report never lands on the tasks, an attachment or a directory ---------------------------------

@pytest.mark.parametrize("task_file, output", [
    ("tasks.txt", "tasks.txt"),
    ("set.jsonl", "set.md"),  # the records twin of set.md is set.jsonl: the question set itself
    ("set.jsonl", "notes.md"),  # an attachment
    ("set.jsonl", "notes.jsonl"),  # its twin is notes.records.jsonl: allowed (checked below)
    ("tasks.txt", "out"),  # a directory
    ("results.prev.jsonl", "results.md"),  # where a re-run would move the previous records
])
def test_the_report_never_overwrites_tasks_attachments_or_a_directory(model: LoopbackServer, task_file: str,
                                                                      output: str) -> None:
    Path("tasks.txt").write_text("A task\n")
    Path("notes.md").write_text("attached notes\n")
    Path("set.jsonl").write_text(json.dumps({"question": "Q?", "answer": "A", "file": "notes.md"}) + "\n")
    Path("results.prev.jsonl").write_text(Path("set.jsonl").read_text())
    Path("out").mkdir()
    before = snapshot("tasks.txt", "notes.md", "set.jsonl", "results.prev.jsonl")
    proc = cli(model, task_file, "-o", output)
    if output == "notes.jsonl":  # its twin is notes.records.jsonl: nothing of the user's is at risk
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and len(proc.stderr.splitlines()) == 1
    assert snapshot("tasks.txt", "notes.md", "set.jsonl", "results.prev.jsonl") == before and not model.requests


# ---- 2: failures before a task finishes touch nothing; re-runs keep the previous pair -----------------------

def test_configuration_errors_leave_the_previous_report_untouched(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    assert cli(model, "tasks.txt").returncode == 0
    before = snapshot("results.md", "results.jsonl")
    Path("bad_tools.py").write_text("TOOLS = []\n")
    assert cli(model, "tasks.txt", "--tools", "bad_tools.py").returncode == 2
    model.handler = lambda req: openai_error(401, "Incorrect API key provided", type_="invalid_api_key")
    assert cli(model, "tasks.txt").returncode == 2
    assert snapshot("results.md", "results.jsonl") == before
    assert not Path("results.prev.md").exists() and not Path("results.prev.jsonl").exists()


def test_a_plain_rerun_keeps_the_previous_pair_as_prev(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    assert cli(model, "tasks.txt").returncode == 0
    before = snapshot("results.md", "results.jsonl")
    proc = cli(model, "tasks.txt")
    assert proc.returncode == 0
    assert "kept as results.prev.md, results.prev.jsonl" in proc.stderr
    assert snapshot("results.prev.md", "results.prev.jsonl") == {"results.prev.md": before["results.md"],
                                                                 "results.prev.jsonl": before["results.jsonl"]}
    assert len(records()) == 1


def test_resume_with_an_edited_task_file_keeps_the_other_records(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("Alpha\n\nBeta\n")
    assert cli(model, "tasks.txt").returncode == 0
    Path("tasks.txt").write_text("Beta\n\nGamma\n")
    proc = cli(model, "tasks.txt", "--resume", "-q")
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["task"] for r in records()) == ["Alpha", "Beta", "Gamma"]  # type: ignore[type-var]
    assert "also keeps 1 record(s) of tasks that are not in this run's task file" in Path("results.md").read_text()
    proc = cli(model, "tasks.txt", "--resume")
    assert "1 record(s) in results.jsonl are of tasks not in this task file" in proc.stderr


# ---- 3: one run per report -----------------------------------------------------------------------------------

def test_a_second_run_on_the_same_report_exits_2_naming_the_first(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    model.handler = lambda req: Response(200, b"", delay=60)  # the first run hangs in its model call
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.url + "/v1", AGENT_MODEL=MODEL)
    first = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "-q"], env=env,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not model.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        second = cli(model, "tasks.txt")
        assert second.returncode == 2
        assert f"being written by another run (pid {first.pid} on " in second.stderr
        assert len(second.stderr.splitlines()) == 1
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        first.stderr.close()  # type: ignore[union-attr]
    model.handler = one_step  # kill -9 never leaves the lock held
    assert cli(model, "tasks.txt").returncode == 0
    assert [p.name for p in Path.cwd().iterdir() if p.name.startswith(".results")] == []


# ---- 4: attachments stay inside the question set's folder ----------------------------------------------------

def test_an_attachment_outside_the_set_folder_is_refused(model: LoopbackServer) -> None:
    Path("sets").mkdir()
    Path("sets/set.jsonl").write_text(json.dumps({"question": "Q?", "file": "../../../etc/passwd"}) + "\n")
    proc = cli(model, "sets/set.jsonl", "-o", "out.md")
    assert proc.returncode == 2 and "line 1: attachment '../../../etc/passwd' is outside" in proc.stderr
    assert not model.requests and not Path("workspace").exists() and not Path("runs").exists()


# ---- 5: modes, symlinks, stale temp files --------------------------------------------------------------------

def test_modes_are_kept_and_a_symlinked_report_is_written_through(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    Path("real").mkdir()
    Path("real/report.md").write_text("old\n")
    Path("real/report.md").chmod(0o644)
    Path("results.md").symlink_to("real/report.md")
    Path("results.jsonl").write_text("")
    Path("results.jsonl").chmod(0o640)
    assert cli(model, "tasks.txt", "--resume").returncode == 0
    assert Path("results.md").is_symlink() and "| answered |" in Path("real/report.md").read_text()
    assert stat.S_IMODE(Path("real/report.md").stat().st_mode) == 0o644
    assert stat.S_IMODE(Path("results.jsonl").stat().st_mode) == 0o640


def test_new_reports_follow_the_umask(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    old = os.umask(0o022)
    try:
        assert cli(model, "tasks.txt").returncode == 0
    finally:
        os.umask(old)
    for name in ("results.md", "results.jsonl"):
        assert stat.S_IMODE(Path(name).stat().st_mode) == 0o644, name


def test_temp_files_of_a_killed_run_are_removed(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")
    stale = [Path(".results.md.0badc0de.tmp"), Path(".results.jsonl.0badc0de.tmp"), Path(".results.md.a1b2_c3d")]
    for p in stale:
        p.write_text("half a report")
    Path(".keep.me.tmp").write_text("not ours")
    assert cli(model, "tasks.txt").returncode == 0
    assert not any(p.exists() for p in stale) and Path(".keep.me.tmp").exists()


# ---- 6: a clean workspace per run -----------------------------------------------------------------------------

def test_each_run_gets_a_clean_workspace_and_earlier_ones_are_kept(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("A task\n")

    def write_then_look(req: Request) -> Response:
        steps = ['Action: list_files\nAction Input: {}',
                 'Action: write_file\nAction Input: {"path": "mine.txt", "content": "x"}', "Final Answer: ok"]
        return openai_reply(steps[min(_turns(req), 2)])

    model.handler = write_then_look
    assert cli(model, "tasks.txt").returncode == 0
    first = Path(str(records()[0]["workspace"]))
    assert cli(model, "tasks.txt").returncode == 0
    second = Path(str(records()[0]["workspace"]))
    # runs/<run-id>/workspace/<task-id>: each run's own folder in the run store
    assert first != second and first.parents[2] == second.parents[2] == Path("runs").resolve()
    assert (first / "mine.txt").exists() and (second / "mine.txt").exists()
    trace = [json.loads(x) for x in Path(records()[0]["trace"]).read_text().splitlines()]
    listing = next(e for e in trace if e["kind"] == "tool_call" and e["tool"] == "list_files")
    assert "mine.txt" not in listing["observation"]  # the first run's file is not in the second run's view


# ---- 7 and the smaller ones ------------------------------------------------------------------------------------

def test_a_repeated_task_in_a_txt_file_is_a_clear_error(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("Same task\n\nOther\n\nSame task\n")
    proc = cli(model, "tasks.txt")
    assert proc.returncode == 2 and "tasks.txt: line 5: same task as line 1" in proc.stderr
    assert not model.requests


def test_dash_reads_the_tasks_from_stdin(model: LoopbackServer) -> None:
    proc = cli(model, "-", "-o", "piped.md", stdin="From a pipe\n\nAnd another\n")
    assert proc.returncode == 0, proc.stderr
    assert [r["task"] for r in records("piped.jsonl")] == ["From a pipe", "And another"]


def test_one_step_is_singular_and_a_resumed_header_names_every_model(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("Alpha\n\nBeta\n")
    model.handler = lambda req: (openai_reply("Final Answer: at once") if "Alpha" in json.dumps(req.json()) else
                                 openai_error(400, "context too long for this request"))
    proc = cli(model, "tasks.txt", "--no-trace", "-q")
    assert proc.returncode == 1
    text = Path("results.md").read_text()
    assert "answered · 1 step · 1 model call ·" in text and "1 steps" not in text and "1 model calls" not in text
    model.handler = one_step
    assert cli(model, "tasks.txt", "--resume", AGENT_MODEL="openai:gpt-4.1").returncode == 0
    assert "models `openai:gpt-4.1`, `openai:gpt-4.1-mini`" in Path("results.md").read_text()


def test_a_corrupt_records_line_is_reported_on_resume(model: LoopbackServer) -> None:
    Path("tasks.txt").write_text("Alpha\n\nBeta\n")
    assert cli(model, "tasks.txt").returncode == 0
    lines = Path("results.jsonl").read_text().splitlines()
    Path("results.jsonl").write_text(lines[0] + "\n" + lines[1][:40] + "\n")  # a torn second line
    proc = cli(model, "tasks.txt", "--resume")
    assert proc.returncode == 0
    assert "warning: results.jsonl line(s) 2 are not valid records and were skipped" in proc.stderr
    assert len(records()) == 2 and "resuming: 1 finished task(s) kept, 1 to run" in proc.stderr


def test_help_example_models_are_the_documented_defaults() -> None:
    readme = (ROOT / "docs" / "models.md").read_text()
    order = readme.split("Without `--model`:", 1)[1].split("; else", 1)[0]
    defaults = [m for m in order.replace(",", " ").replace("`", " ").split() if ":" in m.strip(":")]
    assert len(defaults) == 3
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "--help"], capture_output=True, text=True,
                          timeout=60)
    help_text = " ".join(proc.stdout.split())
    assert all(m in help_text for m in defaults), (defaults, help_text)


def test_check_setup_checks_the_workspace_without_creating_it() -> None:
    import check_setup
    from config import Settings

    check = check_setup.check_workspace(Settings(workspace=Path("workspace")))
    assert check.mark == check_setup.OK and "will be created" in check.detail
    assert not Path("workspace").exists()
    Path("blocked").write_text("a file, not a folder")
    assert check_setup.check_workspace(Settings(workspace=Path("blocked/ws"))).mark == check_setup.FAIL
