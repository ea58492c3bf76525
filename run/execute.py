"""A run from flags to exit code: check everything that can fail before any model call, then run the batch."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cache.model import build_models, model_for, model_specs
from config import Settings
from core.errors import LLMFatalError
from core.text import terminal_safe
from llm import with_default_model
from providers.pricing import priced
from providers.ratelimit import RateLimits
from report.html.hooks import live_report, write_final_html
from report.markdown import DONE_STATUSES, total_cost
from report.paths import records_path
from run.batch import BatchRunner
from run.console import ConsoleReporter, sources_summary
from run.estimate import estimate, unbounded_note
from run.extras import RunExtras
from run.files import check_outputs
from run.preflight import check_run
from run.ray_executor import RayBatchRunner, check_supported
from run.results import finish_notices, open_results, start_notices
from run.stopping import Stopper
from run.store import Run, RunStore
from run.summary import Ending, ending, report_paths, summary_lines
from tasks.taskfile import Task, load_tasks
from telemetry.setup import start_tracing
from tools.builtin import load_tool_factories
from tools.mcp import configured_specs, mcp_session
from tools.sandbox import prepare_sandbox
from tools.web.session import web_session

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE = 0, 1, 2  # main.py names the same codes (2: errors that stop a run)


@dataclass
class Prepared:
    """What the batch needs, built and checked before the first model call."""

    settings: Settings
    tasks: list[Task]
    llm: Any
    summary_llm: Any
    spec: str
    extras: Any
    answer_style: str
    run: Run
    limits: RateLimits | None = None  # the run's shared rate limiters: limits.status() says who waits, until when
    saved: int = 0  # records this run saved; none when it fails: its setup was wrong, the run is not kept

    @property
    def cap(self) -> float | None:
        """The run's cost cap when it can be enforced (None without one, or without a price to check it by)."""
        budget = self.extras.budget
        return self.settings.max_run_cost if budget is not None and budget.price is not None else None


def execute(args: argparse.Namespace, settings: Settings) -> int:
    """Run the task file of `args`; exit 0 when every task was answered, 1 otherwise (errors raise)."""
    tasks = load_tasks(args.tasks, args.attachments)
    if getattr(args, "estimate", False):  # prices and recorded averages only: no model is called
        print("\n".join(estimate(len(tasks), settings).lines()))
        return EXIT_OK
    check_outputs(args.output, args.tasks, tasks)  # never over the tasks file, an attachment or a directory
    tracing = start_tracing(settings)  # OTEL_EXPORTER_OTLP_ENDPOINT: spans of the run (telemetry/); else None
    code: int | None = None
    try:
        code = run_batch(args, prepare(args, settings, tasks), tracing)
        return code
    finally:
        if tracing is not None:
            tracing.shutdown(code)  # every span sent before exit, also after Ctrl-C


def checked_models(settings: Settings, output: Path | None, limits: RateLimits | None = None) -> tuple[Any, Any]:
    """Check tools, paths and sandbox, then build the model and the summary model (None: the model itself),
    both under the shared rate limits (new ones when not given).

    Each failure here is exit 2 with nothing spent and nothing written; `output` is the report (None: none).
    """
    load_tool_factories(settings.tool_modules)  # a broken --tools module fails here, before any task
    check_run(settings, output)  # paths, tools() results, tool packages
    limits = limits or RateLimits(settings.rpm, settings.tpm)  # one limiter per provider, shared by every task
    # The sandbox's trials run child processes (bwrap, a mount namespace): they run while the model's SDK loads.
    with ThreadPoolExecutor(1, thread_name_prefix="sandbox-probe") as pool:
        sandbox = pool.submit(prepare_sandbox, settings)
        try:
            if settings.judge_model:  # a bad --judge-model spec or a missing key: exit 2 now, not after an answer
                model_for(settings.judge_model, settings)
            models = build_models(settings, limits=limits)
        finally:
            warning = sandbox.result()  # AGENT_SANDBOX=require without one: exit 2 here (before a model error)
    if warning:
        print(warning, file=sys.stderr)
    return models


