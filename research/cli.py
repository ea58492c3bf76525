"""`main.py research "QUESTION" -o report.md`: the plan on stdout, progress on stderr, report.md + report.html.

Exit 0 for a whole report, 1 for a partial one (a cap, a failed sub-question) or when nothing could be read,
130/143 after Ctrl-C/SIGTERM (the partial report is still written), 2 for errors that stop it before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent import Event
from config import Settings
from core.errors import ConfigError, TaskFileError
from core.text import money, terminal_safe
from report.html.research import write_report
from report.markdown import TaskRecord
from report.research import MARK, SOURCES_DIR, ResearchReport, SubQuestion, round_label
from research.estimate import research_estimate
from research.export import export, report_formats
from research.language import check_language
from research.pipeline import Progress, Research
from research.plan import MOST
from research.steer import check_depth, other_question, plan_only, read_plan_file
from research.store import resumable
from run.console import ConsoleReporter
from run.files import ReportLock, check_outputs
from run.stopping import Stopper
from run.store import Run, RunStore
from run.summary import resume_command
from sources.check import claims_line
from tasks.taskfile import STDIN, Task
from telemetry.setup import start_tracing

EXIT_OK, EXIT_PARTIAL = 0, 1
STOPPING = "stopping: no new sub-question starts; the report is written from what was found (Ctrl-C again quits)"


def add_flags(p: argparse.ArgumentParser) -> None:
    """The research command's own flags (run/flags.research_parser has the model, limit, tool and cache flags)."""
    p.prog, p.description = "main.py research", (
        "Plan sub-questions, research them side by side, write a sectioned report and check every citation "
        "against the text read before delivering it.")
    g = p.add_argument_group("research")
    g.add_argument("question", help="the research question")
    g.add_argument("-o", "--output", type=Path, default=Path("report.md"),
                   help="the report (default report.md; report.html is written beside it)")
    g.add_argument("--file", action="append", dest="files", metavar="FILE",
                   help="a file the question is about, copied into each sub-question's workspace (repeatable)")
    g.add_argument("--breadth", type=int, default=MOST, metavar="N",
                   help=f"most sub-questions the plan may have (default {MOST}; it asks for 3 to N)")
    g.add_argument("--depth", type=int, default=1, metavar="N",
                   help="rounds of research (default 1): after each, one call asks what its findings leave open")
    planned = g.add_mutually_exclusive_group()
    planned.add_argument("--plan-only", action="store_true",
                         help="make the plan (one model call), print it and write it beside the report; no research")
    planned.add_argument("--plan", type=Path, metavar="FILE", dest="plan_file",
                         help="research exactly the sub-questions in FILE (a numbered list or one per line)")
    g.add_argument("--formats", default="md,html", metavar="LIST",
                   help="the report's formats, of md,html,pdf,docx (default md,html; md is always written)")
    g.add_argument("--language", metavar="NAME", help="write the plan and the report in this language")
    g.add_argument("--papers-only", action="store_true",
                   help="research in scholarly papers only (search_papers, arxiv): no web search, scrape or browser "
                        "(AGENT_PAPERS=only)")
    g.add_argument("--resume", action="store_true",
                   help="continue the newest research run of this question: only unfinished sub-questions run")
    g.add_argument("--no-html", action="store_true", help="do not write report.html beside the report")
    g.add_argument("--planner-model", metavar="MODEL", help="provider:model or models-file alias that plans the "
                                                            "sub-questions (default --model; AGENT_PLANNER_MODEL)")
    g.add_argument("--writer-model", metavar="MODEL", help="provider:model or models-file alias that writes and "
                                                           "repairs the report (default --model; AGENT_WRITER_MODEL)")
    shown = g.add_mutually_exclusive_group()  # -q -v is an error, as for a batch
    shown.add_argument("-v", "--verbose", action="store_true", help="stream each sub-question's steps")
    shown.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def main(argv: list[str], parser: argparse.ArgumentParser, to_settings: Callable[[Any], Settings]) -> int:
    """Run the command with main.py's flag parser and settings builder; the exit code."""
    add_flags(parser)
    args = parser.parse_args(argv)
    args.argv = ["research", *argv]
    if args.papers_only:  # its own flag, so that --no-papers in either order is a contradiction, not the last word
        if args.papers == "off":
            raise ConfigError("--papers-only and --no-papers contradict each other: give one of them", "papers")
        args.papers = "only"
    if args.breadth < 1:
        raise ConfigError("--breadth must be 1 or more", "breadth")
    check_depth(args.depth)
    args.formats, args.language = report_formats(args.formats, args.no_html), check_language(args.language)
    settings = to_settings(args).with_overrides(planner_model=args.planner_model, writer_model=args.writer_model)
    files = [Path(f) for f in args.files or ()]
    for f in files:
        if not f.is_file():
            raise TaskFileError(f, "no such file (--file)")
    args.sub_questions = read_plan_file(args.plan_file) if args.plan_file else None
    if args.plan_file and not args.quiet and (warning := other_question(args.plan_file, args.question)):
        print(terminal_safe(warning), file=sys.stderr)
    if args.estimate:
        print("\n".join(research_estimate(args.breadth, settings, args.depth, args.sub_questions)))
        return EXIT_OK
    if args.plan_only:
        check_outputs(args.output, STDIN, [Task(0, "", "file", file=str(f)) for f in files])
        return plan_only(settings, args.question, files, args.breadth, args.output, args.language, args.argv)
    check_outputs(args.output, STDIN, [Task(0, "", "file", file=str(f)) for f in files])
    store = RunStore.from_settings(settings)
    resume = _resumed(store, args.question) if args.resume else None
    with ReportLock(args.output):
        return _research(args, settings, store, files, resume)


