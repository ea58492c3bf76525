"""The agent as an Inspect solver (inspect_agent.py, evals/, providers/inspect_model.py), through real
`inspect_ai.eval(...)` runs in this process with Inspect's `mockllm/model` scripted: each reply has its usage set,
and Inspect's own log is what the tests read (tool events, limits, per-sample model usage)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

inspect_ai = pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install -r "
                                                      "requirements-inspect.txt)")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.util import LimitExceededError  # noqa: E402

import inspect_agent  # noqa: E402
from providers.common import ChatRequest  # noqa: E402
from providers.inspect_model import InspectBackend, new_binding  # noqa: E402
from report.markdown import read_records  # noqa: E402
from tests.fakes.deep_research import MARK_PLAN, MARK_TASK, MARK_WRITE  # noqa: E402

PYTHON = 'Thought: compute it\nAction: python\nAction Input: {"code": "print(6 * 7 + %d)"}'
READ = 'Thought: read the file\nAction: read_file\nAction Input: {"path": "notes.txt"}'


def scripted(reply: Any) -> Any:
    """mockllm's outputs: `reply(messages)` gives each reply's text; its usage is set from the sizes."""
    def outputs(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        text = reply(messages)
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        prompt = sum(len(m.text) for m in messages) // 4
        out.usage = ModelUsage(input_tokens=prompt, output_tokens=len(text) // 4 + 1,
                               total_tokens=prompt + len(text) // 4 + 1)
        return out
    return outputs


def task_of(messages: list[Any]) -> str:
    return next(m.text for m in messages if m.role == "user")


def turns(messages: list[Any]) -> int:
    return sum(1 for m in messages if m.role == "assistant")


def react(messages: list[Any]) -> str:
    """A python sample computes, then answers from the observation; the file sample reads notes.txt."""
    task, done = task_of(messages), turns(messages)
    if "notes.txt" in task:
        return READ if done == 0 else "Thought: it says so\nFinal Answer: the code word is " + (
            "PELICAN" if "PELICAN" in messages[-1].text else "unknown")
    n = int(task.split("#")[1].split()[0])
    if done == 0:
        return PYTHON % n
    seen = messages[-1].text
    return f"Thought: the tool printed it\nFinal Answer: {42 + n}" if str(42 + n) in seen else "Final Answer: ?"


def run_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samples: list[Sample], solver: Any,
             reply: Any, **limits: Any) -> Any:
    """`solver()` builds the solver once the environment is set (it reads its settings then)."""
    monkeypatch.setenv("AGENT_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("AGENT_SEARCH", "0")
    monkeypatch.setenv("AGENT_PAPERS", "off")
    monkeypatch.setenv("AGENT_MAX_RETRIES", "0")
    model = get_model("mockllm/model", custom_outputs=scripted(reply))
    task = Task(dataset=samples, solver=solver(), scorer=includes(), sandbox="local")
    logs = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", log_format="json",
                        **limits)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One eval of 16 samples at once: 15 python samples and one whose file is in its sandbox."""
    tmp = tmp_path_factory.mktemp("sixteen")
    with pytest.MonkeyPatch.context() as mp:
        samples = [Sample(input=f"What is 6*7 plus #{n} ?", target=str(42 + n), id=f"py{n}") for n in range(15)]
        samples.append(Sample(input="What is the code word in notes.txt?", target="PELICAN", id="file",
                              files={"notes.txt": "The code word is PELICAN.\n"}))
        return run_eval(tmp, mp, samples, lambda: inspect_agent.react_agent(tools="python,read_file", max_steps=4),
                        react, max_samples=16)


def test_python_tool_runs_confined_and_each_call_is_an_inspect_tool_event(sixteen: Any) -> None:
    sample = next(s for s in sixteen.samples if s.id == "py3")
    assert sample.output.completion == "45" and sample.scores["includes"].value == "C"
    tools = [e for e in sample.events if e.event == "tool"]
    assert [t.function for t in tools] == ["python"] and "print(6 * 7 + 3)" in tools[0].arguments["code"]
    assert "45" in str(tools[0].result) and tools[0].error is None
    assert sample.metadata["agent"]["status"] == "answered" and sample.metadata["agent"]["steps"] == 2
    run = Path(sample.metadata["agent"]["workspace"]).parent  # the sample's run in the run store, as `runs` lists it
    assert json.loads((run / "run.json").read_text())["kind"] == "inspect"
    assert [r.answer for r in read_records(run / "results.jsonl")[0].values()] == ["45"]
    assert [m.role for m in sample.messages] == ["user", "assistant", "tool", "assistant"]  # the turns, mirrored


def test_sixteen_samples_at_once_all_finish_and_a_samples_file_reaches_the_workspace(sixteen: Any) -> None:
    assert len(sixteen.samples) == 16 and all(s.error is None for s in sixteen.samples)
    assert all(s.scores["includes"].value == "C" for s in sixteen.samples), [
        (s.id, s.output.completion) for s in sixteen.samples]
    file_sample = next(s for s in sixteen.samples if s.id == "file")
    assert file_sample.metadata["agent"]["files"] == ["notes.txt"]
    read = next(e for e in file_sample.events if e.event == "tool")
    assert read.function == "read_file" and "PELICAN" in str(read.result)
    assert Path(file_sample.metadata["agent"]["workspace"], "notes.txt").read_text() == "The code word is PELICAN.\n"


def test_the_agents_tokens_equal_inspects_per_sample_usage(sixteen: Any) -> None:
    for sample in sixteen.samples:
        usage = sample.model_usage["mockllm/model"]
        agent = sample.metadata["agent"]
        assert (agent["prompt_tokens"], agent["completion_tokens"]) == (usage.input_tokens, usage.output_tokens)
        assert agent["llm_calls"] == sum(1 for e in sample.events if e.event == "model")


