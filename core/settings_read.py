"""One read of a settings file (`.env`, `models.toml`): opened once, its bytes hashed, judged and parsed.

The path's links are followed once, here (`os.path.realpath`); the file is then opened inside the folder it
resolved to with O_NOFOLLOW, so a link swapped in after that point is refused instead of followed, and the
bytes read are the only bytes the trust decision (core/trust.py) and the parser (core/envfile.py,
core/models_file.py) see: no second read another user could race. Whether the file lies in one of the
user's own folders is decided from the opened folder's identity (fstat), not from its name.

Standard library only.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError

MAX_BYTES = 1 << 20  # a settings file is a few lines; a bigger one is a mistake (or a device)
_TRIES = 10  # a link swapped in between the resolution and the open: resolve again, then give up
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass(frozen=True)
class SettingsFile:
    """A settings file as it was read: once."""

    path: Path  # as it was found (its folder is the one the names it holds are relative to)
    real: Path  # where it is, links followed once
    data: bytes
    own_folder: bool  # it lies directly in one of the user's own folders (the opened folder is one of them)

    @property
    def folder(self) -> Path:
        """The folder it was found in, links resolved: the names it holds are relative to it."""
        return Path(os.path.realpath(self.path.parent))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _same_folder(info: os.stat_result, folders: Iterable[Path]) -> bool:
    for folder in folders:
        try:
            if os.path.samestat(info, os.stat(folder)):
                return True
        except OSError:
            continue
    return False


def read_once(path: Path, own_folders: Iterable[Path] = ()) -> SettingsFile | None:
    """The file's bytes, read once with no link followed after its path was resolved; None when there is no
    regular file there (missing, a folder, a FIFO...); ConfigError when it cannot be read or is too big."""
    folders = tuple(own_folders)
    for _ in range(_TRIES):
        try:
            real = Path(os.path.realpath(path))
        except OSError:  # a link replaced while it was resolved: resolve again
            continue
        try:
            folder_fd = os.open(real.parent, _DIR)
        except OSError:
            return None
        try:
            try:
                fd = os.open(real.name, _FILE, dir_fd=folder_fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # ELOOP: a link appeared where a file was: resolve again
                    continue
                raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from exc
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return None
                data = f.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                raise ConfigError(f"{path}: more than {MAX_BYTES >> 20} MB; a settings file is a few lines")
            return SettingsFile(path, real, data, _same_folder(os.fstat(folder_fd), folders))
        finally:
            os.close(folder_fd)
    raise ConfigError(f"{path}: it kept changing into a link while it was read; is another program replacing it?")
