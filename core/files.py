"""Writing a file so that no reader ever sees half of it (the reports, their records, the run store's entries), and
folders and files that only their owner may read (the document index, a run's folders)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, text: str | bytes, mode: int | None = None) -> None:
    """Write text (UTF-8) or bytes to path through a temp file and a rename, so readers never see half a file.

    A symlink is written through to its target; an existing file keeps its mode, a new one gets the umask's
    (or `mode`, when given, whatever it had: 0o600 for a file only its owner may read).
    Stale temp files (`.NAME.XXXXXXXX.tmp`, left by a killed process) are run/files.py's to remove.
    """
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def private_folder(path: Path) -> None:
    """`path` as a folder only its owner may use: created 0700 (a missing parent with the umask's mode, as
    `mkdir -p`), or made 0700 again when it is ours and was not (own_mode)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    own_mode(path, 0o700)


def own_mode(path: Path, mode: int) -> None:
    """chmod a file or folder of ours (never through a link) to mode, unless it already has it; nothing when it
    cannot be (another user's, gone)."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if not stat.S_ISLNK(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
            os.chmod(path, mode)


def others_control(path: Path) -> str | None:
    """Why another user could read or replace what is kept at `path` (a folder, or a file in it), or None: the
    first folder on its way (its own, then each parent) that another user owns, or that others may write in
    without the sticky bit that keeps them from renaming what is not theirs (/tmp has it), and a file or folder
    there that is a link or another user's. Root's folders are trusted; POSIX only (None elsewhere)."""
    if os.name != "posix":
        return None
    me = os.geteuid()
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return f"{path} is a link"
        if info.st_uid != me:
            return f"{path} belongs to another user (uid {info.st_uid})"
    folder = Path(os.path.realpath(path.parent))
    for place in (folder, *folder.parents):
        try:
            info = os.stat(place)
        except OSError:
            continue  # not made yet
        if info.st_uid not in (me, 0):
            return f"{place} belongs to another user (uid {info.st_uid})"
        shared = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid())
        if shared and not info.st_mode & stat.S_ISVTX:
            return f"{place} may be written by other users"
    return None
