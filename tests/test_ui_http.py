"""`main.py ui` over plain HTTP: a foreign Host or a missing token is refused, nothing external is allowed,
past runs are opened by id only, an attachment keeps only its own name, a batch run opens its results.html."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import Settings
from run.store import RunStore
from tests.fakes.ui_app import ROOT, FakeApp, api_call, running_app
from tests.test_report_live_guard import raw_get


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApp]:
    pytest.importorskip("starlette", reason="starlette not installed (requirements-ui.txt)")
    with running_app(tmp_path_factory.mktemp("ui-http")) as fake:
        yield fake


def _call(app: FakeApp, path: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    return api_call(app, path, data, headers)


def _multipart(fields: dict[str, str], file: tuple[str, bytes] | None = None) -> tuple[bytes, dict[str, str]]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    if file:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file[0]}"\r\n'
                     f"Content-Type: text/plain\r\n\r\n".encode() + file[1] + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), {
        "Content-Type": f"multipart/form-data; boundary={boundary}"}


def _ask(app: FakeApp, question: str, file: tuple[str, bytes] | None = None,
         origin: str | None = None) -> list[dict[str, Any]]:
    """Ask through the API and read the question's whole event stream."""
    body, headers = _multipart({"question": question, "conversation": ""}, file)
    started = _call(app, "/api/ask", body, {**headers, **({"Origin": origin} if origin else {})})
    stream = _call(app, f"/api/events/{started['conversation']}")
    return [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {\"")]


@pytest.mark.parametrize("host", ["attacker.example:{port}", "attacker.example", "127.0.0.1:1", "10.0.0.5:{port}"])
def test_dns_rebinding_a_foreign_host_gets_421_on_every_route(app: FakeApp, host: str) -> None:
    asked = len(app.prompts)
    for path in ("/", "/api/history", "/static/app.js", "/api/conversations/x"):
        status, headers, body = raw_get(app.port, f"{path}?token={app.token}", host=host.format(port=app.port))
        assert status == 421 and "items" not in body, path
        assert "default-src 'self'" in headers["content-security-policy"]
    assert len(app.prompts) == asked


def test_without_the_token_nothing_is_served(app: FakeApp) -> None:
    for path in ("/", "/api/history", "/static/app.js", "/?token=nope"):
        status, headers, body = raw_get(app.port, path)
        assert status == 403 and "items" not in body and "<script" not in body, path
        assert headers["x-content-type-options"] == "nosniff"
    assert raw_get(app.port, "/api/history", cookie=f"agent_token_{app.port}=nope")[0] == 403


def test_the_token_sets_a_strict_cookie_and_headers_allow_nothing_external(app: FakeApp) -> None:
    status, headers, body = raw_get(app.port, f"/?token={app.token}")
    assert status == 200 and '<script src="/static/app.js">' in body
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-src 'none'" in csp and "http" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    cookie = headers["set-cookie"].split(";", 1)[0]
    status, headers, body = raw_get(app.port, "/static/app.js", cookie=cookie)
    assert status == 200 and "EventSource" in body and "http://" not in body and "https://" not in body


def test_refusals_are_not_logged_as_errors(app: FakeApp) -> None:
    for _ in range(3):
        raw_get(app.port, "/", host="attacker.example")
        raw_get(app.port, "/api/history")
    time.sleep(0.2)
    log = "".join(app.output)
    assert "ERROR" not in log and "Traceback" not in log and "421" not in log and "403" not in log


def test_an_attachment_keeps_only_its_own_name_in_the_workspace(app: FakeApp, tmp_path: Path) -> None:
    events = _ask(app, "What number is in my file?", ("../../notes.txt", b"The secret number is 4410.\n"))
    answer = next(e for e in events if e["type"] == "answer")["answer"]
    assert answer["answer"] == "The number is 4410."
    assert any(e["type"] == "step" and e["step"]["tool"] == "read_file" for e in events)
    run = RunStore(app.runs).list_runs()[0]
    assert sorted(p.name for p in run.workspace.rglob("*")) == ["notes.txt"]
    assert not (app.runs.parent / "notes.txt").exists() and not (app.runs / "notes.txt").exists()


