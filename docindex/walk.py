"""Which files of a folder may be indexed: regular files inside it with one link, no dotfiles, nothing too large."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 50_000_000
DOT_FOLDER = "a dot-folder (dot-folders are never indexed)"
HARD_LINKS = "a file with more than one hard link (one may be outside the folder)"


@dataclass(frozen=True)
class Entry:
    """A file the walk found: its path relative to the folder (with /), as text a citation can hold (bytes of
    a name that are not UTF-8 written as \\xNN), size and modification time; `skip` names why it is not read
    (a dotfile is never even listed); `real` is the path to open when the name had to be escaped."""

    rel: str
    size: int
    mtime_ns: int
    skip: str = ""
    real: str = ""

    @property
    def path(self) -> str:
        """The path to open, relative to the folder."""
        return self.real or self.rel


def shown_name(rel: str) -> str:
    """A file's path as text: unchanged when it is UTF-8, else its bytes that are not as \\xNN escapes."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(rel).decode("utf-8", "backslashreplace")
    return rel


def walk(folder: Path, suffixes: frozenset[str], max_bytes: int = MAX_FILE_BYTES,
         exclude: Path | None = None) -> Iterator[Entry]:
    """Every file under `folder` (resolved) in a stable order. Dotfiles and dot-folders are not listed at all
    (a dot-folder given as the folder itself is listed once, refused); a link leading out of the folder, a
    special file, a file with several hard links, one over `max_bytes` or of a suffix not in `suffixes` is
    listed with its reason; `exclude` (the index's own folder, were it inside) is passed over."""
    root = folder.resolve()
    if root.name.startswith("."):
        yield Entry(shown_name(root.name), 0, 0, DOT_FOLDER)
        return
    seen: set[str] = set()
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (exclude is None or here / d != exclude))
        for d in list(dirs):
            if (here / d).is_symlink():  # a linked folder: listed once by its own name, never followed
                dirs.remove(d)
                yield Entry(shown_name(_rel(root, here / d)), 0, 0, "a link to a folder")
        for name in sorted(files):
            if not name.startswith("."):
                entry = _entry(root, here / name, suffixes, max_bytes)
                if entry.rel in seen:  # a name escaped into another file's name
                    entry = Entry(entry.rel, 0, 0, "its name, with its escapes, is another file's", entry.real)
                seen.add(entry.rel)
                yield entry


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _entry(root: Path, path: Path, suffixes: frozenset[str], max_bytes: int) -> Entry:
    real = _rel(root, path)
    rel = shown_name(real)
    skip, info = _checked(root, path, suffixes, max_bytes)
    return Entry(rel, info.st_size if info else 0, info.st_mtime_ns if info else 0, skip, real if rel != real else "")


def _checked(root: Path, path: Path, suffixes: frozenset[str], max_bytes: int) -> tuple[str, os.stat_result | None]:
    """Why the file is not read ('' when it is), with its stat where it has a size and a time worth keeping."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            target = path.resolve(strict=True)
            if not target.is_relative_to(root) or any(p.startswith(".") for p in target.relative_to(root).parts):
                return "a link leading out of the folder", None
            info = os.stat(target)
    except (OSError, RuntimeError):
        return "cannot be read (a broken link or no permission)", None
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file", None
    if info.st_nlink > 1:
        return HARD_LINKS, None
    if path.suffix.lower() not in suffixes:
        return "a format no reader reads", info
    if info.st_size > max_bytes:
        return f"over the size limit ({max_bytes // 1_000_000} MB)", info
    return "", info


def open_inside(root: Path, rel: str) -> bytes:
    """The bytes of `rel` under `root`, read only if it still resolves inside the folder (no dot part) to a
    regular file with one link."""
    path = (root / rel).resolve(strict=True)
    if not path.is_relative_to(root) or any(p.startswith(".") for p in path.relative_to(root).parts):
        raise OSError(f"{rel} leads out of the folder")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{rel} is not a regular file")
        if info.st_nlink > 1:
            raise OSError(f"{rel} has more than one hard link")
        return f.read()
