"""The passages' vectors, in the index's own SQLite file, and the search that fuses them with BM25.

How they are kept: a plain table `vectors (passage rowid, float32 BLOB)`, unit length, beside the FTS5 table, and
`vector_model` naming the model that made them and its dimension. Why not a vector extension (sqlite-vec,
sqlite-vss): Python builds without loadable SQLite extensions (pyenv's defaults, macOS's, this project's CI:
`sqlite3.Connection.enable_load_extension` is missing) could not open such an index, and a wheel bringing its
own SQLite would put two SQLite versions on one file. A search reads the vectors into one numpy matrix (12 MB
for 8,000 passages of 384 dimensions, read again only when the file changed: `PRAGMA data_version`) and scores
them all with one product: exact, about 1 ms per 8,000 passages on one core.

Fusion: reciprocal rank fusion (Cormack et al. 2009) of the BM25 order and the vector order, a passage scoring
1 / (RRF_K + its BM25 rank) + DENSE_WEIGHT / (RRF_K + its vector rank) (`fuse`), the two orders weighing the same:
the vectors are there to find what BM25 cannot, a passage sharing no word with the query, and only an equal weight
lets the vectors' first passage stand beside BM25's first (at 0.1 it would come after BM25's first hundred hits).
Measured (benchmarks/docs_hybrid.py --weights): WiCE (100 claims) bm25 0.920, equal 0.950, 0.1 0.940 recall@1;
BEGIN's dialogue responses, which repeat their snippet's words, bm25 0.752, equal 0.683, 0.1 0.738: there words
alone rank best (`--mode bm25`). Passages come in as
the index stores them (already through the caller's redaction), so vectors hold nothing the text does not;
they live in the same 0600 file, removed with it.

numpy is imported only here and only when vectors are used: a folder searched without an embeddings model
never loads it. The embedder is the caller's (providers/embeddings.py through tools/docsearch.py): anything
with `spec`, `embed(texts)` and `estimate(texts)`; any exception it raises is the endpoint failing, one line.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from docindex.store import DocIndex, Hit, IndexReport, Progress

RRF_K = 60
DENSE_WEIGHT = 1.0  # the vector order's weight in the fusion, BM25's being 1 (why: the docstring)
DEPTH = 100  # the passages of each ranking that take part in the fusion
BATCH = 64  # passages per request: OpenAI takes 2,048 inputs; a small local model answers 64 in seconds
BATCH_CHARS = 48_000  # and at most about this much text (~12k tokens), under every API's request limit
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (passage INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vector_model (one INTEGER PRIMARY KEY CHECK (one = 1), model TEXT NOT NULL,
    dim INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vector_files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER,
    first_passage INTEGER, last_passage INTEGER);
"""
# the files whose passages were written since the vectors' last sync (by any process, with or without a model)
_REWRITTEN = """SELECT f.first_passage, f.last_passage FROM files f LEFT JOIN vector_files v ON v.path = f.path
WHERE v.path IS NULL OR v.size != f.size OR v.mtime_ns != f.mtime_ns OR v.first_passage != f.first_passage
OR v.last_passage != f.last_passage"""
INSTALL = "vector search needs numpy: pip install -r requirements-embeddings.txt"


class Embeds(Protocol):
    """An embeddings model: its name, a vector per text (one request), and the most a request may cost."""

    spec: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...

    def estimate(self, texts: list[str]) -> float: ...


@dataclass
class VectorReport:
    """What one update of the vectors did: passages with a vector of all, embedded now, why some still lack one."""

    model: str
    have: int = 0
    total: int = 0
    embedded: int = 0
    seconds: float = 0.0
    note: str = ""  # the vectors were another model's: every passage is embedded again
    failed: str = ""  # the endpoint's one line (down, wrong model, wrong dimension) or the cap that stopped it
    lacking: list[str] = field(default_factory=list)  # the files with passages still without a vector


def numpy() -> Any:
    """numpy, imported on first use; ImportError with the install line when it is missing."""
    try:
        import numpy as np
    except ImportError as exc:
        raise ImportError(INSTALL) from exc
    return np


def batches(texts: list[str]) -> list[list[int]]:
    """The indexes of `texts` in request-sized groups: BATCH texts, BATCH_CHARS characters at most."""
    groups: list[list[int]] = []
    size = 0
    for i, text in enumerate(texts):
        if not groups or len(groups[-1]) >= BATCH or size + len(text) > BATCH_CHARS:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(text)
    return groups


