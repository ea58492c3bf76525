"""`python main.py trust [DIR]`, `trust --list`, `trust --forget [DIR]`: which folders' files may set everything.

Trusting a folder records the SHA-256 of its `.env`, its `models.toml` and the models file its `.env` names
(AGENT_MODELS_FILE), as they are now (core/trust.py); a file changed afterwards is untrusted again, as
`direnv allow` does. The command says what each file holds that now applies, by name (never a value).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli import ArgumentParser
from core.envfile import read_dotenv
from core.errors import ConfigError
from core.models_file import DEFAULT_FILE, read_models_file
from core.text import terminal_safe
from core.trust import TrustStore, config_dir, guarded

ENV_FILE = ".env"


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


def files_of(target: Path) -> list[Path]:
    """The files `trust` records for a folder (those that exist) or a file."""
    if not target.is_dir():
        return [target] if target.is_file() else []
    found = [target / name for name in (ENV_FILE, DEFAULT_FILE) if (target / name).is_file()]
    named = read_dotenv(target / ENV_FILE).get("AGENT_MODELS_FILE")
    if named:
        models = Path(named).expanduser()
        models = models if models.is_absolute() else target / models
        if models.is_file() and models.resolve() not in {f.resolve() for f in found}:
            found.append(models)
    return found


def what_applies(file: Path) -> str:
    """The settings of a file that apply only once it is trusted, by name."""
    if file.suffix == ".toml":
        routes = [a.name for a in read_models_file(file) if a.routing]
        return f"aliases {', '.join(routes)} may send requests and keys to their base_url" if routes else \
            "no alias that routes"
    names = sorted(k for k in read_dotenv(file) if guarded(k))
    return f"{', '.join(names)} now apply" if names else "nothing it sets needed trust"


def trust(target: Path, store: TrustStore) -> int:
    """Record the target's files; print what each now lets through."""
    files = files_of(target)
    if not files:
        raise ConfigError(f"{_shown(target)}: no {ENV_FILE} or {DEFAULT_FILE} there to trust")
    lines = [f"trusted {_shown(f.resolve())}: {_shown(what_applies(f))}" for f in files]
    store.add(files, target)
    print("\n".join(lines))
    print(f"(kept in {_shown(store.path or '')}; a change to a file asks again; undo: main.py trust --forget "
          f"{_shown(target)})")
    return 0


def listing(store: TrustStore, project_root: Path) -> int:
    """Every trusted file, with whether it is unchanged, and the folders always trusted."""
    entries = store.entries()
    config = config_dir()
    also = f" and {_shown(config)}" if config else ""
    print(f"always trusted: the files directly in {_shown(project_root)}{also}")
    if not entries:
        print(f"no other file is trusted ({_shown(store.path or 'no home folder: nothing can be')})")
    for path in sorted(entries):
        state = {"trusted": "unchanged", "changed": "changed since trusted: asks again"}[store.state(Path(path))] \
            if Path(path).is_file() else "gone"
        print(f"{_shown(path)}  {state}")
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
