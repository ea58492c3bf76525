"""Reading a .env file: the variables it sets, or a ConfigError naming the file and line it cannot read."""

from __future__ import annotations

import io
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from core.errors import ConfigError


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
