"""Smoke test a user runs first: packages, keys, the model, search, papers, workspace, sandbox, scrape, browser."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import threading
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cache.cli import describe
from config import PROJECT_ROOT, load_settings
from core.errors import ConfigError
from core.search_settings import papers_mode
from core.secrets import SecretRedactor
from core.trust import trust_command
from main import apply_base_url
from providers.registry import KEY_ENV
from report.markdown import plural
from run.model_checks import (
    FAIL,
    OK,
    WARN,
    Check,
    check_embeddings,
    check_model,
    check_prompt,
    check_roles,
    key_needs,
    key_value,
    main_model,
)
from telemetry.setup import INSTALL_HINT as INSTALL_OTEL
from telemetry.setup import tracing_enabled
from tools.capabilities import attachment_capabilities, installed
from tools.dependencies import probe
from tools.mcp.check import server_reports
from tools.python_exec import PythonTool
from tools.sandbox_probe import run_probe, summary
from tools.web.browser.launch import INSTALL_HINT
from tools.web.errors import FetchError
from tools.web.papers.client import asked
from tools.web.papers.tool import SearchPapersTool
from tools.web.scrape import ScrapeTool
from tools.web.search import SearchTool
from tools.web.search_backends import SearchBackendError
from tools.web.session import WebSession

REQUIRED = [("openai", "openai"), ("anthropic", "anthropic"), ("google.genai", "google-genai"),
            ("tenacity", "tenacity"), ("dotenv", "python-dotenv"), ("jsonschema", "jsonschema"),
            ("httpx", "httpx"), ("trafilatura", "trafilatura"), ("pypdf", "pypdf"), ("ddgs", "ddgs"),
            ("rich", "rich"), ("protego", "protego")]
# The optional requirements files no other row covers (browser, traces and video have theirs): (a module the
# file installs, the file, what it adds). Only what a requirements file names is ever recommended.
OPTIONAL = [("starlette", "requirements-ui.txt", "main.py ui, the local web app"),
            ("ray", "requirements-ray.txt", "--executor ray, tasks on a Ray cluster")]
def key_state(key: str | None) -> str:
    """Whether a key is set: never any of its characters (a screenshot or a pasted log keeps them)."""
    return "set" if key else "not set"


def check_python() -> Check:
    """Python 3.11 or newer."""
    v = sys.version_info
    ok = v >= (3, 11)
    return Check("python", OK if ok else FAIL, f"{v.major}.{v.minor}.{v.micro}",
                 "" if ok else "install Python 3.11 or newer")


def check_packages() -> list[Check]:
    """Required packages importable (with versions), optional requirements files noted."""
    out = []
    for module, dist in REQUIRED:
        found = probe(module, dist)  # "missing" and "installed but broken" have different fixes
        if found.ok:
            out.append(Check(f"package {dist}", OK, found.detail))
        else:
            detail = "missing" if found.state == "missing" else f"installed but broken: {found.detail}"
            out.append(Check(f"package {dist}", FAIL, detail, found.fix))
    for module, file, what in OPTIONAL:  # found without importing (Ray takes seconds); not needed: no warning
        state = "installed" if installed(module) else f"not installed (pip install -r {file} for it)"
        out.append(Check(f"optional {file}", OK, f"{what}: {state}"))
    return out


def check_keys(settings: Any, needs: dict[str, list[str]]) -> list[Check]:
    """The key of each chosen model (`needs`: run/model_checks.key_needs), then any other provider key that is
    set: its variable and whether it is set, never its characters. A key no chosen model sends is never asked
    for (an alias with its own key, a local server)."""
    rows = []
    for var in dict.fromkeys([*needs, *KEY_ENV.values()]):
        key, users = key_value(settings, var), needs.get(var)
        if users:
            rows.append(Check(f"key {var}", OK if key else FAIL, f"{key_state(key)} (for {', '.join(users)})",
                              "" if key else f"trust this folder's .env, which sets it: {trust_hint(settings)}"
                              if any(name == var for name, _ in settings.left_out) else
                              f"set {var} in the environment or a .env file"))
        elif key:
            rows.append(Check(f"key {var}", OK, "set (no chosen model uses it)"))
    return rows


def check_search(settings: Any, offline: bool) -> Check:
    """The search backends in their order (SEARCH_BACKENDS), asked as a run asks them, until one answers: all
    failing fails the check (tasks would answer from memory) unless search is off (AGENT_SEARCH=0); a failing
    backend before the one that answered is a warning."""
    if not settings.search:
        return Check("search", OK, "turned off (AGENT_SEARCH=0): tasks get no search tool")
    keys = {"serper": settings.serper_api_key, "brave": settings.brave_api_key, "tavily": settings.tavily_api_key}
    backends = SearchTool(settings).backends
    order = "order " + " → ".join(b.label + (f" ({b.name.upper()}_API_KEY set)" if keys.get(b.name) else "")
                                  for b in backends)
    if offline:
        return Check("search", OK, order + "; not contacted (--offline)")
    answered, failed = [], []
    for backend in backends:
        try:
            backend.search("Python programming language", 1)
            answered.append(backend.label)
            break
        except SearchBackendError as exc:  # its message may name the backend already ("DuckDuckGo search failed")
            failed.append(str(exc) if str(exc).startswith(backend.label) else f"{backend.label} search failed: {exc}")
    if not answered:
        return Check("search", FAIL, f"{order}; {_clauses(failed)}",
                     "fix the network (DNS, proxy, firewall), the keys or SEARCH_BACKENDS; without search every "
                     "task answers from the model's memory. To run without search on purpose: AGENT_SEARCH=0")
    if failed:
        return Check("search", WARN, f"{order}; {_clauses(failed)} ({answered[0]} answered)",
                     "a run fails over to the next backend; fix the key, URL or quota of the one that failed")
    return Check("search", OK, f"{order}; {answered[0]} answered")


def _clauses(failures: list[str], each: int = 240) -> str:
    """Each failure its own clause, whole or cut at a word with `…` past `each` characters: never mid-word."""
    def cut(text: str) -> str:
        text = " ".join(text.split()).rstrip(" .;")
        return text if len(text) <= each else text[:each].rsplit(" ", 1)[0].rstrip(" ,;:") + " …"
    return "; ".join(cut(f) for f in failures)


def check_papers(settings: Any, offline: bool) -> Check:
    """The scholarly services of search_papers, each asked once as a run asks them: which answer, with or without
    a key or a polite-pool address. One answering is enough (it fails over); none answering is a warning: web
    search still works."""
    if papers_mode(settings) == "off":
        return Check("papers", OK, "turned off (AGENT_PAPERS=off or AGENT_SEARCH=0): tasks get no search_papers tool")
    services = SearchPapersTool(settings).services
    how = {"openalex": ("OPENALEX_API_KEY set" if settings.openalex_api_key else
                        "no OPENALEX_API_KEY: a small daily allowance")
                       + (f", mailto {settings.openalex_mailto}" if settings.openalex_mailto else ""),
           "semantic_scholar": "SEMANTIC_SCHOLAR_API_KEY set"
                               if settings.semantic_scholar_api_key else "no key: the shared pool",
           "crossref": f"mailto {settings.crossref_mailto}" if settings.crossref_mailto else "no CROSSREF_MAILTO"}
    order = " → ".join(f"{s.label} ({how[s.name]})" for s in services)
    if offline:
        return Check("papers", OK, order + "; not contacted (--offline)")
    answered, failed = [], []
    for service in services:
        try:
            asked(service, partial(service.search, "open access", 1, (None, None), False))
            answered.append(service.label)
        except SearchBackendError as exc:
            failed.append(str(exc))
    if failed:
        fix = ("search_papers fails over to the next service; a key or mailto may lift a rate limit" if answered else
               "fix the network or the services' keys; without them tasks search the web only (AGENT_PAPERS=off "
               "turns search_papers off)")
        said = f" ({', '.join(answered)} answered)" if answered else ""
        every = "" if answered else "every service failed: "
        return Check("papers", WARN, f"{order}; {every}{_clauses(failed)}{said}", fix)
    return Check("papers", OK, f"{order}; {', '.join(answered)} answered")


def check_workspace(settings: Any) -> Check:
    """The workspace directory can be created and written (checked without creating it)."""
    root = Path(settings.workspace or settings.runs_dir).resolve()
    existing = next((p for p in (root, *root.parents) if p.exists()), root)
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".check-"):
            pass
        state = "is writable" if existing == root else f"will be created (in {existing}, writable)"
        return Check("workspace", OK, f"{root} {state}")
    except OSError as exc:
        return Check("workspace", FAIL, f"{existing}: {exc.strerror}", "use --workspace DIR or AGENT_WORKSPACE")


def check_python_tool(settings: Any, scratch: Path) -> Check:
    """The sandboxed python tool runs print(1+1)."""
    out = str(PythonTool(scratch, settings).run(code="print(1+1)"))
    ok = "2" in out and "Error" not in out
    return Check("python tool", OK if ok else FAIL, "print(1+1) -> 2" if ok else out[:100],
                 "" if ok else "check the python tool's limits (PYTHON_TOOL_MEMORY_MB)")


def check_sandbox(settings: Any, scratch: Path) -> Check:
    """Which sandbox the python tool gets, and a live probe: a child tries a planted file and a socket."""
    contained, detail = summary(run_probe(settings, scratch))
    if settings.sandbox == "none" or settings.python_network:
        where = f" (AGENT_SANDBOX=none is from {settings.origin('sandbox')})" if settings.sandbox == "none" else ""
        return Check("sandbox", WARN, detail,
                     f"unset AGENT_SANDBOX / AGENT_PYTHON_NETWORK to confine model code{where}")
    return Check("sandbox", OK if contained else WARN, detail,
                 "" if contained else "install bubblewrap or use a kernel with Landlock (see docs/security.md)")


class _Page(BaseHTTPRequestHandler):
    body = (b"<html><head><title>Setup check</title></head><body><nav>Home | About</nav><article>"
            b"<h1>Setup check</h1><p>The quick brown fox jumps over the lazy dog near the riverbank today."
            b"</p><p>Extraction works when this sentence about the brown fox appears in the output.</p>"
            b"</article><footer>Copyright</footer></body></html>")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def check_scrape(settings: Any, scratch: Path) -> Check:
    """scrape extracts the main text of a page served on loopback."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = dataclasses.replace(settings, scrape_allow_private=True)
        out = ScrapeTool(scratch, local).run(url=f"http://127.0.0.1:{server.server_address[1]}/")
        text = out if isinstance(out, str) else out.text
    finally:
        server.shutdown()
        server.server_close()
    ok = "brown fox appears" in text
    return Check("scrape tool", OK if ok else FAIL, "extracted a loopback page" if ok else text[:100],
                 "" if ok else "pip install -r requirements.txt (trafilatura)")


