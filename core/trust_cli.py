"""`python main.py trust [DIR]`, `trust --list`, `trust --forget [DIR]`: which folders' files may set everything.

Trusting a folder records the SHA-256 of its `.env`, its `models.toml` and the models file its `.env` names
(AGENT_MODELS_FILE), as they are now, with the SHA-256 of each file the `.env`'s settings name (its MCP
servers' scripts, its tool modules, its mcp.json: core/trust_pins.py); a change to any of them asks again,
as `direnv allow` does. The command says what each file holds that now applies, by name (never a value).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli import ArgumentParser
from core.envfile import ENV_FILE, parse_env
from core.errors import ConfigError
from core.models_file import DEFAULT_FILE, parse_models
from core.settings_read import SettingsFile, read_once
from core.text import terminal_safe
from core.trust import TrustStore, config_dir, guarded
from core.trust_pins import fingerprint


def parser() -> argparse.ArgumentParser:
    """`trust [PATH]`, `trust --list`, `trust --forget [PATH]`."""
    p = ArgumentParser(prog="main.py trust",
                       description="Let a folder's .env and models.toml (as they are now) run commands, change the "
                                   "sandbox and send keys to the servers they name. A file changed later asks again.")
    p.add_argument("path", nargs="?", type=Path, default=Path("."),
                   help="the folder (its .env, models.toml and the models file its .env names) or one file "
                        "(default: the current folder)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="list the trusted files and whether each is unchanged")
    what.add_argument("--forget", action="store_true", help="no longer trust the folder's (or the file's) files")
    return p


def _shown(path: Path | str) -> str:
    return terminal_safe(str(path), one_line=True)


def files_of(target: Path) -> list[tuple[SettingsFile, dict[str, str]]]:
    """The files `trust` records for a folder (those that exist) or a file, each read once, with a .env's
    variables (whose named files are pinned with it)."""
    paths = [target / ENV_FILE, target / DEFAULT_FILE] if target.is_dir() else [target]
    found: list[tuple[SettingsFile, dict[str, str]]] = []
    for path in paths:
        file = read_once(path)
        if file is not None:
            found.append((file, {} if path.suffix == ".toml" else parse_env(path, file.data)))
    named = next((values.get("AGENT_MODELS_FILE") for f, values in found if f.path.name == ENV_FILE), None)
    if named and target.is_dir():
        models = Path(named).expanduser()
        file = read_once(models if models.is_absolute() else target / models)
        if file is not None and file.real not in {f.real for f, _ in found}:
            found.append((file, {}))
    return found


def what_applies(file: SettingsFile, values: dict[str, str], pinned: list[str]) -> str:
    """The settings of a file that apply only once it is trusted, by name, and the files pinned with it."""
    if file.path.suffix == ".toml":
        routes = [a.name for a in parse_models(file.path, file.data) if a.routing]
        return f"aliases {', '.join(routes)} may send requests and keys to their base_url" if routes else \
            "no alias that routes"
    names = sorted(k for k in values if guarded(k))
    also = f"; pinned with it: {', '.join(pinned)}" if pinned else ""
    return (f"{', '.join(names)} now apply" if names else "nothing it sets needed trust") + also


def trust(target: Path, store: TrustStore) -> int:
    """Record the target's files; print what each now lets through."""
    files = files_of(target)
    if not files:
        raise ConfigError(f"{_shown(target)}: no {ENV_FILE} or {DEFAULT_FILE} there to trust")
    added = store.add(files, target)
    entries = store.entries()
    lines = [f"trusted {_shown(f.real)}: "
             f"{_shown(what_applies(f, values, sorted(entries.get(str(f.real), {}).get('pins', {}))))}"
             for f, values in files if str(f.real) in added]
    print("\n".join(lines))
    print(f"(kept in {_shown(store.path or '')}; a change to a file, or to a file it names, asks again; undo: "
          f"main.py trust --forget {_shown(target)})")
    return 0


def _state(path: str, entry: dict[str, object]) -> str:
    """unchanged, changed (naming the pinned files that changed) or gone."""
    file = read_once(Path(path))
    if file is None:
        return "gone"
    pins = entry.get("pins") or {}
    moved = [p for p, h in pins.items() if fingerprint(Path(p)) != h] if isinstance(pins, dict) else []
    if file.sha256 != entry.get("sha256"):
        return "changed since trusted: asks again"
    return f"changed since trusted ({', '.join(moved)}): asks again" if moved else "unchanged"


def listing(store: TrustStore, project_root: Path) -> int:
    """Every trusted file, with whether it is unchanged, and the files pinned with it."""
    entries = store.entries()
    config = config_dir()
    also = f" and {_shown(config)}" if config else ""
    print(f"always trusted: the files directly in {_shown(project_root)}{also}")
    if not entries:
        print(f"no other file is trusted ({_shown(store.path or 'no home folder: nothing can be')})")
    for path in sorted(entries):
        print(f"{_shown(path)}  {_shown(_state(path, entries[path]))}")
        for pin, sha in sorted(entries[path]["pins"].items()):
            now = fingerprint(Path(pin))
            print(f"  names {_shown(pin)}  {'unchanged' if now == sha else 'gone' if now is None else 'changed'}")
    return 0


def main(argv: list[str], project_root: Path) -> int:
    """Run `trust`: 0 when done (ConfigError, exit 2, for a folder with nothing to trust)."""
    args = parser().parse_args(argv)
    store = TrustStore()  # without a home folder (store_path None) nothing is trusted, and `trust` says so
    if args.list:
        return listing(store, project_root)
    target = args.path.expanduser().resolve()
    if args.forget:
        gone = store.forget(target)
        print("\n".join(f"forgot {_shown(p)}" for p in gone) if gone else f"nothing was trusted in {_shown(target)}")
        return 0
    return trust(target, store)
