"""The summarizing memory through the real ReActAgent: budget, task, summaries, fallbacks, files, usage."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent import ANSWERED, ERROR, AgentResult, ReActAgent
from config import Settings
from core.chat import Completion, Message
from core.errors import EmptyCompletionError, LLMError, LLMFatalError
from core.text import truncate_middle
from prompt.memory import SUMMARY_SYSTEM, Memory, TokenEstimator, memory_for_task
from tests.fakes.scripted import Reply, ScriptedLLM
from tools.base import tool

BUDGET = 6_000
TASK = "Find the colour of every widget on pages 1 to 20 and list them with their sources."
DROP_NOTE = "earlier steps were dropped to stay within the context budget; their full observations are in "


def page(n: int, chars: int = 9_000) -> str:
    """A page of numbered lines; a SECRET line sits in its middle, where truncation cuts."""
    lines = [f"page {n} line {i}: widgets and gadgets are described here in some detail." for i in range(400)]
    text = "\n".join(lines)[:chars]
    mid = text.count("\n") // 2
    parts = text.split("\n")
    parts.insert(mid, f"SECRET-{n}: widget {n} is colour-{n * 7}")
    return "\n".join(parts)


@tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return page(n)


def true_count(messages: list[Message], factor: float) -> int:
    """The fake provider's token count: the plain estimate scaled by its tokenizer's density."""
    return math.ceil(TokenEstimator().tokens(messages) * factor)


def honest(text: str, factor: float = 1.0, model: str = "agent-model") -> Reply:
    """A scripted reply whose reported prompt tokens are the provider's true count for the prompt."""
    return lambda messages: Completion(text, "stop", true_count(messages, factor), 5, model)


def action(n: int) -> str:
    return f'Thought: read page {n}\nAction: fetch\nAction Input: {{"n": {n}}}'


def agent_llm(steps: int, factor: float = 1.0) -> ScriptedLLM:
    replies: list[Reply] = [honest(action(i), factor) for i in range(1, steps + 1)]
    return ScriptedLLM([*replies, honest("Thought: done\nFinal Answer: all colours listed", factor)])