class _ScriptPage(_Page):
    body = (b"<html><head><title>Render check</title></head><body><div id=\"root\"></div><script>document."
            b"getElementById('root').textContent='Rendered by JavaScript in the headless browser.'</script>"
            b"</body></html>")


def check_browser(settings: Any) -> Check:
    """The headless browser renders a script-built page served on loopback (optional: a warning if not)."""
    if settings.render == "off":
        return Check("browser", OK, "rendering is off (SCRAPE_RENDER=off)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    local = dataclasses.replace(settings, scrape_allow_private=True, ignore_robots=True)
    try:
        page = WebSession(local, shared=False).browser.render(f"http://127.0.0.1:{server.server_address[1]}/", 30)
    except FetchError as exc:  # its message may end with the install hint: said once, as the fix
        why = str(exc).replace(f": {INSTALL_HINT}", "").replace(INSTALL_HINT, "").rstrip(": ")
        return Check("browser", WARN, f"script-built pages are read without JavaScript: {why}",
                     f"to render them: {INSTALL_HINT}")
    finally:
        server.shutdown()
        server.server_close()
    ok = "Rendered by JavaScript" in page.html
    return Check("browser", OK if ok else WARN, "renders script-built pages in headless Chromium" if ok else
                 "the browser started but did not run the page's script", "" if ok else INSTALL_HINT)


def check_cache(settings: Any) -> Check:
    """Where --cache / AGENT_CACHE_DIR keeps model and web calls, and its size."""
    return Check("cache", OK, describe(settings.cache_dir))


def check_traces(settings: Any) -> Check:
    """OpenTelemetry export: off, or where spans go and whether the packages for it are installed."""
    if not tracing_enabled(settings):
        return Check("traces", OK, "OpenTelemetry export off (OTEL_EXPORTER_OTLP_ENDPOINT unset)")
    where = f"{settings.otel_traces_endpoint or settings.otel_endpoint} ({settings.otel_protocol})"  # no headers
    grpc = settings.otel_protocol == "grpc"
    module = "opentelemetry.exporter.otlp.proto." + ("grpc" if grpc else "http")
    if not (installed("opentelemetry.sdk") and installed(module)):
        fix = "pip install opentelemetry-exporter-otlp-proto-grpc" if grpc else INSTALL_OTEL
        return Check("traces", FAIL, f"spans to {where}, but the OpenTelemetry packages are missing", fix)
    return Check("traces", OK, f"spans to {where}")


def check_mcp(settings: Any) -> list[Check]:
    """Each configured MCP server: whether it started, and its tools."""
    return [Check(name, OK if ok else FAIL, detail, fix) for name, ok, detail, fix in server_reports(settings)]


def run_checks(settings: Any, offline: bool) -> list[Check]:
    """Every check, in the order they are printed."""
    checks = [check_python(), *check_packages()]
    if any(c.mark == FAIL for c in checks):
        return checks
    main = main_model(settings)  # keys are judged by the models a run would call
    checks += check_trust(settings) + check_keys(settings, key_needs(settings, main))
    model_rows = trust_first(settings, check_model(settings, offline, main))
    checks += model_rows + check_prompt(settings, model_rows, main) + check_roles(settings, offline)
    with tempfile.TemporaryDirectory(prefix="agent-check-") as tmp:
        guarded: list[tuple[str, Callable[[], Check]]] = [
            ("search", lambda: check_search(settings, offline)), ("papers", lambda: check_papers(settings, offline)),
            ("workspace", lambda: check_workspace(settings)),
            ("python tool", lambda: check_python_tool(settings, Path(tmp))),
            ("sandbox", lambda: check_sandbox(settings, Path(tmp))),
            ("scrape tool", lambda: check_scrape(settings, Path(tmp))), ("browser", lambda: check_browser(settings)),
            ("cache", lambda: check_cache(settings)), ("traces", lambda: check_traces(settings))]
        for name, fn in guarded:
            try:
                checks.append(fn())
            except Exception as exc:  # a broken check is reported, never a traceback
                checks.append(Check(name, FAIL, f"{type(exc).__name__}: {exc}"))
    checks += check_mcp(settings) + check_embeddings(settings, offline)
    return checks + check_attachments(settings)


def check_trust(settings: Any) -> list[Check]:
    """What a start folder's untrusted files set that was left out (core/trust.py), with the command that applies
    it: in a folder whose .env holds the keys or the model server, that is the fix, not a key or Ollama."""
    if not settings.left_out:
        return []
    names = ", ".join(dict.fromkeys(name for name, _ in settings.left_out))
    return [Check("trust", WARN, f"not applied until you trust their files: {names}",
                  f"read the files, then: {trust_hint(settings)}")]


def trust_hint(settings: Any) -> str:
    return trust_command((Path(file) for _, file in settings.left_out), PROJECT_ROOT / "main.py")


def trust_first(settings: Any, rows: list[Check]) -> list[Check]:
    """A model that cannot be chosen or reached while a folder's settings wait for trust: trust is the fix named."""
    if not settings.left_out:
        return rows
    return [Check(r.name, r.mark, r.detail, f"settings of this folder were left out (the trust row): "
                  f"{trust_hint(settings)}") if r.mark == FAIL else r for r in rows]


def check_attachments(settings: Any) -> list[Check]:
    """Document formats, images (look) and audio (transcribe): warnings only, the agent runs without them."""
    return [Check(c.name, OK if c.ok else WARN, c.detail, c.fix) for c in attachment_capabilities(settings)]


def print_table(checks: list[Check], redact: Callable[[str], str] = str) -> None:
    """Print the checks as an aligned table with fixes under failures and warnings; `redact` takes configured keys
    out of what a provider, a search backend or an MCP server said."""
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f" {c.mark}  {c.name.ljust(width)}  {redact(c.detail)}")
        if c.fix and c.mark != OK:
            print(f"    {' ' * width}  → {redact(c.fix)}")


