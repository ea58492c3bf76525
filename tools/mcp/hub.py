"""The run's MCP connections: started once, shared by every task, restarted once, closed with the run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from core.errors import ConfigError, ToolError
from tools.base import Tool
from tools.mcp.config import ServerSpec
from tools.mcp.remote_tool import RemoteTool, input_schema
from tools.sandbox import bwrap
from tools.sandbox.paths import read_only_paths
from tools.secrets_guard import SecretGuard

START_TIMEOUT = 30.0
_ACTIVE: list[MCPHub] = []  # the hub of the run in progress, set by mcp_session()


class MCPStartError(ConfigError):
    """A server did not start or list its tools (exit code 2); carries the last lines of its stderr."""

    def __init__(self, server: str, reason: str, stderr_tail: str = "") -> None:
        tail = "\n  its stderr ended with:\n    " + "\n    ".join(stderr_tail.splitlines()) if stderr_tail else ""
        super().__init__(f"MCP server {server!r} did not start: {reason}{tail}", "mcp_servers")
        self.server, self.reason, self.stderr_tail = server, reason, stderr_tail


@dataclass
class _Server:
    spec: ServerSpec
    tools: list[Any] = field(default_factory=list)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # checked once per listing, not per task
    client: Any = None
    stop: asyncio.Event | None = None
    ready: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None
    failure: BaseException | None = None
    restarts: int = 0
    dead: str | None = None
    errlog: IO[str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class MCPHub:
    """Connections to every configured server, on one event loop in a background thread."""

    def __init__(self, specs: list[ServerSpec], start_timeout: float = START_TIMEOUT) -> None:
        self.servers = {s.name: _Server(s) for s in specs}
        self.start_timeout = start_timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)

    def start(self) -> MCPHub:
        """Start every server and list its tools; MCPStartError names the first that fails."""
        self._thread.start()
        for server in self.servers.values():
            try:
                self._run(self._connect(server), self.start_timeout + 5)
            except MCPStartError:
                self.close()
                raise
        return self

    def tools(self, workspace: Path, guard: Any = None) -> list[Tool]:
        """One agent tool per remote tool that the include/exclude lists allow; guard checks their arguments."""
        return [RemoteTool(self, server.spec, remote, server.schemas[remote.name], workspace, guard)
                for server in self.servers.values()
                for remote in server.tools if server.spec.allows(remote.name)]

    def call(self, server_name: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a remote tool; a dead server is restarted once, then its tools fail with ToolError."""
        server = self.servers[server_name]
        if server.dead:
            raise ToolError(server.dead)
        timeout = server.spec.timeout
        try:
            return self._run(self._call(server, tool, arguments), timeout + 10)
        except TimeoutError as exc:
            raise ToolError(f"MCP tool {server_name}.{tool} did not answer within {timeout:g} s") from exc
        except ToolError:
            raise
        except Exception as exc:
            if "timed out" in str(exc).lower():
                raise ToolError(f"MCP tool {server_name}.{tool} did not answer within {timeout:g} s") from exc
            if server.client is not None and not _connection_lost(exc):
                raise ToolError(f"MCP tool {server_name}.{tool} failed: {exc}") from exc
            raise ToolError(self._restart(server, exc)) from exc

    def close(self) -> None:
        """Stop every server (their processes end) and the event loop."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):  # closing must not hide the run's own outcome
            self._run(self._close_all(), 15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        for server in self.servers.values():
            if server.errlog is not None:
                server.errlog.close()

    def _run(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _restart(self, server: _Server, exc: BaseException) -> str:
        with server.lock:
            if server.restarts >= 1:
                server.dead = (f"MCP server {server.spec.name!r} stopped again ({_describe(exc)}); its tools are "
                               "unavailable for the rest of this run")
                return server.dead
            server.restarts += 1
            try:
                self._run(self._reconnect(server), self.start_timeout + 5)
            except Exception as again:  # noqa: BLE001 - reported to the model, the run goes on
                server.dead = (f"MCP server {server.spec.name!r} stopped ({_describe(exc)}) and could not be "
                               f"restarted ({_describe(again)}); its tools are unavailable for the rest of this run")
                return server.dead
        return (f"MCP server {server.spec.name!r} stopped during this call ({_describe(exc)}); it was restarted, "
                "so the call may be tried again")

    async def _connect(self, server: _Server) -> None:
        server.stop, server.ready, server.failure = asyncio.Event(), asyncio.Event(), None
        server.task = asyncio.ensure_future(self._serve(server))
        try:
            await asyncio.wait_for(server.ready.wait(), self.start_timeout)
        except TimeoutError:
            server.stop.set()
            server.task.cancel()
            raise MCPStartError(server.spec.name, f"no answer within {self.start_timeout:g} s",
                                _tail(server.errlog)) from None
        if server.failure is not None or server.client is None:
            raise MCPStartError(server.spec.name, _describe(server.failure), _tail(server.errlog))

    async def _serve(self, server: _Server) -> None:
        from mcp import Client

        assert server.stop is not None and server.ready is not None
        try:
            async with Client(self._transport(server), cache=None) as client:
                server.tools = await _list_tools(client)
                server.schemas = {t.name: input_schema(t) for t in server.tools}
                server.client = client
                server.ready.set()
                await server.stop.wait()
        except BaseException as exc:  # noqa: BLE001 - kept for the caller, which reports it
            server.failure = exc
        finally:
            server.client = None
            server.ready.set()

    def _transport(self, server: _Server) -> Any:
        spec = server.spec
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(spec.url or "", headers=spec.headers or None)
        if spec.transport == "http":
            return _http_transport(spec)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        if server.errlog is None:
            server.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        command, env = _sandboxed(spec) if spec.sandbox else (list(spec.command), dict(spec.env))
        params = StdioServerParameters(command=command[0], args=command[1:], env=env or None, cwd=spec.cwd)
        return stdio_client(params, errlog=server.errlog)  # type: ignore[arg-type]

    async def _call(self, server: _Server, tool: str, arguments: dict[str, Any]) -> Any:
        if server.client is None:
            raise ConnectionError("not connected")
        return await server.client.call_tool(tool, arguments, read_timeout_seconds=server.spec.timeout)

    async def _reconnect(self, server: _Server) -> None:
        await self._stop(server)
        await self._connect(server)

    async def _stop(self, server: _Server) -> None:
        if server.stop is not None:
            server.stop.set()
        if server.task is not None:
            try:
                await asyncio.wait_for(server.task, 10)
            except (TimeoutError, asyncio.CancelledError):
                server.task.cancel()

    async def _close_all(self) -> None:
        await asyncio.gather(*(self._stop(s) for s in self.servers.values()), return_exceptions=True)


def _http_transport(spec: ServerSpec) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    if not spec.headers:
        return streamable_http_client(spec.url or "")
    import httpx2

    return streamable_http_client(spec.url or "", http_client=httpx2.AsyncClient(headers=spec.headers))


async def _list_tools(client: Any) -> list[Any]:
    tools, cursor = [], None
    while True:
        page = await (client.list_tools(cursor=cursor) if cursor else client.list_tools())
        tools += list(page.tools)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            return tools


def _sandboxed(spec: ServerSpec) -> tuple[list[str], dict[str, str]]:
    """The bwrap command line for a server, and its environment: HOME and TMPDIR in its own scratch folder."""
    problem = bwrap.probe()
    if problem:
        raise MCPStartError(spec.name, f"\"sandbox\": true needs bubblewrap ({problem})")
    scratch = tempfile.mkdtemp(prefix=f"mcp-{spec.name}-")
    # The system and interpreter, plus the folder of the program and of any file named on its command line.
    files = [shutil.which(spec.command[0]) or spec.command[0], *spec.command[1:]]
    readable = [*read_only_paths(()), *{os.path.dirname(os.path.abspath(p)) for p in files if os.path.isfile(p)}]
    argv = bwrap.command(readable + ([spec.cwd] if spec.cwd else []), scratch, network=False) + list(spec.command)
    return argv, {"HOME": scratch, "TMPDIR": scratch, **spec.env}


def _connection_lost(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return isinstance(exc, ConnectionError | EOFError | BrokenPipeError) or "closed" in text or "not connected" in text


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "it closed the connection before listing its tools"
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _tail(errlog: IO[str] | None, lines: int = 8) -> str:
    if errlog is None:
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


@contextmanager
def mcp_session(specs: list[ServerSpec]) -> Iterator[MCPHub | None]:
    """Start the servers for the run (None when there are none); every server ends when the block does."""
    if not specs:
        yield None
        return
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise MCPStartError(specs[0].name, f"the mcp package is missing ({exc}); pip install 'mcp>=2.3,<3'") from exc
    hub = MCPHub(specs).start()
    _ACTIVE.append(hub)
    try:
        yield hub
    finally:
        _ACTIVE.remove(hub)
        hub.close()


def active_tools(workspace: Path, settings: Any = None) -> list[Tool]:
    """The MCP tools of the run in progress, for one task's workspace (none outside a session)."""
    if not _ACTIVE:
        return []
    return _ACTIVE[-1].tools(workspace, SecretGuard(settings) if settings is not None else None)
