"""`python main.py serve-mcp [--http PORT] [--docs DIR]`: the agent as an MCP server with a `research` tool (one
task) and, when main.py hands one in, `deep_research` (research/mcp.py: a checked report of several sub-questions).

Who may call it: over stdio, the program that started it; over HTTP, whoever sends the token (`Authorization:
Bearer`, AGENT_MCP_TOKEN or a random one printed at start), behind the web app's Host rules (report/html/guard.py).
Which of the user's folders a client may research: those named with --docs, and none without. A tool's failure
reaches the client as its one-line reason (an isError result); its traceback goes to the log at debug level.
"""

import argparse
import dataclasses
import ipaddress
import logging
import secrets
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cache.model import build_model, model_specs
from config import Settings, load_settings
from core.cli import ArgumentParser
from core.errors import (
    ConfigError,
    LLMError,
    LLMFatalError,
    OutputError,
    ResultsWriteError,
    TaskDeadlineExceeded,
    TaskFileError,
)
from core.text import terminal_safe
from outcome.task import ERROR
from providers.ratelimit import RateLimits
from report.html.guard import Guard, content_security_policy
from run.batch import build_agent
from tools.sandbox.defuse import defuse
from tools.web.session import web_session

log = logging.getLogger(__name__)
MIN_TOKEN = 16  # characters of AGENT_MCP_TOKEN: a short one is guessed by trying
# What a call may end in that is not a fault of the server: the run's and the task's error groups (core/errors.py).
REASONS = (ConfigError, TaskFileError, OutputError, ResultsWriteError, LLMError, TaskDeadlineExceeded, OSError)


def build_parser() -> argparse.ArgumentParser:
    """Flags of the serve-mcp command (the model and every other setting come from the environment/.env)."""
    p = ArgumentParser(prog="main.py serve-mcp",
                       description="Serve the research agent over MCP (stdio by default).")
    p.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on --host:PORT at /mcp instead; "
                   "every request must carry the token printed at start (AGENT_MCP_TOKEN) as Authorization: Bearer")
    p.add_argument("--host", default="127.0.0.1", help="address for --http (default 127.0.0.1, loopback only)")
    p.add_argument("--model", help="provider:model for the research tasks (default: AGENT_MODEL or auto)")
    p.add_argument("--docs", action="append", dest="docs_dirs", type=Path, metavar="DIR", default=[],
                   help="a folder a client may name (or one inside it) in deep_research's docs (repeatable; "
                        "without it, docs is refused)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log each failed call's traceback to stderr (by default the client gets its reason only)")
    return p


