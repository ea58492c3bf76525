"""The files a trusted settings file names, pinned with it (core/trust.py): a change to one asks for trust again.

Trusting a folder's `.env` trusts what it runs, so `main.py trust` records, beside the `.env`'s own hash, the
hash of every file its settings name, and a run compares them again before any of them applies:

- AGENT_MCP_SERVERS: each `NAME=COMMAND` entry's command (a `NAME=URL` entry names no file);
- AGENT_MCP_CONFIG: the JSON file itself, and each of its servers' `command` and `args`;
- AGENT_TOOL_MODULES: a `path.py`, else a module's `name.py` or `name/__init__.py` under the folder;
- SCRAPE_CHROMIUM: the executable.

The file a command names (the rule): the command is split as a shell splits it (shlex); its program and each
argument (and the value of an `--option=value`) that, taken relative to the settings file's folder (an
absolute one as it is), is an existing regular file, links followed as running it follows them. A command
given to a shell as one string (`sh -c '...'`) names its files inside that string: they are not pinned (the
string itself is, as part of the `.env`). A file larger than PIN_BYTES is pinned by its identity and change
time instead of its content (a browser executable is hundreds of MB).

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path

PIN_BYTES = 32 << 20
NAMING = ("AGENT_MCP_SERVERS", "AGENT_MCP_CONFIG", "AGENT_TOOL_MODULES", "SCRAPE_CHROMIUM")


def fingerprint(path: Path) -> str | None:
    """A file's SHA-256 (or, past PIN_BYTES, its identity and change time); None when it is not a file."""
    try:
        info = path.stat()
        if not path.is_file():
            return None
        if info.st_size > PIN_BYTES:
            return f"stat:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def _entries(value: str) -> list[str]:
    return [item.strip() for item in value.replace("\n", ";").split(";") if item.strip()]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _command_files(words: list[str], folder: Path) -> Iterator[Path]:
    for word in words:
        for name in (word, word.partition("=")[2]) if word.startswith("-") else (word,):
            if name and not name.startswith("-"):
                path = Path(os.path.normpath(folder / Path(name).expanduser()))
                if path.is_file():
                    yield path


def _mcp_config_files(path: Path, folder: Path) -> Iterator[Path]:
    yield path
    try:
        servers = json.loads(path.read_text(encoding="utf-8")).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        return
    for entry in (servers.values() if isinstance(servers, dict) else ()):
        if isinstance(entry, dict) and isinstance(entry.get("command"), str):
            args = entry.get("args")
            yield from _command_files([entry["command"], *map(str, args if isinstance(args, list) else [])], folder)


def _module_files(spec: str, folder: Path) -> Iterator[Path]:
    if spec.endswith(".py"):
        yield folder / spec
        return
    base = folder.joinpath(*spec.split("."))
    yield base.with_suffix(".py")
    yield base / "__init__.py"


def named_files(values: Mapping[str, str], folder: Path) -> list[Path]:
    """The existing files the settings name (the rule above), each once, in order."""
    found: list[Path] = []
    for entry in _entries(values.get("AGENT_MCP_SERVERS", "")):
        target = entry.partition("=")[2].strip()
        if target and not target.startswith(("http://", "https://", "sse+http://", "sse+https://")):
            found += _command_files(_words(target), folder)
    if values.get("AGENT_MCP_CONFIG"):
        config = Path(os.path.normpath(folder / Path(values["AGENT_MCP_CONFIG"]).expanduser()))
        if config.is_file():
            found += _mcp_config_files(config, folder)
    for spec in (s.strip() for s in values.get("AGENT_TOOL_MODULES", "").split(",") if s.strip()):
        found += (p for p in _module_files(spec, folder) if p.is_file())
    if values.get("SCRAPE_CHROMIUM"):
        found += _command_files([values["SCRAPE_CHROMIUM"]], folder)
    return list(dict.fromkeys(found))


def pins(values: Mapping[str, str], folder: Path) -> dict[str, str]:
    """Each named file -> its fingerprint now."""
    return {str(p): h for p in named_files(values, folder) if (h := fingerprint(p)) is not None}


def changed_pins(pinned: Mapping[str, str], values: Mapping[str, str], folder: Path) -> list[str]:
    """The named files whose fingerprint differs from the one pinned (new, changed or gone), by path."""
    now = pins(values, folder)
    return sorted(p for p in set(now) | set(pinned) if now.get(p) != pinned.get(p))
