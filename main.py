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

from config import flag_variables, load_settings, project_version
from core.chat import split_spec
from core.cli import ArgumentParser, close_word
from core.errors import ConfigError, LLMFatalError, OutputError, ResultsWriteError, TaskFileError
from core.text import terminal_safe
from providers.hosts import AZURE_ENDPOINT, HOSTS, base_env
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


# `python main.py NAME ...` runs another command: function(argv) -> exit code.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {"report": _report, "serve-mcp": _serve_mcp, "cache": _cache,
                                                      "ask": _ask, "chat": _chat, "runs": _runs}
SUBCOMMANDS["ui"] = _ui
SUBCOMMANDS["research"] = _research
SUBCOMMANDS["docs"] = _docs


def build_parser() -> argparse.ArgumentParser:
    """The command-line flags, in groups; every default not given here comes from config.py."""
    p = ArgumentParser(
        prog="main.py", description="Run research tasks through a ReAct agent and write a Markdown report "
                                    "(and results.html). Other commands: ask, chat, research, docs, runs, "
                                    "report, cache, serve-mcp, ui.",
        epilog="Settings also come from the environment and .env (see .env.example); flags win.")
    p.variables = flag_variables()  # a bad value's error names the flag and its variable
    p.add_argument("--version", action="version", version=f"%(prog)s {project_version()}")
    for title, add in (("tasks and outputs", _task_flags), ("models", _model_flags),
                       ("limits and spending", _limit_flags), ("tools and safety", _tool_flags),
                       ("cache and replay", _cache_flags)):
        add(p.add_argument_group(title))
    return p


def _task_flags(p: Any) -> None:
    """Flags for tasks and outputs."""
    p.add_argument("tasks", type=Path, help="task file: tasks separated by blank lines, a .jsonl or .json "
                                            "question set, or - to read tasks from stdin")
    p.add_argument("--attachments", type=Path, metavar="DIR",
                   help="folder the question set's attachment paths are relative to and confined in "
                        "(default: the set's own folder)")
    p.add_argument("-o", "--output", type=Path, default=Path("results.md"), help="report path (default results.md)")
    p.add_argument("--resume", action="store_true", help="keep finished results; run only missing or errored tasks")
    p.add_argument("--no-html", action="store_true", help="do not write results.html beside the report")
    p.add_argument("--serve", type=int, metavar="PORT", help="--serve[=PORT]: serve the live report on 127.0.0.1 "
                   "while the run goes (default port 8765; 0: any free); the URL printed carries its token")
    p.add_argument("--trace-dir", type=Path, help="directory for per-task JSONL traces (default traces/)")
    p.add_argument("--no-trace", action="store_true", help="write no trace files")
    add_store_flags(p)
    p.add_argument("--workspace", type=Path, help="directory holding one workspace per task (default workspace/)")
    shown = p.add_mutually_exclusive_group()  # -q -v is an error, not -v winning silently
    shown.add_argument("-v", "--verbose", action="store_true", help="stream each Thought / Action / Observation")
    shown.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")

def add_store_flags(p: Any) -> None:
    """Flags of the run store (run/store.py), shared by a batch, ask, chat and runs."""
    p.add_argument("--runs-dir", type=Path, metavar="DIR",
                   help="the run store: one folder per run with its records, traces and workspace (default runs/)")
    p.add_argument("--keep-workspaces", type=int, metavar="N",
                   help="finished runs whose workspaces are kept; older ones are removed (default 20)")


