"""CLI: run every task in a file through the agent and write a Markdown report."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The command-line flags; every default not given here comes from config.py."""
    p = argparse.ArgumentParser(
        prog="main.py", description="Run research tasks through a ReAct agent and write a Markdown report.",
        epilog="Settings also come from the environment and .env (see .env.example); flags win.")
    p.add_argument("tasks", type=Path, help="task file: tasks separated by blank lines, or a .jsonl set")
    p.add_argument("-o", "--output", type=Path, default=Path("results.md"), help="report path (default results.md)")
    p.add_argument("--model", help="provider:model, e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, "
                                   "gemini:gemini-2.5-flash, ollama:llama3.1 (default: AGENT_MODEL or auto)")
    p.add_argument("--fallback-model", action="append", dest="fallback_models", metavar="MODEL",
                   help="model to use when the main one fails after retries (repeatable)")
    p.add_argument("--base-url", help="API base URL for the model's provider (vLLM, llama.cpp, LM Studio, proxies)")
    p.add_argument("--summary-model", help="model that writes the memory's running summaries (default: --model)")
    p.add_argument("--tools", action="append", dest="tool_modules", metavar="MODULE",
                   help="a .py file or module whose tools(settings, workspace) adds your own tools (repeatable)")
    p.add_argument("--max-steps", type=int, help="tool steps per task before it must answer (default 15)")
    p.add_argument("--task-timeout", type=float, help="wall-clock seconds per task (default 900)")
    p.add_argument("--context-budget", type=int, metavar="TOKENS", help="most tokens a single prompt may use")
    p.add_argument("--concurrency", type=int, help="tasks run at once (default 1)")
    p.add_argument("--resume", action="store_true", help="keep finished results; run only missing or errored tasks")
    p.add_argument("--trace-dir", type=Path, help="directory for per-task JSONL traces (default traces/)")
    p.add_argument("--no-trace", action="store_true", help="write no trace files")
    p.add_argument("--workspace", type=Path, help="directory holding one workspace per task (default workspace/)")
    p.add_argument("--answer-style", choices=["plain", "concise"],
                   help="concise: short GAIA-style answers (automatic for .jsonl sets with answers)")
    p.add_argument("-v", "--verbose", action="store_true", help="stream each Thought / Action / Observation")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    return build_parser().parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Any:
    """Settings from the environment, .env and these flags (flags win)."""
    from config import load_settings

    cli: dict[str, Any] = {
        "model": args.model, "fallback_models": tuple(args.fallback_models or ()) or None,
        "summary_model": args.summary_model, "tool_modules": tuple(args.tool_modules or ()) or None,
        "max_steps": args.max_steps, "task_timeout": args.task_timeout,
        "context_budget": args.context_budget, "concurrency": args.concurrency, "workspace": args.workspace,
        "trace_dir": args.trace_dir, "answer_style": args.answer_style,
    }
    settings = load_settings(cli)
    if args.no_trace:
        settings = dataclasses.replace(settings, trace_dir=None)
    return apply_base_url(settings, args.base_url)


def apply_base_url(settings: Any, base_url: str | None) -> Any:
    """--base-url sets the base URL of the selected model's provider (OpenAI-compatible by default)."""
    if not base_url:
        return settings
    provider = (settings.model or "openai").split(":", 1)[0]
    field = {"anthropic": "anthropic_base_url", "gemini": "gemini_base_url",
             "ollama": "ollama_base_url"}.get(provider, "openai_base_url")
    return settings.with_overrides(**{field: base_url})


def run(args: argparse.Namespace, settings: Any) -> int:
    """Build the model and the batch, run the tasks, rewrite the report after each one."""
    from batch import BatchRunner, finished_records, load_tasks
    from console import ConsoleReporter
    from llm import LLMInterface, build_llm
    from report import DONE_STATUSES, write_results
    from tools.builtin import load_tool_factories

    tasks = load_tasks(args.tasks)
    load_tool_factories(settings.tool_modules)  # a broken --tools module fails here, before any task
    llm = build_llm(settings)
    spec = llm.model
    summary_llm = LLMInterface.from_spec(settings.summary_model, settings) if settings.summary_model else None
    answer_style = settings.answer_style
    if args.answer_style is None and any(t.expected is not None for t in tasks):
        answer_style = "concise"
    kept = finished_records(args.output, tasks) if args.resume else {}
    todo = [t for t in tasks if t.key not in kept]
    records = dict(kept)
    meta = {"model": spec}
    with ConsoleReporter(len(todo), verbose=args.verbose, quiet=args.quiet) as console:
        if kept and not args.quiet:
            console.line(f"resuming: {len(kept)} finished task(s) kept, {len(todo)} to run")

        def on_record(record: Any) -> None:
            records[record.key] = record
            write_results(args.output, list(records.values()), meta)
            console.on_record(record)

        runner = BatchRunner(settings, llm, spec, on_record, console.on_event, summary_llm, answer_style)
        try:
            runner.run(todo)
        finally:
            if not records:
                write_results(args.output, [], meta)
    if not args.quiet:
        console.line(f"wrote {args.output} ({len(records)} of {len(tasks)} tasks)")
    ok = all(records.get(t.key) is not None and records[t.key].status in DONE_STATUSES for t in tasks)
    return EXIT_OK if ok else EXIT_SOME_FAILED


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = parse_args(argv)
    from batch import TaskFileError
    from config import ConfigError
    from llm import LLMFatalError

    try:
        return run(args, settings_from_args(args))
    except (ConfigError, TaskFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LLMFatalError as exc:
        print(f"error: {exc} (the run was stopped: every task would fail the same way)", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished tasks are in the report (use --resume to continue)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
