"""Whether a tool's packages can be imported, and if not, whether they are missing or installed but broken, with
the fix.

Before a run (run/preflight.py) only whether each package is installed is checked, which imports nothing; a
package is imported (and so found broken) at the first call of a tool that needs it, which is then withheld
from the model with the reason (ToolRegistry.resolve). check_setup imports every package (probe).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import threading
from dataclasses import dataclass

# Modules the built-in tools import when they run, by tool name, as (import name, distribution name).
TOOL_DEPENDENCIES: dict[str, tuple[tuple[str, str], ...]] = {
    "scrape": (("trafilatura", "trafilatura"), ("pypdf", "pypdf"), ("httpx", "httpx"), ("protego", "protego")),
    "search": (("ddgs", "ddgs"),),
    "wikipedia": (("trafilatura", "trafilatura"), ("httpx", "httpx"), ("lxml", "lxml")),
    "arxiv": (("pypdf", "pypdf"), ("httpx", "httpx"), ("lxml", "lxml")),
}
# lxml >= 5.2 moved lxml.html.clean out; pip < 24 does not install justext's lxml[html_clean] extra.
_SEPARATE_PROJECT = re.compile(r"separate project (\w[\w.-]*)")


@dataclass(frozen=True)
class Probe:
    """How importing one package went: ok, missing or broken, with a detail and the command that fixes it."""

    module: str
    dist: str
    state: str  # "ok" | "missing" | "broken"
    detail: str = ""
    fix: str = ""

    @property
    def ok(self) -> bool:
        """True when the package imported."""
        return self.state == "ok"

    def message(self) -> str:
        """One line for an error or a check_setup row."""
        if self.state == "missing":
            return f"{self.dist} is not installed; fix: {self.fix}"
        return f"{self.dist} is installed but cannot be imported ({self.detail}); fix: {self.fix}"


def probe(module: str, dist: str) -> Probe:
    """Import module and tell a missing package apart from an installed one that fails to import."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name in (module, top):
            return _missing(module, dist, str(exc))
        return _broken(module, dist, exc, exc.name)
    except Exception as exc:  # an installed package can fail in any way while importing
        return _broken(module, dist, exc, None)
    return Probe(module, dist, "ok", _version(dist))


def _missing(module: str, dist: str, detail: str) -> Probe:
    return Probe(module, dist, "missing", detail, f"pip install {dist} (or pip install -r requirements.txt)")


def _broken(module: str, dist: str, exc: BaseException, needed: str | None) -> Probe:
    text = " ".join(str(exc).split())
    separate = _SEPARATE_PROJECT.search(text)
    needed = separate.group(1).rstrip(".") if separate else needed
    if needed:
        fix = f"pip install {needed} (a dependency of {dist} that was not installed with it)"
    else:
        fix = f"pip install --force-reinstall {dist}"
    return Probe(module, dist, "broken", f"{type(exc).__name__}: {text[:200]}", fix)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "installed"


def missing_tool_dependencies(tool_names: list[str]) -> list[tuple[str, Probe]]:
    """(tool name, probe) for every package of the tools among tool_names that is not installed; imports nothing."""
    failed = []
    for name in tool_names:
        for module, dist in TOOL_DEPENDENCIES.get(name, ()):
            if not _installed(module):
                failed.append((name, _missing(module, dist, f"No module named {module!r}")))
    return failed


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails to import: installed, broken
        return True


_PROBLEMS: dict[str, str | None] = {}  # tool name -> why it cannot work (None: it can), once probed
_PROBLEMS_LOCK = threading.Lock()


def tool_problem(name: str) -> str | None:
    """Why the named tool cannot work here (one of its packages fails to import), or None: probed by importing its
    packages the first time it is asked in this process (its first call), then remembered."""
    with _PROBLEMS_LOCK:
        if name not in _PROBLEMS:
            failed = [p for p in (probe(m, d) for m, d in TOOL_DEPENDENCIES.get(name, ())) if not p.ok]
            _PROBLEMS[name] = f"the {name} tool cannot work: {failed[0].message()}" if failed else None
        return _PROBLEMS[name]


def known_problem(name: str) -> str | None:
    """What tool_problem found for this tool, if it was asked already; never imports anything."""
    with _PROBLEMS_LOCK:
        return _PROBLEMS.get(name)
