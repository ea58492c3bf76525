"""Reading a .env file: which one, the variables it sets (those core/trust.py lets it set when the user has not
trusted it), or a ConfigError naming the file and line it cannot read."""

from __future__ import annotations

import io
import os
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from core.errors import ConfigError
from core.trust import LeftOut, split_untrusted


def read_env_file(path: Path) -> dict[str, str]:
    """The variables a .env file sets; ConfigError naming the file and line for bytes or lines it cannot read.

    `KEY=` (empty) and a bare `KEY` count as unset, as an empty variable in the environment does.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from exc
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


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a .env file into a dict (missing file: empty dict)."""
    if not path.is_file():
        return {}
    return read_env_file(path)


def find_dotenv_file(project_root: Path) -> Path:
    """AGENT_ENV_FILE if set, else the .env in the current directory, else the one of the project's own folder."""
    if os.environ.get("AGENT_ENV_FILE"):
        return Path(os.environ["AGENT_ENV_FILE"])
    here = Path.cwd() / ".env"
    return here if here.is_file() else project_root / ".env"


def dotenv_layer(path: Path, state: str) -> tuple[dict[str, str], list[LeftOut]]:
    """The variables of a .env as they apply: all of a trusted one's (`state`, core/trust.file_state); of an
    untrusted or changed one, those it may set, with what was left out."""
    values = read_dotenv(path)
    if state == "trusted" or not values:
        return values, []
    kept, names = split_untrusted(values)
    return kept, [LeftOut(path, names, state)]
