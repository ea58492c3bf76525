"""One research run: plan, research the sub-questions side by side, compose and check the report, keep it.

Use (the `research` command and the web app's Deep research mode both go through this)::

    research = Research(settings, "What is known about X?", store=RunStore.from_settings(settings))
    report = research.run()                  # a ResearchReport; research.run_dir holds report.json
    Research(settings, question, store=store).run(resume=store.open(run_id))   # only unfinished sub-questions

Events go to a `Progress` (the command prints them, the web app streams them). The run's --max-run-cost
covers the planning call, every sub-question and the writer; once it is reached no new sub-question starts
and the report is written from what was found, titled partial.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent import Event
from cache.model import model_specs
from config import Settings
from core.errors import LLMError, LLMFatalError, StopRequested
from core.search_settings import papers_mode
from llm import with_default_model
from providers.budget import RunBudget
from providers.ratelimit import RateLimits
from report.html.research import write_report
from report.markdown import TaskRecord, plural
from report.research import SOURCES_DIR, ResearchReport, SubQuestion, load_report, save_report
from research.compose import compose, read_line, supported
from research.gather import NO_FORMAT, Gather, finished, sub_tasks, unformatted
from research.language import note_across_languages, translated_headings
from research.plan import MOST, parse_plan, plan_prompt
from research.pool import Found
from research.steer import followup
from research.store import KIND, ResearchRun, save_rounds, stored_plan
from research.write import Caller, role_model
from run.batch import TraceWriter
from run.execute import checked_models
from run.store import Run, RunStore
from tasks.taskfile import Task
from tools.mcp import configured_specs, mcp_session
from tools.web.session import web_session

ROLES = (("planner", "plan"), ("writer", "write"), ("judge", "judge"))  # a report names each one's own model
BY_USER = "the user"  # who stopped a research when nobody says otherwise
QUIET = ("not started", "stopped")  # statuses whose reason the partial note has already given
WRITER_TRACE = "writer.jsonl"  # the planning, writing and repair calls, in the run's traces/


class Progress:
    """What a research run tells as it goes; this one tells nothing (the command and the web app subclass it)."""

    def line(self, text: str) -> None:
        """A line about the run (the plan's fallback, the phase)."""

    def planned(self, plan: list[SubQuestion]) -> None:
        """The plan is made (or read back on --resume)."""

    def followed_up(self, round_: int, subs: list[SubQuestion]) -> None:
        """A follow-up call planned round `round_` (--depth): its new sub-questions."""
        self.line(f"round {round_}: " + "; ".join(f"{s.n}. {s.text}" for s in subs))

    @contextlib.contextmanager
    def researching(self, todo: list[Task]) -> Iterator[None]:
        """Around the sub-questions' research."""
        yield

    def on_event(self, task: Task, event: Event) -> None:
        """An agent event of a sub-question's task."""

    def on_record(self, record: TaskRecord) -> None:
        """A sub-question's task finished."""


@dataclass
class Research:
    """A research question with its files, settings and run store; `run` does the whole of it."""

    settings: Settings
    question: str
    store: RunStore
    files: list[Path] = field(default_factory=list)
    breadth: int = MOST
    concurrency: int | None = None  # sub-questions researched at once (None: all of them)
    progress: Progress = field(default_factory=Progress)
    stop: threading.Event = field(default_factory=threading.Event)
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    limits: RateLimits | None = None
    tracing: Any = None
    output: Path | None = None  # the report the command writes (checked before any model call)
    run_dir: Path | None = None
    sub_questions: list[str] | None = None  # --plan FILE: the plan as given (no planning call)
    depth: int = 1  # rounds: each after the first is planned by a follow-up call on what the last one found
    language: str | None = None  # --language: the plan and the report are written in it
    stopped_by: Callable[[], str] = lambda: BY_USER  # who set `stop`: `the user (Ctrl-C)`, `a SIGTERM signal` ...

    def run(self, resume: Run | None = None) -> ResearchReport:
        """Plan, research, write, check; the delivered report (also kept in the run store)."""
        limits = self.limits or RateLimits(self.settings.rpm, self.settings.tpm)  # shared by every role's model
        self.settings = with_default_model(self.settings)  # one GET /models of a local server, not one per task
        llm, summary_llm = checked_models(self.settings, self.output, limits)
        roles, specs = self._roles(limits)  # a bad --planner-model / --writer-model stops here: nothing spent or kept
        spec = model_specs(llm)[0]
        budget = RunBudget.from_settings(self.settings, llm)
        run = resume or self.store.create(KIND, " ".join(self.question.split()), replace(self.settings, model=spec))
        if resume is not None:  # running again: no pruning of its workspace meanwhile
            run.info.status, run.info.pid, run.info.finished = "running", os.getpid(), None
            run.save()
        self.run_dir, research = run.dir, ResearchRun(run)
        settings = run.apply(self.settings)
        trace = TraceWriter(settings.trace_dir / WRITER_TRACE) if settings.trace_dir else None
        call = Caller(llm, settings, budget, trace, self.stop, roles=roles, specs=specs, language=self.language,
                      on_notice=self.progress.line)
        try:
            report = self._run(settings, research, call, Gather(settings, llm, summary_llm, spec, research, budget,
                                                               self.tracing, self.stop, self.write_lock))
        except BaseException:  # LLMFatalError (a bad key): a new run that saved nothing is not kept (exit 2)
            if resume is None and not research.records():
                run.discard()
            else:
                run.finish(tasks=0, answered=0, cost=call.cost, status="failed")
            raise
        finally:
            if trace is not None:
                trace.close()
        run.info.report = "report.html"  # what `main.py runs` and the web app open
        capped = budget is not None and budget.exhausted is not None  # the cost cap left part of it undone
        run.finish(tasks=len(report.plan), answered=sum(s.answered for s in report.plan), cost=report.cost,
                   status="stopped" if self.stop.is_set() or capped else "finished")
        return report

    def _roles(self, limits: RateLimits) -> tuple[dict[str, Any], dict[str, str]]:
        """The planning, writing and judging calls' own models, when --planner-model / --writer-model /
        --judge-model name them, and their names, by purpose."""
        s, roles, specs = self.settings, {}, {}
        for spec, purposes in ((s.planner_model, ("plan", "followup")),
                               (s.writer_model, ("write", "repair", "labels")), (s.judge_model, ("judge",))):
            if spec and (model := role_model(s, spec, limits)) is not None:
                roles.update(dict.fromkeys(purposes, model))
                specs.update(dict.fromkeys(purposes, spec))
        return roles, specs

    def _run(self, settings: Settings, research: ResearchRun, call: Caller, gather: Gather) -> ResearchReport:
        stored = research.plan()
        spent_before = float(stored.get("spent") or 0.0) if stored else 0.0
        plan = self._plan(call, stored)
        followed = [int(r) for r in stored.get("followed") or ()] if stored else []  # rounds followed up
        save_rounds(research, self.question, self.files, plan, followed, spent_before)
        self.progress.planned(plan)
        gather.on_event, gather.on_record = self.progress.on_event, self.progress.on_record
        with mcp_session(configured_specs(settings)), web_session(settings):
            self._rounds(research, call, gather, plan, followed, spent_before)
        tasks = sub_tasks(plan, self.question, self.files, papers_mode(self.settings))
        records = research.records()
        found = [self._found(sub, task, records.get(task.key), gather) for sub, task in zip(plan, tasks, strict=True)]
        report = ResearchReport(self.question, plan=plan, run_id=research.run.id, model=gather.spec,
                                finished=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
        self.progress.line("writing the report and checking every citation")
        writer = None if self.stop.is_set() or _exhausted(gather) else call
        judge = writer if settings.judge_model else None  # --judge-model: also on the report's claims ("judge" role)
        texts = compose(self.question, plan, found, writer, report, judge)
        note_across_languages(report, texts)
        if self.language and writer is not None:  # the report's own headings in its language too
            report.labels = translated_headings(writer, self.language)
        report.models = {role: call.spec(purpose) for role, purpose in ROLES if purpose in call.specs}
        report.partial = self._partial(plan, gather, report)
        report.cost = _total(list(records.values()), call.cost, spent_before)
        save_rounds(research, self.question, self.files, plan, followed,
                    (call.cost or 0.0) + spent_before if call.cost is not None else None)
        kept = self._kept(load_report(research.dir), report)
        if kept is not None:  # --resume: the report from before had more supported claims: it stays
            return kept
        save_report(research.dir, report, texts)
        write_report(report, research.dir / "report.md", True, research.dir / SOURCES_DIR)  # the store's own copy
        return report

    def _rounds(self, research: ResearchRun, call: Caller, gather: Gather, plan: list[SubQuestion],
                followed: list[int], spent_before: float) -> None:
        """Research the plan round by round (--depth): after each, one follow-up planning call adds the next
        round's sub-questions to `plan`; it ends at the depth, with a follow-up that gives none, a stop or the cap.
        On --resume the rounds already planned are kept and only their unfinished sub-questions run."""
        round_ = 1
        while True:
            tasks = sub_tasks([s for s in plan if s.round == round_], self.question, self.files,
                              papers_mode(self.settings))
            records = research.records()
            todo = [t for t in tasks if not finished(records.get(t.key))]
            with self.progress.researching(todo):
                gather.run(todo, self.files, self.concurrency)
            if round_ >= self.depth or self.stop.is_set() or _exhausted(gather):
                return
            if not any(s.round == round_ + 1 for s in plan):  # the next round is not planned yet
                if round_ in followed:  # its follow-up call gave none (a resumed run)
                    return
                records = research.records()
                tasks = sub_tasks(plan, self.question, self.files, papers_mode(self.settings))
                done = [(s, self._found(s, t, records.get(t.key), gather)) for s, t in zip(plan, tasks, strict=True)]
                new = followup(call, self.question, done, round_, self.breadth)
                followed.append(round_)
                plan += [SubQuestion(len(plan) + i, q, round=round_ + 1) for i, q in enumerate(new, start=1)]
                save_rounds(research, self.question, self.files, plan, followed,
                            (call.cost or 0.0) + spent_before if call.cost is not None else None)
                if not new:
                    self.progress.line(f"round {round_}'s findings need no follow-up: no further round")
                    return
                self.progress.followed_up(round_ + 1, [s for s in plan if s.round == round_ + 1])
            round_ += 1

    def _kept(self, before: ResearchReport | None, report: ResearchReport) -> ResearchReport | None:
        """The report from before (--resume) when the new one has fewer supported claims, with a note; else None."""
        if before is None or supported(before.citations) <= supported(report.citations):
            return None
        line = (f"The resumed research's new report had {supported(report.citations)} supported claims where the "
                f"report from before has {supported(before.citations)}: the report from before is kept.")
        self.progress.line(line)
        before.notes.append(line)
        before.partial = before.partial or "a resumed run's report was refused"
        return before

    def _plan(self, call: Caller, stored: dict[str, Any] | None) -> list[SubQuestion]:
        """The stored plan (--resume), else one planning call; the question itself when it gives none."""
        if stored and stored.get("sub_questions"):
            return stored_plan(stored)
        if self.sub_questions:  # --plan FILE: exactly these, no planning call
            return [SubQuestion(i, q) for i, q in enumerate(self.sub_questions, start=1)]
        prompt = plan_prompt(self.question, self.breadth, [f.name for f in self.files],
                             docs=bool(self.settings.docs_dirs), web=self.settings.search,
                             papers=papers_mode(self.settings))
        try:
            subs = parse_plan(call([{"role": "user", "content": prompt}], "plan").text, self.breadth)
            if not subs:
                self.progress.line("the plan gave no sub-questions: researching the question as it is")
        except LLMFatalError:  # a bad key, an unknown model: every call would fail the same way
            raise
        except (LLMError, StopRequested) as exc:  # stopped, a cap, a failed call: the question is the plan
            subs = []
            if not self.stop.is_set():
                self.progress.line(f"the planning call failed ({exc}): researching the question as it is")
        return [SubQuestion(i, q) for i, q in enumerate(subs or [" ".join(self.question.split())], start=1)]

    def _found(self, sub: SubQuestion, task: Task, record: TaskRecord | None, gather: Gather) -> Found:
        """What the sub-question gave; its line in the plan says how its research went."""
        if record is None:  # stopped mid-task, or never started; what a stopped task read is still told
            read = gather.read.get(task.id, [])
            sub.status, sub.sources = ("stopped" if self.stop.is_set() else "not started"), len(read)
            sub.error = (f"after reading {plural(len(read), 'source')}" if read else "before reading anything") \
                if self.stop.is_set() else _exhausted(gather)  # who stopped it: the partial note says, once
            return Found(None, read, [])
        f = gather.found(record)
        sub.status, sub.answered, sub.cost, sub.seconds = record.status, f.answer is not None, record.cost, \
            record.seconds
        sub.error, sub.sources = record.error, len(f.read)
        if unformatted(record):  # its reply is no finding: the plan says why instead of "answered unformatted"
            sub.status, sub.error = "unformatted", NO_FORMAT
        return f

    def _partial(self, plan: list[SubQuestion], gather: Gather, report: ResearchReport) -> str | None:
        """Why the report is partial: a stop, the cost cap, a writer that could not write, sub-questions that
        gave nothing; None when whole."""
        reasons = []
        if self.stop.is_set():
            read = read_line(report)
            reasons.append(f"the research was stopped by {self.stopped_by()}"
                           + (f" after reading {read}" if read else " before anything was read"))
        if _exhausted(gather):
            reasons.append(str(_exhausted(gather)))
        elif report.repair.get("writer") and not self.stop.is_set():
            reasons.append(str(report.repair["writer"]))
        missing = [s for s in plan if not s.answered]
        if missing:
            reasons.append(f"{len(missing)} of {len(plan)} sub-questions gave no findings ("
                           + "; ".join(f"{s.n}: {s.status if s.status in QUIET else s.error or s.status}"
                                       for s in missing) + ")")
        return "; ".join(reasons) or None


def _exhausted(gather: Gather) -> str | None:
    """Why the run's cost cap keeps anything new from starting, or None."""
    return gather.budget.exhausted if gather.budget is not None else None


def _total(records: list[TaskRecord], own: float | None, before: float) -> float | None:
    """What the whole research cost: every sub-question, planning and writing (None: a price is unknown)."""
    costs = [r.cost for r in records]
    if own is None or any(c is None for c in costs):
        return None
    return own + before + sum(c for c in costs if c is not None)
