"""Which files of a folder may be indexed: regular files inside it, no dotfiles, nothing too large."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 50_000_000


@dataclass(frozen=True)
class Entry:
    """A file the walk found: its path relative to the folder (with /), size and modification time; `skip`
    names why it is not read (a dotfile is never even listed)."""

    rel: str
    size: int
    mtime_ns: int
    skip: str = ""


def walk(folder: Path, suffixes: frozenset[str], max_bytes: int = MAX_FILE_BYTES,
         exclude: Path | None = None) -> Iterator[Entry]:
    """Every file under `folder` (resolved) in a stable order. Dotfiles and dot-folders are not listed at all;
    a link leading out of the folder, a special file, a file over `max_bytes` or of a suffix not in
    `suffixes` is listed with its reason; `exclude` (the index's own folder, were it inside) is passed over."""
    root = folder.resolve()
    for current, dirs, files in os.walk(root, followlinks=False):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (exclude is None or here / d != exclude))
        for d in list(dirs):
            if (here / d).is_symlink():  # a linked folder: listed once by its own name, never followed
                dirs.remove(d)
                yield Entry(_rel(root, here / d), 0, 0, "a link to a folder")
        for name in sorted(files):
            if not name.startswith("."):
                yield _entry(root, here / name, suffixes, max_bytes)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _entry(root: Path, path: Path, suffixes: frozenset[str], max_bytes: int) -> Entry:
    rel = _rel(root, path)
    try:
        info = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            target = path.resolve(strict=True)
            if not target.is_relative_to(root) or any(p.startswith(".") for p in target.relative_to(root).parts):
                return Entry(rel, 0, 0, "a link leading out of the folder")
            info = os.stat(target)
    except (OSError, RuntimeError):
        return Entry(rel, 0, 0, "cannot be read (a broken link or no permission)")
    if not stat.S_ISREG(info.st_mode):
        return Entry(rel, 0, 0, "not a regular file")
    if path.suffix.lower() not in suffixes:
        return Entry(rel, info.st_size, info.st_mtime_ns, "a format no reader reads")
    if info.st_size > max_bytes:
        return Entry(rel, info.st_size, info.st_mtime_ns, f"over the size limit ({max_bytes // 1_000_000} MB)")
    return Entry(rel, info.st_size, info.st_mtime_ns)


def open_inside(root: Path, rel: str) -> bytes:
    """The bytes of `rel` under `root`, read only if it still resolves inside the folder (no dot part)."""
    path = (root / rel).resolve(strict=True)
    if not path.is_relative_to(root) or any(p.startswith(".") for p in path.relative_to(root).parts):
        raise OSError(f"{rel} leads out of the folder")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{rel} is not a regular file")
        return f.read()
