"""OpenTelemetry export: a real run of main.py sends run -> task -> step -> model/tool spans to a loopback
OTLP/HTTP receiver (decoded with opentelemetry-proto), imports nothing of it when unset, and flushes on Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from config import Settings
from core.chat import Completion
from core.errors import ConfigError
from telemetry.attributes import Redactor, secret_values, usage_attributes
from telemetry.setup import start_tracing
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.otlp import OtlpReceiver, SpanView
from tests.fakes.providers import openai_error, openai_reply
from tools.base import ToolOutput

pytest.importorskip("opentelemetry.sdk", reason="pip install -r requirements-otel.txt")

ROOT = Path(__file__).resolve().parent.parent
GUARD = 60.0  # a hung run fails the test instead of hanging it; no assertion depends on speed


def task_of(req: Request) -> str:
    found = re.search(r"(alpha|bravo|charlie|slow \d)", json.dumps(req.json()))
    return found.group(1) if found else "?"


def replies(req: Request) -> Response:
    """alpha lists files then answers; bravo reads a missing file (a tool error) then answers; charlie's
    model call fails."""
    task, last = task_of(req), req.json()["messages"][-1]["content"]
    if task == "charlie":
        return openai_error(500, "the model is down")
    if last.startswith("Observation:"):
        return openai_reply(f"Thought: done\nFinal Answer: {task} answered", 120, 8, model="gpt-4.1-mini")
    if task == "alpha":
        return openai_reply("Thought: look\nAction: list_files\nAction Input: {}", 100, 7, model="gpt-4.1-mini")
    return openai_reply('Thought: read\nAction: read_file\nAction Input: {"path": "missing.txt"}', 100, 7,
                        model="gpt-4.1-mini")


def run_env(model: LoopbackServer, otlp: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_BASE_URL")) and not k.startswith("OTEL_")}
    env.update(OPENAI_API_KEY="sk-test-key-0000", OPENAI_BASE_URL=model.url + "/v1",
               AGENT_ENV_FILE="/nonexistent.env", AGENT_MODEL="openai:gpt-4.1-mini", AGENT_MAX_RETRIES="0",
               AGENT_SEARCH="0", **extra)
    if otlp:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp
    return env


def run_main(tmp_path: Path, env: dict[str, str], tasks: str, *flags: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tasks.txt").write_text(tasks)
    return subprocess.run([sys.executable, *flags, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=GUARD)


def by_name(spans: list[SpanView], pattern: str) -> list[SpanView]:
    return [s for s in spans if re.fullmatch(pattern, s.name)]


def test_a_run_exports_run_task_step_model_and_tool_spans_with_genai_attributes(tmp_path: Path) -> None:
    with LoopbackServer(replies) as model, OtlpReceiver() as otlp:
        done = run_main(tmp_path, run_env(model, otlp.endpoint), "alpha task\n\nbravo task\n\ncharlie task\n")
        spans = otlp.spans()
    assert done.returncode == 1, done.stderr  # charlie failed: the run says so, and still sent its spans
    [run] = by_name(spans, "run")
    tasks = {s.attributes["research_agent.task.id"]: s for s in by_name(spans, r"task .*")}
    assert len(tasks) == 3 and all(t.parent_id == run.span_id for t in tasks.values())
    assert {s.trace_id for s in spans} == {run.trace_id}  # one trace per run
    assert run.resource["service.name"] == "react-research-agent" and run.attributes["research_agent.exit_code"] == 1
    steps = by_name(spans, r"step \d+")
    assert steps and all(s.parent_id in {t.span_id for t in tasks.values()} for s in steps)
    chats = by_name(spans, "chat gpt-4.1-mini")
    ok = [c for c in chats if c.status != "ERROR"]
    assert len(ok) == 4 and all(c.parent_id in {s.span_id for s in steps} for c in chats)
    first = ok[0].attributes
    assert (first["gen_ai.system"], first["gen_ai.request.model"], first["gen_ai.operation.name"]) == (
        "openai", "gpt-4.1-mini", "chat")
    assert {c.attributes["gen_ai.usage.input_tokens"] for c in ok} == {100, 120}
    assert {c.attributes["gen_ai.usage.output_tokens"] for c in ok} == {7, 8}
    assert all(c.attributes["research_agent.cost_usd"] > 0 for c in ok)  # gpt-4.1-mini has a price
    [listed] = by_name(spans, "execute_tool list_files")
    [missing] = by_name(spans, "execute_tool read_file")
    assert listed.attributes["research_agent.tool.outcome"] == "ok" and listed.status != "ERROR"
    assert missing.attributes["research_agent.tool.outcome"] == "error" and missing.status == "ERROR"
    assert "missing.txt" in missing.message  # the tool's error line is the span's status
    # The failed model call and its task are errors; the answered tasks carry their totals.
    [failed] = [c for c in chats if c.status == "ERROR"]
    assert failed.attributes["error.type"] and "model is down" in failed.message
    assert [t.attributes["research_agent.task.index"] for t in tasks.values() if t.status == "ERROR"] == [3]
    answered = [t for t in tasks.values() if t.attributes["research_agent.task.status"] == "answered"]
    assert len(answered) == 2 and all(t.attributes["research_agent.usage.input_tokens"] == 220 for t in answered)
    assert all("gen_ai.usage.input_tokens" not in t.attributes for t in tasks.values())  # no double count


def test_nothing_of_opentelemetry_is_imported_when_no_endpoint_is_set(tmp_path: Path) -> None:
    with LoopbackServer(replies) as model:
        done = run_main(tmp_path, run_env(model, None), "alpha task\n", "-X", "importtime")
    assert done.returncode == 0, done.stderr
    imported = [line for line in done.stderr.splitlines() if "import time:" in line]
    assert len(imported) > 100  # -X importtime did list the imports ...
    assert [line for line in imported if "opentelemetry" in line] == []  # ... and none of OpenTelemetry


def test_start_tracing_is_none_without_an_endpoint_and_names_the_install_when_packages_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert start_tracing(Settings()) is None
    assert start_tracing(Settings(otel_endpoint="http://127.0.0.1:1", otel_disabled=True)) is None
    monkeypatch.setitem(sys.modules, "telemetry.otel", None)  # as if the SDK were not installed
    with pytest.raises(ConfigError, match="pip install -r requirements-otel.txt"):
        start_tracing(Settings(otel_endpoint="http://127.0.0.1:1"))


def test_a_bad_protocol_is_a_one_line_error_before_the_run(tmp_path: Path) -> None:
    with LoopbackServer(replies) as model:
        done = run_main(tmp_path, run_env(model, "http://127.0.0.1:1", OTEL_EXPORTER_OTLP_PROTOCOL="http/json"),
                        "alpha task\n")
    assert done.returncode == 2 and "must be http/protobuf or grpc" in done.stderr and not model.requests


def test_traces_endpoint_is_used_as_is_and_headers_are_sent(tmp_path: Path) -> None:
    with LoopbackServer(replies) as model, OtlpReceiver() as otlp:
        env = run_env(model, None, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=otlp.endpoint + "/v1/traces",
                      OTEL_EXPORTER_OTLP_HEADERS="x-langfuse-ingestion-version=4,Authorization=Basic%20cGs6c2s=",
                      OTEL_SERVICE_NAME="my-agent")
        done = run_main(tmp_path, env, "alpha task\n")
        spans, headers = otlp.spans(), [r.headers for r in otlp.requests]
    assert done.returncode == 0, done.stderr
    assert spans and {s.resource["service.name"] for s in spans} == {"my-agent"}
    assert all(h.get("authorization") == "Basic cGs6c2s=" and h.get("x-langfuse-ingestion-version") == "4"
               for h in headers)
    assert all(h.get("content-type") == "application/x-protobuf" for h in headers)  # OTLP HTTP/protobuf


def slow_steps(req: Request) -> Response:
    import dataclasses

    return dataclasses.replace(openai_reply("Thought: look\nAction: list_files\nAction Input: {}"), delay=0.2)


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    end = time.monotonic() + GUARD
    while not condition():
        assert proc.poll() is None, f"main.py exited early: {proc.returncode}"
        assert time.monotonic() < end, "the run never reached the expected state"
        time.sleep(0.05)


def test_ctrl_c_flushes_the_spans_of_the_stopped_tasks_before_exit(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("slow 1\n\nslow 2\n")
    with LoopbackServer(slow_steps) as model, OtlpReceiver() as otlp:
        argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "-q", "--max-steps", "200"]
        proc = subprocess.Popen(argv, cwd=tmp_path, env=run_env(model, otlp.endpoint), text=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            wait_for(lambda: len(model.requests) >= 4, proc)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=GUARD)
        finally:
            if proc.poll() is None:
                proc.kill()
        spans = otlp.spans()
        calls = len(model.requests)
    assert proc.returncode == 130, err
    [run] = by_name(spans, "run")
    [task] = by_name(spans, "task .*")  # the first task was running; the second never started
    assert task.attributes["research_agent.task.status"] == "stopped" and run.attributes[
        "research_agent.exit_code"] == 130
    assert len(by_name(spans, "chat .*")) == calls  # every model call made before Ctrl-C was sent
    assert by_name(spans, "execute_tool list_files")


def test_redactor_removes_secrets_and_cuts_urls_to_their_origin() -> None:
    settings = Settings(openai_api_key="sk-live-abcdefgh12345", otel_headers="Authorization=Bearer phx-0123456789",
                        ollama_base_url="http://user:hunter2-password@127.0.0.1:11434/v1")
    redact = Redactor(secret_values(settings, {"AWS_SECRET_ACCESS_KEY": "aws-canary-987654321", "HOME": "/home/u"}))
    text = redact("401 for key SK-LIVE-abcdefgh12345 at https://evil.example/x?k=aws-canary-987654321&t=phx-0123456789 "
                  "hunter2-password")
    assert "abcdefgh12345" not in text and "aws-canary" not in text and "phx-0123456789" not in text
    assert "hunter2" not in text and "https://evil.example/…" in text and "/home/u" not in redact.secrets


def test_usage_attributes_count_billed_retries_and_leave_unknown_cost_out() -> None:
    billed = Completion("", prompt_tokens=5, completion_tokens=1, cost=0.5)
    first = Completion("a", prompt_tokens=10, completion_tokens=2, cost=1.0, billed_before=(billed,))
    assert usage_attributes([first]) == {"gen_ai.usage.input_tokens": 15, "gen_ai.usage.output_tokens": 3,
                                         "research_agent.cost_usd": 1.5, "gen_ai.usage.cost": 1.5}
    assert "research_agent.cost_usd" not in usage_attributes([Completion("a", prompt_tokens=1, cost=None)])


def test_with_spend_caps_the_agent_still_sees_its_budgeted_model_and_each_call_is_a_span(tmp_path: Path) -> None:
    """The tracer sits inside the caps: the agent's tools find the task's budget on its model (tool_budget)."""
    from agent import ReActAgent
    from providers.budget import BudgetedModel, RunBudget
    from run.batch import BatchRunner, build_agent
    from tasks.taskfile import Task
    from tests.fakes.scripted import ScriptedLLM

    seen: list[object] = []

    def factory(*args: object) -> ReActAgent:
        seen.append(args[1])
        return build_agent(*args)  # type: ignore[arg-type]

    with OtlpReceiver() as otlp:
        settings = Settings(model="openai:gpt-4.1-mini", max_cost=1.0, otel_endpoint=otlp.endpoint,
                            workspace=tmp_path / "ws", trace_dir=None)
        tracing = start_tracing(settings)
        assert tracing is not None
        llm = ScriptedLLM(["Thought: ok\nFinal Answer: 4"], model="openai:gpt-4.1-mini")
        records: list[object] = []
        runner = BatchRunner(settings, llm, "openai:gpt-4.1-mini", records.append, agent_factory=factory,
                             budget=RunBudget.from_settings(settings, llm), tracing=tracing)
        tracing.start_run("openai:gpt-4.1-mini", 1)
        runner.run([Task(index=1, text="2+2?", id="task-001")])
        tracing.shutdown(0)
        spans = otlp.spans()
    assert len(records) == 1 and isinstance(seen[0], BudgetedModel)
    assert [s.name for s in spans if s.name.startswith("chat ")] == ["chat gpt-4.1-mini"]


def test_a_second_ctrl_c_still_sends_the_spans_that_finished(tmp_path: Path) -> None:
    """Three model calls answer, the fourth hangs; Ctrl-C twice leaves at once, after sending the three."""
    import dataclasses

    def hanging(req: Request) -> Response:
        reply = openai_reply("Thought: look\nAction: list_files\nAction Input: {}")
        return reply if len(model.requests) <= 3 else dataclasses.replace(reply, delay=GUARD)

    (tmp_path / "tasks.txt").write_text("slow 1\n")
    stderr = tmp_path / "stderr.txt"
    with LoopbackServer(hanging) as model, OtlpReceiver() as otlp, stderr.open("w") as log:
        argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--max-steps", "200"]
        proc = subprocess.Popen(argv, cwd=tmp_path, env=run_env(model, otlp.endpoint), text=True,
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        try:
            wait_for(lambda: len(model.requests) >= 4, proc)
            os.killpg(proc.pid, signal.SIGINT)
            wait_for(lambda: "stopping" in stderr.read_text(), proc)  # the first one was handled
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=GUARD)
        finally:
            if proc.poll() is None:
                proc.kill()
        spans = otlp.spans()
    err = stderr.read_text()
    assert proc.returncode == 130 and "stopped at once" in err, err
    assert len(by_name(spans, "chat .*")) == 3 and len(by_name(spans, "execute_tool list_files")) == 3


def test_grpc_is_used_when_asked(tmp_path: Path) -> None:
    """OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the spans reach a loopback gRPC TraceService instead."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc",
                        reason="pip install opentelemetry-exporter-otlp-proto-grpc")
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[trace_service_pb2.ExportTraceServiceRequest] = []
    metadata: list[dict[str, str]] = []

    class Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: object, context: object) -> object:  # noqa: N802 - the gRPC method name
            received.append(request)  # type: ignore[arg-type]
            metadata.append(dict(context.invocation_metadata()))  # type: ignore[attr-defined]
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Collector(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with LoopbackServer(replies) as model:
            env = run_env(model, f"http://127.0.0.1:{port}", OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
                          OTEL_EXPORTER_OTLP_HEADERS="x-team=research")
            done = run_main(tmp_path, env, "alpha task\n")
    finally:
        server.stop(None)
    assert done.returncode == 0, done.stderr
    names = [s.name for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert {"run", "step 1", "chat gpt-4.1-mini", "execute_tool list_files"} <= set(names)
    assert all(m.get("x-team") == "research" for m in metadata)


def test_check_setup_says_where_spans_go_and_fails_when_the_packages_are_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import check_setup

    assert "export off" in check_setup.check_traces(Settings()).detail
    on = Settings(otel_endpoint="https://cloud.langfuse.com/api/public/otel",
                  otel_headers="Authorization=Basic%20sekrit")
    found = check_setup.check_traces(on)
    assert found.mark == check_setup.OK and "cloud.langfuse.com/api/public/otel (http/protobuf)" in found.detail
    assert "sekrit" not in found.detail
    monkeypatch.setattr(check_setup, "installed", lambda module: False)
    missing = check_setup.check_traces(on)
    assert missing.mark == check_setup.FAIL and missing.fix == "pip install -r requirements-otel.txt"


def test_a_tools_own_model_calls_are_chat_spans_inside_the_tool_span(tmp_path: Path) -> None:
    """look / transcribe / watch call models of their own: each is a chat span under its execute_tool span."""
    from agent import ReActAgent
    from run.batch import BatchRunner
    from tasks.taskfile import Task
    from tests.fakes.scripted import ScriptedLLM
    from tools.base import tool

    @tool
    def look(path: str) -> ToolOutput:
        """Look at an image."""
        seen = Completion("A cat.", prompt_tokens=1600, completion_tokens=4, model="gemini:gemini-2.5-flash",
                          cost=0.0005, latency=0.8)
        return ToolOutput("gemini:gemini-2.5-flash looked: A cat.", usage=[seen])

    def factory(settings: Settings, llm: object, workspace: Path, spec: str, on_event: object,
                *rest: object) -> ReActAgent:
        return ReActAgent(llm, [look], max_steps=3, on_event=on_event)  # type: ignore[arg-type]

    with OtlpReceiver() as otlp:
        settings = Settings(otel_endpoint=otlp.endpoint, workspace=tmp_path / "ws", trace_dir=None)
        tracing = start_tracing(settings)
        assert tracing is not None
        llm = ScriptedLLM(['Thought: see\nAction: look\nAction Input: {"path": "a.png"}', "Final Answer: a cat"],
                          model="openai:gpt-4.1-mini")
        runner = BatchRunner(settings, llm, "openai:gpt-4.1-mini", lambda record: None, agent_factory=factory,
                             tracing=tracing)
        runner.run([Task(index=1, text="What is in a.png?", id="task-001")])
        tracing.shutdown(0)
        spans = otlp.spans()
    [looked] = by_name(spans, "execute_tool look")
    [vision] = by_name(spans, "chat gemini-2.5-flash")
    assert vision.parent_id == looked.span_id and looked.attributes["research_agent.tool.model_calls"] == 1
    assert (vision.attributes["gen_ai.system"], vision.attributes["gen_ai.usage.input_tokens"],
            vision.attributes["research_agent.call.purpose"]) == ("gcp.gemini", 1600, "tool")
    assert vision.attributes["research_agent.cost_usd"] == 0.0005


def test_a_chat_exports_one_trace_whose_task_spans_are_its_questions(tmp_path: Path) -> None:
    def answers(req: Request) -> Response:
        return openai_reply("Thought: known\nFinal Answer: 42", 90, 6, model="gpt-4.1-mini")

    with LoopbackServer(answers) as model, OtlpReceiver() as otlp:
        done = subprocess.run([sys.executable, str(ROOT / "main.py"), "chat", "-q"], input="first?\nand then?\n",
                              cwd=tmp_path, env=run_env(model, otlp.endpoint), capture_output=True, text=True,
                              timeout=GUARD)
        spans = otlp.spans()
    assert done.returncode == 0, done.stderr
    [run] = by_name(spans, "run")
    questions = by_name(spans, r"task turn-\d")
    assert sorted(s.name for s in questions) == ["task turn-1", "task turn-2"]
    assert all(q.parent_id == run.span_id and q.trace_id == run.trace_id for q in questions)
    chats = by_name(spans, "chat gpt-4.1-mini")
    assert len(chats) == 2 and {c.attributes["gen_ai.usage.input_tokens"] for c in chats} == {90}