def endless(messages: list[Any]) -> str:
    return PYTHON % turns(messages)


def sleeper(messages: list[Any]) -> str:
    return 'Thought: wait\nAction: python\nAction Input: {"code": "import time; time.sleep(60)"}'


@pytest.mark.parametrize(("limit", "reply", "least"), [({"message_limit": 6}, endless, 2),
                                                        ({"token_limit": 2500}, endless, 2),
                                                        ({"time_limit": 2}, sleeper, 1)])
def test_a_limit_marks_the_sample_limited_and_the_agent_makes_no_call_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: dict[str, int], reply: Any, least: int) -> None:
    log = run_eval(tmp_path, monkeypatch, [Sample(input="Count for ever.", target="never", id="loop")],
                   lambda: inspect_agent.react_agent(tools="python", max_steps=50), reply, **limit)
    sample = log.samples[0]
    kind = next(iter(limit)).split("_")[0]
    assert sample.limit is not None and sample.limit.type == kind, sample.limit
    assert sample.error is None and "agent" not in sample.metadata  # limited, not an agent error
    events = [e.event for e in sample.events]
    limited = max(i for i, e in enumerate(events) if e == "sample_limit")
    assert "model" not in events[limited:]  # nothing called the model once the limit fired
    calls = events.count("model")
    assert least <= calls < 20
    runs = list((tmp_path / "runs").glob("*/run.json"))
    assert len(runs) == 1 and json.loads(runs[0].read_text())["status"] == "stopped"  # its thread ended
    assert not [t for t in threading.enumerate() if t.name.startswith("tool-python")]


def research(messages: list[Any]) -> str:
    """A one-sub-question research: the planner, the sub-question's agent (reads the sample's file), the writer."""
    first = task_of(messages)
    if MARK_PLAN in first:
        return "1. What is the code word?"
    if MARK_TASK in first:
        return READ if turns(messages) == 0 else "Thought: done\nFinal Answer: The code word is PELICAN [1]."
    if first.startswith(MARK_WRITE):
        return "## Code word\n\nThe code word is PELICAN [1]. Nothing else is said.\n"
    return "Final Answer: (no script)"


def test_research_agent_answers_with_a_cited_sentence_and_keeps_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = run_eval(tmp_path, monkeypatch, [Sample(input="What code word do the notes give?", target="PELICAN",
                                                  id="r", files={"notes.txt": "The code word is PELICAN.\n"})],
                   lambda: inspect_agent.research_agent(), research)
    sample = log.samples[0]
    assert sample.error is None, sample.error
    assert sample.output.completion == "The code word is PELICAN [1]."
    report = sample.metadata["report"]
    assert "## Sources" in report and "notes.txt" in report.split("## Sources")[1]
    agent = sample.metadata["agent"]
    usage = sample.model_usage["mockllm/model"]
    assert (agent["prompt_tokens"], agent["completion_tokens"]) == (usage.input_tokens, usage.output_tokens)
    assert agent["steps"] == 2 and agent["status"] == "answered"
    read = [e for e in sample.events if e.event == "tool"]
    assert [e.function for e in read] == ["read_file"] and "PELICAN" in str(read[0].result)  # the sub-question's


def test_a_token_limit_stops_a_research_sample_as_limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = run_eval(tmp_path, monkeypatch, [Sample(input="What code word do the notes give?", target="PELICAN",
                                                  id="r", files={"notes.txt": "The code word is PELICAN.\n"})],
                   lambda: inspect_agent.research_agent(), research, token_limit=1500)
    sample = log.samples[0]
    assert sample.limit is not None and sample.limit.type == "token" and sample.error is None
    assert "report" not in sample.metadata  # no report was delivered: the writer was never called
    events = [e.event for e in sample.events]
    assert "model" not in events[max(i for i, e in enumerate(events) if e == "sample_limit"):]


def test_posted_events_run_in_order_before_the_next_call_and_a_limit_one_raises_stops_the_calls() -> None:
    """The agent's turns and tool events are posted to the eval's loop without a round trip (providers/
    inspect_model.py): they still reach the transcript in order, ahead of the next model call, and a limit one of
    them fires keeps the next call from running (the call raises that limit, as a model call's limit does)."""
    seen: list[int] = []
    limit = LimitExceededError("message", value=7, limit=6)

    def over_the_limit() -> None:
        raise limit

    async def main() -> tuple[list[int], BaseException | None, bool]:
        binding = new_binding()
        backend = InspectBackend("inspect:mockllm/model", "mockllm/model", binding)

        def worker() -> tuple[list[int], BaseException | None]:
            for n in range(200):
                binding.post(seen.append, n)

            async def snapshot() -> list[int]:
                return list(seen)

            before = binding.on_loop(snapshot())
            gate = threading.Event()
            binding.post(gate.wait)  # the loop runs the limit's call only once the model call is handed over

            def open_gate() -> None:
                while not binding.inflight:
                    time.sleep(0.001)
                gate.set()

            threading.Thread(target=open_gate).start()
            binding.post(over_the_limit)
            try:  # handed over before the loop ran the posted call: it must not reach the model all the same
                backend.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=16))
            except LimitExceededError as exc:
                return before, exc
            return before, None

        before, raised = await asyncio.to_thread(worker)
        return before, raised, binding.stop.is_set()

    before, raised, stopped = asyncio.run(main())
    assert before == list(range(200))
    assert raised is limit and stopped
