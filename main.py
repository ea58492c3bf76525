"""CLI: run every task in a file through the agent and write a Markdown report."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from config import PROJECT_ROOT, flag_variables, load_settings, project_version
from core.chat import split_spec
from core.cli import ArgumentParser, close_word
from core.errors import ConfigError, LLMFatalError, OutputError, ResultsWriteError, TaskFileError
from core.text import terminal_safe
from providers.hosts import AZURE_ENDPOINT, HOSTS, base_env
from run.flags import (
    cache_flags,
    limit_flags,
    model_flags,
    question_parser,
    research_parser,
    task_flags,
    tool_flags,
)
from tools.sandbox import harden_process

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away

# Each command imports its own package when it runs (the imports below marked "start-up"): loading the
# agent, its tools and the report modules takes ~0.25 s that --help, --version and `main.py cache` need not wait.


def _report(argv: list[str]) -> int:
    """`main.py report RUN`: rebuild the HTML and Markdown of an earlier run (an id, a directory or a .jsonl)."""
    from run.runs_cli import report  # start-up: only this command needs it

    return guarded(lambda: report(argv))


def _serve_mcp(argv: list[str]) -> int:
    """`main.py serve-mcp`: the agent as an MCP server."""
    from research.mcp import DeepResearcher  # start-up: only this command needs it
    from run.serve_mcp import main as serve  # start-up: only this command needs it

    return serve(argv, DeepResearcher)


def _cache(argv: list[str]) -> int:
    """`main.py cache stats|prune|clear`: look after the --cache directory."""
    from cache.cli import main as cache  # start-up: only this command needs it

    return cache(argv)


def _ask(argv: list[str]) -> int:
    """`main.py ask QUESTION`: one question, its steps as they happen, the answer and sources on stdout."""
    args = question_parser("ask").parse_args(argv)
    from run.by_hand import ask  # start-up: the agent, tools and models load only for a question

    return guarded(lambda: ask(args, settings_from_args(args)))


def _chat(argv: list[str]) -> int:
    """`main.py chat`: questions with follow-ups, from a terminal or piped stdin, line by line."""
    args = question_parser("chat").parse_args(argv)
    from run.by_hand import chat  # start-up: the agent, tools and models load only for a question

    return guarded(lambda: chat(args, settings_from_args(args)))


def _runs(argv: list[str]) -> int:
    """`main.py runs [prune --older-than 30d]`: list the kept runs, or prune old ones."""
    from run.runs_cli import main as runs  # start-up: only this command needs it

    return guarded(lambda: runs(argv))


def _ui(argv: list[str]) -> int:
    """`main.py ui [--port PORT]`: the local web app, with the model, limit, tool and cache flags of `chat`."""
    p = question_parser("ui")
    p.add_argument("--port", type=int, default=8770, help="port on 127.0.0.1 (default 8770; 0: any free)")
    args = p.parse_args(argv)
    from ui.server import serve  # start-up: only this command needs it (and Starlette)

    return guarded(lambda: serve(settings_from_args(args), args.port))


def _research(argv: list[str]) -> int:
    """`main.py research QUESTION -o report.md`: sub-questions researched side by side, a checked report."""
    from research.cli import main as research  # start-up: the agent, tools and models load only for research

    return guarded(lambda: research(argv, research_parser(), settings_from_args))


def _docs(argv: list[str]) -> int:
    """`main.py docs index DIR` / `docs search DIR QUERY`: a document folder's index, by hand."""
    from tools.docs_cli import main as docs  # start-up: only this command needs it

    return guarded(lambda: docs(argv))


def _trust(argv: list[str]) -> int:
    """`main.py trust [DIR]`, `--list`, `--forget`: let a folder's .env and models.toml set everything."""
    from core.trust_cli import main as trust  # start-up: only this command needs it

    return guarded(lambda: trust(argv, PROJECT_ROOT))


# `python main.py NAME ...` runs another command: function(argv) -> exit code.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {"report": _report, "serve-mcp": _serve_mcp, "cache": _cache,
                                                      "ask": _ask, "chat": _chat, "runs": _runs}
SUBCOMMANDS["ui"] = _ui
SUBCOMMANDS["research"] = _research
SUBCOMMANDS["docs"] = _docs
SUBCOMMANDS["trust"] = _trust


def build_parser() -> argparse.ArgumentParser:
    """The command-line flags, in groups; every default not given here comes from config.py."""
    p = ArgumentParser(
        prog="main.py", description="Run research tasks through a ReAct agent and write a Markdown report "
                                    "(and results.html). Other commands: ask, chat, research, docs, runs, "
                                    "report, cache, serve-mcp, ui, trust.",
        epilog="Settings also come from the environment and .env (see .env.example); flags win.")
    p.variables = flag_variables()  # a bad value's error names the flag and its variable
    p.add_argument("--version", action="version", version=f"%(prog)s {project_version()}")
    for title, add in (("tasks and outputs", task_flags), ("models", model_flags),
                       ("limits and spending", limit_flags), ("tools and safety", tool_flags),
                       ("cache and replay", cache_flags)):
        add(p.add_argument_group(title))
    return p


SERVE_PORT = 8765  # a bare --serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a bare `--serve` is `--serve=8765`, so it never takes the task file as its port."""
    argv = list(sys.argv[1:] if argv is None else argv)
    end = argv.index("--") if "--" in argv else len(argv)  # after "--" every word is a task file
    flags = [f"--serve={SERVE_PORT}" if a == "--serve" else a for a in argv[:end]]
    return build_parser().parse_args(flags + argv[end:])