def _model_flags(p: Any) -> None:
    """Flags for models."""
    p.add_argument("--model", help="provider:model, e.g. openai:gpt-5.4-mini, anthropic:claude-sonnet-5-5, "
                                   "gemini:gemini-3.8-flash, ollama:llama3.1 (default: AGENT_MODEL or auto)")
    p.add_argument("--fallback-model", action="append", dest="fallback_models", metavar="MODEL",
                   help="model to use when the main one fails after retries (repeatable)")
    p.add_argument("--base-url", help="API base URL for the model's provider (vLLM, llama.cpp, LM Studio, proxies)")
    p.add_argument("--summary-model", help="model that writes the memory's running summaries (default: --model)")
    p.add_argument("--vision-model", help="provider:model the look tool shows images to (default: --model if it "
                                          "accepts images)")
    p.add_argument("--transcribe-model", help="provider:model the transcribe tool sends audio to "
                                              "(e.g. openai:whisper-1, gemini:gemini-2.5-flash)")
    p.add_argument("--max-tokens", type=int, metavar="TOKENS",
                   help="most tokens per model reply, thinking included (default 8192; AGENT_MAX_TOKENS)")
    p.add_argument("--answer-style", choices=["plain", "concise"],
                   help="concise: short GAIA-style answers (automatic for .jsonl sets with answers)")
    p.add_argument("--verify-claims", choices=["off", "model"],
                   help="model: the task's model also judges each cited claim the check supports (a call each)")
    p.add_argument("--judge-model", metavar="MODEL",
                   help="provider:model that also judges each cited claim the check supports or leaves unchecked, "
                        "beside the model-free verdict (a call each, under the caps; AGENT_JUDGE_MODEL)")

def _limit_flags(p: Any, batch: bool = True) -> None:
    """Flags for limits and spending (batch: also those only a task file's run honours)."""
    p.add_argument("--max-steps", type=int, help="tool steps per task before it must answer (default 15)")
    p.add_argument("--task-timeout", type=float, help="wall-clock seconds per task (default 900)")
    p.add_argument("--context-budget", type=int, metavar="TOKENS", help="most tokens a single prompt may use")
    p.add_argument("--context-window", type=int, metavar="TOKENS",
                   help="the model server's context window, when it does not report it (AGENT_CONTEXT_WINDOW)")
    if batch:
        p.add_argument("--concurrency", type=int, help="tasks run at once (default 1)")
    p.add_argument("--max-cost", type=float, metavar="USD", help="cost cap per task (status budget when reached)")
    p.add_argument("--max-run-cost", type=float, metavar="USD", help="cost cap of the run: no new task starts after")
    p.add_argument("--max-tokens-per-task", type=int, metavar="TOKENS", help="token cap per task")
    if batch:
        p.add_argument("--executor", choices=["threads", "ray"], help="ray: run each task as a Ray task on a "
                       "cluster (needs requirements-ray.txt; default threads)")
        p.add_argument("--ray-address", metavar="ADDRESS", help="the Ray cluster to join (HOST:PORT or auto; "
                                                                "RAY_ADDRESS); none: start a local one for the run")
    p.add_argument("--rpm", type=int, help="requests per minute to each provider, shared by all tasks (AGENT_RPM)")
    p.add_argument("--tpm", type=int, help="tokens per minute to each provider, shared by all tasks (AGENT_TPM)")
    if batch:
        p.add_argument("--estimate", action="store_true",
                       help="print the tasks, model, prices, expected and worst-case cost; call no model; exit 0")

def _tool_flags(p: Any) -> None:
    """Flags for tools and safety."""
    p.add_argument("--tools", action="append", dest="tool_modules", metavar="MODULE",
                   help="a .py file or module whose tools(settings, workspace) adds your own tools (repeatable)")
    p.add_argument("--mcp", action="append", dest="mcp_servers", metavar="NAME=COMMAND|URL",
                   help="an MCP server whose tools the agent may use, as NAME.tool (repeatable)")
    p.add_argument("--mcp-config", type=Path, metavar="FILE",
                   help='an mcp.json file: {"mcpServers": {NAME: {"command": ..., "args": [...]} or {"url": ...}}}')
    p.add_argument("--sandbox", choices=["auto", "landlock", "bwrap", "require", "none"],
                   help="OS sandbox for the python tool (default auto; require: exit 2 if none can be had)")
    p.add_argument("--python-network", action="store_true", default=None,
                   help="let model-written Python code use the network (off by default)")
    p.add_argument("--no-search", action="store_false", dest="search", default=None,
                   help="no search tool: answer from the pages and files the task names (AGENT_SEARCH=0)")
    p.add_argument("--docs", action="append", dest="docs_dirs", type=Path, metavar="DIR",
                   help="a folder of your documents the agent searches with search_docs, citing file and page "
                        "(repeatable; AGENT_DOCS)")
    p.add_argument("--search-backends", metavar="LIST", help="comma list: search engines to ask in this order, "
                   "the next when one fails (serper, brave, tavily, searxng, duckduckgo)")
    p.add_argument("--user-agent", help="User-Agent of scrape and the browser (default: the agent's name and version)")
    p.add_argument("--ignore-robots", action="store_true", default=None,
                   help="fetch pages even where a site's robots.txt disallows them (obeyed by default)")
    p.add_argument("--host-gap", type=float, metavar="SECONDS",
                   help="least time between two requests to one host, over all tasks (default 1)")
    p.add_argument("--allow-domains", metavar="LIST", help="comma list: scrape, the browser and search results "
                                                          "reach only these domains and their subdomains")
    p.add_argument("--block-domains", metavar="LIST", help="comma list of domains (and their subdomains) never reached")

