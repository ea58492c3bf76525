"""ReActAgent: the Thought / Action / Observation loop, its limits, and the events it emits."""

from __future__ import annotations

import time
from collections.abc import Callable

from core import cancellation
from core.chat import ChatModel, Completion, Message
from core.errors import (
    BudgetExceededError,
    ContextWindowError,
    LLMError,
    LLMFatalError,
    StopRequested,
    TaskDeadlineExceeded,
    TaskStopError,
    ToolError,
)
from core.notices import heard
from outcome.task import (
    ANSWERED,
    BUDGET,
    ERROR,
    MAX_STEPS,
    TIME_LIMIT,
    UNFORMATTED,
    AgentResult,
    Event,
    Step,
    Usage,
)
from prompt.finish import FINISH_NOTE, with_user_note
from prompt.memory import ContextBudgetError, Memory
from prompt.protocol import (
    STOP_SEQUENCES,
    Action,
    FinalAnswer,
    ParseError,
    check_echo,
    cut_at_observation,
    echo_failure,
    fitted_system_prompt,
    parse_completion,
)
from prompt.quoting import quote_copied, quote_labels
from prompt.window import refit_budget
from providers.budget import charge_tool_call, last_call, tool_budget
from sources.check import check_citations
from sources.verify import verify_citations
from tools.base import (
    Tool,
    ToolArgumentsError,
    ToolOutput,
    ToolRegistry,
    UnknownToolError,
    call_reads,
    error_output,
    redacted,
)
from tools.call_deadline import call_deadline, run_tool
from tools.notes import Notes, NotesTool

__all__ = ["ANSWERED", "BUDGET", "ERROR", "FINISH_NOTE", "MAX_STEPS", "TIME_LIMIT", "UNFORMATTED", "AgentResult",
           "Event", "ReActAgent", "Step", "Usage", "final_answer_grace", "with_user_note"]

WAIT_NOTICE = 30.0  # seconds between the "still waiting" events of one slow model call


class ReActAgent:
    """Runs tasks through a text-protocol ReAct loop with the given model and tools."""

    def __init__(self, llm: ChatModel, tools: ToolRegistry | list[Tool] | None = None, *,
                 max_steps: int = 15, max_format_errors: int = 3, time_limit: float | None = None,
                 memory_factory: Callable[[], Memory] | None = None, answer_style: str = "plain",
                 max_tokens: int | None = None, temperature: float | None = None,
                 on_event: Callable[[Event], None] | None = None, tool_timeout: float | None = None,
                 clock: Callable[[], float] = time.monotonic, verify_claims: bool = False,
                 judge: Callable[[], ChatModel] | None = None, redact: Callable[[str], str] | None = None) -> None:
        self.llm = llm
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or [])
        self.max_steps, self.max_format_errors, self.time_limit = max_steps, max_format_errors, time_limit
        self.memory_factory = memory_factory or Memory
        self.answer_style, self.max_tokens, self.temperature = answer_style, max_tokens, temperature
        self.on_event, self.clock, self.tool_timeout = on_event, clock, tool_timeout
        self.verify_claims = verify_claims  # --verify-claims model: the task's model also judges cited claims
        self.judge = judge  # --judge-model: builds the model that does (under the task's caps) instead
        self.redact = redact  # configured keys out of what tools read, before the model, events and traces see it

    def register_tool(self, tool: Tool) -> Tool:
        """Add a tool this agent may call."""
        return self.tools.register_tool(tool)

    def run(self, task: str) -> AgentResult:
        """Work on one task until a final answer, a limit or an error; LLMFatalError propagates. However it
        ends (Ctrl-C and the task's time limit too), each tool is told the task ended (Tool.close)."""
        run = _Run(self, task)
        try:
            with cancellation.scope(self.time_limit):  # model calls and their retries end at the deadline
                run.loop()
        except LLMFatalError:
            raise
        except StopRequested:  # stopped mid-task: not recorded, but what it read is told (a research's partial
            self._emit(Event("sources", len(run.result.steps), {  # report names it)
                "sources": run.result.ledger.texts(), "stopped": True}))
            raise
        except LLMError as exc:
            run.result.status, run.result.error = ERROR, str(exc)
        except TaskDeadlineExceeded as exc:
            limit = "" if self.time_limit is None else f" of {self.time_limit:g} s"
            run.result.status, run.result.error = TIME_LIMIT, f"time limit{limit} reached: {exc}"
        finally:
            self.tools.close()  # the task's browser page, python session and the like end with the task
        run.check_answer()
        run.result.elapsed = self.clock() - run.started
        run.result.notes = list(run.notes.items)
        # What each source gave, for a report built from several tasks (research/) to check citations against.
        self._emit(Event("sources", len(run.result.steps), {"sources": run.result.ledger.texts()}))
        self._emit(Event("final", len(run.result.steps), {"status": run.result.status,
                                                          "answer": run.result.answer, "notes": run.result.notes}))
        return run.result

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)


