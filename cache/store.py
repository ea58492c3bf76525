"""The cache file: one SQLite database (WAL mode) of model completions and network tool results."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DB_NAME = "cache.sqlite3"
KEY_VERSION = 1  # bump when what goes into a key changes, so old entries simply stop matching
BUSY_TIMEOUT_MS = 30_000  # another run (or task) writing: wait this long for the lock

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, thread TEXT NOT NULL, created REAL NOT NULL,
    completion TEXT NOT NULL, request BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS llm_thread ON llm(thread);
CREATE TABLE IF NOT EXISTS tool (
    key TEXT PRIMARY KEY, tool TEXT NOT NULL, args TEXT NOT NULL, fetched REAL NOT NULL,
    ok INTEGER NOT NULL, meta TEXT NOT NULL, body BLOB);
"""


def content_key(kind: str, payload: Any) -> str:
    """The SHA-256 of a canonical JSON form of payload (sorted keys, no whitespace)."""
    text = json.dumps({"v": KEY_VERSION, "kind": kind, "payload": payload}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ToolEntry:
    """A cached network result: whether it succeeded, its metadata, its body and when it was fetched."""

    ok: bool
    meta: dict[str, Any]
    body: bytes | None
    fetched: float


class CacheStore:
    """Thread-safe access to DIR/cache.sqlite3: one connection per thread, safe across processes (WAL)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._write() as db:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                 check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")  # take the write lock now, so a busy database waits instead of failing
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def get_completion(self, key: str) -> dict[str, Any] | None:
        """The stored completion (a dict of Completion fields) for this key, or None."""
        row = self._db().execute("SELECT completion FROM llm WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_completion(self, key: str, model: str, thread: str, completion: dict[str, Any],
                       request: dict[str, Any]) -> None:
        """Store a completion; the first writer of a key wins (same key, same request)."""
        blob = zlib.compress(json.dumps(request, ensure_ascii=False).encode("utf-8"))
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO llm VALUES (?, ?, ?, ?, ?, ?)",
                       (key, model, thread, time.time(), json.dumps(completion, ensure_ascii=False), blob))

    def requests_in_thread(self, thread: str) -> list[dict[str, Any]]:
        """The recorded requests that began with the same conversation (for explaining a miss)."""
        rows = self._db().execute("SELECT request FROM llm WHERE thread = ?", (thread,)).fetchall()
        return [json.loads(zlib.decompress(r[0])) for r in rows]

    def get_tool(self, key: str) -> ToolEntry | None:
        """The stored result of a network tool call, or None."""
        row = self._db().execute("SELECT ok, meta, body, fetched FROM tool WHERE key = ?", (key,)).fetchone()
        return ToolEntry(bool(row[0]), json.loads(row[1]), row[2], row[3]) if row else None

    def put_tool(self, key: str, tool: str, args: Any, ok: bool, meta: dict[str, Any],
                 body: bytes | None) -> None:
        """Store a network result; a success replaces an earlier failure, never the other way round."""
        with self._write() as db:
            old = db.execute("SELECT ok FROM tool WHERE key = ?", (key,)).fetchone()
            if old is not None and (old[0] or not ok):
                return
            db.execute("INSERT OR REPLACE INTO tool VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key, tool, json.dumps(args, ensure_ascii=False, sort_keys=True, default=str),
                        time.time(), int(ok), json.dumps(meta, ensure_ascii=False), body))

    def rows(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every entry, table by table: what a cluster node's private cache sends back to the driver."""
        db = self._db()
        return {table: db.execute(f"SELECT * FROM {table}").fetchall() for table in ("llm", "tool")}

    def add_rows(self, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        """Store entries another cache recorded, as put_completion and put_tool would have."""
        with self._write() as db:
            db.executemany("INSERT OR IGNORE INTO llm VALUES (?, ?, ?, ?, ?, ?)", rows.get("llm", []))
            db.executemany("INSERT INTO tool VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                           "tool = excluded.tool, args = excluded.args, fetched = excluded.fetched, ok = excluded.ok,"
                           " meta = excluded.meta, body = excluded.body WHERE excluded.ok AND NOT tool.ok",
                           rows.get("tool", []))

    def stats(self) -> dict[str, Any]:
        """Entry counts, recorded cost, age range and size on disk."""
        db = self._db()
        models = db.execute("SELECT model, COUNT(*) FROM llm GROUP BY model ORDER BY model").fetchall()
        cost, unpriced = db.execute("SELECT TOTAL(json_extract(completion, '$.cost')), "
                                    "COUNT(*) - COUNT(json_extract(completion, '$.cost')) FROM llm").fetchone()
        tools = db.execute("SELECT tool, COUNT(*) FROM tool GROUP BY tool ORDER BY tool").fetchall()
        span = db.execute("SELECT MIN(t), MAX(t) FROM (SELECT created AS t FROM llm "
                          "UNION ALL SELECT fetched FROM tool)").fetchone()
        return {"path": str(self.path), "bytes": self.size_bytes(), "models": dict(models),
                "tools": dict(tools), "recorded_cost": cost,
                "unpriced_calls": unpriced, "oldest": span[0], "newest": span[1]}

    def model_averages(self, model: str) -> dict[str, float] | None:
        """A model's recorded calls: how many, over how many tasks, and their mean prompt and reply tokens."""
        row = self._db().execute(
            "SELECT COUNT(*), COUNT(DISTINCT thread), AVG(json_extract(completion, '$.prompt_tokens')), "
            "AVG(json_extract(completion, '$.completion_tokens')) FROM llm WHERE model = ?", (model,)).fetchone()
        if not row or not row[0]:
            return None
        return {"calls": row[0], "tasks": row[1], "prompt_tokens": row[2] or 0.0, "completion_tokens": row[3] or 0.0}

    def prune(self, older_than: float) -> int:
        """Delete entries stored more than older_than seconds ago; returns how many."""
        cutoff = time.time() - older_than
        with self._write() as db:
            n = db.execute("DELETE FROM llm WHERE created < ?", (cutoff,)).rowcount
            n += db.execute("DELETE FROM tool WHERE fetched < ?", (cutoff,)).rowcount
        self._compact()
        return n

    def clear(self) -> int:
        """Delete every entry; returns how many."""
        with self._write() as db:
            n = db.execute("DELETE FROM llm").rowcount + db.execute("DELETE FROM tool").rowcount
        self._compact()
        return n

    def _compact(self) -> None:
        try:
            self._db().execute("VACUUM")
            self._db().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # another process is using the file: the space is freed later
            pass

    def size_bytes(self) -> int:
        """The database's size on disk, its write-ahead log included."""
        return sum(p.stat().st_size for p in self.directory.glob(DB_NAME + "*") if p.is_file())

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()


_OPEN: dict[Path, CacheStore] = {}
_OPEN_LOCK = threading.Lock()


def open_store(directory: Path) -> CacheStore:
    """The one CacheStore of this process for a directory (tasks and model objects share it)."""
    key = Path(directory).resolve()
    with _OPEN_LOCK:
        if key not in _OPEN:
            _OPEN[key] = CacheStore(key)
        return _OPEN[key]


def close_all() -> None:
    """Close every store this process opened (end of a run)."""
    with _OPEN_LOCK:
        for store in _OPEN.values():
            store.close()
        _OPEN.clear()