def prepare(args: argparse.Namespace, settings: Settings, tasks: list[Task]) -> Prepared:
    """Tools, paths, sandbox and models, then the run's own directory in the run store (run/store.py)."""
    settings = with_default_model(settings)  # one GET /models of a local server, not one per check and task
    limits = RateLimits(settings.rpm, settings.tpm)
    check_supported(settings, getattr(args, "replay_trace", None))  # --executor ray: Ray installed, no replay
    llm, summary_llm = checked_models(settings, args.output, limits)
    extras = RunExtras.build(args, settings, tasks, llm, summary_llm)  # spend caps, --replay-trace
    answer_style = extras.settings.answer_style
    if args.answer_style is None and any(t.expected is not None for t in extras.tasks):
        answer_style = "concise"
    spec = model_specs(llm)[0]
    # Its own traces/ and workspace/: a later run of the same tasks never overwrites this one's.
    run = RunStore.from_settings(extras.settings).create("batch", str(args.tasks), dataclasses.replace(
        extras.settings, model=spec))
    return Prepared(run.apply(extras.settings), extras.tasks, extras.llm, extras.summary_llm, spec, extras,
                    answer_style, run, limits)


def run_batch(args: argparse.Namespace, p: Prepared, tracing: Any = None) -> int:
    """Run the batch; the run store's entry says how it ended (a run that raised is marked failed, and one that
    raised before saving any record is not kept: exit 2 leaves nothing behind)."""
    try:
        return _run_batch(args, p, tracing)
    except BaseException:
        if not p.saved:
            p.run.discard()
        else:
            p.run.finish(tasks=len(p.tasks), answered=p.run.info.answered, cost=p.run.info.cost, status="failed")
        raise


def _run_batch(args: argparse.Namespace, p: Prepared, tracing: Any) -> int:
    """Run the tasks with MCP servers, the results store, the live report and Ctrl-C handling around them."""
    mcp_specs = configured_specs(p.settings)  # servers start once, end with the run
    started = time.monotonic()
    # Ctrl-C / SIGTERM: the first stops the batch cleanly, a second exits at once (run/stopping.py).
    # One web session for the run: per-host turns, robots.txt and the one headless browser, ended with the run.
    with Stopper() as stopper, mcp_session(mcp_specs), web_session(p.settings), \
            open_results(args.output, p.tasks, resume=args.resume, meta=run_meta(p)) as store:
        todo = [t for t in p.tasks if t.key not in store.previous.kept]
        if tracing is not None:
            tracing.start_run(p.spec, len(todo))
            stopper.flush = tracing.flush  # a second Ctrl-C sends the finished spans before leaving
        with ConsoleReporter(len(todo), verbose=args.verbose, quiet=args.quiet, cap=p.cap,
                             priced=priced(p.spec, p.settings.prices_file)) as console:
            notices = start_notices(store, p.tasks, todo, quiet=args.quiet) + p.extras.notes()
            for notice in notices + ([] if args.quiet else unbounded_note(len(todo), p.settings, p.spec)):
                console.line(notice)
            console.tally.extra_from = p.limits.note if p.limits is not None else None  # rate-limit waits
            fatal = _run_tasks(args, p, store, stopper, console, todo, tracing)
            if fatal is not None and not p.saved:  # its one line is on stderr; the setup is wrong: nothing kept
                p.run.discard()
                return EXIT_USAGE
            p.extras.before_close(store.meta)
            end = ending(stopper.signum, fatal, p.extras.budget, getattr(args, "argv", None))
            store.mark_end(end.meta())  # stopped: results.md, results.jsonl's first line and results.html say so
            if not todo:
                store.render()
    output = args.output if store.rendered else None  # stopped before any task ended: nothing was written
    html = write_final_html(output is not None and not args.no_html, args.output, p.settings.trace_dir,
                            {**run_meta(p), **end.meta()})
    keep_run(p.run, output, html, list(store.records.values()), len(p.tasks), end.stopped is not None)
    if not args.quiet:
        records = list(store.records.values())
        wrote = (f"wrote {args.output} ({len(store.records)} of {len(p.tasks)} tasks)" if output
                 else "no task finished: no report was written")
        for notice in [wrote, *sources_summary(records), *finish_notices(store),
                       *summary_lines(records, len(p.tasks), time.monotonic() - started, p.cap,
                                      report_paths(output, html) if output else [], end),
                       f"run {p.run.id} kept in {p.run.dir} (python main.py runs lists every run)"]:
            console.line(notice)
    # The summary printed the resume command already; with -q only the last line names it.
    return EXIT_USAGE if fatal is not None else exit_code(p, store.records, stopper, end if args.quiet else None)