def settings_from_args(args: argparse.Namespace) -> Any:
    """Settings from the environment, .env and these flags (flags win)."""
    cli: dict[str, Any] = {
        "model": args.model, "fallback_models": tuple(args.fallback_models or ()) or None,
        "summary_model": args.summary_model, "tool_modules": tuple(args.tool_modules or ()) or None,
        "vision_model": args.vision_model, "transcribe_model": args.transcribe_model,
        "max_steps": args.max_steps, "task_timeout": args.task_timeout,
        "context_budget": args.context_budget, "context_window": args.context_window, "max_tokens": args.max_tokens,
        "concurrency": args.concurrency, "workspace": args.workspace,
        "trace_dir": args.trace_dir, "answer_style": args.answer_style,
        "runs_dir": args.runs_dir, "keep_workspaces": args.keep_workspaces,
        "max_cost": args.max_cost, "max_run_cost": args.max_run_cost, "max_tokens_per_task": args.max_tokens_per_task,
        "rpm": args.rpm, "tpm": args.tpm,
        "cache_dir": args.replay or args.cache, "cache_replay": True if args.replay else None,
        "sandbox": args.sandbox, "python_network": args.python_network,
        "mcp_servers": tuple(args.mcp_servers or ()) or None, "mcp_config": args.mcp_config,
        "verify_claims": args.verify_claims, "judge_model": args.judge_model, "search": args.search,
        "papers": args.papers, "docs_dirs": tuple(args.docs_dirs or ()) or None,
        "embeddings_model": args.embeddings_model,
        "user_agent": args.user_agent, "ignore_robots": args.ignore_robots, "host_gap": args.host_gap,
        "allow_domains": _comma_list(args.allow_domains), "block_domains": _comma_list(args.block_domains),
        "search_backends": _comma_list(args.search_backends and args.search_backends.lower()),
        "executor": args.executor, "ray_address": args.ray_address,
    }
    settings = load_settings(cli)
    if args.no_trace:
        settings = dataclasses.replace(settings, traces=False)
    return apply_base_url(settings, args.base_url)


def _comma_list(value: str | None) -> tuple[str, ...] | None:
    """--allow-domains a.org,b.org -> ('a.org', 'b.org'); None when the flag is absent."""
    return None if value is None else tuple(v.strip() for v in value.split(",") if v.strip())


def apply_base_url(settings: Any, base_url: str | None) -> Any:
    """--base-url sets the base URL of the selected model's provider (OpenAI-compatible by default)."""
    if not base_url:
        return settings
    provider = split_spec(settings.model or "")[0]
    if provider in HOSTS or provider == "azure":  # kept with the other providers' variables (providers/hosts.py)
        urls = {**dict(settings.provider_urls), AZURE_ENDPOINT if provider == "azure" else base_env(provider): base_url}
        return dataclasses.replace(settings, provider_urls=tuple(sorted(urls.items())))
    field = {"anthropic": "anthropic_base_url", "gemini": "gemini_base_url",
             "ollama": "ollama_base_url"}.get(provider, "openai_base_url")
    return settings.with_overrides(**{field: base_url})


def run(args: argparse.Namespace, settings: Any) -> int:
    """Run the task file with these settings (run/execute.py); exit 0 when every task was answered, else 1."""
    from run.execute import execute  # start-up: the agent, tools and models load only for a run

    return int(execute(args, settings))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    harden_process()  # other processes of this user cannot read our memory or environment, nor ptrace us
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return int(SUBCOMMANDS[argv[0]](argv[1:]))
    if argv and (command := misspelt_command(argv[0])):
        print(f"error: {argv[0]}: no such task file or command (did you mean `main.py {command}`?)", file=sys.stderr)
        return EXIT_USAGE
    args = parse_args(argv)
    args.argv = argv  # the command line as given: a stopped run prints it back with --resume
    return guarded(lambda: run(args, settings_from_args(args)))


def misspelt_command(word: str) -> str | None:
    """The command a first word that is no file is nearest to (`rnus` -> `runs`), or None."""
    if word.startswith("-") or Path(word).suffix or Path(word).exists():
        return None
    return close_word(word, list(SUBCOMMANDS))


def guarded(command: Callable[[], int]) -> int:
    """Run a command; errors that stop a run become one line on stderr and exit 2."""
    try:
        return command()
    except (ConfigError, TaskFileError, OutputError, ResultsWriteError) as exc:
        print(f"error: {terminal_safe(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except LLMFatalError as exc:  # its text may be a server's: shown with control characters escaped
        print(f"error: {terminal_safe(str(exc))} (the run was stopped: every task would fail the same way)",
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; finished tasks are in the report (use --resume to continue)", file=sys.stderr)
        return 130


def our_warnings(show: Callable[..., None] = warnings.showwarning) -> Callable[..., None]:
    """Python's warning display with ours (a prompt over a local server's window) as one line, once a run."""
    shown: set[str] = set()

    def display(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if category.__name__ != "ContextWindowWarning":
            return show(message, category, *args, **kwargs)
        if category.__name__ not in shown:
            shown.add(category.__name__)
            print(f"warning: {terminal_safe(str(message))}", file=sys.stderr, flush=True)
        return None

    return display


def run_cli(argv: list[str] | None = None) -> int:
    """main() for the shell: a reader that closed the output pipe early (`| head -1`) ends the command quietly."""
    warnings.showwarning = our_warnings()
    try:
        code = main(argv)
        sys.stdout.flush()  # a closed pipe shows here rather than as a traceback at interpreter exit
    except BrokenPipeError:
        # Later writes (and the exit-time flush) go nowhere, as they do for other command-line tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


if __name__ == "__main__":
    sys.exit(run_cli())
