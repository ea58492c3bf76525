"""The browser tool's figures for benchmarks/browser.py: snapshot size beside Playwright MCP, refs, speed, trials.

- Snapshot size: the characters of the tool's whole snapshot of each page (every part) beside Playwright
  MCP's snapshot of the same page (benchmarks/browser_mcp.py), on saved real pages served from loopback
  (their other origins are refused, as offline) and on the test site's pages (tests/fakes/obstacle_site.py).
- Refs: every element a ref of the tool's snapshot resolves to is marked in the page; then the page's
  interactive elements (native controls, ARIA widget roles, editable areas; rendered with a size, not
  aria-hidden) are counted, and how many of them, and of the form controls among them, are marked.
- Time per action: each action of a walk through the test site, ROUNDS times (the browser already running).
- Wrong-element actions: TRIALS page-change trials. A page with four buttons (each logs its own label when
  clicked) changes after the tool showed it (its list replaced, a button inserted above, the intended button
  renamed in place, the buttons reversed, or the page replaced by a look-alike); then the tool is asked to
  click the ref it showed. Refused, clicked the intended button, or clicked another: the last is counted.
"""

from __future__ import annotations

import gzip
import re
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from benchmarks.browser_mcp import install, snapshots
from config import Settings
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.obstacle_site import ObstacleSite, obstacle_site
from tools.base import ToolOutput
from tools.web.browser.launch import system_chromium
from tools.web.browser.tool import BrowserTool

REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "article-extraction" / "html"
SITE_PAGES = ["/shop", "/catalog", "/product", "/files", "/links", "/dialog", "/account", "/exfil", "/comment",
              "/shuffle"]
ROUNDS = 10
TRIALS = 50
LABELS = ["Alpha", "Beta", "Gamma", "Delta"]
KINDS = ["replace", "insert", "rename", "reverse", "navigate"]
COUNT_JS = """() => {
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [contenteditable=""], '
    + '[contenteditable=true], [role=button], [role=link], [role=checkbox], [role=radio], [role=switch], [role=tab], '
    + '[role=menuitem], [role=menuitemcheckbox], [role=menuitemradio], [role=option], [role=combobox], '
    + '[role=textbox], [role=searchbox], [role=slider], [role=spinbutton], [role=treeitem]';
  const sized = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const shown = [...document.querySelectorAll(sel)].filter(e => e.checkVisibility({visibilityProperty: true})
    && sized(e) && !e.closest('[aria-hidden=true], [inert]'));
  const controls = shown.filter(e => /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(e.tagName));
  const marked = list => list.filter(e => e.hasAttribute('data-bench-ref')).length;
  const missed = shown.filter(e => !e.hasAttribute('data-bench-ref')).slice(0, 3).map(e => e.outerHTML.slice(0, 100));
  return [shown.length, marked(shown), controls.length, marked(controls), missed];
}"""
CHANGE = {  # what the page does 1.5 s after it loaded, once the tool has shown it
    "replace": "box.innerHTML = LABELS.map(l => `<button>${l}</button>`).join('')",
    "insert": "box.insertAdjacentHTML('afterbegin', '<button>Zeta</button>')",
    "rename": "[...box.children].find(b => b.textContent === TARGET).textContent = 'Delete'",
    "reverse": "[...box.children].reverse().forEach(b => box.appendChild(b))",
    "navigate": "location.href = '/trial?kind=navigated&target=' + TARGET",
}


def tool_figures(pages: int, with_mcp: bool) -> None:
    """Print the browser tool's figures."""
    if system_chromium() is None:
        print("browser tool: no Chromium on PATH; skipped")
        return
    settings = Settings(scrape_allow_private=True, ignore_robots=True, host_gap=0.0, scrape_timeout=20.0)
    real = sorted(REAL.glob("*.html.gz"))[: pages or None]
    with tempfile.TemporaryDirectory() as tmp, obstacle_site() as site, \
            LoopbackServer(lambda req: _real_page(req, real)) as saved, LoopbackServer(_trial_page) as trials:
        tool = BrowserTool(Path(tmp) / "ws", settings)
        try:
            urls = [f"{saved.url}/real/{n}" for n in range(len(real))] + [site.url(p) for p in SITE_PAGES]
            mine, refs = _snapshot_sizes(tool, urls)
            theirs = _mcp_sizes(Path(tmp), urls, [saved.url, site.shop.url]) if with_mcp else {}
            _print_sizes(mine, theirs, len(real))
            _print_refs(refs)
            _print_times(_walk(tool, site))
            _print_trials(_trials(tool, trials))
        finally:
            tool.close()


