"""MCP servers as tool sources: each server's tools become agent tools named `server.tool`.

Owns the server settings (config.py), the run's connections (hub.py), one remote tool (remote_tool.py)
and check_setup's view (check.py). May import core, config, the tools base modules and tools/sandbox.
"""

from __future__ import annotations

from tools.mcp.config import MCPConfigError, ServerSpec, configured_specs, load_specs
from tools.mcp.hub import MCPHub, MCPStartError, active_tools, mcp_session

__all__ = ["MCPConfigError", "MCPHub", "MCPStartError", "ServerSpec", "active_tools", "configured_specs", "load_specs",
           "mcp_session"]
