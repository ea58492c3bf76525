"""`python main.py serve-mcp [--http PORT]`: the agent as an MCP server with a `research` tool (one task) and,
when main.py hands one in, `deep_research` (research/mcp.py: a checked report of several sub-questions)."""

import argparse
import dataclasses
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cache.model import build_model, model_specs
from config import load_settings
from core.cli import ArgumentParser
from core.errors import ConfigError, LLMFatalError
from providers.ratelimit import RateLimits
from run.batch import build_agent
from tools.web.session import web_session


def build_parser() -> argparse.ArgumentParser:
    """Flags of the serve-mcp command (the model and every other setting come from the environment/.env)."""
    p = ArgumentParser(prog="main.py serve-mcp",
                       description="Serve the research agent over MCP (stdio by default).")
    p.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on --host:PORT at /mcp instead")
    p.add_argument("--host", default="127.0.0.1", help="address for --http (default 127.0.0.1, loopback only)")
    p.add_argument("--model", help="provider:model for the research tasks (default: AGENT_MODEL or auto)")
    return p


class Researcher:
    """Runs one research task per call with the run's settings and model; safe to call from several threads."""

    def __init__(self, settings: Any) -> None:
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
        result = agent.run(question)
        return {"answer": result.answer, "status": result.status, "sources": result.sources,
                "sourced": result.sourced, "citations": [c.record() for c in result.citations],
                "steps": len(result.steps), "cost_usd": result.cost,
                "tokens": result.usage.prompt_tokens + result.usage.completion_tokens, "error": result.error,
                "workspace": str(workspace)}


DeepResearch = Callable[..., dict[str, Any]]  # (question, breadth, depth, notify) -> the report and its figures


def build_server(researcher: Researcher, deep: DeepResearch | None = None) -> Any:
    """The MCP server object with its `research` tool (and `deep_research` when given)."""
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

        return await anyio.to_thread.run_sync(researcher.research, question, max_steps, on_step)

    if deep is not None:
        @app.tool(description="Deep research: plan sub-questions, research them side by side (breadth: at most that "
                              "many a round; depth: rounds, each following up what the last found; docs: "
                              "folders of the user's own documents to search too), and return a "
                              "sectioned Markdown report whose every citation was checked against the text read, "
                              "with its claims line and numbered sources. Takes minutes.")
        async def deep_research(question: str, ctx: Context, breadth: int | None = None,
                                depth: int | None = None, docs: list[str] | None = None) -> dict[str, Any]:
            token = anyio.lowlevel.current_token()  # sub-questions end on the executor's threads, not anyio's

            def notify(done: float, total: float | None, message: str) -> None:
                anyio.from_thread.run(ctx.report_progress, done, total, message, token=token)

            return await anyio.to_thread.run_sync(deep, question, breadth, depth, notify, docs)

    return app


def main(argv: list[str], deep: Callable[[Any], DeepResearch] | None = None) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP); `deep` builds the
    deep_research tool's function from the settings."""
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings({"model": args.model})
        server = build_server(Researcher(settings), deep(settings) if deep is not None else None)
    except (ConfigError, LLMFatalError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"error: serve-mcp needs the mcp package ({exc}): pip install -r requirements.txt", file=sys.stderr)
        return 2
    with web_session(settings):  # per-host turns, robots.txt and one browser shared by every research call
        if args.http is not None:
            print(f"serving MCP on http://{args.host}:{args.http}/mcp", file=sys.stderr)
            server.run("streamable-http", host=args.host, port=args.http)
        else:
            server.run()
    return 0
