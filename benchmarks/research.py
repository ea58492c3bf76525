"""`main.py research` against planted faults: does a bad citation ever reach the delivered report unmarked?

Usage: python benchmarks/research.py [--cases N] [--executor ray] [--example docs/research-example.md]
                                    [--depths 1,2]

Each case is one `main.py research` run (a subprocess, as a user runs it) on a loopback site serving real
article pages of the Zyte article-extraction set (../shared/data/article-extraction/): three pages hold the
planted facts (sentences with figures, as scrape reads them), three are distractors each sub-question also
reads, one page is dead (404) and one fact page is read a second time under another spelling of its URL (a
trailing slash). The model is scripted on loopback: a planner (three sub-questions), ReAct sub-agents that
scrape their pages and answer with two fact sentences each citing [1], a writer that turns the findings it
is given into sections and plants five bad citations (a figure changed to a distinctive one the cited page
holds nowhere, an invented fact, a true fact with a distinctive figure cited to a page that lacks it, a URL
never read, a source number that does not exist; distinctive: 3+ significant digits, not a year, since the
check finds common numbers by the words near them, which benchmarks/citations.py measures), and a repairer
that does what the repair prompt asks (re-point to the source named, else drop the claim); in every third
case it is stubborn and leaves the first failing claim as it is, so marking is exercised too.

Cases built on pages whose id starts with 0-9 were looked at while building this pipeline (tuning); pages
starting with a-f were not (held out: no rule of the pipeline was set looking at them; one of their reports
was read while fixing this script's own scripted repairer). Both are printed, beside the published figures of
other tools. A second run times N sub-questions side by side against the slowest of them.

With --depth 2 (`--depths 1,2`, the default, runs both) the scripted follow-up planner asks, after round 1,
for one more sub-question per case (the first distractor article's figures, whose page round 1 read but did
not report on); round 2 researches it, and the same figures are printed for those runs with the rounds, the
model calls and the cost of each round (the follow-up call counted in the round it plans).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.citations import DEFAULT_DATA, Page, change_digit, cite, load_pages, scraped  # noqa: E402
from benchmarks.meaning_set import FIGURE as _FIGURE  # noqa: E402
from core.text import money  # noqa: E402
from report.research import MARK  # noqa: E402
from research.repair import CONTRADICTED_MARK, bare  # noqa: E402
from sources.check import FABRICATED, NOT_READ, SUPPORTED, UNCHECKED, check_citations, claims  # noqa: E402
from sources.ledger import Read, SourceLedger, normalize_url  # noqa: E402
from tests.fakes.deep_research import Sub, World  # noqa: E402
from tests.fakes.loopback import LoopbackServer, Response  # noqa: E402

# The scripted model on loopback, named as what it is: no price is known for it, so reports show its cost as n/a.
MODEL = "openai:scripted-benchmark-writer"
EARLY = 15_000  # fact sentences come from the start of a page (scrape keeps 40,000 characters of it)
_HEADER = re.compile(r"^\[(\d+)\] .* — (\S+)$", re.M)
_FINDING = re.compile(r"^### (.+?)\n(.+?)(?=\n\n### |\n\nWrite the report)", re.M | re.S)
_FAILING = re.compile(r"^- \u201c(.+?)\u201d \((.*?)\): "
                      r"(fabricated|not read|wrong source|unsupported|contradicted): (.*)$", re.M)
ANCHORS = {
    "delivered": "open_deep_research: 6.1% of citations fabricated (third-party measure); gpt-researcher: "
                 "invented sources reported (#1572)",
    "planted": "no other tool checks a claim against the page it cites before delivery",
    "accuracy": "DeepResearch Bench citation accuracy: OpenAI DR 77.96%, Gemini DR 81.44%, Perplexity 90.24%, "
                "best about 94%",
    "facts": "(no published figure)",
    "sources": "open_deep_research: the writer renumbers sub-agents' lists, unchecked; gpt-researcher: wrong or "
               "duplicate links (#1276, #2100)",
    "wall": "open_deep_research: up to 5 sub-agents in parallel per round (no timing published)",
}


@dataclass
class Case:
    """One research question over three fact pages and three distractors."""

    name: str
    facts: list[Page]
    distractors: list[Page]
    stubborn: bool
    rng: random.Random
    sentences: list[list[str]] = field(default_factory=list)  # two fact sentences per fact page
    planted: dict[str, str] = field(default_factory=dict)  # category -> claim as the writer wrote it
    base: str = ""
    first_html: str = ""  # the first fact page's HTML: a planted figure must occur nowhere in it

    def __post_init__(self) -> None:
        self.sentences = [[s for s in p.sentences if p.text.find(s) < EARLY][:2] for p in self.facts]

    @property
    def question(self) -> str:
        return f"What do the articles {', '.join(p.id[:8] for p in self.facts)} report in figures?"

    def plan(self) -> list[str]:
        return [f"What figures does article {p.id[:8]} give?" for p in self.facts]

    def follow_up(self) -> str:
        return f"What figures does article {self.distractors[0].id[:8]} give?"

    def world(self, data: Path) -> World:
        pages = {f"/a/{p.id}": _html(data, p.id) for p in [*self.facts, *self.distractors]}
        self.first_html = str(pages[f"/a/{self.facts[0].id}"].body)
        pages[f"/a/{self.facts[0].id}/"] = pages[f"/a/{self.facts[0].id}"]  # the same page, another spelling
        subs = {}
        for i, (q, p) in enumerate(zip(self.plan(), self.facts, strict=True)):
            paths = [f"/a/{p.id}", f"/a/{self.distractors[i].id}", "/a/gone"] + ([f"/a/{self.facts[0].id}/"] if i
                                                                                  else [])
            subs[q] = Sub(paths, " ".join(cite(s, 1) for s in self.sentences[i]))
        extra = [s for s in self.distractors[0].sentences if self.distractors[0].text.find(s) < EARLY][:2]
        subs[self.follow_up()] = Sub([f"/a/{self.distractors[0].id}"], " ".join(cite(s, 1) for s in extra) or
                                     "The article gives no figures.")
        told: list[str] = []

        def follow(prompt: str) -> str:  # round 1: one follow-up; after round 2: none
            told.append(prompt)
            return f"1. {self.follow_up()}" if len(told) == 1 else "none"
        return World(self.question, self.plan(), subs, pages, writer=self.write, repair=self.repair,
                     followup=follow, model=MODEL.split(":", 1)[1])

    def write(self, prompt: str) -> str:
        """The findings as sections, then five bad citations in a last section."""
        findings = [(q, a.strip()) for q, a in _FINDING.findall(prompt)]
        numbers = [int(n) for n, _ in _HEADER.findall(prompt)]
        body = "\n\n".join(f"## {q}\n\n{a}" for q, a in findings)
        a_n = _marker(findings[0][1])
        b_sentence, b_n = self._elsewhere([c for _, a in findings[1:] for c in claims(a)])
        self.planted = {
            "changed figure": self._changed(claims(findings[0][1])[0], a_n),
            "invented fact": f"The same article counts {self.rng.randint(1200, 9800):,} further cases in 2017 [{a_n}].",
            "wrong source": b_sentence.replace(f"[{b_n}]", f"[{a_n}]"),
            "URL never read": f"Further figures are published at {self.base}/reports/annex-{self.rng.randint(10, 99)}"
                              ".html.",
            "no such source": f"Analysts expect the figures to rise further [{max(numbers) + 4}].",
        }
        return body + "\n\n## Further notes\n\n" + " ".join(self.planted.values()) + "\n"

    def _changed(self, sentence: str, n: int) -> str:
        """The sentence with a figure changed to a distinctive one its page does not hold (a plain falsehood)."""
        text, changed = bare(sentence), bare(sentence)
        for _ in range(100):
            changed = change_digit(text, self.rng) or text
            new = {m.group(0) for m in _FIGURE.finditer(changed)} - {m.group(0) for m in _FIGURE.finditer(text)}
            if new and all(self._distinct(f) for f in new):
                break
        return changed.rstrip(" .") + f" [{n}]."

    def _elsewhere(self, sentences: list[str]) -> tuple[str, int]:
        """A finding of another page with a distinctive figure the first page does not hold (citing it there is
        wrong), else one with no figure of the first page's HTML, else the first."""
        figures = [[m.group(0) for m in _FIGURE.finditer(bare(s))] for s in sentences]
        best = next((s for s, f in zip(sentences, figures, strict=True) if any(map(self._distinct, f))), None) or \
            next((s for s, f in zip(sentences, figures, strict=True) if not any(x in self.first_html for x in f)),
                 sentences[0])
        return best, _marker(best)

    def _distinct(self, figure: str) -> bool:
        """A figure the check must find as it is (3+ significant digits, not a year; a common number is checked
        by the words near it, as benchmarks/citations.py measures) that the first page's text holds nowhere."""
        digits = figure.replace(",", "").replace(".", "").strip("0")
        year = re.fullmatch(r"1\d{3}|20\d{2}", figure) is not None
        return len(digits) >= 3 and not year and figure not in self.facts[0].text

    def repair(self, prompt: str) -> str:
        """Re-point what the prompt says is in another source, drop the rest (stubborn: keep the first)."""
        report = prompt.split("\nReport:\n", 1)[1]
        failures = _FAILING.findall(prompt)[1 if self.stubborn else 0:]
        for claim, cited, _, hint in failures:  # the claim with the markers the prompt names
            sentence = next((c for c in claims(report) if bare(c) == claim
                             and ", ".join(re.findall(r"\[[\d, ]+\]", c)) == cited.replace("no marker", "")), None)
            if sentence is None:
                continue
            m = re.match(r"its facts are in \[(\d+)\]", hint)
            fixed = re.sub(r"\[\d+\]", f"[{m.group(1)}]", sentence) if m else ""
            report = report.replace(sentence, fixed, 1)
        return report


