"""The flags every command that runs the agent shares (a task file, ask, chat, ui, research), in groups; and the
parsers of the question commands and of research, which take the groups a question or a report honours.

Every default not given here comes from config.py. May import core and config.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from config import flag_variables
from core.cli import ArgumentParser


def task_flags(p: Any) -> None:
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


def model_flags(p: Any) -> None:
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

def limit_flags(p: Any, batch: bool = True) -> None:
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

def tool_flags(p: Any) -> None:
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
    p.add_argument("--no-papers", action="store_const", const="off", dest="papers",
                   help="no search_papers tool (OpenAlex, Semantic Scholar, Crossref; AGENT_PAPERS=off)")
    p.add_argument("--docs", action="append", dest="docs_dirs", type=Path, metavar="DIR",
                   help="a folder of your documents the agent searches with search_docs, citing file and page "
                        "(repeatable; AGENT_DOCS)")
    p.add_argument("--embeddings", dest="embeddings_model", metavar="MODEL",
                   help="an embeddings model (openai:text-embedding-3-small, ollama:nomic-embed-text, an alias): "
                        "search_docs finds passages by meaning too (AGENT_EMBEDDINGS_MODEL)")
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

def cache_flags(p: Any, batch: bool = True) -> None:
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
    model_flags(p.add_argument_group("models"))
    limit_flags(p.add_argument_group("limits and spending"), batch=False)
    tool_flags(p.add_argument_group("tools and safety"))
    cache_flags(p.add_argument_group("cache and replay"), batch=False)
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
    model_flags(p.add_argument_group("models"))
    limit_flags(p.add_argument_group("limits and spending"))
    tool_flags(p.add_argument_group("tools and safety"))
    cache_flags(p.add_argument_group("cache and replay"), batch=False)
    p.set_defaults(workspace=None, trace_dir=None, no_trace=False, replay_trace=None)
    return p
