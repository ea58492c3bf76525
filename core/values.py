"""How a setting's text becomes a value: booleans, whole numbers, numbers, lists.

Each parser raises ValueError with a short reason; config.py turns it into a ConfigError naming the variable.
Numbers are ASCII digits only: Python's int() and float() also take other scripts' digits ('٣' is 3) and a
superscript '²' passes str.isdigit, and neither is a number a user meant to type.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)", re.I)


def entries(value: str) -> tuple[str, ...]:
    """Entries separated by `;` or new lines (for values such as command lines that contain commas)."""
    return tuple(item.strip() for item in value.replace("\n", ";").split(";") if item.strip())


def paths(value: str) -> tuple[Path, ...]:
    """Folders separated by the system's path separator (`:` here, `;` on Windows), `;` or new lines."""
    return tuple(Path(item) for item in entries(value.replace(os.pathsep, ";")))


def comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def parse_bool(value: str) -> bool:
    """1/true/yes/on or 0/false/no/off (any case); anything else is a ValueError, not a silent False."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def whole(value: str) -> int:
    """A whole number written in ASCII digits (an optional sign)."""
    text = value.strip()
    if not _WHOLE.fullmatch(text):
        raise ValueError("expected a whole number")
    return int(text)


def number(value: str) -> float:
    """A number written in ASCII (digits, a point, an exponent); inf and nan are left for the range checks."""
    text = value.strip()
    if not _NUMBER.fullmatch(text):
        raise ValueError("expected a number")
    return float(text)