def _marker(text: str) -> int:
    return int(re.search(r"\[(\d+)\]", text).group(1))  # type: ignore[union-attr]


def _html(data: Path, page_id: str) -> Response:
    html = gzip.decompress((data / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", errors="replace")
    return Response(200, html, content_type="text/html; charset=utf-8")


def run_case(case: Case, data: Path, tmp: Path, extra: list[str]) -> dict[str, Any]:
    """Run `main.py research` on the case's site; its report.json, run directory and the world's counts. A run
    killed by a signal (a native crash) is said on stderr and run once more."""
    for attempt in (1, 2):
        try:
            return _run_case(case, data, tmp, extra)
        except _Crashed as exc:
            print(f"{case.name}: attempt {attempt} crashed ({exc}); {'again' if attempt == 1 else 'giving up'}",
                  file=sys.stderr)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


class _Crashed(RuntimeError):
    """main.py was killed by a signal."""


def _run_case(case: Case, data: Path, tmp: Path, extra: list[str]) -> dict[str, Any]:
    world = case.world(data)
    with LoopbackServer(world) as server:
        case.base = world.base = server.url
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0",
               "AGENT_SEARCH": "0", "AGENT_ENV_FILE": str(tmp / "no.env"), "RAY_USAGE_STATS_ENABLED": "0"}
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "research", case.question, "-o",
                               str(tmp / f"{case.name}.md"), "--model", MODEL, "--base-url", server.url + "/v1",
                               "--runs-dir", str(tmp / "runs"), "-q", *extra],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode < 0:
        raise _Crashed(f"signal {-proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{case.name}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    run = max((tmp / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    return {"report": json.loads((run / "report.json").read_text(encoding="utf-8")), "run": run,
            "calls": dict(world.calls), "markdown": tmp / f"{case.name}.md", "rounds": per_round(run)}


