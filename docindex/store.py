"""One folder's index: SQLite FTS5 with BM25, stored outside the folder, updated by path, size and mtime."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from core import cancellation
from core.errors import ConfigError, StopRequested, TaskDeadlineExceeded
from core.files import others_control, own_mode, private_folder
from docindex.passages import Unit, fts_query, passages
from docindex.walk import MAX_FILE_BYTES, Entry, open_inside, walk

SCHEMA_VERSION = 2  # 2: a PDF page is labelled as the PDF prints it (p. 8, not its 11th page)
COMMIT_EVERY = 1.0  # seconds of indexing per transaction: fast, and another writer waits at most about this
Reader = Callable[[str, bytes], Sequence[Unit]]  # (relative path, bytes) -> the document's pages or sections
Progress = Callable[[int, int, str], None]  # (files done, files to read, the current one)
BM25 = "bm25(passages, 1.0, 0.3)"  # the passage's words weigh more than its file name and page
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, skip TEXT NOT NULL DEFAULT '', pages INTEGER NOT NULL DEFAULT 0,
    first_passage INTEGER NOT NULL DEFAULT 0, last_passage INTEGER NOT NULL DEFAULT -1);
CREATE TABLE IF NOT EXISTS units (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, label TEXT NOT NULL,
    first_passage INTEGER NOT NULL, last_passage INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS units_file ON units(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(body, place, unit_id UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2');
"""
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _begin(con: sqlite3.Connection) -> None:
    """Start a write transaction unless one is open (update commits a batch of files at a time)."""
    if not con.in_transaction:
        con.execute("BEGIN IMMEDIATE")


def _last_rowid(con: sqlite3.Connection) -> int:
    """The highest passage rowid (0 for none); `ORDER BY rowid DESC` reads one row, FTS5's max() scans them all."""
    row = con.execute("SELECT rowid FROM passages ORDER BY rowid DESC LIMIT 1").fetchone()
    return int(row[0]) if row else 0


def _page_text(con: sqlite3.Connection, first: int, last: int) -> str:
    """A page's (unit's) text: its passages in order."""
    rows = con.execute("SELECT body FROM passages WHERE rowid BETWEEN ? AND ? ORDER BY rowid", (first, last))
    return "\n\n".join(row[0] for row in rows)


class Unreadable(Exception):  # noqa: N818 - a reason, not a failure: the file is skipped, named with it
    """A reader's answer for a file it does not read (a scanned PDF, an image): the reason it is skipped."""


@dataclass(frozen=True)
class Hit:
    """One passage found: its file (relative to the folder), the page or section, the passage, the whole page's
    text (what a claim citing it is checked against) and its BM25 score (lower is better)."""

    path: str
    label: str
    passage: str
    page_text: str
    score: float

    @property
    def place(self) -> str:
        """`report.pdf, p. 3`, `notes.md, § Budget`, or the path alone."""
        return f"{self.path}, {self.label}" if self.label else self.path


@dataclass
class IndexReport:
    """What one update did and what the index holds: its files (read, or unreadable: each its own bucket), what
    this update read anew, dropped or left as it was; passages and pages; what the walk skipped."""

    files: int = 0  # every file the index holds: new + changed + unchanged of this update (pending aside)
    unchanged: int = 0
    new: list[str] = field(default_factory=list)  # relative paths read for the first time (readable or not)
    changed: list[str] = field(default_factory=list)  # read again: their size or modification time changed
    removed: list[str] = field(default_factory=list)  # gone from the folder (or now skipped): dropped
    pages: int = 0
    passages: int = 0
    unreadable: dict[str, list[str]] = field(default_factory=dict)  # files held that gave no text: reason -> paths
    skipped: dict[str, list[str]] = field(default_factory=dict)  # never read (a link out, a format): reason -> paths
    pending: int = 0  # files still to read when the update's time budget ran out
    seconds: float = 0.0