@dataclass(frozen=True)
class DocsAllowed:
    """The folders serve-mcp was started with (--docs), resolved: a client's `docs` must be one of them or inside."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, folders: Iterable[Path]) -> "DocsAllowed":
        """The --docs folders; ConfigError for one that is not a folder."""
        roots = []
        for folder in folders:
            if not folder.expanduser().is_dir():
                raise ConfigError(f"--docs {folder}: no such folder", "docs_dirs")
            roots.append(folder.expanduser().resolve())
        return cls(tuple(roots))

    def check(self, docs: list[str]) -> tuple[Path, ...]:
        """Each folder resolved (links followed); ConfigError naming the first a client may not research."""
        if not self.roots:
            raise ConfigError("docs: this server may research no folder of yours: start it with `serve-mcp --docs "
                              "DIR` (repeatable) to let clients name DIR or a folder inside it", "docs_dirs")
        found = []
        for given in docs:
            shown = terminal_safe(given, one_line=True)
            try:
                path = Path(given).expanduser().resolve()
            except (OSError, RuntimeError, ValueError) as exc:  # a loop of links, a NUL byte
                raise ConfigError(f"docs: {shown}: not a folder name ({exc})", "docs_dirs") from None
            if not any(path.is_relative_to(root) for root in self.roots):
                raise ConfigError(f"docs: {shown} is outside the folders this server may research "
                                  f"({', '.join(str(r) for r in self.roots)}; serve-mcp --docs adds one)", "docs_dirs")
            if not path.is_dir():
                raise ConfigError(f"docs: no such folder: {shown}", "docs_dirs")
            found.append(path)
        return tuple(found)


class Researcher:
    """Runs one research task per call with the run's settings and model; safe to call from several threads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.llm = build_model(settings, limits=RateLimits(settings.rpm, settings.tpm))  # shared by concurrent calls

    def research(self, question: str, max_steps: int | None = None,
                 on_step: Any = None) -> dict[str, Any]:
        """Answer one question; on_step(step, max_steps, message) is told of every step as it starts."""
        settings = self.settings if not max_steps else dataclasses.replace(self.settings, max_steps=max_steps)
        workspace = Path(settings.workspace or settings.runs_dir / "serve-mcp") / uuid.uuid4().hex[:12]
        workspace.mkdir(parents=True, exist_ok=True)

        def on_event(event: Any) -> None:
            if on_step is not None and event.kind == "tool_call":
                on_step(event.step, settings.max_steps, f"step {event.step}: {event.data.get('tool')}")

        agent = build_agent(settings, self.llm, workspace, model_specs(self.llm)[0], on_event=on_event)
        try:
            result = agent.run(question)
        finally:
            defused = defuse(workspace)  # the workspace is kept: nothing in it for another user, as after a batch task
        return {"answer": result.answer, "status": result.status, "sources": result.sources,
                "sourced": result.sourced, "citations": [c.record() for c in result.citations],
                "steps": len(result.steps), "cost_usd": result.cost,
                "tokens": result.usage.prompt_tokens + result.usage.completion_tokens, "error": result.error,
                "workspace": str(workspace), "defused": defused}


DeepResearch = Callable[..., dict[str, Any]]  # (question, breadth, depth, notify, docs) -> the report and its figures
DEEP_RESEARCH = ("Deep research: plan sub-questions, research them side by side (breadth: at most that many a "
                 "round; depth: rounds, each following up what the last found; docs: folders of the user's own "
                 "documents to search too, among those the server was started with), and return a sectioned "
                 "Markdown report whose every citation was checked against the text read, with its claims line and "
                 "numbered sources. Takes minutes.")


def build_server(researcher: Researcher, deep: DeepResearch | None = None,
                 docs_allowed: DocsAllowed | None = None) -> Any:
    """The MCP server object with its `research` tool (and `deep_research` when given, its `docs` among
    docs_allowed's folders: none when not given)."""
    import anyio
    import anyio.lowlevel
    from mcp.server.mcpserver import Context, MCPServer

    app: Any = MCPServer("react-research-agent", log_level="WARNING",
                         instructions="Call research(question) to have a ReAct agent search, read and compute its "
                                      "way to a sourced answer.")

    @app.tool(description="Research a question with web search, page reading and Python, and return the answer "
                          "with its sources, status, steps and cost in USD. Takes seconds to minutes.")
    async def research(question: str, ctx: Context, max_steps: int | None = None) -> dict[str, Any]:
        def on_step(step: int, total: int, message: str) -> None:
            anyio.from_thread.run(ctx.report_progress, float(step), float(total), message)

        return await answer("research", _one_task(researcher), question, max_steps, on_step)

    if deep is not None:
        @app.tool(description=DEEP_RESEARCH)
        async def deep_research(question: str, ctx: Context, breadth: int | None = None,
                                depth: int | None = None, docs: list[str] | None = None) -> dict[str, Any]:
            token = anyio.lowlevel.current_token()  # sub-questions end on the executor's threads, not anyio's

            def notify(done: float, total: float | None, message: str) -> None:
                anyio.from_thread.run(ctx.report_progress, done, total, message, token=token)

            def run() -> dict[str, Any]:
                folders = (docs_allowed or DocsAllowed(())).check(docs) if docs else None
                return deep(question, breadth, depth, notify, folders)

            return await answer("deep_research", run)

    return app


