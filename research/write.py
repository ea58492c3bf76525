"""The writer: findings and `[n] Title — URL` lines in, Markdown sections with `[n]` after each claim out.

A reply cut off at max_tokens is continued (CONTINUATIONS more calls); if it is still cut, the text ends at
its last whole sentence with a note saying so, never mid-sentence. Model calls go through `Caller`: each
is charged to the run's caps and written to the run's writer trace.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent import WAIT_NOTICE, Event
from cache.model import build_model
from config import Settings
from core import cancellation
from core.chat import ChatModel, Completion, Message
from core.errors import ContextWindowError, LLMError, StopRequested
from core.notices import heard
from prompt.repair import echo_of
from prompt.window import default_budget, refit_budget
from providers.budget import RunBudget, last_call
from providers.ratelimit import RateLimits
from research.language import with_language
from run.batch import TraceWriter
from run.console import call_notice
from sources.check import MARKER

CONTINUATIONS = 2
DOING = {"plan": "planning", "followup": "planning the next round", "write": "writing the report",
         "repair": "repairing the report", "judge": "judging the report's claims", "labels": "naming the headings"}
CUT_NOTE = "*⚠ The writer's reply was cut off here at the model's output limit (--max-tokens); the rest is missing.*"
CONTINUE = ("Your reply was cut off at the output limit. Continue exactly where it stopped: do not repeat "
            "anything, do not start again.")
PROMPT = """You write a research report that answers the question below from the research done for it.

Question: {question}

Sources (the only ones you may cite, by their number):
{headers}

Findings, one per sub-question (their [n] markers already use the numbers above):

{findings}

Write the report in Markdown: sections, each starting with a `## ` heading, in an order that answers the \
question. Put [n] right after each claim you take from source n. State only what the findings say, with the \
figures as they give them; cite no other source and write no URL. No title line and no list of sources at \
the end (they are added for you)."""
_SECTION = re.compile(r"^#{1,3} \S", re.MULTILINE)
_AGENT_STEP = re.compile(r"^[ \t*]*(?:Action|Action Input|Final Answer|Observation)[ \t*]*:",
                         re.MULTILINE | re.IGNORECASE)
SENTENCE_END = re.compile(r"""[.!?]["”’)]*(?:\s*\[[\d,;\s–-]+\])*(?=\s|$)""")


def role_model(settings: Settings, spec: str | None, limits: RateLimits | None) -> ChatModel | None:
    """The model a research role names (--planner-model, --writer-model, --judge-model), under the run's rate
    limits; None when it names none or the main model itself."""
    if not spec or spec == settings.model:
        return None
    return build_model(replace(settings, model=spec, fallback_models=()), limits=limits)



