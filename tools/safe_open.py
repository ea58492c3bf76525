"""Race-free workspace file access: every open goes through a directory handle and never follows a link.

A path is split lexically into components below the workspace, then opened from a handle of the workspace
directory with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it (Linux >= 5.6), else
one component at a time with O_NOFOLLOW. Only regular files with a single link are read or written, so a
symlink, directory, hard link, FIFO or device swapped in by model code can neither redirect nor hang a tool.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from core.errors import ToolError

_SYS_OPENAT2 = 437  # the same number on every architecture that has it (new syscalls share one table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a peer; O_NOCTTY: a terminal must not become ours.
_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_openat2_state: list[bool] = []  # [] = not probed yet; [True] / [False] once probed


class WorkspacePathError(ToolError):
    """A workspace path cannot be used safely (outside, a link, not a regular file, missing)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _syscall() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall


def _raw_openat2(dirfd: int, rel: str, flags: int, mode: int) -> int:
    how = _OpenHow(flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _syscall()(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd), ctypes.c_char_p(os.fsencode(rel)),
                      ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), rel)
    return int(fd)


def openat2_available() -> bool:
    """True when the kernel offers openat2 (probed once; seccomp filters may hide it even on new kernels)."""
    if not _openat2_state:
        try:
            top = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.close(_raw_openat2(top, ".", _DIR_FLAGS, 0))
            finally:
                os.close(top)
            _openat2_state.append(True)
        except (OSError, AttributeError):
            _openat2_state.append(False)
    return _openat2_state[0]


def workspace_parts(root: Path, path: str) -> tuple[str, ...]:
    """The components of `path` below the workspace ('..' resolved lexically); refused if outside."""
    text = os.fspath(path)
    if "\x00" in text:
        raise WorkspacePathError(text, f"path {text!r} is not a valid file name")
    if os.path.isabs(text):
        norm = os.path.normpath(text)
        for base in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
            if os.path.commonpath([base, norm]) == base:
                text = os.path.relpath(norm, base)
                break
        else:
            raise _outside(text)
    norm = os.path.normpath(text)
    if norm == ".." or norm.startswith("../") or os.path.isabs(norm):
        raise _outside(text)
    return () if norm == "." else tuple(norm.split("/"))


def relative_name(parts: tuple[str, ...]) -> str:
    """The workspace-relative name of a path as shown to the model ('.' for the workspace itself)."""
    return "/".join(parts) or "."


def _outside(path: str) -> WorkspacePathError:
    return WorkspacePathError(path, f"path {path!r} is outside the workspace; use a path relative to "
                                    "the workspace")


def _explain(path: str, exc: OSError) -> WorkspacePathError:
    """A message the model can act on for an OSError met while opening `path`."""
    reasons = {
        errno.ELOOP: "is or passes through a symbolic link; links are not followed in the workspace",
        errno.EXDEV: "is outside the workspace",
        errno.ENOENT: "does not exist in the workspace; use list_files to see what exists",
        errno.ENOTDIR: "passes through something that is not a directory",
        errno.EISDIR: "is a directory",
        errno.ENXIO: "is not a regular file (a FIFO or socket); refused",
    }
    reason = reasons.get(exc.errno or 0, f"cannot be opened: {exc.strerror or exc}")
    return WorkspacePathError(path, f"{path!r} {reason}")