def _real_page(req: Request, real: list[Path]) -> Response:
    found = re.match(r"/real/(\d+)$", req.path)
    if not found or int(found.group(1)) >= len(real):
        return Response(404, "not found")
    html = gzip.decompress(real[int(found.group(1))].read_bytes())
    return Response(body=html, content_type="text/html; charset=utf-8")


def _snapshot_sizes(tool: BrowserTool, urls: list[str]) -> tuple[dict[str, int], list[list[Any]]]:
    sizes: dict[str, int] = {}
    refs: list[list[Any]] = []
    for url in urls:
        out = tool.run(action="open", url=url)
        if not isinstance(out, ToolOutput) or out.text.startswith("Error"):
            print(f"  could not open {url}: {str(out)[:120]}")
            continue
        lines, counts = tool.web.browser.run(lambda: _whole_snapshot(tool), 60)
        sizes[url] = len("\n".join(lines))
        refs.append([url, *counts])
    return sizes, refs


async def _whole_snapshot(tool: BrowserTool) -> tuple[list[str], list[Any]]:
    page = tool._page  # noqa: SLF001 - the benchmark measures the tool's own state
    assert page is not None
    lines = await page.snapshot()
    for ref in page.book.latest[page.current]:
        entry = page.book.entry(ref)
        if entry is not None:
            await page.page.locator(f"aria-ref={entry.pw}").evaluate("e => e.setAttribute('data-bench-ref', '')")
    return lines, await page.page.evaluate(COUNT_JS)


def _mcp_sizes(tmp: Path, urls: list[str], origins: list[str]) -> dict[str, int]:
    cli = install(tmp)
    chromium = system_chromium()
    if cli is None or chromium is None:
        return {}
    return {url: len(text) for url, text in snapshots(cli, chromium, urls, origins).items() if text}


def _print_sizes(mine: dict[str, int], theirs: dict[str, int], real: int) -> None:
    urls = list(mine)
    for label, group in (("saved real pages", urls[:real]), ("test site pages", urls[real:])):
        own = [mine[u] for u in group]
        if not own:
            continue
        line = f"snapshot characters, {label} ({len(own)}): median {statistics.median(own):,.0f}, total {sum(own):,}"
        pairs = [(mine[u], theirs[u]) for u in group if theirs.get(u)]
        if pairs:
            ratios = [a / b for a, b in pairs]
            line += (f"; Playwright MCP median {statistics.median([b for _, b in pairs]):,.0f}, total "
                     f"{sum(b for _, b in pairs):,}; ours / MCP per page: median {statistics.median(ratios):.2f}, "
                     f"worst {max(ratios):.2f}, pages at most half: {sum(r <= 0.5 for r in ratios)}/{len(ratios)}")
        print(line)


def _print_refs(refs: list[list[Any]]) -> None:
    shown, marked, controls, with_ref = (sum(r[i] for r in refs) for i in range(1, 5))
    print(f"interactive elements with a ref: {marked:,} of {shown:,} ({100 * marked / max(shown, 1):.1f}%); form "
          f"controls: {with_ref:,} of {controls:,} ({100 * with_ref / max(controls, 1):.1f}%)")
    missed = [m for r in refs for m in r[5]][:5]
    if missed:
        print("  e.g. without a ref: " + " | ".join(missed))