def main(argv: list[str] | None = None) -> int:
    """Run the checks; exit 0 when the agent can run, 1 otherwise."""
    p = argparse.ArgumentParser(description="Check that the research agent can run here.")
    p.add_argument("--model", help="provider:model to check (default: what main.py would use)")
    p.add_argument("--base-url", help="API base URL for the model's provider")
    p.add_argument("--offline", action="store_true", help="skip the live model request and the search probe")
    p.add_argument("--no-search", action="store_false", dest="search", default=None,
                   help="runs will have no search tool (AGENT_SEARCH=0): do not probe it")
    args = p.parse_args(argv)
    try:
        settings = apply_base_url(load_settings({"model": args.model, "search": args.search}), args.base_url)
    except ConfigError as exc:
        print(f" {FAIL}  configuration  {exc}")
        return 1
    checks = run_checks(settings, args.offline)
    print_table(checks, SecretRedactor.of(settings))
    failed = sum(c.mark == FAIL for c in checks)
    print(f"\n{'Not ready' if failed else 'Ready'}: {tally(checks)}.")
    return 0 if not failed else 1


def tally(checks: list[Check]) -> str:
    """`25 passed, 8 warnings` (failures first when there are any): every row counted once, by its mark."""
    counts = {mark: sum(c.mark == mark for c in checks) for mark in (FAIL, OK, WARN)}
    parts = [f"{counts[FAIL]} failed"] if counts[FAIL] else []
    parts.append(f"{counts[OK]} passed")
    if counts[WARN]:
        parts.append(plural(counts[WARN], "warning") + " (each with its fix above)")
    return ", ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