@dataclass
class NotesWriter:
    """A fake summarizer: keeps the previous notes' lines and adds the SECRET lines of the new steps."""

    factor: float = 1.0
    fail: Callable[[int], Exception | None] = lambda call: None
    prompt_tokens: int | None = None
    calls: list[list[Message]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        self.calls.append(messages)
        error = self.fail(len(self.calls))
        if error is not None:
            raise error
        user = messages[-1]["content"]
        previous = user.split("## Previous notes\n", 1)[1].split("\n\n## New steps", 1)[0]
        kept = [line for line in previous.splitlines() if line.startswith("SECRET-")]
        kept += [line for line in user.split("## New steps", 1)[1].splitlines() if line.startswith("SECRET-")]
        text = f"Notes #{len(self.calls)}:\n" + "\n".join(kept)
        self.outputs.append(text)
        tokens = self.prompt_tokens if self.prompt_tokens is not None else true_count(messages, self.factor)
        return Completion(text, "stop", tokens, 7, "summary-model")


def run_agent(llm: ScriptedLLM, tmp_path: Path, summarizer: NotesWriter | None, steps: int,
              budget: int = BUDGET) -> tuple[AgentResult, Memory]:
    memories: list[Memory] = []

    def factory() -> Memory:
        memories.append(Memory(budget, tmp_path, summarizer=summarizer))
        return memories[-1]

    agent = ReActAgent(llm, [fetch], max_steps=steps + 5, memory_factory=factory)
    result = agent.run(TASK)
    return result, memories[0]


def step_pairs(messages: list[Message]) -> list[tuple[int, str]]:
    """(the n of each verbatim action, the observation that follows it)."""
    pairs = []
    for m, nxt in zip(messages[2::2], messages[3::2], strict=True):
        assert m["role"] == "assistant" and nxt["role"] == "user"
        pairs.append((int(re.search(r'"n": (\d+)', m["content"]).group(1)), nxt["content"]))  # type: ignore[union-attr]
    return pairs


def test_truncate_middle_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "".join(f"line {i:04d}\n" for i in range(1000))
    out = truncate_middle(text, 2_000, "see file x")
    assert len(out) <= 2_000 and out.startswith("line 0000\n") and out.endswith("line 0999\n")
    head = out.split("\n\n[...")[0]
    tail = out.split("...]\n\n")[1]
    assert abs(len(head) - 2 * len(tail)) <= 2  # head 2/3, tail 1/3
    cut = len(text) - len(head) - len(tail)
    assert f"[... {cut:,} characters (" in out and "lines) cut; see file x ...]" in out
    assert truncate_middle("short", 100, "n") == "short"


def test_long_task_never_exceeds_the_budget_and_keeps_the_task_verbatim(tmp_path: Path) -> None:
    # The provider's tokenizer is 30% denser than chars/4: only calibration keeps prompts in budget.
    llm, notes = agent_llm(20, factor=1.3), NotesWriter(factor=1.3)
    result, memory = run_agent(llm, tmp_path, notes, 20)
    assert result.status == ANSWERED and len(llm.calls) == 21
    assert notes.calls, "the task was long enough to need summaries"
    for call in llm.calls:
        assert true_count(call.messages, 1.3) <= BUDGET
        assert call.messages[1]["role"] == "user" and call.messages[1]["content"].startswith(TASK)
    for messages in notes.calls:
        assert true_count(messages, 1.3) <= BUDGET and TASK in messages[-1]["content"]
    assert memory.estimator.ratio("agent-model") == pytest.approx(1.3, abs=0.05)


def test_summaries_chain_and_keep_facts_from_the_first_steps(tmp_path: Path) -> None:
    llm, notes = agent_llm(20), NotesWriter()
    result, _ = run_agent(llm, tmp_path, notes, 20)
    assert len(notes.calls) >= 3
    for previous, messages in zip(notes.outputs, notes.calls[1:], strict=False):
        assert previous in messages[-1]["content"]  # each summary is written from the one before
    last_prompt = llm.calls[-1].messages[1]["content"]
    assert notes.outputs[-1] in last_prompt and "## Progress so far" in last_prompt
    # The fact sat in the part of page 1 that truncation cut from the agent's view; the summary kept it.
    assert "SECRET-1: widget 1 is colour-7" in last_prompt
    assert "SECRET-1:" not in result.steps[0].observation


def test_summary_call_is_not_a_react_step_and_reads_the_full_observation(tmp_path: Path) -> None:
    llm, notes = agent_llm(8), NotesWriter()
    run_agent(llm, tmp_path, notes, 8)
    system, user = notes.calls[0][0]["content"], notes.calls[0][1]["content"]
    assert system == SUMMARY_SYSTEM and "Action Input" not in system
    for heading in ("Facts found", "Sources visited", "Failed attempts", "Still to find", "Partial answer"):
        assert heading in system
    assert "SECRET-1: widget 1 is colour-7" in user and "observations/step-01.txt" in user


def test_summarizer_is_asked_for_a_bounded_deterministic_reply(tmp_path: Path) -> None:
    seen: list[tuple[int | None, float | None]] = []

    class Recording(NotesWriter):
        def complete(self, messages, stop=None, max_tokens=None, temperature=None):  # type: ignore[no-untyped-def]
            seen.append((max_tokens, temperature))
            return super().complete(messages, stop, max_tokens, temperature)

    _, memory = run_agent(agent_llm(8), tmp_path, Recording(), 8)
    assert seen and all(s == (memory.summary_tokens, 0) for s in seen)


@pytest.mark.parametrize("failure", [
    lambda call: LLMError("summary model overloaded"),
    lambda call: EmptyCompletionError("blocked"),
    lambda call: RuntimeError("bug in the summarizer"),
], ids=["llm-error", "empty", "any-exception"])
def test_failing_summarizer_falls_back_to_dropping_and_the_run_answers(
        tmp_path: Path, failure: Callable[[int], Exception]) -> None:
    llm, notes = agent_llm(12), NotesWriter(fail=failure)
    result, memory = run_agent(llm, tmp_path, notes, 12)
    assert result.status == ANSWERED
    assert len(notes.calls) >= 2 and memory.summary_errors  # it kept trying at later folds
    last = llm.calls[-1].messages[1]["content"]
    files = r"observations/step-01\.txt to observations/step-\d\d\.txt\]"
    assert re.search(r"\[\d+ " + re.escape(DROP_NOTE) + files, last)
    assert all(true_count(c.messages, 1.0) <= BUDGET for c in llm.calls)
    assert (tmp_path / "observations" / "step-01.txt").read_text(encoding="utf-8") == page(1)


def test_oversized_summary_is_rejected_and_steps_are_dropped(tmp_path: Path) -> None:
    class Verbose(NotesWriter):
        def complete(self, messages, stop=None, max_tokens=None, temperature=None):  # type: ignore[no-untyped-def]
            super().complete(messages, stop, max_tokens, temperature)
            return Completion("blah " * 20_000, "length", 100, 2_000, "summary-model")

    llm = agent_llm(10)
    result, memory = run_agent(llm, tmp_path, Verbose(), 10)
    assert result.status == ANSWERED and not memory.summary
    assert DROP_NOTE in llm.calls[-1].messages[1]["content"] and "blah" not in str(llm.calls[-1].messages)
    assert all(true_count(c.messages, 1.0) <= BUDGET for c in llm.calls)


def test_fatal_summarizer_error_stops_summarizing_for_the_task(tmp_path: Path) -> None:
    llm, notes = agent_llm(12), NotesWriter(fail=lambda call: LLMFatalError("key rejected"))
    result, memory = run_agent(llm, tmp_path, notes, 12)
    assert result.status == ANSWERED and len(notes.calls) == 1
    assert DROP_NOTE in llm.calls[-1].messages[1]["content"]


def test_actions_and_observations_are_folded_or_kept_together(tmp_path: Path) -> None:
    # Every other summary fails, so the history mixes folded, dropped and verbatim steps.
    notes = NotesWriter(fail=lambda call: LLMError("flaky") if call % 2 == 0 else None)
    llm = agent_llm(16)
    _, memory = run_agent(llm, tmp_path, notes, 16)
    assert memory.summarized and memory.dropped
    for index, call in enumerate(llm.calls):
        roles = [m["role"] for m in call.messages]
        assert roles[:2] == ["system", "user"]
        assert roles[2:] == ["assistant", "user"] * ((len(roles) - 2) // 2)
        pairs = step_pairs(call.messages)
        for n, observation in pairs:
            assert observation.startswith(f"Observation: page {n} ")
        numbers = [n for n, _ in pairs]
        if index:  # the verbatim steps are the most recent ones (call i follows step i), without gaps
            assert numbers == list(range(index - len(numbers) + 1, index + 1)) and numbers
    kept = [t.step for t in memory.turns]
    assert sorted(memory.summarized + memory.dropped + kept) == list(range(1, 17))


def test_truncated_observation_is_saved_in_full(tmp_path: Path) -> None:
    memory = Memory(budget_tokens=4_000, workspace=tmp_path)
    shown = memory.add(7, action(7), page(7))
    assert "SECRET-7" not in shown and shown.startswith("page 7 line 0")
    assert "is saved in observations/step-07.txt: read the cut part with the read_file tool" in shown
    assert re.search(r"\[\.\.\. [\d,]+ characters \([\d,]+ lines\) cut", shown)
    assert (tmp_path / "observations" / "step-07.txt").read_text(encoding="utf-8") == page(7)


def test_folded_steps_keep_their_full_observation_on_disk(tmp_path: Path) -> None:
    notes = NotesWriter()
    memory = Memory(budget_tokens=2_500, workspace=tmp_path, summarizer=notes)
    for n in range(1, 7):  # each observation is small enough to be shown whole
        assert memory.add(n, action(n), page(n, 1_500)) == page(n, 1_500)
    memory.messages("system prompt", TASK)
    assert memory.summarized and notes.calls
    assert "(full text saved in observations/step-01.txt)" in notes.calls[0][-1]["content"]
    for n in memory.summarized:
        assert (tmp_path / "observations" / f"step-{n:02d}.txt").read_text(encoding="utf-8") == page(n, 1_500)


def test_truncated_observation_can_be_read_back_with_read_file(tmp_path: Path) -> None:
    files = pytest.importorskip("tools.files")
    secret_line = page(1).split("\n").index("SECRET-1: widget 1 is colour-7") + 1

    def read_back(messages: list[Message]) -> Completion:
        path = re.search(r"saved in (observations/step-\d+\.txt)", messages[-1]["content"]).group(1)  # type: ignore[union-attr]
        args = json.dumps({"path": path, "offset": secret_line - 1, "limit": 3})
        text = f"Thought: read the cut part\nAction: read_file\nAction Input: {args}"
        return Completion(text, "stop", 100, 5)

    llm = ScriptedLLM([honest(action(1)), read_back, "Thought: found\nFinal Answer: colour-7"])
    agent = ReActAgent(llm, [fetch, files.ReadFileTool(tmp_path)],
                       memory_factory=lambda: Memory(4_000, tmp_path))
    result = agent.run(TASK)
    assert result.answer == "colour-7" and "SECRET-1" not in result.steps[0].observation
    assert "SECRET-1: widget 1 is colour-7" in result.steps[1].observation


def test_last_observation_is_cut_further_when_one_step_alone_is_too_big(tmp_path: Path) -> None:
    memory = Memory(budget_tokens=2_000, workspace=tmp_path, observation_chars=10**6)
    memory.add(1, action(1), page(1, 20_000))
    messages = memory.messages("system prompt", TASK)
    assert memory.estimator.tokens(messages) <= 2_000 and messages[1]["content"] == TASK
    assert messages[-1]["content"].startswith("Observation: page 1 line 0")
    assert "saved in observations/step-01.txt" in messages[-1]["content"]
    assert (tmp_path / "observations" / "step-01.txt").read_text(encoding="utf-8") == page(1, 20_000)


def test_task_that_cannot_fit_the_budget_ends_the_task_with_a_clear_error() -> None:
    agent = ReActAgent(ScriptedLLM(["Final Answer: x"]), [fetch],
                       memory_factory=lambda: Memory(budget_tokens=1_000))
    result = agent.run("x" * 10_000)
    assert result.status == ERROR and "context budget of 1,000" in (result.error or "")


def test_calibration_moves_the_estimate_toward_reported_counts() -> None:
    est = TokenEstimator()
    messages: list[Message] = [{"role": "system", "content": "s" * 4_000},
                               {"role": "user", "content": "u" * 400}]
    plain = est.tokens(messages)
    est.calibrate(messages, 2 * plain, "m")
    assert est.tokens(messages, "m") == pytest.approx(2 * plain, rel=0.01)
    est.calibrate(messages, plain, "m")  # smoothed: halfway back, not all the way
    assert plain < est.tokens(messages, "m") < 2 * plain
    est.calibrate(messages, 0, "m")  # a provider that reports nothing teaches nothing
    assert plain < est.tokens(messages, "m") < 2 * plain
    est.calibrate(messages, 1_000 * plain, "wild")
    assert est.ratio("wild") == TokenEstimator.MAX_RATIO
    assert est.ratio("never-seen") == TokenEstimator.MAX_RATIO  # unknown model: the safe side


def test_reported_usage_shrinks_the_observation_share() -> None:
    memory = Memory(budget_tokens=8_000)
    before = memory.observation_limit()
    messages: list[Message] = [{"role": "user", "content": "x" * 8_000}]
    memory.record_usage(messages, Completion("ok", prompt_tokens=2 * TokenEstimator().tokens(messages),
                                             model="dense"))
    assert memory.observation_limit() == pytest.approx(before / 2, rel=0.02)
    assert len(memory.add(1, "a", "y" * 9_000)) <= before / 2


def test_summary_usage_is_counted_in_the_task_usage(tmp_path: Path) -> None:
    events: list[str] = []
    notes = NotesWriter(prompt_tokens=1_000)
    replies: list[Reply] = [action(i) for i in range(1, 11)]
    llm = ScriptedLLM([*replies, "Thought: done\nFinal Answer: ok"])
    agent = ReActAgent(llm, [fetch], max_steps=15, on_event=lambda e: events.append(e.kind),
                       memory_factory=lambda: Memory(BUDGET, tmp_path, summarizer=notes))
    usage = agent.run(TASK).usage
    assert notes.calls and events.count("summary") == len(notes.calls)
    assert usage.calls == len(llm.calls) + len(notes.calls)
    assert usage.prompt_tokens == 10 * len(llm.calls) + 1_000 * len(notes.calls)
    assert usage.completion_tokens == 5 * len(llm.calls) + 7 * len(notes.calls)
    assert "summary-model" in usage.models


def test_default_memory_drops_oldest_steps_with_a_note() -> None:
    @tool
    def big(n: int) -> str:
        """Return a big page."""
        return f"page {n} " + "z" * 40_000

    replies = [honest(f'Action: big\nAction Input: {{"n": {i}}}') for i in range(1, 13)]
    llm = ScriptedLLM([*replies, honest("Final Answer: done")])
    result = ReActAgent(llm, [big], max_steps=15).run(TASK)
    assert result.answer == "done"
    assert all(true_count(c.messages, 1.0) <= 32_000 for c in llm.calls)
    first = llm.calls[-1].messages[1]["content"]
    assert "earlier steps were dropped to stay within the context budget.]" in first
    shown = result.steps[0].observation
    assert len(shown) < 40_000 and "characters cut" in shown and "(0 lines)" not in shown  # one line: no count


def test_memory_for_task_budget_and_summarizer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    llm = ScriptedLLM(["x"])
    monkeypatch.setattr("prompt.window.context_window", lambda spec, prices=None, settings=None: 100_000)
    memory = memory_for_task(Settings(max_tokens=4_000), llm, tmp_path, "openai:some-model")
    assert memory.budget_tokens == int((100_000 - 4_000) * 0.7) and memory.summarizer is llm
    assert memory.workspace == tmp_path
    assert memory_for_task(Settings(context_budget=5_000), llm, tmp_path, "x").budget_tokens == 5_000
    monkeypatch.setattr("prompt.window.context_window", lambda spec, prices=None, settings=None: None)
    assert memory_for_task(Settings(), llm, tmp_path, "local:unknown").budget_tokens == 32_000
    monkeypatch.setattr("prompt.window.context_window", lambda spec, prices=None, settings=None: 1_000_000)
    assert memory_for_task(Settings(), llm, tmp_path, "gemini:big").budget_tokens == 128_000
