"""Playwright MCP's snapshot of a page, for benchmarks/browser.py to set the browser tool's beside.

Playwright MCP (npm @playwright/mcp) is installed into a temporary directory with `npm install` (no browser
download: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1) and pointed at the same Chromium; its `browser_navigate` answer
holds the page's snapshot in a ```yaml block, or (0.0.8x) names the file it wrote it to: that snapshot is
what is measured. Requests leave only for the
benchmark's loopback origins (--allowed-origins).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

PACKAGE = "@playwright/mcp"
_YAML = re.compile(r"```yaml\n(.*?)\n```", re.S)  # the snapshot in the answer (earlier versions)
_SAVED = re.compile(r"\[Snapshot\]\(([^)]+)\)")  # ... or in a file the answer names (0.0.8x)


def install(where: Path) -> Path | None:
    """Install Playwright MCP into `where`; its command-line script, or None (with a line printed) when it cannot."""
    npm = shutil.which("npm")
    if npm is None:
        print("Playwright MCP: npm is not on PATH; its column is left out")
        return None
    env = {**os.environ, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", PACKAGE], cwd=where, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    cli = where / "node_modules" / ".bin" / "playwright-mcp"
    if done.returncode != 0 or not cli.exists():
        print(f"Playwright MCP: npm install {PACKAGE} failed ({done.stderr.strip()[-200:]}); its column is left out")
        return None
    version = json.loads((where / "node_modules" / "@playwright" / "mcp" / "package.json").read_text())["version"]
    print(f"Playwright MCP {version} installed in {where}")
    return cli


def snapshots(cli: Path, chromium: str, urls: list[str], origins: list[str]) -> dict[str, str]:
    """Playwright MCP's snapshot (the yaml block of browser_navigate's answer) of each URL."""
    return asyncio.run(_snapshots(cli, chromium, urls, origins))


async def _snapshots(cli: Path, chromium: str, urls: list[str], origins: list[str]) -> dict[str, str]:
    from mcp import ClientSession, StdioServerParameters  # the project's MCP SDK (requirements.txt)
    from mcp.client.stdio import stdio_client

    args = [str(cli), "--headless", "--isolated", "--executable-path", chromium, "--allowed-origins",
            ";".join(origins), "--block-service-workers", "--output-dir", str(cli.parents[2] / "output"),
            "--file-paths", "absolute"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # as MCP users run it as root; the snapshot does not depend on it
    params = StdioServerParameters(command=shutil.which("node") or "node", args=args,
                                   env={"PATH": os.environ.get("PATH", ""), "HOME": str(cli.parent)})
    found: dict[str, str] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for url in urls:
            result: Any = await session.call_tool("browser_navigate", {"url": url})
            text = "\n".join(getattr(part, "text", "") for part in result.content)
            block, saved = _YAML.search(text), _SAVED.search(text)
            found[url] = block.group(1) if block else Path(saved.group(1)).read_text() if saved else ""
        await session.call_tool("browser_close", {})
    return found
