"""Which folder's files may set what: the one decision config.py reads before a `.env` or models file applies.

A `.env` or `models.toml` found in the folder the agent is started in came with that folder (a clone, a
download, an archive), so it may set a model name and the caps, but not, until the user has trusted it, the
settings that run commands or code, change the confinement of model code, decide where keys and data are
sent or whose account pays (keys, tokens, the outbound guard's domain lists), or choose which of the user's
folders are read or written (`guarded`). Like `direnv allow`, `python main.py trust DIR` records each file's
SHA-256 in the user's config folder (`store_path`), with the SHA-256 of every file its settings name
(core/trust_pins.py): a change to any of them makes the file untrusted again (`TrustStore.judge`). Files in
the project's own folder (where main.py is) and in the user's config folder are always trusted; so are the
environment and the flags, and a file the environment names by an absolute path (AGENT_ENV_FILE,
AGENT_MODELS_FILE: the user's choice). Whatever its trust, a start folder's file never loosens a restriction
the user's own files set (`restricted`: block lists, AGENT_SANDBOX=require, caps and limits).

Standard library only; the store is read when settings are built and written only by `main.py trust`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.files import atomic_write
from core.settings_read import SettingsFile
from core.text import terminal_safe
from core.trust_pins import changed_pins, pins

APP_FOLDER = "react-research-agent"  # the project's name (pyproject.toml): its folder under ~/.config
STORE_FILE = "trusted.json"

# Why a file the user has not trusted may not set a variable (docs/security.md has the table).
RUNS = "runs commands or code"
CONFINES = "changes the confinement of model code"
ROUTES = "decides where keys and data are sent"
FOLDERS = "chooses folders read or written"
PAYS = "decides whose account pays"

_EXACT = {
    "AGENT_ALLOW_DOMAINS": ROUTES, "AGENT_BLOCK_DOMAINS": ROUTES,  # the outbound guard (tools/web/domains.py)
    "AGENT_TOOL_MODULES": RUNS, "SCRAPE_CHROMIUM": RUNS, "AGENT_EXECUTOR": RUNS,  # ray: a local cluster's job API
    "AGENT_PYTHON_NETWORK": CONFINES, "AGENT_WORKSPACE_BUDGET_MB": CONFINES, "SCRAPE_ALLOW_PRIVATE_URLS": CONFINES,
    "SCRAPE_BROWSER_MEMORY_MB": CONFINES, "SCRAPE_MAX_BYTES": CONFINES,
    "AGENT_WORKSPACE": FOLDERS, "AGENT_DOCS": FOLDERS,
}
# Rules by the name's start or end, so that a variable added later is judged without being listed here.
_PREFIXES = (("AGENT_MCP_", RUNS), ("AGENT_SANDBOX", CONFINES), ("PYTHON_TOOL_", CONFINES),
             ("AGENT_DOC_", CONFINES))  # the document converter's child: its memory and time
_SUFFIXES = (("_URL", ROUTES), ("_URLS", ROUTES), ("_ENDPOINT", ROUTES), ("_HEADERS", ROUTES),
             ("_ADDRESS", ROUTES), ("_HOST", ROUTES), ("_PROXY", ROUTES), ("_DIR", FOLDERS), ("_DIRS", FOLDERS),
             ("_KEY", PAYS), ("_TOKEN", PAYS), ("_SECRET", PAYS), ("_PASSWORD", PAYS))


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


def own_folders(project_root: Path) -> tuple[Path, ...]:
    """The folders whose files are always trusted: the project's own (where main.py is) and the user's config
    folder for it."""
    config = config_dir()
    return (project_root, config) if config is not None else (project_root,)


def _key(path: Path) -> str:
    return str(path.resolve())


@dataclass(frozen=True)
class Verdict:
    """A file's trust: "trusted", "changed" (trusted with other content, or a file it names changed) or
    "untrusted"; `changed` names the files that changed since the user trusted it."""

    state: str
    changed: tuple[str, ...] = ()


def _entry(path: str, entry: dict[str, Any]) -> dict[str, Any]:
    pinned = entry.get("pins")
    return {"sha256": str(entry.get("sha256")), "for": str(entry.get("for", Path(path).parent)),
            "pins": {str(p): str(h) for p, h in pinned.items()} if isinstance(pinned, dict) else {}}


class TrustStore:
    """The files the user trusted: path -> {"sha256": the hash it had then, "for": the folder or file trusted,
    "pins": {a file its settings name: that file's hash then}}."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()

    def entries(self) -> dict[str, dict[str, Any]]:
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
        return {str(k): _entry(k, v) for k, v in (files.items() if isinstance(files, dict) else ())
                if isinstance(v, dict)}

    def judge(self, file: SettingsFile, values: Mapping[str, str] | None = None) -> Verdict:
        """The trust of a settings file as it was read (its bytes, not the path's content now) and, for a .env
        (`values`), of the files its settings name."""
        if file.own_folder:
            return Verdict("trusted")
        known = self.entries().get(str(file.real))
        if known is None:
            return Verdict("untrusted")
        if known["sha256"] != file.sha256:
            return Verdict("changed")
        names = changed_pins(known["pins"], values or {}, file.folder) if values else []
        return Verdict("changed", tuple(names)) if names else Verdict("trusted")

    def add(self, files: Iterable[tuple[SettingsFile, Mapping[str, str]]], granted: Path) -> dict[str, str]:
        """Trust these files as they were read, with what their settings name now, for the folder or file the
        user named; returns path -> hash."""
        records = {str(f.real): {"sha256": f.sha256, "for": _key(granted), "pins": pins(values, f.folder)}
                   for f, values in files}
        entries = self.entries()
        entries.update(records)
        self._save(entries)
        return {p: str(r["sha256"]) for p, r in records.items()}

    def forget(self, granted: Path) -> list[str]:
        """Forget what was trusted for this folder or file, and any trusted file directly in that folder."""
        where = _key(granted)
        entries = self.entries()
        gone = [p for p, e in entries.items() if e["for"] == where or p == where or str(Path(p).parent) == where]
        if gone:
            self._save({p: e for p, e in entries.items() if p not in gone})
        return gone

    def _save(self, files: dict[str, dict[str, Any]]) -> None:
        """Written 0600 in a 0700 folder: created here, by `main.py trust`, never when settings are read."""
        if self.path is None:
            raise ConfigError("no home folder to keep the trusted files in: set HOME or XDG_CONFIG_HOME")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.path.parent.chmod(0o700)
        atomic_write(self.path, json.dumps({"version": 2, "files": dict(sorted(files.items()))}, indent=1) + "\n",
                     mode=0o600)


def chosen(variable: str, environ: Mapping[str, str]) -> bool:
    """A file the environment names by an absolute path (AGENT_ENV_FILE, AGENT_MODELS_FILE): the user's own
    choice, trusted as the environment is; a relative one is judged like a file found in the folder."""
    return os.path.isabs(environ.get(variable, ""))


@dataclass(frozen=True)
class LeftOut:
    """The settings of one untrusted file that were not applied, and why the file is untrusted."""

    file: Path
    names: tuple[str, ...]  # variables, or `alias NAME` for a models-file alias
    state: str = "untrusted"  # or "changed": trusted once, with other content
    changed: tuple[str, ...] = ()  # the files it names that changed since it was trusted


def split_untrusted(values: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """An untrusted file's variables: those it may set, and the names of those left out."""
    kept = {k: v for k, v in values.items() if guarded(k) is None}
    return kept, tuple(sorted(k for k in values if k not in kept))


# The user's restrictions a start folder's file may tighten but never loosen (`restricted`), by variable.
_LOWER = frozenset({  # a smaller number is stricter (0 or less: no limit, for the memory and disk budgets)
    "AGENT_MAX_COST", "AGENT_MAX_RUN_COST", "AGENT_MAX_TOKENS_PER_TASK", "AGENT_MAX_STEPS", "AGENT_TASK_TIMEOUT",
    "AGENT_TOOL_TIMEOUT", "AGENT_RPM", "AGENT_TPM", "AGENT_MAX_TOKENS", "PYTHON_TOOL_TIMEOUT",
    "PYTHON_TOOL_MEMORY_MB", "AGENT_WORKSPACE_BUDGET_MB", "AGENT_DOC_MEMORY_MB", "AGENT_DOC_TIMEOUT",
    "SCRAPE_MAX_BYTES", "SCRAPE_BROWSER_MEMORY_MB", "SCRAPE_TIMEOUT", "SCRAPE_HOST_CONCURRENCY"})
_HIGHER = frozenset({"SCRAPE_HOST_GAP"})  # a larger number is stricter
_OFF = frozenset({"AGENT_PYTHON_NETWORK", "SCRAPE_ALLOW_PRIVATE_URLS", "SCRAPE_IGNORE_ROBOTS"})  # off is stricter
_UNION = frozenset({"AGENT_BLOCK_DOMAINS"})  # both lists apply
_KEPT = frozenset({"AGENT_ALLOW_DOMAINS"})  # the user's list stands
_SANDBOX = {"none": 0, "auto": 1, "landlock": 2, "bwrap": 2, "require": 3}
RESTRICTIONS = _LOWER | _HIGHER | _OFF | _UNION | _KEPT | {"AGENT_SANDBOX"}


def _number(value: str, lower: bool) -> float:
    try:
        number = float(value)
    except ValueError:
        return float("nan")
    return float("inf") if lower and number <= 0 else number


def restricted(variable: str, user: str, folder: str) -> str:
    """The value that applies when the user's own files set `user` and a start folder's file sets `folder`: the
    folder's, unless it would loosen a restriction of the user's (then the user's, or both block lists)."""
    if variable in _UNION:
        return ",".join(dict.fromkeys(d.strip() for d in f"{user},{folder}".split(",") if d.strip()))
    if variable in _KEPT:
        return user
    if variable == "AGENT_SANDBOX":
        rank = _SANDBOX.get(user.strip().lower(), 3), _SANDBOX.get(folder.strip().lower(), -1)
        return folder if rank[1] > rank[0] else user
    if variable in _OFF:
        return user if user.strip().lower() in ("0", "false", "no", "off") else folder
    if variable in _LOWER | _HIGHER:
        mine, theirs = _number(user, variable in _LOWER), _number(folder, variable in _LOWER)
        tighter = theirs < mine if variable in _LOWER else theirs > mine
        return folder if tighter else user  # NaN (not a number) compares false: the user's stands
    return folder


def _why(item: LeftOut) -> str:
    if item.changed:
        return f" (changed since you trusted it: {', '.join(item.changed)})"
    return " (changed since you trusted it)" if item.state == "changed" else ""


def notice(left: Iterable[LeftOut], main_py: Path) -> str:
    """The one line that names the untrusted files, what was left out of each, and the command that trusts them
    (naming main.py as it can be run from here)."""
    items = [item for item in left if item.names]
    if not items:
        return ""
    parts = [f"{item.file}{_why(item)}: {', '.join(item.names)}" for item in items]
    fix = trust_command((item.file for item in items), main_py)
    return terminal_safe(f"warning: not applied, from files you have not trusted (they would run commands, change "
                         f"confinement, send keys elsewhere or use other keys): {'; '.join(parts)}. To apply them "
                         f"once you have read the files: {fix}", one_line=True)


def trust_command(files: Iterable[Path], main_py: Path) -> str:
    """`python main.py trust DIR` for each folder (or file) to trust, main.py named as it runs from here."""
    program = "main.py" if Path.cwd() == main_py.parent else shlex.quote(str(main_py))
    targets = dict.fromkeys(shlex.quote(str(trust_target(file))) for file in files)
    return "; ".join(f"python {program} trust {target}" for target in targets)


def trust_target(file: Path) -> Path:
    """What `main.py trust` is given to trust a file: its folder for a .env or models.toml, else the file."""
    folder = Path(os.path.realpath(file.parent))  # the .env's own link is not followed: it may have changed since
    return folder if file.name in (".env", "models.toml") else folder / file.name


_TOLD: set[str] = set()


def tell_once(line: str) -> None:
    """Print the notice on stderr once per process, however often settings are built."""
    if line and line not in _TOLD:
        _TOLD.add(line)
        print(line, file=sys.stderr, flush=True)