def _resumed(store: RunStore, question: str) -> Run:
    run = resumable(store, question)
    if run is None:
        raise ConfigError(f"--resume: no research run of this question in {store.root} (`main.py runs` lists "
                          "them)", "resume")
    return run


def _research(args: argparse.Namespace, settings: Settings, store: RunStore, files: list[Path],
              resume: Run | None) -> int:
    tracing = start_tracing(settings)  # OTEL_EXPORTER_OTLP_ENDPOINT: one trace, a task span per sub-question
    if tracing is not None:
        tracing.start_run(settings.model or "", args.breadth)
    try:
        with Stopper(STOPPING) as stopper:
            progress = ConsoleProgress(args.quiet, args.verbose, settings.max_run_cost)
            research = Research(settings, args.question, store, files, args.breadth, args.concurrency, progress,
                                stopper.event, stopper.write_lock, tracing=tracing, output=args.output,
                                sub_questions=args.sub_questions, depth=args.depth, language=args.language,
                                stopped_by=stopper.by)
            report = research.run(resume)
    finally:
        if tracing is not None:
            tracing.shutdown()
    assert research.run_dir is not None
    return deliver(args, report, store.open(research.run_dir), stopper, settings)


def deliver(args: argparse.Namespace, report: ResearchReport, run: Run, stopper: Stopper, settings: Settings) -> int:
    """Write report.md (+ .html) at -o and in the run's directory; print what was delivered; the exit code."""
    texts = run.dir / SOURCES_DIR
    written = write_report(report, args.output, "html" in args.formats, texts)
    written += export(report, args.output, args.formats, texts, settings, say=_say(args.quiet))
    run.info.outputs = [str(p.resolve()) for p in written]
    run.save()
    if not args.quiet:
        for line in summary(report, written, run, args.argv if report.partial else None):
            print(terminal_safe(line), file=sys.stderr)
    if stopper.requested:
        return int(stopper.exit_code)
    return EXIT_PARTIAL if report.partial or report.nothing_read else EXIT_OK


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda line: None) if quiet else (lambda line: print(terminal_safe(line), file=sys.stderr, flush=True))


def summary(report: ResearchReport, written: list[Path], run: Run, argv: list[str] | None) -> list[str]:
    """The lines after the report is written: what it holds, what was repaired and marked, where it is."""
    lines = [f"{report.title().lower()}: {' and '.join(str(p) for p in written)}"]
    if report.partial:
        lines.append(f"partial: {report.partial}")
    lines += report.notes  # a refused writer's reply, the findings standing in
    if report.citations:
        r = report.repair
        fixed = len(r.get("failing", [])) - len(r.get("still_failing", []))
        lines.append(f"{claims_line(report.citations)}; {len(r.get('failing', []))} failed the first check, "
                     f"{max(fixed, 0)} repaired by the writer, {report.marked} marked {MARK}")
    lines.append(f"{len(report.sources)} sources cited · cost {money(report.cost)} · run {run.id} kept in {run.dir}")
    if argv is not None:
        lines.append(f"resume with: {resume_command(argv)}")
    return lines


class ConsoleProgress(Progress):
    """The plan on stdout; each sub-question's progress and the phases on stderr (nothing with -q)."""

    def __init__(self, quiet: bool, verbose: bool, cap: float | None) -> None:
        self.quiet, self.verbose, self.cap = quiet, verbose, cap
        self.console: ConsoleReporter | None = None

    def line(self, text: str) -> None:
        if self.console is not None:
            self.console.line(text)  # shown terminal-safe there
        elif not self.quiet:
            print(terminal_safe(text), file=sys.stderr, flush=True)

    def planned(self, plan: list[SubQuestion]) -> None:
        if not self.quiet:
            print("Plan:\n" + "\n".join(terminal_safe(f"{round_label(s)}{s.n}. {s.text}", one_line=True)
                                         for s in plan), flush=True)

    def followed_up(self, round_: int, subs: list[SubQuestion]) -> None:
        if not self.quiet:
            print(f"Round {round_} (follow-up):\n" + "\n".join(terminal_safe(f"{s.n}. {s.text}", one_line=True)
                                                             for s in subs), flush=True)

    @contextlib.contextmanager
    def researching(self, todo: list[Task]) -> Iterator[None]:
        self.line(f"researching {len(todo)} sub-question(s) side by side" if todo else "every sub-question is done")
        with ConsoleReporter(len(todo), verbose=self.verbose, quiet=self.quiet, cap=self.cap) as console:
            self.console = console
            try:
                yield
            finally:
                self.console = None

    def on_event(self, task: Task, event: Event) -> None:
        if self.console is not None:
            self.console.on_event(task, event)

    def on_record(self, record: TaskRecord) -> None:
        if self.console is not None:
            self.console.on_record(record)


