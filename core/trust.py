"""Which folder's files may set what: the one decision config.py reads before a `.env` or models file applies.

A `.env` or `models.toml` found in the folder the agent is started in came with that folder (a clone, a
download, an archive), so it may set a model name, the caps and the keys' values, but not, until the user
has trusted it, the settings that run commands or code, change the confinement of model code, decide where
keys and data are sent, or choose which of the user's folders are read or written (`guarded`). Like
`direnv allow`, `python main.py trust DIR` records each file's SHA-256 in the user's config folder
(`store_path`): a file that changes afterwards is untrusted again. Files in the project's own folder (where
main.py is) and in the user's config folder are always trusted; so are the environment and the flags, and
a file the environment names by an absolute path (AGENT_ENV_FILE, AGENT_MODELS_FILE: the user's choice).

Standard library only; the store is read when settings are built and written only by `main.py trust`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError
from core.files import atomic_write
from core.text import terminal_safe

APP_FOLDER = "react-research-agent"  # the project's name (pyproject.toml): its folder under ~/.config
STORE_FILE = "trusted.json"

# Why a file the user has not trusted may not set a variable (docs/security.md has the table).
RUNS = "runs commands or code"
CONFINES = "changes the confinement of model code"
ROUTES = "decides where keys and data are sent"
FOLDERS = "chooses folders read or written"

_EXACT = {
    "AGENT_TOOL_MODULES": RUNS, "SCRAPE_CHROMIUM": RUNS, "AGENT_EXECUTOR": RUNS,  # ray: a local cluster's job API
    "AGENT_PYTHON_NETWORK": CONFINES, "AGENT_WORKSPACE_BUDGET_MB": CONFINES, "SCRAPE_ALLOW_PRIVATE_URLS": CONFINES,
    "SCRAPE_BROWSER_MEMORY_MB": CONFINES, "SCRAPE_MAX_BYTES": CONFINES,
    "AGENT_WORKSPACE": FOLDERS, "AGENT_DOCS": FOLDERS,
}
# Rules by the name's start or end, so that a variable added later is judged without being listed here.
_PREFIXES = (("AGENT_MCP_", RUNS), ("AGENT_SANDBOX", CONFINES), ("PYTHON_TOOL_", CONFINES),
             ("AGENT_DOC_", CONFINES))  # the document converter's child: its memory and time
_SUFFIXES = (("_URL", ROUTES), ("_URLS", ROUTES), ("_ENDPOINT", ROUTES), ("_HEADERS", ROUTES),
             ("_ADDRESS", ROUTES), ("_HOST", ROUTES), ("_PROXY", ROUTES), ("_DIR", FOLDERS), ("_DIRS", FOLDERS))


def guarded(variable: str) -> str | None:
    """Why a folder's untrusted file may not set this variable (RUNS, CONFINES, ROUTES, FOLDERS), or None."""
    if variable in _EXACT:
        return _EXACT[variable]
    for prefix, why in _PREFIXES:
        if variable.startswith(prefix):
            return why
    return next((why for suffix, why in _SUFFIXES if variable.endswith(suffix)), None)


def config_dir() -> Path | None:
    """The user's config folder for this project: $XDG_CONFIG_HOME (when absolute) or ~/.config, then its name;
    None when there is no home folder to put it in (never a relative `~`, which a folder could supply)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".config")
    return Path(base) / APP_FOLDER


def store_path() -> Path | None:
    """Where the trusted files and their hashes are kept (None: nowhere, nothing is trusted)."""
    folder = config_dir()
    return folder / STORE_FILE if folder is not None else None


def digest(path: Path) -> str | None:
    """The SHA-256 of a file's bytes, or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _key(path: Path) -> str:
    return str(path.resolve())


