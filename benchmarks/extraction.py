"""Score tools.scrape.extract_main_content on the article-extraction benchmark (181 real pages).

Usage: python benchmarks/extraction.py [--data DIR] [--workers 2] [--worst 5]

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
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "article-extraction"
_TOKEN = re.compile(r"\w+")


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


def _extract(job: tuple[str, str, str]) -> tuple[str, str]:
    page_id, path, url = job
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.scrape import extract_main_content

    html = gzip.decompress(Path(path).read_bytes()).decode("utf-8")
    return page_id, extract_main_content(html, url)


def run(data: Path, workers: int) -> dict[str, tuple[float, float, float]]:
    """Extract every page of the data set and return each page's normalized tp, fp, fn."""
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    jobs = [(pid, str(data / "html" / f"{pid}.html.gz"), item.get("url", "")) for pid, item in truth.items()]
    if workers > 1:
        with Pool(workers) as pool:
            extracted = dict(pool.imap_unordered(_extract, jobs, chunksize=2))
    else:
        extracted = dict(map(_extract, jobs))
    return {pid: match(item.get("articleBody", ""), extracted[pid]) for pid, item in truth.items()}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; exit 1 when the data set is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the article-extraction directory")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--worst", type=int, default=5, help="how many of the worst pages to list")
    args = parser.parse_args(argv)
    if not (args.data / "ground-truth.json").is_file():
        print(f"no benchmark data at {args.data} (expected ground-truth.json and html/)", file=sys.stderr)
        return 1
    started = time.perf_counter()
    per_page = run(args.data, args.workers)
    seconds = time.perf_counter() - started
    precision, recall, f1 = score(list(per_page.values()))
    print(f"{'pages':>6} {'precision':>10} {'recall':>8} {'F1':>7} {'seconds':>8}")
    print(f"{len(per_page):>6} {precision:>10.4f} {recall:>8.4f} {f1:>7.4f} {seconds:>8.1f}")
    worst = sorted(per_page.items(), key=lambda item: page_f1(*item[1]))[: args.worst]
    print(f"\nworst {len(worst)} pages:")
    print(f"  {'id':<16} {'precision':>10} {'recall':>8} {'F1':>7}")
    for page_id, c in worst:
        print(f"  {page_id[:16]:<16} {page_precision(*c):>10.3f} {page_recall(*c):>8.3f} {page_f1(*c):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
