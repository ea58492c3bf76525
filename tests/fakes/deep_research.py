"""A loopback world for `main.py research`: web pages and an OpenAI-compatible model that plans, researches
each sub-question with the ReAct protocol (scrape its pages, answer citing them) and writes the report.

    world = World(question, plan, subs={"sub-question": Sub(["/a", "/b"], "answer [1] ... [2]")},
                  pages={"/a": page("Title", "text")}, writer=lambda prompt: "## ...", repair=...)
    with LoopbackServer(world) as server:
        world.base = server.url
        ... main.py research QUESTION --model openai:gpt-4.1-mini --base-url server.url/v1 ...

Which call is which is read from its prompt: the planner asks for "sub-questions", a sub-question's task
carries "one part of a larger research question", the writer's prompt starts "You write a research report",
the repair's "Your report below was checked", a follow-up planning call's (--depth) "You follow up a piece of
research" (answered by `followup`, default "none"), the --judge-model's "You check whether a passage", --language's
"You translate the headings" (answered by `labels`, default nothing: the headings stay English). A reply
may be a str or a full Response (a cut-off one, an error); the benchmark uses the same world with real pages.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import Request, Response
from tests.fakes.providers import openai_reply

Reply = str | Response
MARK_PLAN, MARK_TASK = "Reply with the sub-questions only", "one part of a larger research question"
MARK_WRITE, MARK_REPAIR = "You write a research report", "Your report below was checked"
MARK_FOLLOWUP = "You follow up a piece of research"
MARK_JUDGE = "You check whether a passage"  # --judge-model (sources/verify.py)
MARK_LABELS = "You translate the headings of a research report"  # --language's headings (research/language.py)


def page(title: str, body: str) -> Response:
    """An HTML page with a title and paragraphs (one per blank-line-separated block of `body`)."""
    paragraphs = "".join(f"<p>{p.strip()}</p>" for p in body.split("\n\n") if p.strip())
    html = (f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{paragraphs}</article>"
            "</body></html>")
    return Response(200, html, content_type="text/html; charset=utf-8")


@dataclass
class Sub:
    """One sub-question's research: the paths it scrapes in order, then its answer (or a reply standing in)."""

    paths: list[str]  # "/page" is scraped; "file:NAME" read from the workspace; "docs:WORDS" searched in --docs;
    # "papers:WORDS" searched with search_papers
    answer: Reply
    delay: float = 0.0  # seconds each of its model replies takes
    gate: threading.Event | None = None  # each of its model replies waits until the test sets it (at most 120 s)
    prompt_tokens: int = 10  # the usage each of its replies reports (what it costs at the model's price)


@dataclass
class World:
    """The pages, the plan and the scripted model of one research question."""

    question: str
    plan: list[str]
    subs: dict[str, Sub]
    pages: dict[str, Response]
    writer: Callable[[str], Reply] = lambda prompt: "## Findings\n\nNothing to say."
    repair: Callable[[str], Reply] | None = None
    followup: Callable[[str], Reply] = lambda prompt: "none"
    judge: Callable[[str], Reply] | None = None  # --judge-model's replies
    labels: Callable[[str], Reply] = lambda prompt: ""  # --language: the headings translated (none by default)
    base: str = ""
    model: str | None = None  # the model name its replies carry (None: openai_reply's, which has a known price)
    calls: dict[str, int] = field(default_factory=dict)  # plan / task / write / repair / other -> count
    prompts: dict[str, list[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, req: Request) -> Response:
        path = req.path.split("?", 1)[0]
        if req.method in ("GET", "HEAD"):
            return self.pages.get(path) or Response(404, "<html><body>Not found</body></html>",
                                                    content_type="text/html")
        if path == "/search":
            return Response(200, {"organic": []})
        messages = req.json()["messages"]
        reply = self._model(messages)
        if self.model and isinstance(reply.body, dict) and "model" in reply.body:
            reply.body = {**reply.body, "model": self.model}
        return reply

    def _model(self, messages: list[dict[str, Any]]) -> Response:
        first = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
        kind = ("followup" if first.startswith(MARK_FOLLOWUP) else
                "plan" if MARK_PLAN in first else "write" if first.startswith(MARK_WRITE) else
                "repair" if first.startswith(MARK_REPAIR) else "judge" if first.startswith(MARK_JUDGE) else
                "labels" if first.startswith(MARK_LABELS) else "task" if MARK_TASK in first else "other")
        with self._lock:
            self.calls[kind] = self.calls.get(kind, 0) + 1
            self.prompts.setdefault(kind, []).append(first)
        if kind == "plan":
            return openai_reply("\n".join(f"{i}. {q}" for i, q in enumerate(self.plan, start=1)))
        if kind == "task":
            return self._task(first, messages)
        if kind == "followup":
            return _response(self.followup(first))
        if kind == "labels":
            return _response(self.labels(first))
        if kind == "judge" and self.judge is not None:
            return _response(self.judge(first))
        if kind in ("write", "repair"):
            script = self.writer if kind == "write" else (self.repair or self.writer)
            return _response(script(_continued(messages)))
        return openai_reply("Final Answer: (no script for this call)")

    def _task(self, prompt: str, messages: list[dict[str, Any]]) -> Response:
        sub = next((s for q, s in self.subs.items() if prompt.startswith(q)), None)
        if sub is None:
            return openai_reply("Final Answer: no script for this sub-question")
        turns = sum(1 for m in messages if m["role"] == "assistant")
        if turns < len(sub.paths):
            path = sub.paths[turns]
            tool, args = ("read_file", {"path": path[5:]}) if path.startswith("file:") else \
                ("search_docs", {"query": path[5:]}) if path.startswith("docs:") else \
                ("search_papers", {"query": path[7:]}) if path.startswith("papers:") else \
                ("scrape", {"url": self.base + path})
            reply = openai_reply(f"Thought: read it\nAction: {tool}\nAction Input: {json.dumps(args)}",
                                 prompt_tokens=sub.prompt_tokens)
        else:
            reply = _response(sub.answer, final=True, prompt_tokens=sub.prompt_tokens)
        reply.delay = sub.delay
        if sub.gate is not None:
            sub.gate.wait(120)
        return reply


def _continued(messages: list[dict[str, Any]]) -> str:
    """The writer's prompt, or "CONTINUE:" and what was written so far when it is asked to go on."""
    if len(messages) > 1 and messages[-2]["role"] == "assistant":
        return "CONTINUE:" + str(messages[-2]["content"])
    return str(messages[0]["content"])


def _response(reply: Reply, final: bool = False, prompt_tokens: int = 10) -> Response:
    if isinstance(reply, Response):
        return Response(reply.status, reply.body, dict(reply.headers), reply.delay, reply.content_type)
    return openai_reply(f"Thought: done\nFinal Answer: {reply}" if final else reply, prompt_tokens=prompt_tokens)


def cut_reply(text: str) -> Response:
    """A reply cut off at max_tokens (finish_reason "length")."""
    return openai_reply(text, finish_reason="length")