@contextmanager
def workspace_dir(root: Path, parts: tuple[str, ...] = (), create: bool = False) -> Iterator[int]:
    """A directory handle for root/parts, opened without following links; missing parts made if asked."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if parts and not create and openat2_available():
            sub = _raw_openat2(fd, "/".join(parts), _DIR_FLAGS, 0)
            os.close(fd)
            fd = sub
        else:
            for name in parts:
                sub = _open_child_dir(fd, name, create)
                os.close(fd)
                fd = sub
    except OSError as exc:
        culprit = _culprit(fd, parts) if exc.errno in (errno.ENOTDIR, errno.ELOOP) else None
        os.close(fd)
        raise culprit or _explain(relative_name(parts), exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


def _culprit(rootfd: int, parts: tuple[str, ...]) -> WorkspacePathError | None:
    """Which component of a failed directory path is a link or a non-directory (for the message)."""
    fd = os.dup(rootfd)
    try:
        for i, name in enumerate(parts):
            shown = relative_name(parts[: i + 1])
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            if not stat.S_ISDIR(mode):
                return WorkspacePathError(shown, f"{shown!r} is {_kind(mode)}, not a directory; links are "
                                                 "not followed in the workspace")
            sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = sub
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def _open_child_dir(fd: int, name: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # mkdirat never follows a link: a planted one is EEXIST
        os.mkdir(name, 0o755, dir_fd=fd)
    return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return kind
    return "not a regular file"


def _check_regular(path: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise WorkspacePathError(path, f"{path!r} is a directory; use list_files to see what it contains")
    if stat.S_ISLNK(st.st_mode):
        raise WorkspacePathError(path, f"{path!r} is a symbolic link; links are not followed in the workspace")
    if not stat.S_ISREG(st.st_mode):
        raise WorkspacePathError(path, f"{path!r} is {_kind(st.st_mode)}, not a regular file; refused")
    if st.st_nlink != 1:
        raise WorkspacePathError(path, f"{path!r} has {st.st_nlink} hard links (one may be a file outside "
                                       "the workspace); only files with a single link are read or written")


def _open_final(dirfd: int, name: str, flags: int) -> int:
    if openat2_available():
        # openat2 insists on mode 0 unless the file may be created.
        return _raw_openat2(dirfd, name, flags | _FILE_FLAGS, 0o644 if flags & os.O_CREAT else 0)
    return os.open(name, flags | _FILE_FLAGS, 0o644, dir_fd=dirfd)


def open_file(root: Path, path: str, mode: str = "r") -> BinaryIO:
    """Open a workspace file: 'r' read, 'w' overwrite, 'a' append ('w'/'a' create it and its folders)."""
    parts = workspace_parts(root, path)
    shown = relative_name(parts)
    if not parts:
        raise WorkspacePathError(path, f"{path!r} is a directory (the workspace itself); give a file name")
    writing = mode in ("w", "a")
    flags = {"r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}[mode]
    missing = WorkspacePathError(path, f"there is no file {path!r} in the workspace; use list_files to "
                                       "see what exists")
    try:
        with workspace_dir(root, parts[:-1], create=writing) as dirfd:
            try:
                _check_regular(shown, os.stat(parts[-1], dir_fd=dirfd, follow_symlinks=False))
            except FileNotFoundError:
                if not writing:
                    raise missing from None
            try:
                fd = _open_final(dirfd, parts[-1], flags)
            except OSError as exc:
                raise _explain(shown, exc) from exc
    except WorkspacePathError as exc:
        raise missing if isinstance(exc.__cause__, FileNotFoundError) and not writing else exc from None
    try:
        _check_regular(shown, os.fstat(fd))  # the entry may have been swapped between stat and open
        if mode == "w":
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb" if mode == "r" else "ab" if mode == "a" else "wb")


def stat_entry(root: Path, path: str) -> os.stat_result | None:
    """lstat of a workspace path through a directory handle; None when it does not exist."""
    parts = workspace_parts(root, path)
    if not parts:
        root.mkdir(parents=True, exist_ok=True)
        return os.stat(root)
    try:
        with workspace_dir(root, parts[:-1]) as dirfd:
            return os.stat(parts[-1], dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except WorkspacePathError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return None
        raise


def replace_file(root: Path, path: str, data: bytes | BinaryIO) -> str:
    """Write data (bytes, or a file to copy) to a temp file beside the target, then rename it into place: a link
    or file planted at that name is replaced, never followed or written through."""
    parts = workspace_parts(root, path)
    if not parts:
        raise WorkspacePathError(path, f"{path!r} is a directory (the workspace itself); give a file name")
    with workspace_dir(root, parts[:-1], create=True) as dirfd:
        tmp = _write_temp(dirfd, parts[-1], data)
        try:
            os.rename(tmp, parts[-1], src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except OSError as exc:
            os.unlink(tmp, dir_fd=dirfd)
            raise _explain(relative_name(parts), exc) from exc
    return relative_name(parts)


def create_new_file(root: Path, folder: str, names: Iterator[str], data: bytes) -> str:
    """Save data under the first of `names` not yet taken in folder (link(2) never overwrites)."""
    parts = workspace_parts(root, folder)
    with workspace_dir(root, parts, create=True) as dirfd:
        tmp = _write_temp(dirfd, "download", data)
        try:
            for name in names:
                try:
                    os.link(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
                    return relative_name((*parts, name))
                except FileExistsError:
                    continue
            raise WorkspacePathError(folder, f"no free file name left in {folder!r}")
        finally:
            os.unlink(tmp, dir_fd=dirfd)


def _write_temp(dirfd: int, name: str, data: bytes | BinaryIO) -> str:
    tmp = f".{name[:80]}.{secrets.token_hex(6)}.part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o644, dir_fd=dirfd)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                shutil.copyfileobj(data, fh, 1 << 20)
    except BaseException:
        os.unlink(tmp, dir_fd=dirfd)
        raise
    return tmp