class _Run:
    """The state of one task's run."""

    def __init__(self, agent: ReActAgent, task: str) -> None:
        self.agent, self.task = agent, task
        self.started = agent.clock()
        self.result = AgentResult(task, status="running")
        self.memory = agent.memory_factory()
        self.memory.on_summary = self._count_summary
        self.memory.on_billed = self.result.usage.add  # a failed summary's billed reply counts too
        # The notes tool's notes start empty for each task and stay verbatim in the prompt (prompt/memory.py).
        found = next((t for t in agent.tools if isinstance(t, NotesTool)), None)
        self.notes = found.notes if found is not None else Notes()
        self.notes.clear()
        self.memory.notes = self.notes
        self.system = self.fitted_system()
        self.tool_steps = self.format_errors = 0
        self.asked_for_format = self.echoed = False

    def fitted_system(self) -> str:
        """The system prompt: compact when the full one would take too much of the memory's budget."""
        return fitted_system_prompt(self.agent.tools, self.agent.answer_style, self.memory.budget_tokens,
                                    lambda text: self.memory.estimator.text_tokens(text, self.memory.model))

    def loop(self) -> None:
        while self.result.status == "running":
            cancellation.check_stop()  # Ctrl-C: end here, at a step boundary
            if self.tool_steps >= self.agent.max_steps:
                return self.finish_from_gathered(MAX_STEPS)
            if self.agent.time_limit is not None and self.agent.clock() - self.started > self.agent.time_limit:
                return self.finish_from_gathered(TIME_LIMIT)
            try:
                self.step()
            except BudgetExceededError as exc:
                self.result.error = str(exc)  # which cap: kept beside the best-effort answer
                return self.finish_from_gathered(BUDGET)

    def step(self) -> None:
        step = Step(len(self.result.steps) + 1)
        self.agent._emit(Event("step_start", step.number))
        started = self.agent.clock()
        text = self.call_fitted().text
        step.completion = cut_at_observation(quote_copied(text, self.last_observation()))
        try:
            check_echo(text, self.system, self.task)  # the prompt written back is never an answer
            parsed = parse_completion(step.completion)
        except ParseError as exc:
            return self.format_error(step, exc.message, no_labels=exc.no_labels, echo=exc.echo)
        step.thought = parsed.thought
        if isinstance(parsed, FinalAnswer):
            self.result.steps.append(step)
            return self.finish(parsed.answer, ANSWERED)
        self.act(step, parsed, started)

    def act(self, step: Step, action: Action, started: float) -> None:
        step.action, step.arguments = action.tool, action.arguments
        try:
            tool, args = self.agent.tools.prepare(action.tool, action.arguments)
        except UnknownToolError as exc:  # the format was right: a step that failed, listed like a tool's failure
            return self.failed_call(step, str(exc), started)
        except ToolArgumentsError as exc:
            return self.format_error(step, str(exc))
        step.action, step.arguments = tool.name, args
        self.tool_steps += 1
        self.format_errors = 0
        try:
            with tool_budget(self.agent.llm):  # a tool's own model calls (look) are checked against the caps
                out = run_tool(tool, args, *call_deadline(self.agent.tool_timeout, cancellation.remaining()))
            output = out if isinstance(out, ToolOutput) else ToolOutput(str(out))
        except TaskStopError:  # a spend cap or a --replay miss inside a tool ends the task, like a model call
            raise
        except ToolError as exc:  # a failed model call of the tool (look) may still have been billed
            output, step.error = error_output(exc), "tool"
        except Exception as exc:  # a tool bug must not end the task: the model sees it and goes on
            output, step.error = ToolOutput(f"Error: {type(exc).__name__}: {exc}"), "tool"
        output = redacted(output, self.agent.redact) if self.agent.redact else output
        step.failures = list(output.failures)
        if output.text.startswith("Error:"):
            step.error = "tool"  # also a failure the tool wrote as text (search's DNS error): listed under the task
        for completion in output.usage:  # a tool's own model calls (look, transcribe) count in the task's usage
            self.result.usage.add(completion)
            charge_tool_call(self.agent.llm, completion)  # ... and against its spend caps
        reads = call_reads(tool, args, output, step.error is not None)
        # `[n] Title — URL` on top; a label the source wrote is marked quoted, never read as the loop's own
        self.record(step, quote_labels(self.result.ledger.observe(output.text, reads)), started)
        self.agent._emit(Event("tool_call", step.number, {
            "tool": tool.name, "arguments": args, "observation": step.observation,
            "full_observation_chars": len(output.text), "duration": step.duration, "error": step.error,
            "usage": [{"model": c.model, "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                       "cost": c.cost, "cached": c.cached, "latency": c.latency} for c in output.usage]}))

    def failed_call(self, step: Step, error: str, started: float) -> None:
        """A call of a tool this task does not have: a step, failed, its error the observation."""
        self.tool_steps += 1
        self.format_errors = 0
        step.error = "tool"
        self.record(step, f"Error: {error}", started)
        self.agent._emit(Event("tool_call", step.number, {
            "tool": step.action, "arguments": step.arguments, "observation": step.observation,
            "duration": step.duration, "error": step.error}))

    def last_observation(self) -> str:
        """The last tool result the model saw (a format error's advice is the agent's own, not a source's)."""
        return next((s.observation for s in reversed(self.result.steps) if s.error != "format"), "")

    def record(self, step: Step, observation: str, started: float) -> None:
        step.observation = self.memory.add(step.number, step.completion, observation)
        step.duration = self.agent.clock() - started
        self.result.steps.append(step)

    def format_error(self, step: Step, message: str, no_labels: bool = False, echo: str = "") -> None:
        if echo and self.echoed:  # asked once for the format already: a base model or a wrong chat template
            self.result.steps.append(step)
            self.result.status, self.result.error = ERROR, echo_failure(echo)
            return
        self.echoed = self.echoed or bool(echo)
        if no_labels and self.asked_for_format:
            self.result.steps.append(step)
            return self.finish(step.completion.strip(), UNFORMATTED)
        self.asked_for_format = self.asked_for_format or no_labels
        self.format_errors += 1
        step.error = "format"
        self.record(step, f"Error: {message}", self.agent.clock())
        self.agent._emit(Event("tool_call", step.number, {
            "tool": step.action, "arguments": step.arguments, "observation": step.observation,
            "duration": 0.0, "error": "format"}))
        if self.format_errors >= self.agent.max_format_errors:
            self.result.status = ERROR
            first = message.strip().splitlines()[0]  # its whole sentences, without the format reminder's "...:"
            problem = first if first.endswith((".", "?", "!")) else first[: first.rfind(". ") + 1] or first
            self.result.error = (f"the model did not follow the ReAct format {self.format_errors} times "
                                 f"in a row; last problem: {problem}")

    def finish_from_gathered(self, status: str) -> None:
        """Out of steps or time: one last call that must answer from what was gathered."""
        messages = with_user_note(self.memory.messages(self.system, self.task), FINISH_NOTE)
        # Out of time, the last answer still gets a short call of its own.
        grace = final_answer_grace(self.agent.time_limit) if status == TIME_LIMIT else None
        try:
            with cancellation.scope(grace, extend=True), last_call():
                text = cut_at_observation(quote_copied(self.call(messages).text, self.last_observation()))
        except BudgetExceededError as exc:
            self.finish(None, BUDGET)
            self.result.error = str(exc)
            return
        try:
            check_echo(text, self.system, self.task)
            parsed = parse_completion(text)
            answer = parsed.answer if isinstance(parsed, FinalAnswer) else None
        except ParseError as exc:
            answer = text.strip() if exc.no_labels else None
        self.finish(answer, status)
        if answer is None:  # a spend cap's reason stays first: it is why this was the last step
            capped = self.result.error if status == BUDGET and self.result.error else None
            self.result.error = "; ".join(filter(None, (capped, "the model gave no final answer after the last step")))

    def finish(self, answer: str | None, status: str) -> None:
        self.result.answer, self.result.status = answer, status

    def check_answer(self) -> None:
        """The answer's `[n]` claims and URLs against what the task read (sources/check.py); with --judge-model
        (or --verify-claims model: the task's own model) a model judges each supported or unchecked claim too,
        on the task's cost and caps."""
        r = self.result
        r.sources = [s.url for s in r.ledger.read_sources()]
        r.citations = check_citations(r.answer or "", r.ledger)
        a = self.agent
        ask = self.judge_call if a.judge else self.call if a.verify_claims else None
        if ask is not None and r.citations:  # within what is left of the task's time, and at least a grace
            left = None if a.time_limit is None else max(a.time_limit - (a.clock() - self.started),
                                                          final_answer_grace(a.time_limit))
            with cancellation.scope(left, extend=True):
                verify_citations(r.citations, r.ledger, lambda messages: ask(messages).text)

    def judge_call(self, messages: list[Message]) -> Completion:
        """One call of the --judge-model, held to the task's caps and counted in its usage, like a tool's model."""
        a = self.agent
        assert a.judge is not None
        try:
            with tool_budget(a.llm):
                completion = a.judge().complete(messages, max_tokens=a.max_tokens, temperature=0)
        except LLMError as exc:
            for billed in exc.billed:
                self.result.usage.add(billed)
                charge_tool_call(a.llm, billed)
            raise
        self.result.usage.add(completion)
        charge_tool_call(a.llm, completion)
        a._emit(Event("judge_call", len(self.result.steps), {  # not an llm_call: --replay-trace replays those
            "messages": messages, "completion": completion.text, "model": completion.model,
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "latency": completion.latency, "cost": completion.cost, "cached": completion.cached}))
        return completion

    def call_fitted(self) -> Completion:
        """The step's call; when the server names a window smaller than the prompt, the memory is fitted to it
        (older steps folded, the compact prompt) and the call made once more. A prompt that cannot shrink, or a
        second refusal, is the ContextWindowError that stops the run."""
        messages = self.memory.messages(self.system, self.task)
        try:
            return self.call(messages)
        except ContextWindowError as exc:
            budget = refit_budget(exc.window, self.agent.max_tokens) if exc.window else None
            if budget is None or budget >= self.memory.budget_tokens:
                raise
            if exc.prompt_tokens:  # the server's own count of what was sent: estimates follow it from now on
                self.memory.estimator.calibrate(messages, exc.prompt_tokens, self.memory.model or "")
            self.memory.refit(budget)
            self.system = self.fitted_system()
            try:
                messages = self.memory.messages(self.system, self.task)
            except ContextBudgetError:
                raise exc from None  # the system prompt and the task alone are over the window
            return self.call(messages)

    def call(self, messages: list[Message]) -> Completion:
        a, step, model = self.agent, len(self.result.steps) + 1, getattr(self.agent.llm, "model", "")
        try:  # its retries, timeouts and a line every WAIT_NOTICE seconds go to the trace and the console
            with heard(lambda kind, data: a._emit(Event(kind, step, {"model": model, **data})), WAIT_NOTICE):
                completion = a.llm.complete(messages, stop=list(STOP_SEQUENCES), max_tokens=a.max_tokens,
                                            temperature=a.temperature)
        except LLMError as exc:
            for billed in exc.billed:  # an empty or blocked reply is billed all the same
                self.result.usage.add(billed)
            a._emit(Event("llm_error", step, {"messages": messages, "error": str(exc), "model": exc.model,
                                              "status": exc.status, "attempts": exc.attempts}))
            raise
        self.result.usage.add(completion)
        self.memory.record_usage(messages, completion)
        a._emit(Event("llm_call", len(self.result.steps) + 1, {
            "messages": messages, "completion": completion.text, "model": completion.model,
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "latency": completion.latency, "finish_reason": completion.finish_reason,
            "cost": completion.cost, "cached": completion.cached, "original_cost": completion.original_cost,
            "cached_tokens": completion.cached_tokens, "cache_write_tokens": completion.cache_write_tokens,
            "rate_wait": completion.rate_wait}))  # seconds held by a shared rate limit (providers/ratelimit.py)
        return completion

    def _count_summary(self, completion: Completion, messages: list[Message]) -> None:
        self.result.usage.add(completion)
        self.agent._emit(Event("summary", len(self.result.steps), {
            "messages": messages, "completion": completion.text, "model": completion.model,
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "cost": completion.cost, "latency": completion.latency}))


def final_answer_grace(time_limit: float | None) -> float:
    """Seconds the last answer of a task that ran out of time may take: a quarter of the limit, 5 to 30 s."""
    return min(30.0, max(5.0, (time_limit or 0.0) / 4))