def per_round(run: Path) -> dict[int, dict[str, float]]:
    """Round -> sub-questions, model calls and cost (the planning or follow-up call that planned it included)."""
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    records = {}
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "id" in record:
            records[record["id"]] = record
    out: dict[int, dict[str, float]] = {}
    for sub in report["plan"]:
        r = out.setdefault(int(sub.get("round", 1)), {"subs": 0, "calls": 0, "cost": 0.0, "unpriced": 0})
        record = records.get(sub["task_id"], {})
        r["subs"] += 1
        r["calls"] += int(record.get("llm_calls") or record.get("steps") or 0)
        r["cost"] += float(record.get("cost") or 0.0)
        r["unpriced"] += record.get("cost") is None
    planning = {"plan": 1, "followup": 2}  # at --depth 2 the one follow-up call plans round 2
    for line in (run / "traces" / "writer.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        round_ = planning.get(str(event.get("purpose")), 0) if event.get("kind") == "llm_call" else 0
        if round_ in out:
            out[round_]["calls"] += 1
            out[round_]["cost"] += float(event.get("cost") or 0.0)
            out[round_]["unpriced"] += event.get("cost") is None
    return out


EXAMPLE_NOTE = (
    "> **How this example was made** (`python benchmarks/research.py --example docs/research-example.md`): no "
    "language model wrote it. The planner, the sub-agents and the writer are the benchmark's scripted model "
    "(`{model}`, served on loopback, so its cost is n/a); the pages are real articles of the Zyte "
    "article-extraction set, served on loopback while the benchmark ran. Their loopback addresses cannot be "
    "opened, so they are shown as `article-set/...` text instead of links; everything else is as `main.py "
    "research` delivered it.\n\n")


def example(markdown: str, base: str) -> str:
    """A report made for docs/: a note saying how it was made, and the loopback pages as text, not links."""
    site = re.escape(base)
    markdown = re.sub(rf"\[([^\]]*)\]\(<{site}/([^>]*)>\)(?: — {site}/\S*)?", r"\1 — `article-set/\2`", markdown)
    markdown = re.sub(rf"{site}/(\S*?)(?=[\s:,)]|$)", r"`article-set/\1`", markdown)
    return EXAMPLE_NOTE.format(model=MODEL) + markdown


def score(case: Case, out: dict[str, Any]) -> dict[str, Any]:
    """The figures of one case."""
    report, run = out["report"], out["run"]
    body = report["body"]
    ledger = SourceLedger()  # the delivered sources with the text kept in the run store: an independent re-check
    for s in report["sources"]:
        ledger.note(Read(s["url"], s["title"], text=(run / "sources" / f"{s['n']}.txt").read_text(encoding="utf-8")))
    recheck = check_citations(body, ledger)
    unmarked_bad = sum(c.verdict in (FABRICATED, NOT_READ) and MARK not in c.claim for c in recheck)
    delivered = {bare(c): c for c in claims(body)}
    verdicts = {bare(str(c["claim"])): c["verdict"] for c in report["citations"]}
    flagged = {bare(str(f["claim"])) for f in report["repair"]["failing"]}
    planted = {}
    for category, claim in case.planted.items():
        shown = delivered.get(bare(claim))
        planted[category] = ("missed: the check passed it" if bare(claim) not in flagged else
                             "repaired: dropped" if shown is None else
                             "marked" if MARK in shown or CONTRADICTED_MARK in shown else
                             "repaired: re-pointed" if verdicts.get(bare(claim)) == SUPPORTED else "missed")
    checked = [c for c in report["citations"] if c["verdict"] != UNCHECKED]
    facts = [cite(s, 1) for group in case.sentences for s in group]
    present = 0
    for f in facts:  # a fact the extraction kept as two sentences is two claims: the cited one must be supported
        seen = [verdicts.get(bare(c), "absent") for c in claims(f) if re.search(r"\[\d+\]", c)]
        present += seen == [SUPPORTED]
        if seen != [SUPPORTED]:
            print(f"  {case.name}: fact {seen}: {f}", file=sys.stderr)
    return {"unmarked_bad": unmarked_bad, "planted": planted, "supported": sum(c["verdict"] == SUPPORTED for c in
                                                                               checked),
            "checked": len(checked), "facts": (present, len(facts)), "sources_ok": sources_ok(case, report),
            "partial": report.get("partial"), "rounds": out["rounds"]}


def sources_ok(case: Case, report: dict[str, Any]) -> bool:
    """Numbered 1..k without gaps, each address once (the trailing-slash twin too), the dead page never cited."""
    numbers = [s["n"] for s in report["sources"]]
    urls = [normalize_url(s["url"]) for s in [*report["sources"], *report["also_read"]]]
    dead = [s for s in report["not_read"] if s["url"].endswith("/a/gone")]
    return numbers == list(range(1, len(numbers) + 1)) and len(urls) == len(set(urls)) and len(dead) == 1 \
        and not any(u.endswith("/a/gone") for u in urls)


def cases(pages: list[Page], role: str, count: int, seed: int) -> list[Case]:
    """`count` cases of six pages each, in id order."""
    usable = [p for p in pages if len([s for s in p.sentences if p.text.find(s) < EARLY]) >= 2]
    out = []
    for i in range(min(count, len(usable) // 6)):
        group = usable[6 * i: 6 * i + 6]
        out.append(Case(f"{role.replace(' ', '-')}-{i + 1}", group[:3], group[3:], stubborn=i % 3 == 2,
                        rng=random.Random(seed + i)))
    return out


def wall_time(data: Path, pages: list[Page], tmp: Path, extra: list[str], n: int = 4) -> tuple[float, float, float]:
    """N sub-questions side by side (each slower than the last): the research's wall time, the slowest one's and
    the sum of all (what one after another would take)."""
    group = pages[:2 * n]
    case = Case("wall", group[:n], group[n:], False, random.Random(1))
    world = case.world(data)
    for i, sub in enumerate(world.subs.values()):
        sub.delay = 0.4 * (i + 1)
    with LoopbackServer(world) as server:
        case.base = world.base = server.url
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0",
               "AGENT_SEARCH": "0", "AGENT_ENV_FILE": str(tmp / "no.env"), "RAY_USAGE_STATS_ENABLED": "0"}
        subprocess.run([sys.executable, str(ROOT / "main.py"), "research", case.question, "-o", str(tmp / "wall.md"),
                        "--model", MODEL, "--base-url", server.url + "/v1", "--runs-dir", str(tmp / "wall-runs"),
                        "-q", "--concurrency", str(n), *extra], cwd=tmp, env=env, timeout=600, check=False)
    run = next((tmp / "wall-runs").iterdir())
    spans = []
    for trace in (run / "traces").glob("sub-*.jsonl"):
        times = [json.loads(line)["time"] for line in trace.read_text(encoding="utf-8").splitlines()]
        spans.append((min(times), max(times)))
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    return wall, max(e - s for s, e in spans), sum(e - s for s, e in spans)


def table(results: dict[str, list[dict[str, Any]]], wall: tuple[float, float, float], n: int) -> None:
    """Print each figure for the tuning and held-out cases beside the anchors."""
    print(f"\n| figure | {' | '.join(f'{role} ({len(r)} cases)' for role, r in results.items())} | anchors |")
    print("|---|" + "---:|" * len(results) + "---|")
    rows: list[tuple[str, str, Any]] = [
        ("fabricated or not-read citations delivered unmarked", "delivered",
         lambda r: str(sum(x["unmarked_bad"] for x in r))),
        ("planted bad citations repaired or marked", "planted", _planted),
        ("strict citation accuracy (supported / checked)", "accuracy",
         lambda r: _ratio(sum(x["supported"] for x in r), sum(x["checked"] for x in r))),
        ("planted facts present and supported", "facts",
         lambda r: _ratio(sum(x["facts"][0] for x in r), sum(x["facts"][1] for x in r))),
        ("sources listed once each, numbered without gaps", "sources",
         lambda r: f"{sum(x['sources_ok'] for x in r)}/{len(r)} reports"),
    ]
    for label, anchor, figure in rows:
        print(f"| {label} | {' | '.join(figure(r) for r in results.values())} | {ANCHORS[anchor]} |")
    cells = " | ".join([f"{wall[0] / wall[1]:.2f}x ({wall[0]:.1f} s / {wall[1]:.1f} s; one after another: "
                        f"{wall[2]:.1f} s)"] + [""] * (len(results) - 1))
    print(f"| wall time of {n} sub-questions / the slowest one (concurrency {n}) | {cells} | {ANCHORS['wall']} |")


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "n/a"


def _planted(results: list[dict[str, Any]]) -> str:
    outcomes = [o for x in results for o in x["planted"].values()]
    ok = sum(not o.startswith("missed") for o in outcomes)
    marked = sum(o == "marked" for o in outcomes)
    return f"{ok / max(1, len(outcomes)):.0%} ({ok}/{len(outcomes)}: {ok - marked} repaired, {marked} marked)"


def main(argv: list[str] | None = None) -> int:
    """Run the cases of both halves and the timing run; print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--cases", type=int, default=6, help="cases per half (default 6)")
    p.add_argument("--seed", type=int, default=35)
    p.add_argument("--executor", choices=["threads", "ray"], default="threads")
    p.add_argument("--example", type=Path, help="copy the first stubborn held-out case's report.md here")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep the runs and reports in DIR (default: removed)")
    p.add_argument("--wall-only", action="store_true", help="only the timing run (e.g. with --executor ray)")
    p.add_argument("--depths", default="1,2", help="run the cases at each of these --depth values (default 1,2)")
    args = p.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",") if d.strip()]
    pages = load_pages(*scraped(args.data, 2))
    halves = {"tuning": [q for q in pages if q.id[0] in "0123456789"],
              "held out": [q for q in pages if q.id[0] not in "0123456789"]}
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="research-bench-") as tmp_name:
        tmp = args.keep or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        for depth in [] if args.wall_only else depths:
            extra = ["--executor", args.executor, "--depth", str(depth)]
            results[depth] = {}
            for role, group in halves.items():
                results[depth][role] = []
                for case in cases(group, role, args.cases, args.seed):
                    case.name = f"{case.name}-depth{depth}"
                    out = run_case(case, args.data, tmp, extra)
                    results[depth][role].append(score(case, out))
                    print(f"{case.name}: {results[depth][role][-1]['planted']}", file=sys.stderr)
                    if args.example and depth == 1 and role == "held out" and case.stubborn and \
                            not args.example.exists():
                        args.example.write_text(example(out["markdown"].read_text(encoding="utf-8"), case.base),
                                                encoding="utf-8")
        wall = wall_time(args.data, halves["tuning"], tmp, ["--executor", args.executor])
    print(f"{len(pages)} pages; executor {args.executor}; model scripted on loopback ({MODEL})")
    if args.wall_only:
        print(f"wall time of 4 sub-questions / the slowest one: {wall[0] / wall[1]:.2f}x ({wall[0]:.1f} s / "
              f"{wall[1]:.1f} s; one after another: {wall[2]:.1f} s)")
    for depth, by_role in results.items():
        print(f"\n--depth {depth}:")
        table(by_role, wall, 4)
        print(rounds_line(by_role))
    return 0


def rounds_line(by_role: dict[str, list[dict[str, Any]]]) -> str:
    """Rounds, and per round: sub-questions, model calls and cost, summed over every case."""
    runs = [x["rounds"] for r in by_role.values() for x in r]
    totals: dict[int, dict[str, float]] = {}
    for rounds in runs:
        for n, figures in rounds.items():
            t = totals.setdefault(int(n), {"subs": 0, "calls": 0, "cost": 0.0, "unpriced": 0})
            for k in t:
                t[k] += figures[k]
    mean = sum(len(r) for r in runs) / max(1, len(runs))
    parts = [f"round {n}: {int(t['subs'])} sub-questions, {int(t['calls'])} model calls, cost "
             f"{money(None if t['unpriced'] else t['cost'])}"
             for n, t in sorted(totals.items())]
    return f"rounds per report: {mean:.1f} over {len(runs)} reports; " + "; ".join(parts) + \
        " (the planning call in round 1, a follow-up call in the round it planned; the writer not counted)"


if __name__ == "__main__":
    sys.exit(main())
