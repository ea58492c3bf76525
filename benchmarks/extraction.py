"""Score tools.documents.page_text.extract_main_content on the article-extraction benchmark (181 real pages).

Usage: python benchmarks/extraction.py [--data DIR] [--heldout DIR] [--extractor NAME] [--workers 2] [--worst 5]

--heldout DIR names a folder of other labelled sets kept outside the repository, one sub-folder per set in
the same layout (ground-truth.json + html/ID.html.gz); each is scored and printed on its own row, marked
`tuning` (TUNING_SETS: the extractor's rules were chosen looking at them) or `held-out` (never looked at while
tuning); the last row pools the held-out pages.
Build that folder once from local clones of the public sources with benchmarks/extraction_sets.py
(CleanEval, CleanPortalEval, Dragnet, L3S-GN1, Readability's test pages, the 2025 WCEB articles); its
docstring gives the `git clone` lines.
--extractor compares: `ours` (tools.documents.page_text.extract_main_content), `readability` (readability-lxml),
`trafilatura` (plain trafilatura.extract with default settings).

Speed: `seconds` and pages/s are wall clock from the moment every worker has read one small warm-up page (the
imports and first-use set-up are not timed); pages/cpu-s divides the pages by the CPU time the workers spent
extracting them, steadier than wall clock on a shared machine.
Tables: a second table gives the cell recall of each set's article tables (benchmarks/extraction_tables.py).

Scoring follows the data set's README: word tokens (\\w+), shingles of 4 consecutive tokens counted
with multiplicity, tp/fp/fn normalized per page, precision and recall averaged over pages, F1 the
harmonic mean of the two averages.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.extraction_tables import TableScore, reference_tables, score_tables

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "article-extraction"
_TOKEN = re.compile(r"\w+")
# Sets beside the bundled one that tools/documents/extraction_choice.py's rules were tuned on; the rest are held out.
TUNING_SETS = frozenset({"modern-2025", "dragnet"})


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    """Shingles of n consecutive word tokens, with multiplicity (a shorter text is one shingle)."""
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)))


def match(truth: str, predicted: str) -> tuple[float, float, float]:
    """tp, fp, fn of one page, divided by their sum so every page weighs the same."""
    expected, got = shingles(truth), shingles(predicted)
    tp = sum((expected & got).values())
    fp = sum((got - expected).values())
    fn = sum((expected - got).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def page_precision(tp: float, fp: float, fn: float) -> float:
    """Precision of one page (1.0 when the extraction is exact)."""
    return 1.0 if fp == fn == 0 else tp / (tp + fp) if tp + fp else 0.0


def page_recall(tp: float, fp: float, fn: float) -> float:
    """Recall of one page (1.0 when the extraction is exact)."""
    return 1.0 if fp == fn == 0 else tp / (tp + fn) if tp + fn else 0.0


def page_f1(tp: float, fp: float, fn: float) -> float:
    """F1 of one page, used to rank the worst pages."""
    return 1.0 if fp == fn == 0 else tp / (tp + (fp + fn) / 2) if tp else 0.0


def score(counts: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Average precision, average recall and their harmonic mean (F1) over pages."""
    precision = statistics.mean(page_precision(*c) for c in counts if c[0] + c[1] > 0)
    recall = statistics.mean(page_recall(*c) for c in counts if c[0] + c[2] > 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _extract(job: tuple[str, str, str, str, str]) -> tuple[str, str, float, TableScore]:
    """One page's extraction, the CPU seconds it took, and its table cells kept."""
    page_id, path, url, extractor, reference = job
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    html = gzip.decompress(Path(path).read_bytes()).decode("utf-8", errors="replace")
    started = time.process_time()
    try:
        text = EXTRACTORS[extractor](html, url)
    except Exception:  # noqa: BLE001 - a page another extractor cannot read scores zero, as in the papers
        text = ""
    cpu = time.process_time() - started
    return page_id, text, cpu, score_tables(reference_tables(html, reference), text)


# A short page read once per worker before the clock starts: the imports, trafilatura's and justext's
# first-use set-up (its stop lists) are paid once per run, not per page.
_WARM_PAGE = ("<html><head><title>Warm-up</title></head><body><nav><a href='/'>Home</a></nav><article><h1>Warm-up</h1>"
              "<p>A short paragraph that makes every extractor load what it needs before the pages are timed.</p>"
              "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></article></body></html>")


def _warm(extractor: str) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    EXTRACTORS[extractor](_WARM_PAGE, "https://example.com/warm-up")


def _ready(_n: int) -> None:
    return None


def _ours(html: str, url: str) -> str:
    from tools.documents.page_text import extract_main_content

    return extract_main_content(html, url)


def _readability(html: str, url: str) -> str:
    from lxml import html as lxml_html
    from readability import Document

    from tools.documents.extraction_choice import block_text

    summary = Document(html, url=url or None).summary(html_partial=True)
    return block_text(lxml_html.fromstring(summary)) if summary.strip() else ""


def _trafilatura(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url or None) or ""


EXTRACTORS = {"ours": _ours, "readability": _readability, "trafilatura": _trafilatura}


@dataclass(frozen=True)
class SetResult:
    """One set's scores: each page's normalized tp, fp, fn; its table cells kept; CPU seconds of extraction."""

    per_page: dict[str, tuple[float, float, float]]
    tables: TableScore
    cpu: float
    seconds: float  # wall clock of the extraction, the workers started and warmed up


def run(data: Path, workers: int, extractor: str = "ours") -> SetResult:
    """Extract every page of the data set and score it."""
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    jobs = [(pid, str(data / "html" / f"{pid}.html.gz"), item.get("url", ""), extractor, item.get("articleBody", ""))
            for pid, item in truth.items()]
    if workers > 1:
        with Pool(workers, initializer=_warm, initargs=(extractor,)) as pool:
            pool.map(_ready, range(workers), chunksize=1)  # the clock starts once the workers have warmed up
            started = time.perf_counter()
            done = list(pool.imap_unordered(_extract, jobs, chunksize=2))
            seconds = time.perf_counter() - started
    else:
        _warm(extractor)
        started = time.perf_counter()
        done = list(map(_extract, jobs))
        seconds = time.perf_counter() - started
    extracted = {pid: text for pid, text, _cpu, _tables in done}
    per_page = {pid: match(item.get("articleBody", ""), extracted[pid]) for pid, item in truth.items()}
    return SetResult(per_page, sum((tables for *_rest, tables in done), TableScore()),
                     sum(cpu for _pid, _text, cpu, _tables in done), seconds)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables; exit 1 when the bundled data set is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the article-extraction directory")
    parser.add_argument("--heldout", type=Path, help="a folder of held-out labelled sets (one per sub-folder)")
    parser.add_argument("--extractor", choices=sorted(EXTRACTORS), default="ours", help="what to score")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--worst", type=int, default=5, help="how many of the worst pages to list")
    args = parser.parse_args(argv)
    if not (args.data / "ground-truth.json").is_file():
        print(f"no benchmark data at {args.data} (expected ground-truth.json and html/)", file=sys.stderr)
        return 1
    print(f"{'set':<14} {'pages':>6} {'precision':>10} {'recall':>8} {'F1':>7} {'seconds':>8} {'pages/s':>8} "
          f"{'pages/cpu-s':>11}   ({args.extractor})")
    tables: list[tuple[str, str, TableScore]] = []
    per_page = _row("bundled", args.data, args, tables)
    _held_out(args, tables)
    _print_tables(tables)
    worst = sorted(per_page.items(), key=lambda item: page_f1(*item[1]))[: args.worst]
    print(f"\nworst {len(worst)} pages of the bundled set:")
    print(f"  {'id':<16} {'precision':>10} {'recall':>8} {'F1':>7}")
    for page_id, c in worst:
        print(f"  {page_id[:16]:<16} {page_precision(*c):>10.3f} {page_recall(*c):>8.3f} {page_f1(*c):>7.3f}")
    return 0


def _row(name: str, data: Path, args: argparse.Namespace, tables: list[tuple[str, str, TableScore]],
         role: str = "tuning") -> dict[str, tuple[float, float, float]]:
    result = run(data, args.workers, args.extractor)
    seconds = result.seconds
    pages = len(result.per_page)
    precision, recall, f1 = score(list(result.per_page.values()))
    print(f"{name[:14]:<14} {pages:>6} {precision:>10.4f} {recall:>8.4f} {f1:>7.4f} {seconds:>8.1f} "
          f"{pages / seconds:>8.1f} {pages / max(result.cpu, 1e-9):>11.1f}   {role}")
    tables.append((name, role, result.tables))
    return result.per_page


def _held_out(args: argparse.Namespace, tables: list[tuple[str, str, TableScore]]) -> None:
    sets = sorted(p for p in args.heldout.iterdir() if (p / "ground-truth.json").is_file()) \
        if args.heldout and args.heldout.is_dir() else []
    if not sets:
        print(f"{'held-out':<14} held-out set not present" + (f" at {args.heldout}" if args.heldout else
                                                              " (pass --heldout DIR)"))
        return
    pooled: list[tuple[float, float, float]] = []
    for data in sorted(sets, key=lambda p: (p.name not in TUNING_SETS, p.name)):
        tuning = data.name in TUNING_SETS
        counts = list(_row(data.name, data, args, tables, "tuning" if tuning else "held-out").values())
        pooled += [] if tuning else counts
    if pooled:
        precision, recall, f1 = score(pooled)
        print(f"{'held-out all':<14} {len(pooled):>6} {precision:>10.4f} {recall:>8.4f} {f1:>7.4f}")


def _print_tables(rows: list[tuple[str, str, TableScore]]) -> None:
    """Cell recall of the article tables in each set (benchmarks/extraction_tables.py says how it is counted)."""
    print(f"\n{'tables':<14} {'pages':>6} {'tables':>7} {'cells':>7} {'cell recall':>12} {'as text':>8}")
    for name, role, found in rows:
        if not found.cells:
            continue
        print(f"{name[:14]:<14} {found.pages:>6} {found.tables:>7} {found.cells:>7} "
              f"{found.in_tables / found.cells:>12.4f} {found.as_text / found.cells:>8.4f}   {role}")


if __name__ == "__main__":
    sys.exit(main())
