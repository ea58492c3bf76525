"""Every line the CLI prints is true (issue 39, items 4, 7 and 8): task-file formats and encodings, the README's
my_tools.py beside main.py, and the smaller promises, through main.py as a subprocess where a user meets them."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import check_setup
from tests.fakes.cli import ROOT, clean_env, refuse_all, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_error, openai_reply
from tests.test_check_setup_search import DeadDDGS

MODEL = "openai:gpt-4.1-mini"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --- item 4: a format the loader does not read is refused; a .csv with a question column is read -----------

@pytest.mark.parametrize("name, content", [
    ("tasks.yaml", "tasks:\n  - What is the capital of France?\n"),
    ("tasks.xml", "<tasks><task>What is the capital of France?</task></tasks>\n"),
    ("tasks.xlsx", "PK\x03\x04 not really a workbook"),
    ("cities.csv", "city,country\nLyon,France\nOslo,Norway\n"),  # a table without a question column
])
def test_a_task_file_the_loader_cannot_read_is_refused_in_one_line(tmp_path: Path, name: str, content: str) -> None:
    (tmp_path / name).write_text(content)
    with LoopbackServer(refuse_all) as server:
        proc = run_main(tmp_path, name, "--model", MODEL, env=clean_env(server))
    assert proc.returncode == 2 and len(_lines(proc.stderr)) == 1 and proc.stderr.startswith(f"error: {name}: ")
    assert (".csv or .tsv with a question column" in proc.stderr or "has no question column (its header: city, "
            "country)" in proc.stderr)
    assert server.requests == [] and sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_csv_with_a_question_column_is_a_question_set(tmp_path: Path) -> None:
    (tmp_path / "set.csv").write_text('id,question,answer\nq1,What is 6 x 7?,42\nq2,"Capital of France, please?",\n')
    asked: list[str] = []

    def answer(req: Request) -> Response:
        asked.append(next(m["content"] for m in req.json()["messages"] if m["role"] == "user"))
        return openai_reply("Final Answer: 42")

    with LoopbackServer(answer) as server:
        proc = run_main(tmp_path, "set.csv", "--model", MODEL, "-q", env=clean_env(server))
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["id"], r["task"], r.get("expected"), r.get("correct")) for r in records] == [
        ("q1", "What is 6 x 7?", "42", True), ("q2", "Capital of France, please?", None, None)]
    assert proc.returncode == 0 and any("Capital of France, please?" in a for a in asked)


def test_a_utf16_task_file_is_read_and_a_latin1_one_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "u16.txt").write_bytes("Qu'est-ce que la béchamel ?\n\nWhat is 6 x 7?\n".encode("utf-16"))
    (tmp_path / "latin.txt").write_bytes("What is 6 x 7?\n\nQu'est-ce que la béchamel ?\n".encode("latin-1"))
    utf16 = run_main(tmp_path, "u16.txt", "--model", MODEL, "--estimate")
    latin = run_main(tmp_path, "latin.txt", "--model", MODEL, "--estimate")
    assert utf16.returncode == 0 and utf16.stdout.startswith("2 task(s), model"), utf16.stderr
    assert latin.returncode == 2 and _lines(latin.stderr) == [
        "error: latin.txt: is not UTF-8 text (line 3 has byte 0xe9: a Latin-1 or Windows-1252 file?); save it as "
        "UTF-8"]


# --- item 7: the README's my_tools.py beside main.py keeps the README's test command green -----------------

def test_the_readmes_tools_module_beside_main_py_keeps_the_layering_test_green(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for name in subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    readme = (ROOT / "README.md").read_text()
    module = next(b for b in readme.split("```python\n")[1:] if "def tools(settings, workspace)" in b).split("```")[0]
    assert "python main.py tasks.txt --tools my_tools.py" in readme
    (copy / "my_tools.py").write_text(module)  # where the README's `--tools my_tools.py` invites it
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layers.py"],
                          cwd=copy, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]


# --- item 8: the smaller ones ---------------------------------------------------------------------------

def test_a_401_from_a_base_url_server_names_that_server_not_openai(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n")
    with LoopbackServer(lambda req: openai_error(401, "bad token", type_="invalid_api_key")) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", "openai:local", env=clean_env(server))
    assert proc.returncode == 2 and len(_lines(proc.stderr)) == 1
    assert f"OPENAI_API_KEY was rejected (401) by the server at {server.url}/v1: bad token" in proc.stderr
    assert "OpenAI" not in proc.stderr


def test_report_of_a_missing_records_file_says_no_such_file(tmp_path: Path) -> None:
    proc = run_main(tmp_path, "report", "results.jsonl")
    assert proc.returncode == 2 and len(_lines(proc.stderr)) == 1
    assert proc.stderr.startswith("error: results.jsonl: no such file") and "is not a run" not in proc.stderr


@pytest.mark.parametrize("args, line", [
    (["tasks.txt", "--modle", "x"], "main.py: error: unrecognized arguments: --modle x (did you mean --model?); "
                                    "see main.py --help"),
    (["rnus"], "error: rnus: no such task file or command (did you mean `main.py runs`?)"),
    (["runs", "--jsn"], "main.py runs: error: unrecognized arguments: --jsn (did you mean --json?); "
                        "see main.py runs --help"),
    (["tasks.txt", "-q", "-v"], "main.py: error: argument -v/--verbose: not allowed with argument -q/--quiet; "
                                "see main.py --help"),
])
def test_a_usage_error_is_one_line_with_the_nearest_flag_or_command(tmp_path: Path, args: list[str],
                                                                    line: str) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n")
    proc = run_main(tmp_path, *args)
    assert proc.returncode == 2 and _lines(proc.stderr) == [line]


def test_a_stopped_reports_count_says_of_how_many(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n\ntask 2\n\ntask 3\n")

    def revoke_after_one(req: Request) -> Response:
        if "task 1" in json.dumps(req.json()):
            return openai_reply("Final Answer: one")
        return openai_error(401, "Incorrect API key provided", type_="invalid_api_key")

    with LoopbackServer(revoke_after_one) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, env=clean_env(server))
    assert proc.returncode == 2 and "wrote results.md (1 of 3 tasks)" in proc.stderr
    assert "1 of 3 tasks · 1 answered" in (tmp_path / "results.md").read_text()
    assert "<b>1 of 3</b><span>tasks</span>" in (tmp_path / "results.html").read_text()


def test_a_second_ctrl_c_with_nothing_finished_says_there_is_no_report(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("task 1\n\ntask 2\n")
    asked, release = threading.Event(), threading.Event()

    def hold(req: Request) -> Response:
        asked.set()
        release.wait(60)
        return openai_reply("Final Answer: late")

    with LoopbackServer(hold) as server:
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", MODEL],
                                cwd=tmp_path, env=clean_env(server), stderr=subprocess.PIPE, text=True)
        try:
            assert asked.wait(60)
            proc.send_signal(signal.SIGINT)
            while "stopping:" not in (line := proc.stderr.readline() if proc.stderr else "") and line:
                pass
            proc.send_signal(signal.SIGINT)
            err = proc.communicate(timeout=60)[1]
        finally:
            release.set()
            proc.kill() if proc.poll() is None else None
    assert proc.returncode == 130
    assert "stopped at once; no task had finished, so there is no report" in err
    assert "the report holds" not in err and not (tmp_path / "results.md").exists()


def test_check_setup_names_a_failed_duckduckgo_once(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("tools.web.search._default_ddgs_factory", lambda timeout: DeadDDGS())
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9/v1")
    assert check_setup.main([]) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if "  search " in line)
    assert line.count("DuckDuckGo search failed") == 1 and "dns error" in line


def test_a_long_question_is_kept_whole_once_not_in_every_report(tmp_path: Path) -> None:
    question = "What is this? " + "word " * 200_000  # about 1 MB
    (tmp_path / "tasks.txt").write_text(question + "\n")
    with LoopbackServer(lambda req: openai_reply("Final Answer: words")) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--context-budget", "2000000", "-q",
                        env=clean_env(server))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "results.jsonl").read_text())["task"] == question.strip()
    for report in ("results.md", "results.html"):
        text = (tmp_path / report).read_text()
        assert len(text) < 50_000 and "more characters: the whole task is in the records file" in text


def test_the_docs_name_every_trace_event_and_the_env_file_setting() -> None:
    events = set(re.findall(r'Event\("(\w+)"', (ROOT / "agent.py").read_text()))
    traces = (ROOT / "docs" / "task-files-and-results.md").read_text()
    assert events and {e for e in events if f"`{e}`" not in traces} == set()
    assert "AGENT_ENV_FILE" in (ROOT / "config.py").read_text()  # read by find_dotenv_file, outside _ENV
    assert "`AGENT_ENV_FILE`" in (ROOT / "docs" / "configuration.md").read_text()
    assert "one-token" not in (ROOT / "README.md").read_text()  # the probe leaves a thinking model room to answer
