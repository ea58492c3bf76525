"""Which MCP servers a run uses: `--mcp NAME=COMMAND|URL`, AGENT_MCP_SERVERS and an mcp.json file."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


class MCPConfigError(ConfigError):
    """An MCP server entry is malformed (exit code 2)."""


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server: a command to start (stdio) or a URL (Streamable HTTP, or SSE)."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    transport: str = "stdio"  # stdio | http | sse
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    confirm: bool = False
    sandbox: bool = False
    timeout: float = 60.0
    headers: dict[str, str] = field(default_factory=dict)

    def allows(self, tool: str) -> bool:
        """Whether the include/exclude lists let this tool through."""
        return (not self.include or tool in self.include) and tool not in self.exclude


def parse_cli_spec(text: str, label: str = "--mcp") -> ServerSpec:
    """`NAME=COMMAND ARGS...` (stdio) or `NAME=http(s)://...` (Streamable HTTP; `sse+http://` for SSE); `label`
    names where the entry was written in an error (the flag, or AGENT_MCP_SERVERS and its file)."""
    name, sep, target = text.partition("=")
    name, target = name.strip(), target.strip()
    if not sep or not target:
        raise MCPConfigError(f"{label} {text!r}: expected NAME=COMMAND or NAME=URL", "mcp_servers")
    _check_name(name)
    if target.startswith(("sse+http://", "sse+https://")):
        return ServerSpec(name, url=target.removeprefix("sse+"), transport="sse")
    if target.startswith(("http://", "https://")):
        return ServerSpec(name, url=target, transport="http")
    try:
        command = tuple(shlex.split(target))
    except ValueError as exc:
        raise MCPConfigError(f"{label} {name}: cannot split the command line ({exc})", "mcp_servers") from exc
    return ServerSpec(name, command=command)


def load_mcp_json(path: Path) -> list[ServerSpec]:
    """Servers from an mcp.json in the common `{"mcpServers": {NAME: {...}}}` shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise MCPConfigError(f"--mcp-config {path}: no such file", "mcp_config") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MCPConfigError(f"--mcp-config {path}: not readable JSON ({exc})", "mcp_config") from exc
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise MCPConfigError(f"--mcp-config {path}: expected an object with \"mcpServers\"", "mcp_config")
    return [_from_json(name, entry, path) for name, entry in servers.items()]


def _from_json(name: str, entry: Any, path: Path) -> ServerSpec:
    where = f"--mcp-config {path}: server {name!r}"
    _check_name(name)
    if not isinstance(entry, dict):
        raise MCPConfigError(f"{where}: expected an object", "mcp_config")
    common = dict(env=_strings(entry.get("env", {}), where, "env"), include=_names(entry, "include", where),
                  exclude=_names(entry, "exclude", where), confirm=bool(entry.get("confirm", False)),
                  sandbox=bool(entry.get("sandbox", False)), timeout=float(entry.get("timeout", 60.0)),
                  headers=_strings(entry.get("headers", {}), where, "headers"))
    if "url" in entry:
        kind = str(entry.get("type") or entry.get("transport") or "http").lower()
        transport = "sse" if kind == "sse" else "http"
        return ServerSpec(name, url=str(entry["url"]), transport=transport, **common)  # type: ignore[arg-type]
    command = entry.get("command")
    args = entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        raise MCPConfigError(f"{where}: needs \"command\" (a string) and optional \"args\" (a list), or \"url\"",
                             "mcp_config")
    return ServerSpec(name, command=(command, *map(str, args)), cwd=entry.get("cwd"), **common)  # type: ignore[arg-type]


def _strings(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise MCPConfigError(f"{where}: \"{key}\" must be an object of strings", "mcp_config")
    return {str(k): str(v) for k, v in value.items()}


def _names(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list):
        raise MCPConfigError(f"{where}: \"{key}\" must be a list of tool names", "mcp_config")
    return tuple(str(v) for v in value)


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise MCPConfigError(f"MCP server name {name!r}: use letters, digits, - and _ (starting with a letter)",
                             "mcp_servers")


def load_specs(entries: tuple[str, ...], config_file: Path | None, origin: str = "--mcp") -> list[ServerSpec]:
    """Every configured server: the mcp.json file's, then NAME=... entries; names must be unique. `origin` is where
    the entries came from (Settings.origin: `--mcp`, the environment or a .env's path), named in an error."""
    specs = load_mcp_json(config_file) if config_file else []
    label = "--mcp" if origin in ("--mcp", "a flag") else \
        "AGENT_MCP_SERVERS" + ("" if origin in ("the environment", "the default") else f" (in {origin})")
    specs += [parse_cli_spec(e, label) for e in entries]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise MCPConfigError(f"MCP server {spec.name!r} is configured twice", "mcp_servers")
        seen.add(spec.name)
    return specs


def configured_specs(settings: Any) -> list[ServerSpec]:
    """The servers a run's settings configure (--mcp / AGENT_MCP_SERVERS, --mcp-config / AGENT_MCP_CONFIG), an
    error naming the entry where it was written."""
    return load_specs(settings.mcp_servers, settings.mcp_config, settings.origin("mcp_servers"))