def _unlocked(step: Callable[[], object], seconds: float = 60.0) -> None:
    """One set-up step of an index, tried again while another process sets up the same index: SQLite answers
    'database is locked' at once, without its busy wait, to a journal-mode switch (and the schema written just
    after it) while another connection holds the file."""
    end = time.monotonic() + seconds
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > end:
                raise
            time.sleep(0.05)


def private(db: Path) -> None:
    """An index holds the text of private documents: its folder is made 0700 and its files 0600 (made so again
    when an older version left them readable to others), as `cat` refuses other users the documents. Never
    where another user could read or replace it (a folder on its way that is theirs or that they may write in,
    a file or link they made): ConfigError naming the place, before anything is written there."""
    _refuse_shared(db)
    private_folder(db.parent)
    _refuse_shared(db)  # (the folder just made: a link another user put there is theirs)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
    for path in db.parent.glob(db.name + "*"):  # the database, its write-ahead log and shared memory
        _refuse_shared(path)
        own_mode(path, 0o600)


def _refuse_shared(path: Path) -> None:
    why = others_control(path)
    if why is not None:
        raise ConfigError(f"the document index {path.name} is not kept where another user could read or replace it "
                          f"({why}): set AGENT_RUNS_DIR or --runs-dir to a folder of your own", "runs_dir")