class TrustStore:
    """The files the user trusted: path -> {"sha256": the hash it had then, "for": the folder or file trusted}."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()

    def entries(self) -> dict[str, dict[str, str]]:
        """Every trusted file; empty when there is no store, or one another account could have written."""
        if self.path is None:
            return {}
        try:
            info = self.path.stat()
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if os.name == "posix" and (info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            return {}  # another account could have trusted any folder for us
        files = data.get("files") if isinstance(data, dict) else None
        return {str(k): {"sha256": str(v.get("sha256")), "for": str(v.get("for", Path(k).parent))}
                for k, v in (files.items() if isinstance(files, dict) else ()) if isinstance(v, dict)}

    def state(self, file: Path) -> str:
        """"trusted" (its hash is the one trusted), "changed" (trusted with other content) or "untrusted"."""
        known = self.entries().get(_key(file))
        if known is None:
            return "untrusted"
        return "trusted" if known["sha256"] == digest(file) else "changed"

    def add(self, files: Iterable[Path], granted: Path) -> dict[str, str]:
        """Trust these files as they are now, for the folder or file the user named; returns path -> hash."""
        added = {_key(f): h for f in files if (h := digest(f)) is not None}
        entries = self.entries()
        entries.update({p: {"sha256": h, "for": _key(granted)} for p, h in added.items()})
        self._save(entries)
        return added

    def forget(self, granted: Path) -> list[str]:
        """Forget what was trusted for this folder or file, and any trusted file directly in that folder."""
        where = _key(granted)
        entries = self.entries()
        gone = [p for p, e in entries.items() if e["for"] == where or p == where or str(Path(p).parent) == where]
        if gone:
            self._save({p: e for p, e in entries.items() if p not in gone})
        return gone

    def _save(self, files: dict[str, dict[str, str]]) -> None:
        """Written 0600 in a 0700 folder: created here, by `main.py trust`, never when settings are read."""
        if self.path is None:
            raise ConfigError("no home folder to keep the trusted files in: set HOME or XDG_CONFIG_HOME")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.chmod(0o700)
        atomic_write(self.path, json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=1) + "\n",
                     mode=0o600)


def chosen(variable: str, environ: Mapping[str, str]) -> bool:
    """A file the environment names by an absolute path (AGENT_ENV_FILE, AGENT_MODELS_FILE): the user's own
    choice, trusted as the environment is; a relative one is judged like a file found in the folder."""
    return os.path.isabs(environ.get(variable, ""))


def always_trusted(file: Path, project_root: Path) -> bool:
    """A file directly in the project's own folder or in the user's config folder for it."""
    parent, config = file.resolve().parent, config_dir()
    return parent == project_root.resolve() or (config is not None and parent == config.resolve())


def file_state(file: Path, project_root: Path) -> str:
    """"trusted", "changed" or "untrusted" for a file found in a folder (see TrustStore.state)."""
    if always_trusted(file, project_root):
        return "trusted"
    return TrustStore().state(file)


@dataclass(frozen=True)
class LeftOut:
    """The settings of one untrusted file that were not applied, and why the file is untrusted."""

    file: Path
    names: tuple[str, ...]  # variables, or `alias NAME` for a models-file alias
    state: str = "untrusted"  # or "changed": trusted once, with other content


def split_untrusted(values: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """An untrusted file's variables: those it may set, and the names of those left out."""
    kept = {k: v for k, v in values.items() if guarded(k) is None}
    return kept, tuple(sorted(k for k in values if k not in kept))


def notice(left: Iterable[LeftOut]) -> str:
    """The one line that names the untrusted files, what was left out of each, and the command that trusts them."""
    items = [item for item in left if item.names]
    if not items:
        return ""
    parts = [f"{item.file}{' (changed since you trusted it)' if item.state == 'changed' else ''}: "
             f"{', '.join(item.names)}" for item in items]
    targets = dict.fromkeys(shlex.quote(str(trust_target(item.file))) for item in items)
    fix = "; ".join(f"python main.py trust {target}" for target in targets)
    return terminal_safe(f"warning: not applied, from files you have not trusted (they would run commands, change "
                         f"confinement or send keys elsewhere): {'; '.join(parts)}. To apply them once you have "
                         f"read the files: {fix}", one_line=True)


def trust_target(file: Path) -> Path:
    """What `main.py trust` is given to trust a file: its folder for a .env or models.toml, else the file."""
    return file.resolve().parent if file.name in (".env", "models.toml") else file.resolve()


_TOLD: set[str] = set()


def tell_once(line: str) -> None:
    """Print the notice on stderr once per process, however often settings are built."""
    if line and line not in _TOLD:
        _TOLD.add(line)
        print(line, file=sys.stderr, flush=True)
