"""check_setup's view of the configured MCP servers: each one started, and the tools it offers."""

from __future__ import annotations

from typing import Any

from tools.mcp.config import MCPConfigError, configured_specs
from tools.mcp.hub import MCPHub, MCPStartError


def server_reports(settings: Any) -> list[tuple[str, bool, str, str]]:
    """(name, ok, detail, fix) for each configured server; empty when none is configured."""
    try:
        specs = configured_specs(settings)
    except MCPConfigError as exc:
        return [("mcp", False, str(exc), "fix --mcp / AGENT_MCP_SERVERS / --mcp-config")]
    reports = []
    for spec in specs:
        hub = MCPHub([spec], start_timeout=20)
        try:
            hub.start()
        except MCPStartError as exc:
            reports.append((f"mcp {spec.name}", False, exc.reason + (f" ({exc.stderr_tail.splitlines()[-1]})"
                            if exc.stderr_tail else ""), "run the server's command by hand to see why"))
            continue
        try:
            names = [t.name for t in hub.servers[spec.name].tools]
            allowed = [n for n in names if spec.allows(n)]
            where = spec.url or " ".join(spec.command)
            detail = f"started ({where}); {len(allowed)} of {len(names)} tools: {', '.join(allowed) or 'none'}"
            reports.append((f"mcp {spec.name}", True, detail, ""))
        finally:
            hub.close()
    return reports
