"""`main.py ask`, `main.py chat` and `main.py runs` end to end, against a loopback model and web page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai:gpt-4.1-mini"
PAGE = "<html><head><title>Lyon in figures</title></head><body><p>In 2010 Lyon had 484,344 inhabitants; " \
       "in 2020 it had 522,250.</p></body></html>"
FIRST = "Lyon had 484,344 inhabitants in 2010 [1]."


def _prompt(req: Request) -> str:
    """The task as the model received it (the first user message)."""
    return next(m["content"] for m in req.json()["messages"] if m["role"] == "user")


def lyon_model(base: dict[str, str], requests: list[dict[str, Any]]) -> Any:
    """Question 1: read the page, then answer citing it. A follow-up: answer at once from the earlier turn."""

    def handle(req: Request) -> Response:
        if req.method == "GET":
            return Response(200, PAGE, content_type="text/html") if req.path == "/lyon" else Response(404, "")
        requests.append(req.json())
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        if "Current question:" in _prompt(req):
            return openai_reply("Thought: the page read before gives 2020 too\nFinal Answer: 522,250 in 2020.")
        if turns == 0:
            url = base["url"] + "/lyon"
            return openai_reply(f'Thought: read the page\nAction: scrape\nAction Input: {{"url": "{url}"}}')
        return openai_reply(f"Thought: found it\nFinal Answer: {FIRST}")

    return handle


def _main(server: LoopbackServer, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-secret", "OPENAI_BASE_URL": server.url + "/v1",
           "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0", "AGENT_SEARCH": "0"}
    model = ["--model", MODEL] if args[0] in ("ask", "chat") else []
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args, *model], input=stdin,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def lyon() -> Any:
    requests: list[dict[str, Any]] = []
    base: dict[str, str] = {}
    with LoopbackServer(lyon_model(base, requests)) as server:
        base["url"] = server.url
        server.model_requests = requests  # type: ignore[attr-defined]
        yield server


def test_ask_prints_the_answer_and_its_numbered_sources_and_keeps_the_run(lyon: LoopbackServer) -> None:
    proc = _main(lyon, "ask", "How many people lived in Lyon in 2010?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == FIRST
    assert f"[1] Lyon in figures — {lyon.url}/lyon" in proc.stdout
    assert "thought: read the page" in proc.stderr and f'scrape {{"url": "{lyon.url}/lyon"}}' in proc.stderr
    assert "484,344 inhabitants" in proc.stderr  # the observation, shown as it came
    runs = [json.loads(line) for line in _main(lyon, "runs", "--json").stdout.splitlines()]
    assert [(r["kind"], r["title"], r["tasks"], r["answered"]) for r in runs] == [
        ("ask", "How many people lived in Lyon in 2010?", 1, 1)]
    run = Path(runs[0]["dir"])
    trace = [json.loads(x) for x in (run / "traces" / "turn-1.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "tool_call" and e["tool"] == "scrape" for e in trace)
    assert "sk-test-secret" not in (run / "settings.json").read_text()  # kept settings hold no secret


def test_ask_quiet_json_prints_only_the_record(lyon: LoopbackServer) -> None:
    proc = _main(lyon, "ask", "-q", "--json", "How many people lived in Lyon in 2010?")
    assert proc.returncode == 0 and proc.stderr == ""
    record = json.loads(proc.stdout)
    assert record["answer"] == FIRST and record["status"] == "answered" and record["run"]
    assert record["sources"][0]["title"] == "Lyon in figures"


def test_ask_with_a_missing_file_exits_2_before_any_model_call(lyon: LoopbackServer) -> None:
    proc = _main(lyon, "ask", "What does it say?", "--file", "nope.pdf")
    assert proc.returncode == 2 and "nope.pdf: no such file" in proc.stderr
    assert lyon.model_requests == []  # type: ignore[attr-defined]


def test_chat_on_piped_stdin_keeps_context_across_follow_ups(lyon: LoopbackServer, tmp_path: Path) -> None:
    script = "How many people lived in Lyon in 2010?\nand in 2020?\n/sources\n/cost\n/save talk.md\n/exit\nignored\n"
    proc = _main(lyon, "chat", "-q", stdin=script)
    assert proc.returncode == 0, proc.stderr
    follow_up = _prompt_of(lyon.model_requests[-1])  # type: ignore[attr-defined]
    assert "Question 1: How many people lived in Lyon in 2010?" in follow_up
    assert FIRST in follow_up and f"{lyon.url}/lyon" in follow_up  # the answer and the source already read
    assert follow_up.rstrip().endswith("and in 2020?")
    out = proc.stdout
    assert out.index(FIRST) < out.index("522,250 in 2020.") < out.index(f"[1] Lyon in figures — {lyon.url}/lyon "
                                                                         "(question 1)")
    assert "over 2 question(s)" in out and "saved talk.md" in out
    transcript = (tmp_path / "talk.md").read_text()
    assert "## 2. and in 2020?" in transcript and f"[Lyon in figures](<{lyon.url}/lyon>)" in transcript
    assert len(lyon.model_requests) == 3  # type: ignore[attr-defined]  # /exit ended it: "ignored" was not asked


def _prompt_of(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def test_a_stopped_answer_ends_that_question_not_the_conversation(lyon: LoopbackServer) -> None:
    import threading

    from config import load_settings
    from run.conversation import Conversation
    from run.store import RunStore

    settings = load_settings({"model": MODEL, "openai_api_key": "sk-test", "openai_base_url": lyon.url + "/v1",
                              "scrape_allow_private": True, "search": False, "host_gap": 0.0})
    chat = Conversation(settings, RunStore.from_settings(settings))
    stop = threading.Event()
    kinds: list[str] = []

    def watch(event: Any) -> None:
        kinds.append(event.kind)
        if event.kind == "action":
            stop.set()  # the user presses Ctrl-C while the page is being read

    first = chat.ask("How many people lived in Lyon in 2010?", on_event=watch, stop=stop)
    assert first.record.status == "stopped" and first.record.answer is None
    assert kinds[:2] == ["thought", "action"] and "answer" not in kinds
    second = chat.ask("How many people lived in Lyon in 2010?")
    assert second.record.answer == FIRST and second.number == 2
    assert (first.record.cost or 0) > 0 and first.record.llm_calls == 1  # what the stopped one spent, from its trace
    assert chat.cost() == pytest.approx((first.record.cost or 0) + (second.record.cost or 0))
    assert "Question 1" not in _prompt_of(lyon.model_requests[-1])  # type: ignore[attr-defined]  # not answered
    view = Conversation.open(RunStore.from_settings(settings), str(chat.id))
    assert [t.record.status for t in view.turns] == ["stopped", "answered"]
    with pytest.raises(RuntimeError):
        view.ask("more?")


def test_ctrl_c_in_chat_stops_the_answer_and_the_next_question_is_answered(tmp_path: Path) -> None:
    import signal
    import threading

    asked, released = threading.Event(), threading.Event()

    def handle(req: Request) -> Response:
        if "first" in _prompt(req):
            asked.set()
            released.wait(60)  # held until the test has pressed Ctrl-C
            return openai_reply('Thought: note it\nAction: write_file\nAction Input: {"path": "a.txt", "content": "x"}')
        return openai_reply("Thought: easy\nFinal Answer: the second answer")

    with LoopbackServer(handle) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url + "/v1", "AGENT_SEARCH": "0"}
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "chat", "--model", MODEL], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdin is not None
        proc.stdin.write("the first question\n")
        proc.stdin.flush()
        assert asked.wait(60)
        proc.send_signal(signal.SIGINT)
        released.set()
        proc.stdin.write("the second question\n")
        out, err = proc.communicate(timeout=120)  # then end of input: the session ends
    assert proc.returncode == 0, err
    assert "stopping this answer" in err
    assert out.index("(no answer: stopped)") < out.index("the second answer")


def test_the_runs_cost_cap_covers_the_whole_conversation(lyon: LoopbackServer) -> None:
    proc = _main(lyon, "chat", "-q", "--max-run-cost", "0.00001",
                 stdin="How many people lived in Lyon in 2010?\nand in 2020?\n")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().split("\n\n")[:2]
    assert first.startswith("(no answer: budget: the run's cost cap")  # the cap stopped the first question ...
    assert second.startswith("(no answer: budget: not started")  # ... and no later question starts
    assert lyon.model_requests == []  # type: ignore[attr-defined]  # a call that could pass the cap is never sent
