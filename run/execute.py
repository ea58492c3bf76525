"""A run from flags to exit code: check everything that can fail before any model call, then run the batch."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from typing import Any

from cache.model import build_models, model_specs
from config import Settings
from providers.ratelimit import RateLimits
from report.html.hooks import live_report, write_final_html
from report.markdown import DONE_STATUSES
from run.batch import BatchRunner
from run.console import ConsoleReporter, sources_summary
from run.estimate import estimate, unbounded_note
from run.extras import RunExtras
from run.files import check_outputs, run_id
from run.preflight import check_run
from run.ray_executor import RayBatchRunner, check_supported
from run.results import finish_notices, open_results, start_notices
from run.stopping import Stopper
from tasks.taskfile import Task, load_tasks
from tools.builtin import load_tool_factories
from tools.mcp import load_specs, mcp_session
from tools.sandbox import prepare_sandbox
from tools.web.session import web_session

EXIT_OK, EXIT_SOME_FAILED = 0, 1  # main.py names the same codes, with EXIT_USAGE = 2 for errors that stop a run


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


def execute(args: argparse.Namespace, settings: Settings) -> int:
    """Run the task file of `args`; exit 0 when every task was answered, 1 otherwise (errors raise)."""
    tasks = load_tasks(args.tasks, args.attachments)
    if getattr(args, "estimate", False):  # prices and recorded averages only: no model is called
        print("\n".join(estimate(len(tasks), settings).lines()))
        return EXIT_OK
    check_outputs(args.output, args.tasks, tasks)  # never over the tasks file, an attachment or a directory
    return run_batch(args, prepare(args, settings, tasks))


def prepare(args: argparse.Namespace, settings: Settings, tasks: list[Task]) -> Prepared:
    """Tools, paths, sandbox and models: each failure here is exit 2 with nothing spent and nothing written."""
    load_tool_factories(settings.tool_modules)  # a broken --tools module fails here, before any task
    check_supported(settings, getattr(args, "replay_trace", None))  # --executor ray: Ray installed, no replay
    check_run(settings, args.output)  # paths, tools() results, tool packages
    if warning := prepare_sandbox(settings):  # AGENT_SANDBOX=require without one: exit 2 here
        print(warning, file=sys.stderr)
    limits = RateLimits(settings.rpm, settings.tpm)  # one limiter per provider, shared by every task and model
    llm, summary_llm = build_models(settings, limits=limits)
    extras = RunExtras.build(args, settings, tasks, llm, summary_llm)  # spend caps, --replay-trace
    answer_style = extras.settings.answer_style
    if args.answer_style is None and any(t.expected is not None for t in extras.tasks):
        answer_style = "concise"
    workspace = extras.settings.workspace / run_id()  # a clean one per run; earlier ones are kept
    return Prepared(dataclasses.replace(extras.settings, workspace=workspace), extras.tasks, extras.llm,
                    extras.summary_llm, model_specs(llm)[0], extras, answer_style)


def run_batch(args: argparse.Namespace, p: Prepared) -> int:
    """Run the tasks with MCP servers, the results store, the live report and Ctrl-C handling around them."""
    mcp_specs = load_specs(p.settings.mcp_servers, p.settings.mcp_config)  # servers start once, end with the run
    # Ctrl-C / SIGTERM: the first stops the batch cleanly, a second exits at once (run/stopping.py).
    # One web session for the run: per-host turns, robots.txt and the one headless browser, ended with the run.
    with Stopper() as stopper, mcp_session(mcp_specs), web_session(p.settings), \
            open_results(args.output, p.tasks, resume=args.resume, meta={"model": p.spec}) as store:
        todo = [t for t in p.tasks if t.key not in store.previous.kept]
        with ConsoleReporter(len(todo), verbose=args.verbose, quiet=args.quiet) as console:
            notices = start_notices(store, p.tasks, todo, quiet=args.quiet) + p.extras.notes()
            for notice in notices + unbounded_note(len(todo), p.settings, p.spec):
                console.line(notice)

            def on_record(record: Any) -> None:
                record.model = p.spec
                store.add(record)
                stopper.on_exit = store.render  # a second Ctrl-C renders every saved record first
                console.on_record(record)

            runner = runner_class(p.settings)(p.settings, p.llm, p.spec, on_record, console.on_event, p.summary_llm,
                                 p.answer_style, stop=stopper.event, write_lock=stopper.write_lock,
                                 budget=p.extras.budget)
            with live_report(args.serve, args.output, p.settings.trace_dir, console.line):
                runner.run(todo)
            p.extras.before_close(store.meta)
            if not todo:
                store.render()
    write_final_html(not args.no_html, args.output, p.settings.trace_dir, {"model": p.spec})
    if not args.quiet:
        for notice in [f"wrote {args.output} ({len(store.records)} of {len(p.tasks)} tasks)",
                       *sources_summary(list(store.records.values())), *finish_notices(store)]:
            console.line(notice)
    return exit_code(p, store.records, stopper)


def runner_class(settings: Settings) -> type[BatchRunner]:
    """The executor: threads in this process (the default), or --executor ray's tasks on a cluster."""
    return RayBatchRunner if settings.executor == "ray" else BatchRunner


def exit_code(p: Prepared, records: dict[str, Any], stopper: Any) -> int:
    """130/143 when stopped by a signal, the spend cap's code when it skipped tasks, else 0 or 1."""
    code = p.extras.finish()  # always: --replay-trace reports its divergence here
    if stopper.requested:
        print(f"stopped: {len(records)} of {len(p.tasks)} tasks finished; --resume continues", file=sys.stderr)
        return int(stopper.exit_code)
    if code is not None:
        return int(code)
    ok = all(records.get(t.key) is not None and records[t.key].status in DONE_STATUSES for t in p.tasks)
    return EXIT_OK if ok else EXIT_SOME_FAILED