def _walk(tool: BrowserTool, site: ObstacleSite) -> dict[str, list[float]]:
    """Seconds of each action of a walk through the test site, ROUNDS times."""
    times: dict[str, list[float]] = defaultdict(list)

    def act(**args: Any) -> str:
        start = time.perf_counter()
        out = tool.run(**args)
        times[str(args["action"])].append(time.perf_counter() - start)
        return out.text if isinstance(out, ToolOutput) else out

    for _ in range(ROUNDS):
        page = act(action="open", url=site.url("/shop"))
        page = act(action="click", ref=_ref(page, "button", "Accept all"))
        act(action="type", ref=_ref(page, "textbox", "Search"), text="kettle", submit=True)
        act(action="back")
        page = act(action="open", url=site.url("/product"))
        act(action="click", ref=_ref(page, "tab", "Specifications"))
        act(action="select", ref=_ref(page, "combobox", "Colour"), value="Blue")
        act(action="check", ref=_ref(page, "checkbox", "Gift wrap"))
        act(action="scroll", direction="down")
        act(action="press", key="Tab")
        act(action="find", text="kettle")
        act(action="read")
        act(action="snapshot")
    return times


def _print_times(times: dict[str, list[float]]) -> None:
    every = [t for ts in times.values() for t in ts]
    per = ", ".join(f"{a} {statistics.median(ts) * 1000:.0f}/{_p95(ts) * 1000:.0f}" for a, ts in times.items())
    print(f"time per action, {len(every)} actions (ms, p50/p95): all {statistics.median(every) * 1000:.0f}/"
          f"{_p95(every) * 1000:.0f}; {per}")


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _trial_page(req: Request) -> Response:
    query = parse_qs(urlsplit(req.path).query)
    if not req.path.startswith("/trial"):
        return Response(204)
    kind, target = query.get("kind", ["replace"])[0], query.get("target", ["Beta"])[0]
    change = CHANGE.get(kind, "")
    script = (f"const LABELS = {LABELS!r}, TARGET = {target!r}, box = document.getElementById('box');"
              "box.addEventListener('click', e => { if (e.target.tagName === 'BUTTON') "
              "fetch('/clicked?label=' + e.target.textContent); });"
              + (f"setTimeout(() => {{ {change}; }}, 1500);" if change else ""))
    buttons = "".join(f"<button>{label}</button>" for label in LABELS)
    return Response(body=f"<html><head><title>Trial</title></head><body><h1>Pick one</h1><div id=box>{buttons}</div>"
                         f"<script>{script}</script></body></html>", content_type="text/html")


def _trials(tool: BrowserTool, server: LoopbackServer) -> dict[str, dict[str, int]]:
    """Per kind of change: how often the old ref was refused, clicked the intended button, or another one."""
    outcome: dict[str, dict[str, int]] = {kind: defaultdict(int) for kind in KINDS}
    n = 0
    while n < TRIALS:
        kind, target = KINDS[n % len(KINDS)], LABELS[n % len(LABELS)]
        shown = tool.run(action="open", url=f"{server.url}/trial?kind={kind}&target={target}")
        text = shown.text if isinstance(shown, ToolOutput) else shown
        if "Zeta" in text or "Delete" in text or not all(label in text for label in LABELS):
            continue  # the page changed before the tool showed it: not a trial of a change after it
        before = len(server.requests)
        time.sleep(2.0)  # the page changes (1.5 s after it loaded)
        out = tool.run(action="click", ref=_ref(text, "button", target))
        clicked = [parse_qs(urlsplit(r.path).query)["label"][0] for r in server.requests[before:]
                   if r.path.startswith("/clicked")]
        said = out.text if isinstance(out, ToolOutput) else out
        result = "wrong" if [c for c in clicked if c != target] else "intended" if clicked else (
            "refused" if said.startswith("Error:") else "nothing")
        outcome[kind][result] += 1
        n += 1
    return outcome


def _print_trials(outcome: dict[str, dict[str, int]]) -> None:
    wrong = sum(o["wrong"] for o in outcome.values())
    per = "; ".join(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in sorted(o.items())) for kind, o in outcome.items())
    print(f"wrong-element actions in {sum(sum(o.values()) for o in outcome.values())} page-change trials: {wrong} "
          f"({per})")


def _ref(observation: str, role: str, name: str) -> str:
    found = re.search(rf'- {role} "{re.escape(name)}"(?: \[[^\]]*\])* \[ref=(e\d+)\]', observation)
    if found is None:
        raise RuntimeError(f'no {role} "{name}" in the observation:\n{observation[:2000]}')
    return found.group(1)
