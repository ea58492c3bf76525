"""search_docs: the best passages of the user's own documents (--docs DIR), each cited to its file and page.

The index of each folder is docindex/'s (SQLite FTS5, BM25), handed this package's readers
(tools/documents/units.py, each file read in a child under its memory and time limits: documents/confined.py);
it is brought up to date on a task's first search, in a thread of its own (`Indexing`; then the new passages'
vectors with an embeddings model, docindex/vectors.py): a search waits for it until one file has been read for
SEARCH_WAIT seconds, then answers from what is indexed and names the file still converting, which a later search
finds. With vectors, a search fuses the BM25 and vector rankings. Every passage found is a source of the task,
`[n] report.pdf, p. 3`, whose text for the citation check is the whole page (or section).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from config import Settings
from core import cancellation
from core.errors import StopRequested, ToolError
from core.secrets import SecretRedactor
from core.text import terminal_safe
from core.trust import tell_once
from docindex import DocIndex, Hit, Reader, Unit, index_path
from docindex.passages import NO_WORDS, fts_query
from docindex.vectors import Vectors
from providers.budget import charging, running_task_budget
from providers.embeddings import embedder_of
from sources.ledger import Read, placed
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits, reader
from tools.documents.units import SUFFIXES

DEFAULT_HITS, MAX_HITS = 8, 20
SEARCH_WAIT = 15.0  # seconds a search waits on one file being converted before it answers from what is indexed
WAIT_FILES = 4  # ... and on the indexing in all (in SEARCH_WAITs), within the time its call has left


def index_dir(settings: Settings) -> Path:
    """Where the document indexes live: the run store's docindex/ folder (never inside a document folder)."""
    return settings.runs_dir / "docindex"


def folder_index(folder: Path, settings: Settings) -> DocIndex:
    """The index of one document folder, with the readers of tools/documents/ (each file in a child, under
    AGENT_DOC_MEMORY_MB and AGENT_DOC_TIMEOUT); the run store is never indexed (`--docs .` where runs/ lives).
    What a reader gives passes the settings' SecretRedactor before the index stores it: a key written in a
    document never enters the index."""
    return DocIndex(folder, index_path(folder, index_dir(settings)),
                    redacting(reader(DocLimits.of(settings)), SecretRedactor.of(settings)), SUFFIXES,
                    exclude=settings.runs_dir)


def folder_vectors(index: DocIndex, settings: Settings) -> Vectors | None:
    """The vectors of a folder's index made by the embeddings model (AGENT_EMBEDDINGS_MODEL, --embeddings), or
    None without one; ConfigError for a model with no endpoint here (providers/embeddings.embedder_of)."""
    if not settings.embeddings_model:
        return None
    return Vectors(index, embedder_of(settings.embeddings_model, settings))


def find(index: DocIndex, vectors: Vectors | None, query: str, k: int) -> list[Hit]:
    """The k best passages: fused with the vectors' ranking when there are vectors, else BM25's alone."""
    return vectors.search(query, k) if vectors is not None else index.search(query, k)


def redacting(inner: Reader, redact: SecretRedactor) -> Reader:
    """The reader with configured keys taken out of each unit's text (the one way passages enter an index)."""
    def read(name: str, data: bytes) -> list[Unit]:
        return [replace(unit, label=redact(unit.label), text=redact(unit.text)) for unit in inner(name, data)]

    return read


def warn(line: str) -> None:
    """The embeddings endpoint's failure, once per process on stderr (the search goes on by words)."""
    tell_once(terminal_safe(line, one_line=True) if line else "")


def hit_place(hit: Hit, prefix: str) -> str:
    """How a hit is cited: `report.pdf, p. 3`; with several folders, `FOLDER/report.pdf, p. 3`. On one line
    whatever the file is named (a name with a new line could otherwise forge another source's line)."""
    return terminal_safe(f"{prefix}/{hit.place}" if prefix else hit.place, one_line=True)