def index_path(folder: Path, base: Path) -> Path:
    """Where the index of `folder` lives under `base` (the run store's docindex/), keyed by its resolved path."""
    real = folder.resolve()
    digest = hashlib.sha256(str(real).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", real.name)[:40] or "root"
    return base / f"{name}-{digest}.sqlite"


class DocIndex:
    """The index of one folder, stored in `db`; `update` brings it up to date, `search` finds passages."""

    def __init__(self, folder: Path, db: Path, reader: Reader, suffixes: frozenset[str],
                 max_bytes: int = MAX_FILE_BYTES, exclude: Path | None = None) -> None:
        """`exclude`: a folder never indexed were it inside `folder` (the run store); default the index's own."""
        self.folder = folder.resolve()
        self.exclude = (exclude or db.parent).resolve()
        self.db = db
        self.reader = reader
        self.suffixes = suffixes
        self.max_bytes = max_bytes
        self._ready = False
        self._read_con: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()  # the searches' connection, one call at a time (updates have their own)
        with _locks_guard:
            self._lock = _locks.setdefault(str(db.resolve()), threading.Lock())

    def _connect(self) -> sqlite3.Connection:
        private(self.db)
        con = sqlite3.connect(self.db, timeout=60, isolation_level=None, check_same_thread=False)
        if not self._ready:
            _unlocked(lambda: con.execute("PRAGMA journal_mode=WAL"))
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):  # an index is a cache: another version's is rebuilt
                con.close()
                for stale in self.db.parent.glob(self.db.name + "*"):
                    stale.unlink(missing_ok=True)
                private(self.db)
                con = sqlite3.connect(self.db, timeout=60, isolation_level=None, check_same_thread=False)
                _unlocked(lambda: con.execute("PRAGMA journal_mode=WAL"))
            _unlocked(lambda: con.executescript(_SCHEMA))
            _unlocked(lambda: con.execute(f"PRAGMA user_version={SCHEMA_VERSION}"))
            self._ready = True
        con.execute("PRAGMA synchronous=NORMAL")
        return con

    def _reader(self) -> sqlite3.Connection:
        """The connection searches share (opened once: a connection's set-up costs more than a query)."""
        if self._read_con is None:
            self._read_con = self._connect()
        return self._read_con

    def close(self) -> None:
        """Close the searches' connection (update opens and closes its own)."""
        with self._read_lock:
            if self._read_con is not None:
                self._read_con.close()
                self._read_con = None

    def update(self, progress: Progress | None = None, budget: float | None = None,
               commit_every: float = COMMIT_EVERY) -> IndexReport:
        """Read new and changed files (the smallest first), drop removed ones; the report of what was done (and what
        is skipped). With a `budget` (seconds), reading stops once it is spent, also in the middle of a file (after
        the first, through the reader's cancellation scope): what was read is kept, `pending` counts the rest, and
        the next update goes on from there. `commit_every`: seconds of reading per transaction (0: each file is
        committed, so searches find it at once, while a slow file is read)."""
        started = time.perf_counter()
        report = IndexReport()
        with self._lock, closing(self._connect()) as con:
            known = {row[0]: (row[1], row[2], row[3]) for row in
                     con.execute("SELECT path, size, mtime_ns, id FROM files")}
            todo = self._plan(con, known, report)
            if con.in_transaction:  # the files dropped: no transaction held while the first file is read
                con.execute("COMMIT")
            committed = time.perf_counter()
            for done, entry in enumerate(todo):
                left = None if budget is None else budget - (time.perf_counter() - started)
                if left is not None and left <= 0:
                    report.pending = len(todo) - done
                    break
                if progress is not None:
                    progress(done, len(todo), entry.rel)
                # A reader that honours the scope (tools/documents/confined) stops when the budget is spent, except
                # on an update's first file, which has its own time limit: a slow file is then skipped and named
                # (over its limit) instead of being left pending on every update.
                try:
                    with cancellation.scope(left if done else None):
                        self._read(con, entry, known.get(entry.rel), report)
                except TaskDeadlineExceeded:  # the file is read next time, within a budget of its own
                    report.pending = len(todo) - done
                    break
                if time.perf_counter() - committed >= commit_every:  # a batch of files per transaction
                    con.execute("COMMIT")
                    committed = time.perf_counter()
            if con.in_transaction:
                con.execute("COMMIT")
            if progress is not None and todo:
                progress(len(todo), len(todo), "")
            self._totals(con, report)
        report.seconds = time.perf_counter() - started
        return report

    def _plan(self, con: sqlite3.Connection, known: dict[str, tuple[int, int, int]],
              report: IndexReport) -> list[Entry]:
        """The files to read (new or changed by size or mtime); removed and now-skipped ones are dropped."""
        entries = list(walk(self.folder, self.suffixes, self.max_bytes, self.exclude))
        readable = {e.rel for e in entries if not e.skip}
        todo = []
        for entry in entries:
            old = known.get(entry.rel)
            if entry.skip:
                report.skipped.setdefault(entry.skip, []).append(entry.rel)
            elif old is not None and old[:2] == (entry.size, entry.mtime_ns):
                report.unchanged += 1
            else:
                todo.append(entry)
        todo.sort(key=lambda entry: entry.size)  # the small files first: searchable sooner, the slow ones last
        for path in known:
            if path not in readable:  # gone, or now skipped (a link out, grown over the limit)
                self._drop(con, path)
                report.removed.append(path)
        return todo

    def _totals(self, con: sqlite3.Connection, report: IndexReport) -> None:
        report.files = con.execute("SELECT count(*) FROM files").fetchone()[0]
        report.pages = con.execute("SELECT coalesce(sum(pages), 0) FROM files").fetchone()[0]
        report.passages = con.execute("SELECT count(*) FROM passages").fetchone()[0]
        for path, skip in con.execute("SELECT path, skip FROM files WHERE skip != '' ORDER BY path"):
            report.unreadable.setdefault(skip, []).append(path)

    @staticmethod
    def _drop(con: sqlite3.Connection, path: str) -> None:
        """Remove a file with its units and passages (its passages' rowids are one range: written together). By
        path, inside the write transaction: another process may have re-read the file since this one looked."""
        _begin(con)
        row = con.execute("SELECT id, first_passage, last_passage FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return
        con.execute("DELETE FROM passages WHERE rowid BETWEEN ? AND ?", (row[1], row[2]))
        con.execute("DELETE FROM units WHERE file_id = ?", (row[0],))
        con.execute("DELETE FROM files WHERE id = ?", (row[0],))

    def _read(self, con: sqlite3.Connection, entry: Entry, old: tuple[int, int, int] | None,
              report: IndexReport) -> None:
        skip, units = "", []
        try:
            units = list(self.reader(entry.rel, open_inside(self.folder, entry.path)))
            if not any(u.text.strip() for u in units):
                skip = "no text found"
        except Unreadable as exc:
            skip = str(exc)
        except (TaskDeadlineExceeded, StopRequested):  # not the file's fault: nothing is recorded of it
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged file is skipped and named, the rest is indexed
            skip = f"could not be read ({type(exc).__name__})"
        _begin(con)
        self._drop(con, entry.rel)
        first = _last_rowid(con) + 1
        cur = con.execute("INSERT INTO files (path, size, mtime_ns, skip, pages) VALUES (?, ?, ?, ?, ?)",
                          (entry.rel, entry.size, entry.mtime_ns, skip, 0 if skip else len(units)))
        file_id = cur.lastrowid
        for unit in [] if skip else units:
            # the page's text is not stored twice: its passages, in order, give it back (page_text)
            start = _last_rowid(con) + 1
            unit_id = con.execute("INSERT INTO units (file_id, label, first_passage, last_passage) "
                                  "VALUES (?, ?, ?, ?)", (file_id, unit.label, start, start - 1)).lastrowid
            place = f"{entry.rel} {unit.label}"
            con.executemany("INSERT INTO passages (body, place, unit_id) VALUES (?, ?, ?)",
                            [(p, place, unit_id) for p in passages(unit.text)])
            con.execute("UPDATE units SET last_passage = ? WHERE id = ?", (_last_rowid(con), unit_id))
        last = _last_rowid(con)
        con.execute("UPDATE files SET first_passage = ?, last_passage = ? WHERE id = ?", (first, last, file_id))
        (report.new if old is None else report.changed).append(entry.rel)

    def search(self, query: str, k: int = 8) -> list[Hit]:
        """The k best passages for the words of `query` (BM25; the file name and page count for less)."""
        match = fts_query(query)
        if not match or k < 1:
            return []
        with self._read_lock:
            con = self._reader()
            rows = con.execute(
                # the best rowids first (the sort carries no text), then their passages, pages and files
                f"SELECT p.body, u.label, u.first_passage, u.last_passage, f.path, top.score FROM (SELECT rowid AS id, "
                f"{BM25} AS score FROM passages WHERE passages MATCH ? ORDER BY score LIMIT ?) top "
                "JOIN passages p ON p.rowid = top.id JOIN units u ON u.id = p.unit_id "
                "JOIN files f ON f.id = u.file_id ORDER BY top.score", (match, k)).fetchall()
            return [Hit(path, label, body, _page_text(con, first, last), score)
                    for body, label, first, last, path, score in rows]

    def ranked(self, query: str, n: int) -> list[int]:
        """The rowids of the n best passages by BM25, best first (docindex/vectors fuses them with its own)."""
        match = fts_query(query)
        if not match or n < 1:
            return []
        with self.reading() as con:
            return [row[0] for row in con.execute(
                f"SELECT rowid FROM passages WHERE passages MATCH ? ORDER BY {BM25} LIMIT ?", (match, n))]

    def hits(self, scored: Sequence[tuple[int, float]]) -> list[Hit]:
        """The passages of these (rowid, score) pairs as hits, in that order (one gone since is left out)."""
        out = []
        with self.reading() as con:
            for rowid, score in scored:
                row = con.execute("SELECT p.body, u.label, u.first_passage, u.last_passage, f.path FROM passages p "
                                  "JOIN units u ON u.id = p.unit_id JOIN files f ON f.id = u.file_id "
                                  "WHERE p.rowid = ?", (rowid,)).fetchone()
                if row is not None:
                    out.append(Hit(row[4], row[1], row[0], _page_text(con, row[2], row[3]), score))
        return out

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The searches' connection, for one caller at a time."""
        with self._read_lock:
            yield self._reader()

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own while no update of this process runs (docindex/vectors writes on it)."""
        with self._lock, closing(self._connect()) as con:
            yield con

    def size_bytes(self) -> int:
        """The index's size on disk (the database and its write-ahead log)."""
        return sum(p.stat().st_size for p in self.db.parent.glob(self.db.name + "*") if p.is_file())