def _cache_flags(p: Any, batch: bool = True) -> None:
    """Flags for cache and replay (batch: also --replay-trace, which re-runs a task file's task)."""
    p.add_argument("--cache", type=Path, metavar="DIR", help="answer repeated model and network calls from DIR "
                                                             "and record new ones there")
    p.add_argument("--replay", type=Path, metavar="DIR", help="answer every model and network call from the "
                                                              "cache in DIR; a call not recorded there fails")
    if batch:
        p.add_argument("--replay-trace", type=Path, metavar="TRACE", help="re-run the task of a trace file with "
                       "its recorded completions; report where it diverges")


QUESTION_COMMANDS = {
    "ask": "Answer one question with the usual tools: steps on stderr, answer and sources on stdout.",
    "chat": "Ask questions with follow-ups; /sources, /cost, /save FILE, /exit.",
    "ui": "Serve the local web app on 127.0.0.1: ask, watch, stop, follow up."}


def question_parser(command: str) -> argparse.ArgumentParser:
    """The flags of `ask`, `chat` and `ui`: the batch's model, limit, tool and cache flags that a question honours
    (not --concurrency, --executor, --ray-address or --replay-trace, which only a task file's run has)."""
    p = ArgumentParser(prog=f"main.py {command}", description=QUESTION_COMMANDS[command])
    p.variables = flag_variables()
    p.elsewhere = dict.fromkeys(("--concurrency", "--executor", "--ray-address", "--replay-trace")
                                + (("--estimate",) if command == "ui" else ()), "main.py TASKS")
    g = p.add_argument_group("question")
    if command == "ask":
        g.add_argument("question", help="the question")
        g.add_argument("--file", action="append", dest="files", metavar="FILE",
                       help="a file the question is about, copied into the workspace (repeatable)")
        g.add_argument("--json", action="store_true", help="print the answer's record as JSON instead")
    g.add_argument("-q", "--quiet", action="store_true", help="do not show the steps")
    if command != "ui":
        g.add_argument("--estimate", action="store_true", help="print the model, its price and what a question "
                                                               "is expected to cost at most; call no model; exit 0")
    add_store_flags(g)
    _model_flags(p.add_argument_group("models"))
    _limit_flags(p.add_argument_group("limits and spending"), batch=False)
    _tool_flags(p.add_argument_group("tools and safety"))
    _cache_flags(p.add_argument_group("cache and replay"), batch=False)
    p.set_defaults(workspace=None, trace_dir=None, no_trace=False, concurrency=None, executor=None,
                   ray_address=None, replay_trace=None, estimate=False)
    return p


def research_parser() -> argparse.ArgumentParser:
    """The flags `research` shares with a batch: model, limit (with --concurrency, --executor, --estimate), tool
    and cache flags (not --replay-trace); research/cli.py adds its own."""
    p = ArgumentParser(prog="main.py research")
    p.variables = flag_variables()
    p.elsewhere = {"--replay-trace": "main.py TASKS"}
    add_store_flags(p.add_argument_group("run store"))
    _model_flags(p.add_argument_group("models"))
    _limit_flags(p.add_argument_group("limits and spending"))
    _tool_flags(p.add_argument_group("tools and safety"))
    _cache_flags(p.add_argument_group("cache and replay"), batch=False)
    p.set_defaults(workspace=None, trace_dir=None, no_trace=False, replay_trace=None)
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
        "docs_dirs": tuple(args.docs_dirs or ()) or None,
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
