"""A run that cannot work stops early (issue #10, items 9 and 10): task deadlines bound model calls, and
an unreachable model server is a configuration error, not hours of silent retrying."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import main
from config import Settings
from core import cancellation
from llm import LLMInterface, RejectedParams
from providers.reachability import unreachable_reason
from tests.fakes.loopback import LoopbackServer, Response, gone_after_one_answer
from tests.fakes.providers import FakeClock, facade, openai_error, openai_reply, openai_script

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "hi"}]


def _closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- item 9: the task's deadline bounds retries, waits and each request -----------------------------------

def test_retries_of_one_call_end_at_the_task_deadline(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(503, "overloaded"))
    llm, clock = facade("openai:m", openai_base_url=server.url + "/v1", max_retries=50, retry_deadline=3600,
                        max_retry_wait=4)
    with cancellation.scope(10.0), pytest.raises(cancellation.TaskDeadlineExceeded, match="503"):
        llm.complete(MESSAGES)
    assert sum(clock.waits) <= 10.0  # the waits of the fake clock stopped at the task's 10 s
    assert 1 < len(server.requests) < 50


def test_a_call_made_after_the_deadline_is_not_sent(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_reply("never"))
    llm, _ = facade("openai:m", openai_base_url=server.url + "/v1")
    with cancellation.scope(-1.0), pytest.raises(cancellation.TaskDeadlineExceeded):
        llm.complete(MESSAGES)
    assert server.requests == []


def test_a_stop_request_ends_the_retry_waits(server: LoopbackServer) -> None:
    server.handler = openai_script(openai_error(503, "overloaded"))
    stop = threading.Event()
    settings = Settings(openai_base_url=server.url + "/v1", openai_api_key="sk-test", max_retries=50)
    # Ctrl-C arrives during the first wait between retries.
    llm = LLMInterface.from_spec("openai:m", settings, sleep=lambda seconds: stop.set(), clock=FakeClock(),
                                 rejected=RejectedParams())
    with cancellation.scope(stop=stop), pytest.raises(cancellation.StopRequested):
        llm.complete(MESSAGES)
    assert len(server.requests) <= 2  # the first, and at most the one already on its way


@pytest.mark.parametrize("spec, options", [
    ("openai:m", {"openai_base_url": "{url}/v1", "openai_api_key": "sk-test"}),
    ("anthropic:m", {"anthropic_base_url": "{url}", "anthropic_api_key": "sk-ant-test"}),
    ("gemini:m", {"gemini_base_url": "{url}", "gemini_api_key": "AIza-test"}),
])
def test_each_request_is_cut_at_the_task_deadline(server: LoopbackServer, spec: str,
                                                  options: dict[str, str]) -> None:
    server.handler = lambda req: Response(200, {}, delay=60)  # far beyond the task's 2 s
    settings = Settings(request_timeout=120, **{k: v.format(url=server.url) for k, v in options.items()})
    llm = LLMInterface.from_spec(spec, settings, rejected=RejectedParams())  # the real clock and sleep
    with cancellation.scope(2.0), pytest.raises(cancellation.TaskDeadlineExceeded, match="deadline"):
        llm.complete(MESSAGES)
    assert len(server.wait_for_requests(1)) == 1  # a busy machine's server thread may read it after the deadline


def test_a_server_that_never_answers_ends_the_task_as_time_limit(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("first task\n\nsecond task\n")
    with LoopbackServer(lambda req: Response(200, {}, delay=120 if req.method == "POST" else 0)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1", AGENT_ENV_FILE="/none.env")
        # The request timeout (120 s) and 6 retries would take many minutes; the guard is far below that.
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:m",
                               "--task-timeout", "2", "-q"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=90)
        sent = sum(r.method == "POST" for r in server.requests)
    assert proc.returncode == 1, proc.stderr
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["time_limit", "time_limit"]
    assert "time limit" in records[0]["error"]
    assert sent == 2  # one request per task: no retry after the deadline, no last-answer call


# --- item 10: nothing listening, or a name that does not resolve ------------------------------------------

def test_connection_refused_on_the_first_request_exits_2_naming_the_url(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("one\n\ntwo\n")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    assert main.main(["tasks.txt", "--model", "openai:m", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{url}/chat/completions" in err and "connection refused" in err
    assert len(err.strip().splitlines()) == 1


def test_dns_failure_on_the_first_request_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    real = socket.getaddrinfo

    def resolve(host: object, *args: object, **kwargs: object) -> object:
        if host == "model-server.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    (tmp_path / "tasks.txt").write_text("one\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://model-server.invalid/v1")
    assert main.main(["tasks.txt", "--model", "openai:m", "-q"]) == 2
    err = capsys.readouterr().err
    assert "model-server.invalid" in err and "DNS lookup failed" in err


def test_a_server_that_goes_away_stops_the_batch_after_a_few_tasks(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text("\n\n".join(f"task {n}" for n in range(1, 9)) + "\n")
    server = gone_after_one_answer(openai_reply("Final Answer: ok"))
    with server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("AGENT_MAX_RETRIES", "0")
        assert main.main(["tasks.txt", "--model", "openai:m", "-q"]) == 2
    err = capsys.readouterr().err
    assert "3 model calls in a row failed: cannot reach the model server" in err and server.url in err
    header, *records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(records) < 8 and records[0]["status"] == "answered"  # the batch stopped, it did not go on
    assert header["run"] == "stopped" and server.url in header["reason"]  # and its reports say so


def test_unreachable_reason_reads_the_cause_chain() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            raise RuntimeError("Connection error.") from inner
    except RuntimeError as exc:
        assert unreachable_reason(exc) == "connection refused"
    assert unreachable_reason(TimeoutError("read timed out")) is None


def test_check_setup_probe_reports_a_refused_connection_at_once(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import check_setup

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    from config import load_settings

    rows = check_setup.check_model(load_settings({"model": "openai:m"}), offline=False)
    assert rows[-1].mark == check_setup.FAIL and url in rows[-1].detail and "refused" in rows[-1].detail


def test_check_setup_probe_has_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    import check_setup
    from config import load_settings
    from run import model_checks

    monkeypatch.setattr(model_checks, "PROBE_DEADLINE", 1.0)
    with LoopbackServer(lambda req: Response(200, {}, delay=60)) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        rows = check_setup.check_model(load_settings({"model": "openai:m"}), offline=False)
    assert rows[-1].mark == check_setup.FAIL and "no answer within 1 s" in rows[-1].detail