def test_past_runs_are_opened_by_id_only(app: FakeApp) -> None:
    _ask(app, "A question for the store")
    item = next(i for i in _call(app, "/api/history")["items"] if i["title"] == "A question for the store")
    past = _call(app, f"/api/conversations/{item['id']}")
    assert past["turns"][0]["question"] == "A question for the store"
    assert past["turns"][0]["answer"]["answer"] == "quick answer"
    for ref in ("..", "%2e%2e", str(app.runs / item["id"]).replace("/", "%2F"), item["id"][:4] + "*"):
        status, _, body = raw_get(app.port, f"/api/conversations/{ref}?token={app.token}")
        assert status == 404 and "turns" not in body, ref


def test_a_batch_run_opens_its_results_html(app: FakeApp, tmp_path: Path) -> None:
    run = RunStore(app.runs).create("batch", "tasks.txt", Settings())
    html = tmp_path / "results.html"
    html.write_text("<!DOCTYPE html><title>batch results</title><p>the batch page</p>")
    (tmp_path / "results_tasks").mkdir()
    (tmp_path / "results_tasks" / "task-001.html").write_text("<p>one task's timeline</p>")
    (tmp_path / "secret.txt").write_text("not for the page")
    run.keep_reports(tmp_path / "results.jsonl", html)  # as a batch does at its end: the run's own copy
    run.finish(tasks=2, answered=2, cost=0.01, outputs=[str(tmp_path / "results.md"), str(html)])
    item = next(i for i in _call(app, "/api/history")["items"] if i["id"] == run.id)
    assert item["kind"] == "batch" and item["answered"] == 2
    assert "the batch page" in _call(app, item["results"])
    assert "one task's timeline" in _call(app, f"/runs/{run.id}/results_tasks/task-001.html")
    for name in ("secret.txt", "results_tasks/../secret.txt", "results_tasks/%2e%2e/secret.txt", "run.json",
                 "settings.json", "results_tasks/missing.html"):
        status, _, body = raw_get(app.port, f"/runs/{run.id}/{name}?token={app.token}")
        assert status == 404 and "not for the page" not in body, name
    status, _, _ = raw_get(app.port, f"/runs/{run.id}/results.html")  # still behind the token
    assert status == 403


def test_the_app_says_how_to_install_what_it_needs_and_that_a_port_is_taken(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['uvicorn'] = None; import main; "
            "sys.exit(main.main(['ui', '--port', '0', '--runs-dir', 'runs']))")
    missing = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "pip install -r requirements-ui.txt" in missing.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run([sys.executable, str(ROOT / "main.py"), "ui", "--port", str(port)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert busy.returncode == 2 and busy.stderr.count("\n") == 1 and f"127.0.0.1:{port}" in busy.stderr


@pytest.mark.parametrize("origin", ["http://127.0.0.1:1", "http://attacker.example", "null"])
def test_a_question_posted_by_another_page_is_refused(app: FakeApp, origin: str) -> None:
    asked = len(app.prompts)
    body, headers = _multipart({"question": "Spend my money", "conversation": ""})
    with pytest.raises(urllib.error.HTTPError) as refused:
        _call(app, "/api/ask", body, {**headers, "Origin": origin})
    assert refused.value.code == 403 and len(app.prompts) == asked
    events = _ask(app, "Same origin is fine", origin=f"http://127.0.0.1:{app.port}")
    assert events[-1]["answer"]["answer"] == "quick answer"


def test_ctrl_c_stops_a_running_question_and_keeps_its_record(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="starlette not installed (requirements-ui.txt)")
    with running_app(tmp_path) as app:
        body, headers = _multipart({"question": "Slow question for Ctrl-C", "conversation": ""})
        started = _call(app, "/api/ask", body, headers)
        deadline = time.monotonic() + 30
        while len(app.prompts) < 2 and time.monotonic() < deadline:  # the model was asked for step 2
            time.sleep(0.05)
        assert app.proc is not None
        app.proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        app.release.set()  # the model answers after the stop: the task must not go on
        assert app.proc.wait(timeout=60) == 0  # Ctrl-C is how a server ends
        run = RunStore(app.runs).list_runs()[0]
        records = [json.loads(line) for line in run.records.read_text().splitlines()]
        assert started["turn"] == 1 and run.info.status != "running"
        assert [r["status"] for r in records] == ["stopped"] and records[0]["task"] == "Slow question for Ctrl-C"
        assert sum("Slow question" in p for p in app.prompts) == 2  # no model call after the stop
        assert records[0]["llm_calls"] == 2 and records[0]["cost"] > 0  # what it spent is counted
        assert run.info.cost == records[0]["cost"]