def run_meta(p: Prepared) -> dict[str, Any]:
    """What the reports say of the run beyond its records: the model and how many tasks the file holds."""
    return {"model": p.spec, "total": len(p.tasks)}


def _run_tasks(args: argparse.Namespace, p: Prepared, store: Any, stopper: Stopper, console: ConsoleReporter,
               todo: list[Task], tracing: Any = None) -> LLMFatalError | None:
    """Run the batch; the fatal error that stopped it (named on stderr at once), or None."""
    def render_stopped() -> None:  # a second Ctrl-C: the reports show every saved record and say it stopped
        end = ending(stopper.signum, None, None, getattr(args, "argv", None)).meta()
        store.meta.update(end)
        store.render()
        html = write_final_html(not args.no_html, args.output, p.settings.trace_dir, {**run_meta(p), **end})
        keep_run(p.run, args.output, html, list(store.records.values()), len(p.tasks), stopped=True)

    def on_record(record: Any) -> None:
        record.model = p.spec
        store.add(record)
        p.saved += 1
        stopper.on_exit = render_stopped
        console.on_record(record)

    def on_fatal(exc: LLMFatalError) -> None:  # before the running tasks wind down: the user knows at once
        print(f"error: {terminal_safe(str(exc))} (the run was stopped: every task would fail the same way)",
              file=sys.stderr, flush=True)

    runner = runner_class(p.settings)(p.settings, p.llm, p.spec, on_record, console.on_event, p.summary_llm,
                                      p.answer_style, stop=stopper.event, write_lock=stopper.write_lock,
                                      budget=p.extras.budget, on_fatal=on_fatal, tracing=tracing)
    try:
        with live_report(args.serve, args.output, p.settings.trace_dir, console.line):
            runner.run(todo)
    except LLMFatalError as exc:
        return exc
    return None


def keep_run(run: Run, output: Path | None, html: Path | None, records: list[Any], tasks: int,
             stopped: bool) -> None:
    """Copy the records and the HTML report into the run's directory (so `main.py report RUN` and the web app
    show this run's after -o is reused) and write its index entry: tasks, answered, cost and the reports written
    (output None: it wrote none)."""
    if output is not None:
        run.keep_reports(records_path(output), html)
    written = (output, records_path(output), html) if output is not None else (html,)
    outputs = [str(p.resolve()) for p in written if p is not None and p.is_file()]
    run.finish(tasks=tasks, answered=sum(r.status in DONE_STATUSES for r in records),
               cost=total_cost(r.cost for r in records),
               status="stopped" if stopped else "finished", outputs=outputs)


def runner_class(settings: Settings) -> type[BatchRunner]:
    """The executor: threads in this process (the default), or --executor ray's tasks on a cluster."""
    return RayBatchRunner if settings.executor == "ray" else BatchRunner

def exit_code(p: Prepared, records: dict[str, Any], stopper: Any, end: Ending | None = None) -> int:
    """130/143 when stopped by a signal, the spend cap's code when it skipped tasks, else 0 or 1."""
    code = p.extras.finish()  # always: --replay-trace reports its divergence here
    if stopper.requested:
        print(f"stopped: {len(records)} of {len(p.tasks)} tasks finished; --resume continues"
              + (f": {end.resume}" if end and end.resume else ""), file=sys.stderr)
        return int(stopper.exit_code)
    if code is not None:
        return int(code)
    ok = all(records.get(t.key) is not None and records[t.key].status in DONE_STATUSES for t in p.tasks)
    return EXIT_OK if ok else EXIT_SOME_FAILED