class Vectors:
    """The vectors of one DocIndex made by one embeddings model: `sync` after an update, `search` fused."""

    def __init__(self, index: DocIndex, embedder: Embeds) -> None:
        self.index = index
        self.embedder = embedder
        self.failed = ""  # set at the endpoint's first failure: the command tries it no more
        self._matrix: Any = None
        self._ids: Any = None
        self._version: tuple[int, int] | None = None

    def sync(self, report: IndexReport, progress: Progress | None = None, cap: float | None = None,
             spent: float = 0.0) -> VectorReport:
        """Drop the vectors of passages removed or written anew since the last sync, embed the passages that lack one
        (batched; none when nothing lacks one), stopping at the endpoint's first failure or before a request
        would take the spend (`spent` so far, USD) past `cap`. What was embedded is kept batch by batch."""
        started = time.perf_counter()
        out = VectorReport(self.embedder.spec, total=report.passages)
        with self.index.writing() as con:
            con.executescript(_SCHEMA)
            out.note = self._same_model(con)
            self._drop_stale(con)
            out.have = con.execute("SELECT count(*) FROM vectors").fetchone()[0]
            if out.have < out.total and not self.failed:
                self._fill(con, out, progress, cap, spent)
            elif self.failed:
                out.failed = self.failed
            if out.have < out.total:
                out.lacking = [path for path, first, last in con.execute(
                    "SELECT path, first_passage, last_passage FROM files WHERE last_passage >= first_passage "
                    "ORDER BY path") if con.execute("SELECT count(*) FROM vectors WHERE passage BETWEEN ? AND ?",
                                                    (first, last)).fetchone()[0] < last - first + 1]
        out.seconds = time.perf_counter() - started
        return out

    def _same_model(self, con: sqlite3.Connection) -> str:
        row = con.execute("SELECT model FROM vector_model").fetchone()
        if row is None or row[0] == self.embedder.spec:
            return ""
        con.execute("DELETE FROM vectors")
        con.execute("DELETE FROM vector_model")
        return f"the vectors were made by {row[0]}: every passage is embedded again with {self.embedder.spec}"

    @staticmethod
    def _drop_stale(con: sqlite3.Connection) -> None:
        """Vectors of passages gone, and any in the rowid range of a file written since the last sync (a re-read
        file may take rowids a dropped file had: their vectors are not its passages'); then the files as synced.
        Nothing is written when no file changed since (one join over the files)."""
        rewritten = con.execute(_REWRITTEN).fetchall()
        gone = con.execute("SELECT count(*) FROM vector_files WHERE path NOT IN (SELECT path FROM files)").fetchone()
        if not rewritten and not gone[0]:
            return
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM vectors WHERE passage NOT IN (SELECT rowid FROM passages)")
        con.executemany("DELETE FROM vectors WHERE passage BETWEEN ? AND ?", rewritten)
        con.execute("DELETE FROM vector_files")
        con.execute("INSERT INTO vector_files SELECT path, size, mtime_ns, first_passage, last_passage FROM files")
        con.execute("COMMIT")

    def _fill(self, con: sqlite3.Connection, out: VectorReport, progress: Progress | None, cap: float | None,
              spent: float) -> None:
        np = numpy()
        rows = con.execute("SELECT rowid, body FROM passages WHERE rowid NOT IN (SELECT passage FROM vectors) "
                           "ORDER BY rowid").fetchall()
        dim = con.execute("SELECT dim FROM vector_model").fetchone()
        texts = [body for _, body in rows]
        for group in batches(texts):
            if progress is not None:
                progress(out.embedded, len(rows), "embedding")
            chunk = [texts[i] for i in group]
            if cap is not None and spent + self.embedder.estimate(chunk) > cap:
                out.failed = f"the cost cap (${cap:.4f}) would be passed: embedding stopped"
                break
            try:
                vectors = np.asarray(self.embedder.embed(chunk), dtype=np.float32)
                if vectors.ndim != 2 or len(vectors) != len(chunk):
                    raise ValueError("the reply does not hold one vector per text")
                if dim is not None and vectors.shape[1] != dim[0]:
                    raise ValueError(f"its vectors have {vectors.shape[1]} dimensions, the index's {dim[0]}")
            except Exception as exc:  # noqa: BLE001 - the endpoint failing in any way: one line, bm25 goes on
                out.failed = self.failed = failure(self.embedder.spec, exc)
                break
            spent += self.embedder.estimate(chunk) if cap is not None else 0.0
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            con.execute("BEGIN IMMEDIATE")
            if dim is None:
                dim = (vectors.shape[1],)
                con.execute("INSERT INTO vector_model (one, model, dim) VALUES (1, ?, ?)",
                            (self.embedder.spec, dim[0]))
            con.executemany("INSERT OR REPLACE INTO vectors (passage, vec) VALUES (?, ?)",
                            [(rows[i][0], vec.tobytes()) for i, vec in zip(group, vectors, strict=True)])
            con.execute("COMMIT")
            out.embedded += len(group)
        if progress is not None and rows:
            progress(len(rows), len(rows), "")
        out.have = con.execute("SELECT count(*) FROM vectors").fetchone()[0]

    def search(self, query: str, k: int = 8) -> list[Hit]:
        """The k best passages fused from BM25's order and the vectors' (weighted rank fusion: `fuse`); BM25's alone
        when the index holds no vector of this model or the endpoint fails (`failed` then says why)."""
        if self.failed:
            return self.index.search(query, k)
        matrix, ids = self._load()
        if matrix is None:
            return self.index.search(query, k)
        np = numpy()
        try:
            vector = np.asarray(self.embedder.embed([query]), dtype=np.float32)
            if vector.shape != (1, matrix.shape[1]):
                raise ValueError(f"its vector has {vector.shape[-1]} dimensions, the index's {matrix.shape[1]}")
        except Exception as exc:  # noqa: BLE001 - the endpoint failing in any way: one line, bm25 goes on
            self.failed = failure(self.embedder.spec, exc)
            return self.index.search(query, k)
        # numpy's own loop, not BLAS: a threaded gemv waits for busy cores (56 ms against 0.9 ms for 8,000 x 384
        # on two loaded cores), for a product one core does in a millisecond
        scores = np.einsum("ij,j->i", matrix, vector[0])
        depth = min(max(DEPTH, k), len(scores))
        top = np.argpartition(-scores, depth - 1)[:depth]
        dense = [int(ids[i]) for i in top[np.argsort(-scores[top])]]
        return self.index.hits(fuse(self.index.ranked(query, max(DEPTH, k)), dense, k))

    def _load(self) -> tuple[Any, Any]:
        """The vectors of this model as one matrix and their rowids, read again only when the file changed."""
        with self.index.reading() as con:
            version = (con.execute("PRAGMA data_version").fetchone()[0], id(con))
            if version == self._version:
                return self._matrix, self._ids
            try:
                model = con.execute("SELECT model, dim FROM vector_model").fetchone()
                rows = con.execute("SELECT passage, vec FROM vectors ORDER BY passage").fetchall() \
                    if model is not None and model[0] == self.embedder.spec else []
            except sqlite3.OperationalError:  # an index made without vectors: no such table
                model, rows = None, []
        np = numpy()
        if model is None or not rows:
            self._matrix = self._ids = None
        else:
            self._ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            self._matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), model[1])
        self._version = version
        return self._matrix, self._ids


def fuse(bm25: list[int], dense: list[int], k: int, weight: float = DENSE_WEIGHT) -> list[tuple[int, float]]:
    """The k best (rowid, score) of two rankings (best first) by weighted reciprocal rank fusion: each passage
    scores 1 / (RRF_K + its BM25 rank) + weight / (RRF_K + its vector rank); the score negated, lower being
    better as BM25's."""
    fused: dict[int, float] = {}
    for ranking, w in ((bm25, 1.0), (dense, weight)):
        for rank, rowid in enumerate(ranking, start=1):
            fused[rowid] = fused.get(rowid, 0.0) + w / (RRF_K + rank)
    best = sorted(fused.items(), key=lambda pair: -pair[1])[:k]
    return [(rowid, -score) for rowid, score in best]


def failure(spec: str, exc: BaseException) -> str:
    """The one line saying the embeddings endpoint failed and that the search goes on by words."""
    said = str(exc) if type(exc).__name__ == "EmbeddingsFailed" else f"{spec}: {exc}"
    return f"warning: embeddings unavailable ({said}); keyword (bm25) ranking only"
