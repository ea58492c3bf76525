"""The house's layers: each module imports only from its own layer or below, and no import closes a circle.

Every import is read with `ast`: module level, inside functions and under `if TYPE_CHECKING:` alike, since
an import a reader cannot see at the top of a file is still a dependency.
"""

from __future__ import annotations

import ast
import graphlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"tests", "benchmarks", "docs", "workspace", "traces", "runs", "venv", ".venv", "__pycache__", ".git"}
# Bottom to top; a name is a root module or a package. Docs/architecture.md draws the same order.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("config",),
    ("tasks",),
    ("sources",),
    ("report",),
    ("providers",),
    ("llm",),
    ("cache",),
    ("docindex",),
    ("tools",),
    ("prompt",),
    ("outcome",),
    ("agent",),
    ("telemetry",),
    ("run",),
    ("research",),
    ("ui",),
    ("evals",),
    ("main", "check_setup", "inspect_agent"),
)
ROOT_MODULES = {"main", "agent", "llm", "config", "check_setup", "inspect_agent"}
MAX_FUNCTION_LEVEL_SHARE = 0.05


@dataclass(frozen=True)
class Import:
    """One imported project module, where the import is written, and how."""

    source: str
    target: str
    line: int
    in_function: bool
    commented: bool


def _tracked() -> set[str] | None:
    """The root's .py files git tracks (None outside a git checkout: then only the rule below applies)."""
    try:
        out = subprocess.run(["git", "ls-files", "--", "*.py"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {name for name in out.stdout.splitlines() if "/" not in name} if out.returncode == 0 else None


TRACKED = _tracked()


def users_own(path: Path) -> bool:
    """A file at the root that is not the project's: one git does not track, or a --tools module (a top-level
    `def tools(settings, workspace)`, as the README's my_tools.py beside main.py)."""
    if path.parent != ROOT or path.stem in ROOT_MODULES:
        return False
    if TRACKED is not None and path.name not in TRACKED:
        return True
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "tools" for node in tree.body)


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if SKIP & set(rel.parts[:-1]) or (len(rel.parts) > 1 and not (ROOT / rel.parts[0] / "__init__.py").exists()):
            continue
        if users_own(path):
            continue
        name = ".".join(rel.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an imported dotted name lives in (the longest prefix that is one), or None."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def _walk(node: ast.AST, in_function: bool = False):  # type: ignore[no-untyped-def]
    for child in ast.iter_child_nodes(node):
        inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, inside
        yield from _walk(child, inside)


def _imports_of(name: str, path: Path) -> list[Import]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node, in_function in _walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [_resolve(a.name) for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [_resolve(f"{base}.{a.name}") or _resolve(base) for a in node.names]
        here = lines[node.lineno - 1]
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        commented = "#" in here or above.startswith("#")
        out += [Import(name, t, node.lineno, in_function, commented) for t in dict.fromkeys(targets)
                if t is not None and t != name]
    return out


IMPORTS = [imp for name, path in MODULES.items() for imp in _imports_of(name, path)]


def _layer(module: str) -> int:
    top = module.split(".")[0]
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS and docs/architecture.md")


def _where(imp: Import) -> str:
    return f"{MODULES[imp.source].relative_to(ROOT)}:{imp.line} imports {imp.target}"


def test_every_module_belongs_to_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [f"{_where(i)} (layer {LAYERS[_layer(i.target)][0]!r} is above {LAYERS[_layer(i.source)][0]!r})"
              for i in IMPORTS if _layer(i.target) > _layer(i.source)]
    assert upward == []


def _circle(imports: list[Import]) -> list[str]:
    """One import circle among the modules (graphlib names it, first module repeated last), or []."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in imports:
        graph[imp.source].add(imp.target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def test_no_import_circle() -> None:
    circle = _circle(IMPORTS)
    hops = list(zip(circle[1:], circle, strict=False))  # graphlib lists each module after the one it imports
    edges = [_where(i) for i in IMPORTS if (i.source, i.target) in hops]
    assert circle == [], f"{' <- '.join(circle)}: " + "; ".join(edges)


def test_the_cycle_finder_finds_a_circle() -> None:
    # The check above must be able to fail: two planted imports that point at each other are a circle.
    planted = [Import("llm", "agent", 1, False, False), Import("agent", "llm", 1, False, False)]
    assert {"agent", "llm"} <= set(_circle(IMPORTS + planted))


def test_imports_inside_functions_are_rare_and_each_says_why() -> None:
    inside = [i for i in IMPORTS if i.in_function]
    assert len(inside) <= MAX_FUNCTION_LEVEL_SHARE * len(IMPORTS), [_where(i) for i in inside]
    assert [_where(i) for i in inside if not i.commented] == []


def test_the_root_holds_only_the_cards_files() -> None:
    assert {p.stem for p in ROOT.glob("*.py") if not users_own(p)} == ROOT_MODULES


def test_every_package_says_what_it_owns_and_may_import() -> None:
    missing = []
    for name, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not re.search(r"\bimport", doc) or len(doc.split()) < 12:
            missing.append(name)
    assert missing == []
