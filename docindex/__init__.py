"""The index of a folder of the user's documents: full-text search over their passages, kept fresh.

Owns which files of a folder may be indexed (`walk.py`: never dotfiles or dot-folders, links leading out of
the folder, files over the size limit; what was skipped and why), the split of a document's pages or
sections into passages and the escaping of a query into FTS5 text (`passages.py`), the SQLite FTS5 store
with BM25 ranking, one per folder, outside it, brought up to date by path, size and modification time
(`store.py`), and the passages' vectors in the same file with the search fusing them with BM25 (`vectors.py`,
handed its embedder by the caller). It does not read formats itself: the caller hands it a reader
(tools/docsearch.py passes the readers of tools/documents/), so it never imports tools. May import core and
the standard library only, and numpy in vectors.py when vectors are used.
"""

from docindex.passages import Unit
from docindex.store import DocIndex, Hit, IndexReport, Reader, Unreadable, index_path

__all__ = ["DocIndex", "Hit", "IndexReport", "Reader", "Unit", "Unreadable", "index_path"]