def _one_task(researcher: Researcher) -> Callable[..., dict[str, Any]]:
    """researcher.research, where a task that failed without an answer is the call's failure."""
    def call(question: str, max_steps: int | None, on_step: Any) -> dict[str, Any]:
        data = researcher.research(question, max_steps, on_step)
        if data["status"] == ERROR and not data["answer"]:
            raise TaskFailed(f"the task failed: {data['error'] or 'no answer'}")
        return data
    return call


class TaskFailed(Exception):
    """The `research` tool's task ended in error with no answer: its reason is the call's."""


async def answer(name: str, call: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """call(*args) on a worker thread; a failure reaches the client as one line (an isError result) and its
    traceback the log at debug level (-v shows it), never stderr by default."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return await anyio.to_thread.run_sync(call, *args)
    except (*REASONS, TaskFailed) as exc:
        reason = terminal_safe(str(exc) or type(exc).__name__, one_line=True)
        log.debug("%s failed: %s", name, reason, exc_info=True)
    except Exception as exc:  # a fault of ours: still one line, never "Error executing tool" alone
        reason = terminal_safe(f"{type(exc).__name__}: {exc} (a fault of the server; serve-mcp -v logs its "
                               "traceback)", one_line=True)
        log.debug("%s failed: %s", name, reason, exc_info=True)
    raise ToolError(reason) from None


def main(argv: list[str], deep: Callable[[Any], DeepResearch] | None = None) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP); `deep` builds the
    deep_research tool's function from the settings."""
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings({"model": args.model})
        token = http_token(settings) if args.http is not None else ""
        server = build_server(Researcher(settings), deep(settings) if deep is not None else None,
                              DocsAllowed.of(args.docs_dirs))
    except (ConfigError, LLMFatalError) as exc:
        print(f"error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"error: serve-mcp needs the mcp package ({exc}): pip install -r requirements.txt", file=sys.stderr)
        return 2
    if args.verbose:
        log.setLevel(logging.DEBUG)  # the SDK's handler on stderr shows it; the SDK's own loggers stay at WARNING
    with web_session(settings):  # per-host turns, robots.txt and one browser shared by every research call
        if args.http is not None:
            serve_http(server, args.host, args.http, token, told=bool(settings.mcp_token))
        else:
            server.run()
    return 0


def http_token(settings: Settings) -> str:
    """AGENT_MCP_TOKEN, else a random one for this start (ConfigError for one too short to resist guessing)."""
    if settings.mcp_token is None:
        return secrets.token_urlsafe(32)
    if len(settings.mcp_token) < MIN_TOKEN:
        raise ConfigError(f"AGENT_MCP_TOKEN must be at least {MIN_TOKEN} characters (a random one: python -c "
                          "'import secrets; print(secrets.token_urlsafe(32))')", "mcp_token")
    return settings.mcp_token


def serve_http(server: Any, host: str, port: int, token: str, told: bool) -> None:
    """The server's Streamable HTTP app behind the guard: the token as `Authorization: Bearer`, else 401; on a
    loopback address, only a loopback Host (no DNS rebinding). Says where, and the token unless the user set it."""
    import uvicorn

    from report.html.asgi import GuardMiddleware  # start-up: Starlette, only with --http

    loopback = _loopback(host)
    shown = f"[{host}]" if ":" in host else host  # as a Host header and a URL write an IPv6 address
    guard = Guard(port, token, extra_hosts=(shown,) if loopback else (), bearer_only=True, any_host=not loopback)
    app = GuardMiddleware(server.streamable_http_app(host=host), guard, content_security_policy())
    print(f"serving MCP on http://{shown}:{port}/mcp", file=sys.stderr)
    print(f"  send Authorization: Bearer {'<AGENT_MCP_TOKEN>' if told else token}"
          f"{'' if told else '  (a new token each start; AGENT_MCP_TOKEN keeps one)'}; keep it private",
          file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def _loopback(host: str) -> bool:
    """Whether --host is a loopback address (its Host header can be checked) rather than a network one."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"
