"""The .env files of a run, layered: which ones, the variables each sets as it applies (core/trust.py decides what
a start folder's file may set), or a ConfigError naming the file and line it cannot read.

Layers, lowest first (the environment, then the flags, come above them all, in config.py):
1. the user's own files: the `.env` beside main.py and the one in the user's config folder
   (~/.config/react-research-agent/.env), or instead the file AGENT_ENV_FILE names by an absolute path;
2. the start folder's `.env` (the current directory's, or a relative AGENT_ENV_FILE): it adds to the user's
   files and replaces their values, except that it never loosens a restriction they set (`trust.restricted`),
   and until the user trusts it, it sets nothing `trust.guarded` names.
Each file is read once (core/settings_read.py): the bytes judged are the bytes parsed.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from core.errors import ConfigError
from core.settings_read import SettingsFile, read_once
from core.trust import LeftOut, TrustStore, config_dir, own_folders, restricted, split_untrusted

ENV_FILE = ".env"


def parse_env(path: Path, data: bytes) -> dict[str, str]:
    """The variables of a .env file's bytes; ConfigError naming the file and line for bytes or lines it cannot read.

    `KEY=` (empty) and a bare `KEY` count as unset, as an empty variable in the environment does.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
                          "save the file as UTF-8") from exc
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:  # the line itself is not shown: it may hold a key
            raise ConfigError(f"{path}, line {binding.original.line}: cannot be read; write KEY=value "
                              "(quote values with spaces, close every quote)")
    values = dotenv_values(stream=io.StringIO(text))
    return {k: v for k, v in values.items() if v}


def read_dotenv(path: Path) -> tuple[SettingsFile | None, dict[str, str]]:
    """A .env file, read once, and its variables (no file: None and an empty dict)."""
    file = read_once(path)
    return file, parse_env(path, file.data) if file else {}


@dataclass
class FileLayers:
    """The .env files' variables as they apply, before the environment."""

    values: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)  # variable -> the file that set it
    by_user: set[str] = field(default_factory=set)  # variables set by one of the user's own files
    left: list[LeftOut] = field(default_factory=list)


def _sources(project_root: Path, environ: Mapping[str, str], env_file: Path | None) -> tuple[list[Path], Path | None]:
    """The user's own files and the start folder's file."""
    if env_file is not None:  # a caller's own choice (tests, tools): the one file
        return [env_file], None
    named = environ.get("AGENT_ENV_FILE")
    if named:
        return ([Path(named)], None) if os.path.isabs(named) else ([], Path(named))
    config = config_dir()
    return [project_root / ENV_FILE, *([config / ENV_FILE] if config else [])], Path.cwd() / ENV_FILE


def file_layers(project_root: Path, environ: Mapping[str, str], env_file: Path | None = None) -> FileLayers:
    """The user's own .env files, then the start folder's on top of them (the module's docstring has the rules)."""
    users, folder = _sources(project_root, environ, env_file)
    own = own_folders(project_root)
    layers = FileLayers()
    seen: set[Path] = set()
    for path in users:
        file = read_once(path, own)
        if file is None or file.real in seen:
            continue
        seen.add(file.real)
        values = parse_env(path, file.data)
        layers.values.update(values)
        layers.origins.update(dict.fromkeys(values, str(path)))
        layers.by_user.update(values)
    file = read_once(folder, own) if folder is not None else None
    if file is None or file.real in seen:
        return layers
    values = parse_env(folder, file.data)  # type: ignore[arg-type]
    verdict = TrustStore().judge(file, values)
    if verdict.state != "trusted":
        values, names = split_untrusted(values)
        layers.left.append(LeftOut(file.path, names, verdict.state, verdict.changed))
    for key, value in values.items():
        applied = restricted(key, layers.values[key], value) if key in layers.by_user else value
        if applied != layers.values.get(key):
            layers.values[key], layers.origins[key] = applied, str(file.path)
            layers.by_user.discard(key)
    return layers