class SearchDocsTool(Tool):
    """Full-text search over the passages of the user's document folders (--docs DIR)."""

    name = "search_docs"
    brief = "Search the user's own documents; each passage comes with its file and page to cite."
    description = (
        "Search the user's own documents (the folders given with --docs): the best passages for your words, each "
        "under a numbered source line `[n] FILE, p. N` (or its section) that you cite as [n]. Write keywords "
        "a passage would contain (names, figures, terms), not a question; search again with other words if "
        "the first passages do not hold the answer.")
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words the passage would contain."},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_HITS,
                  "description": f"How many passages (default {DEFAULT_HITS})."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, settings: Settings) -> None:
        several = len(settings.docs_dirs) > 1
        self.indexes = [(folder.resolve().name if several else "", folder_index(folder, settings))
                        for folder in settings.docs_dirs]
        self.vectors = [folder_vectors(index, settings) for _, index in self.indexes]
        self.cap = settings.max_run_cost or settings.max_cost
        self._indexing: Indexing | None = None
        self._lock = threading.Lock()

    def _update(self) -> str:
        """Bring every folder's index up to date, once per task: started by its first search in a thread of its own
        and waited for until a file has been read for SEARCH_WAIT seconds (at most WAIT_FILES times that in all,
        less when the call has less left), so that no search waits on a slow conversion. A note naming the file being
        read while it goes on."""
        with self._lock:
            if self._indexing is None:
                for _, index in self.indexes:
                    if not index.folder.is_dir():
                        raise ToolError(f"the document folder {index.folder} is gone")
                self._indexing = Indexing(self.indexes, self.vectors, self.cap)
            indexing = self._indexing
        left = cancellation.remaining()
        cap = WAIT_FILES * SEARCH_WAIT if left is None else max(min(WAIT_FILES * SEARCH_WAIT, left - 1.0), 0.0)
        indexing.wait(cap, SEARCH_WAIT)
        if cancellation.stopping():
            indexing.stop()
        return indexing.note()

    def close(self) -> None:
        """The task is over: stop its indexing (the file being read is read again next time), close the indexes'
        search connections."""
        if self._indexing is not None:
            self._indexing.stop()
        for _, index in self.indexes:
            index.close()

    def run(self, **kwargs: Any) -> ToolOutput:
        """The k best passages for the query, each headed by its source's line."""
        query = str(kwargs.get("query") or "").strip()
        k = min(max(int(kwargs.get("k") or DEFAULT_HITS), 1), MAX_HITS)
        if not query:
            raise ToolError("query is empty: give the words a passage would contain")
        if not fts_query(query):
            raise ToolError(NO_WORDS)
        note = self._update()
        found = [(hit, prefix) for (prefix, index), vectors in zip(self.indexes, self.vectors, strict=True)
                 for hit in find(index, vectors, query, k)]
        for vectors in self.vectors:
            warn(vectors.failed if vectors is not None else "")
        hits = sorted(found, key=lambda pair: pair[0].score)[:k]
        if not hits:
            return ToolOutput(f"No passage of the documents holds these words: {query!r}. Try other words "
                              "(a name, a figure, a term the documents would use)." + note)
        blocks, reads = [], []
        for hit, prefix in hits:
            place = hit_place(hit, prefix)
            blocks.append(f"{placed(place)}\n{hit.passage}")
            reads.append(Read(place, text=hit.page_text))
        return ToolOutput("\n\n".join(blocks) + note, read=reads)


class Indexing:
    """The update of a task's document indexes, in a thread of its own: what it is reading, how many files are left,
    how it ended (an error is raised again to the search that asks after it)."""

    def __init__(self, indexes: list[tuple[str, DocIndex]], vectors: list[Vectors | None],
                 cap: float | None) -> None:
        self.indexes, self.vectors, self.cap = indexes, vectors, cap
        self.budget = running_task_budget()  # the thread does not inherit the task's: its embeddings are the task's
        self.current = ""  # the file being read now, as it is cited (FOLDER/file with several folders)
        self.left = 0
        self.since: float | None = None  # when the file being read now was started (time.monotonic())
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="search_docs-indexing", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with charging(self.budget), cancellation.scope(stop=self._stop):  # a stop kills the converter child
                for (prefix, index), vectors in zip(self.indexes, self.vectors, strict=True):
                    report = index.update(self._progress(prefix), commit_every=0.0)  # each file searchable once read
                    if vectors is not None:  # then its new passages' vectors (a failure: one line, words alone)
                        self.current = ""
                        warn(vectors.sync(report, cap=self.cap).failed)
        except StopRequested:
            pass
        except Exception as exc:  # noqa: BLE001 - the next search says it (a folder refused, gone)
            self.error = exc
        self.current, self.left = "", 0

    def _progress(self, prefix: str) -> Callable[[int, int, str], None]:
        def seen(done: int, total: int, name: str) -> None:
            self.current = terminal_safe(f"{prefix}/{name}" if prefix and name else name, one_line=True)
            self.left = total - done
            self.since = time.monotonic()
        return seen

    def wait(self, seconds: float, per_file: float) -> None:
        """Wait until the indexing ends, at most `seconds`, and no longer once one file has been read for `per_file`
        seconds: files that read quickly are waited for however busy the machine is, a slow one is not."""
        end = time.monotonic() + seconds
        while self._thread.is_alive() and (now := time.monotonic()) < end:
            if self.since is not None and now - self.since >= per_file:
                return
            self._thread.join(min(0.1, end - now))

    def stop(self) -> None:
        """End the indexing: the file being read is left for the next update (its child is killed)."""
        self._stop.set()
        self._thread.join(1.0)  # the child is killed within a quarter second; a thread waiting for another
        # task's update of the same index (its lock) ends once it gets it

    def note(self) -> str:
        """'' once every index is up to date; while reading, the file being converted and how many are left. An
        error of the indexing, raised again."""
        if self.error is not None:
            raise ToolError(f"the documents could not be indexed: {self.error}")
        if not self._thread.is_alive():
            return ""
        if not self.current:
            return "\n\n(The documents are being indexed: search again for passages from the files not read yet.)"
        return (f"\n\n(The documents are still being indexed: {self.current} is being converted and {self.left:,} "
                "file(s) are not read yet, so their passages are not among these. Search again later for them.)")
