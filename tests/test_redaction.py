"""A configured key never travels as it is (issue 52.9-10): one written in a document or on a page is redacted
before the model, the terminal, the traces and the document index see it; a provider error that echoes the key
is redacted wherever it is printed or stored; check_setup says whether a key is set, never its characters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import check_setup
from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_error, openai_reply, openai_script

MODEL = "openai:gpt-4.1-mini"
OPENAI_KEY = "sk-proj-Planted0penAIKey7c41e9d2b8"
SERPER_KEY = "serper-planted-key-33a9f0c1d7e5"
FORMS = [OPENAI_KEY, OPENAI_KEY.removeprefix("sk-proj-"), OPENAI_KEY.lower(), SERPER_KEY]


def leaked(text: str | bytes) -> list[str]:
    """The forms of the configured keys found in a text (the key, without its prefix, in lower case)."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return [form for form in FORMS if form in data]


def every_file(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_a_key_in_a_document_or_a_page_reaches_neither_the_model_nor_the_terminal_traces_or_index(
        tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "setup.md").write_text(f"# Setup\n\nThe harbour API key is {OPENAI_KEY} (also "
                                   f"{OPENAI_KEY.removeprefix('sk-proj-').upper()}) and the quay budget is 7.5 "
                                   "million euros.\n")
    bodies: list[str] = []

    def model(req: Request) -> Response:
        bodies.append(req.body.decode())
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        steps = [('search_docs', {"query": "harbour API key quay budget"}), ("scrape", {"url": f"{web.url}/config"})]
        if turns < len(steps):
            tool, args = steps[turns]
            return openai_reply(f"Thought: read it.\nAction: {tool}\nAction Input: {json.dumps(args)}")
        return openai_reply("Thought: done.\nFinal Answer: The quay budget is 7.5 million euros.")

    page = f"Deployment notes. SERPER_API_KEY={SERPER_KEY} and the cargo figure is 38.6 million tonnes."
    (tmp_path / "tasks.txt").write_text("What is the quay budget?\n")
    with LoopbackServer(lambda req: Response(200, page, content_type="text/plain")) as web, \
            LoopbackServer(model) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--docs", str(docs), "-v", "--ignore-robots",
                        env=clean_env(server, OPENAI_API_KEY=OPENAI_KEY, SERPER_API_KEY=SERPER_KEY, AGENT_SEARCH="0",
                                      SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0"))
    assert proc.returncode == 0, proc.stderr
    assert len(bodies) == 3 and all(leaked(body) == [] for body in bodies)
    last = json.loads(bodies[-1])["messages"]
    seen = "\n".join(str(m["content"]) for m in last)
    assert "The harbour API key is [redacted OPENAI_API_KEY] (also [redacted OPENAI_API_KEY])" in seen
    assert "SERPER_API_KEY=[redacted SERPER_API_KEY] and the cargo figure" in seen
    assert leaked(proc.stdout + proc.stderr) == [] and "[redacted OPENAI_API_KEY]" in proc.stderr  # -v shows it
    runs = tmp_path / "runs"
    traces = [p for p in every_file(runs) if "traces" in p.parts]
    assert traces and all(leaked(p.read_bytes()) == [] for p in traces)
    [index] = list((runs / "docindex").glob("*.sqlite"))
    assert leaked(index.read_bytes()) == [] and b"[redacted OPENAI_API_KEY]" in index.read_bytes()
    for report in ("results.jsonl", "results.md", "results.html"):
        assert leaked((tmp_path / report).read_text()) == []
    found = run_main(tmp_path, "docs", "search", str(docs), "harbour key",
                     env=clean_env(OPENAI_API_KEY=OPENAI_KEY))
    assert found.returncode == 0 and "redacted" in found.stdout and leaked(found.stdout) == []


def test_a_provider_error_echoing_the_key_is_redacted_in_the_terminal_records_and_traces(tmp_path: Path) -> None:
    echo = f"Incorrect API key provided: {OPENAI_KEY}"
    script = openai_script(openai_error(500, f"upstream failed for {OPENAI_KEY}", type_="server_error"),
                           openai_error(400, echo))
    (tmp_path / "tasks.txt").write_text("What is the quay budget?\n")
    with LoopbackServer(script) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL,
                        env=clean_env(server, OPENAI_API_KEY=OPENAI_KEY, AGENT_SEARCH="0", AGENT_MAX_RETRIES="1",
                                      AGENT_MAX_RETRY_WAIT="0", AGENT_RETRY_DEADLINE="30"))
    assert len(script.served) == 2  # the 500 was retried, the 400 ended the task
    assert proc.returncode == 1, proc.stderr
    assert leaked(proc.stdout + proc.stderr) == []
    record = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    assert "Incorrect API key provided: [redacted OPENAI_API_KEY]" in record["error"]
    stored = [p for p in every_file(tmp_path) if p.suffix in (".jsonl", ".md", ".html", ".json")]
    assert any("traces" in p.parts for p in stored)
    assert [p.name for p in stored if leaked(p.read_bytes())] == []

    with LoopbackServer(openai_script(openai_error(401, echo))) as server:  # a run-stopping error: one line
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "-q",
                        env=clean_env(server, OPENAI_API_KEY=OPENAI_KEY, AGENT_SEARCH="0"))
    assert proc.returncode == 2
    assert "OPENAI_API_KEY was rejected (401)" in proc.stderr and "[redacted OPENAI_API_KEY]" in proc.stderr
    assert leaked(proc.stdout + proc.stderr) == []


def test_check_setup_names_each_key_and_whether_it_is_set_and_redacts_a_provider_echo(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(openai_script(openai_error(401, f"Incorrect API key provided: {OPENAI_KEY}"))) as server:
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("SERPER_API_KEY", SERPER_KEY)
        assert check_setup.main(["--model", MODEL]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[2]: " ".join(line.split()[3:]) for line in out.splitlines() if line.split()[1:2] == ["key"]}
    assert rows == {"OPENAI_API_KEY": f"set (for the model {MODEL})"}
    assert "(SERPER_API_KEY set)" in out
    assert "OPENAI_API_KEY was rejected (401)" in out and "[redacted OPENAI_API_KEY]" in out
    assert leaked(out) == [] and "c41e9d2b8" not in out
