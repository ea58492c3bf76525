"""Whether a package can be imported, and if not, whether it is missing or installed but broken, with the fix."""

from __future__ import annotations

import importlib
import re
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
            return Probe(module, dist, "missing", str(exc), f"pip install {dist} (or pip install -r requirements.txt)")
        return _broken(module, dist, exc, exc.name)
    except Exception as exc:  # an installed package can fail in any way while importing
        return _broken(module, dist, exc, None)
    return Probe(module, dist, "ok", _version(dist))


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


def broken_tool_dependencies(tool_names: list[str]) -> list[tuple[str, Probe]]:
    """(tool name, failed probe) for every tool among tool_names whose packages cannot be imported."""
    failed = []
    for name in tool_names:
        for module, dist in TOOL_DEPENDENCIES.get(name, ()):
            result = probe(module, dist)
            if not result.ok:
                failed.append((name, result))
    return failed