@dataclass
class Caller:
    """The research's own model calls (plan, writer, repair): under the run's caps, each in the writer trace."""

    llm: ChatModel
    settings: Settings
    budget: RunBudget | None = None
    trace: TraceWriter | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    cost: float | None = 0.0
    calls: int = 0
    tokens: int = 0
    roles: dict[str, ChatModel] = field(default_factory=dict)  # a purpose's own model: --planner/--writer-model
    specs: dict[str, str] = field(default_factory=dict)  # ... and its name (--writer-model gemma)
    language: str | None = None  # --language: each call's reply is asked for in it (research/language.py)
    on_notice: Callable[[str], None] | None = None  # a slow call's "still waiting" line, a retry, a timeout
    rooms: dict[str, int] = field(default_factory=dict)  # tokens of prompt each purpose's model holds

    def spec(self, purpose: str) -> str:
        """The model that makes this purpose's calls, by the name the user gave it."""
        return self.specs.get(purpose) or str(self.settings.model or getattr(self.llm, "model", ""))

    def room(self, purpose: str) -> int:
        """Tokens of prompt this purpose's model holds: prompt/window.py's budget for its window (an alias's
        context_window, a local server's, the price table's), or what a refusal named (refit)."""
        if purpose not in self.rooms:
            spec = self.spec(purpose)
            self.rooms[purpose] = default_budget(replace(self.settings, model=spec), spec)
        return self.rooms[purpose]

    def refit(self, purpose: str, exc: ContextWindowError) -> bool:
        """A server refused a prompt over its window and named it: this purpose's room from now on; False when
        that leaves no smaller room to try again with."""
        room = refit_budget(exc.window, self.settings.max_tokens) if exc.window else None
        if room is None or room >= self.room(purpose):
            return False
        self.rooms[purpose] = room
        return True

    def __call__(self, messages: list[Message], purpose: str) -> Completion:
        """One call (a cap, a failed call or a stop raises: LLMError or StopRequested)."""
        if self.stop.is_set():
            raise StopRequested()
        messages = with_language(messages, self.language)
        llm = self.roles.get(purpose, self.llm)
        model = self.budget.task_models(llm, None)[0] if self.budget is not None else llm
        try:
            with cancellation.scope(self.settings.task_timeout, stop=self.stop), last_call(), \
                    heard(self._notice(purpose), WAIT_NOTICE):
                completion = model.complete(messages, max_tokens=self.settings.max_tokens,
                                            temperature=self.settings.temperature)
        except LLMError as exc:
            for billed in exc.billed:
                self._count(billed)
            raise
        self._count(completion)
        if self.trace is not None:
            self.trace(Event("llm_call", self.calls, {
                "purpose": purpose, "messages": messages, "completion": completion.text, "model": completion.model,
                "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                "finish_reason": completion.finish_reason, "cost": completion.cost, "latency": completion.latency}))
        return completion

    def _notice(self, purpose: str) -> Callable[[str, dict[str, Any]], None]:
        """What a call of this purpose says while it runs, as `ask` says it: `writing the report · gemma: still
        waiting for the reply (30 s)`."""
        def tell(kind: str, data: dict[str, Any]) -> None:
            event = Event(kind, 0, {"model": self.spec(purpose), **data})
            notice = call_notice(event) or (str(data.get("warning") or "") if kind == "warning" else "")
            if notice and self.on_notice is not None:
                self.on_notice(f"{DOING.get(purpose, purpose)} · {notice}")
        return tell

    def _count(self, c: Completion) -> None:
        self.calls += 1
        self.tokens += c.prompt_tokens + c.completion_tokens
        self.cost = None if self.cost is None or (c.cost is None and not c.cached) else self.cost + (c.cost or 0.0)


def write_prompt(question: str, headers: Sequence[str], findings: Sequence[tuple[str, str]]) -> str:
    """The writer's prompt: the question, the numbered sources, each sub-question's findings."""
    shown = "\n\n".join(f"### {q}\n{a.strip()}" for q, a in findings)
    return PROMPT.format(question=question.strip(), headers="\n".join(headers), findings=shown)


def complete_text(call: Caller, messages: list[Message], purpose: str) -> tuple[str, bool]:
    """The reply, continued while it is cut off at max_tokens; (text, still cut off)."""
    text = ""
    for _ in range(1 + CONTINUATIONS):
        asked: list[Message] = messages if not text else [
            *messages, {"role": "assistant", "content": text}, {"role": "user", "content": CONTINUE}]
        try:
            reply = call(asked, purpose)
        except ContextWindowError:
            if not text:
                raise
            return text, True  # the reply so far leaves the window no room to go on: it ends cut off
        text += reply.text
        if reply.finish_reason != "length":
            return text, False
    return text, True


def end_whole(text: str) -> str:
    """A cut-off text ended at its last whole sentence (or line), with a note saying it was cut."""
    ends = list(SENTENCE_END.finditer(text))
    line_end = text.rstrip().rfind("\n")
    cut = max(ends[-1].end() if ends else 0, line_end if line_end > 0 else 0)
    return text[:cut].rstrip() + "\n\n" + CUT_NOTE + "\n"


def refusal(text: str, had_citations: bool = True) -> str | None:
    """Why a writer's or repair's reply cannot stand as the report: an agent step, no `## ` sections and no [n]
    citations, or no citation where what it was given had some; with how it began. None when it can."""
    sections, cited = _SECTION.search(text) is not None, MARKER.search(text) is not None
    if echo_of(text, ""):
        why = f"it carries chat-template tokens ({echo_of(text, '')}): a base model or a wrong chat template"
    elif _AGENT_STEP.search(text):
        why = "it is an agent step (Action / Final Answer), not a report"
    elif not sections and not cited:
        why = "it has no sections and no [n] citations"
    elif not cited and had_citations:
        why = "it cites no source"
    else:
        return None
    began = " ".join(text.split())
    return f"{why}; it began \u201c{began[:80]}{'…' if len(began) > 80 else ''}\u201d"


def findings_report(findings: Sequence[tuple[str, str]]) -> str:
    """The report without a writer (a cap, a stop or a failed writer): a section per answered sub-question."""
    return "\n\n".join(f"## {' '.join(q.split())}\n\n{a.strip()}" for q, a in findings if a.strip()) + "\n"


def headers_of(ledger: Any) -> list[str]:
    """`[n] Title — URL` for each source of the pooled ledger."""
    return [s.header() for s in ledger.read_sources()]
