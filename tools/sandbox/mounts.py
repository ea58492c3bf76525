"""A mount namespace for confined code (the Landlock backend): everything read-only but the workspace, and the
folders where people keep secrets hidden under empty read-only tmpfs.

Landlock decides who may open, create, rename or link files; it does not cover chmod, chown, utime, xattrs
or stat. In its own mount namespace the code sees every mount read-only (EROFS for a change of mode, owner,
times or extended attributes of any file outside its workspace, whoever owns it, root included) except its
workspace, mounted again read-write, nosuid and nodev. The home directories, the run and project
directories, /tmp, /run and the like are covered by an empty tmpfs, so even `stat` finds nothing there
(`~/.aws/credentials` does not exist for the code); what the code needs from under them (its workspace, an
interpreter in a home directory) is mounted back at the same path first. A normal user gets the namespace
inside a user namespace of its own (uid and gid mapped to themselves); root too, or a bare mount namespace
where user namespaces are off. The namespace's mounts are private: nothing here is seen outside. Imported by
the launcher and the sessions from this folder (ctypes and os only) and probed once per run by the agent.
"""

from __future__ import annotations

import ctypes
import os
import stat

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 1, 2, 4
# The same numbers on every architecture (added after the syscall tables were unified).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
_OPEN_TREE_CLONE, _AT_RECURSIVE, _AT_FDCWD, _MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, -100, 4
# Never hidden (the code needs them), nor any folder holding one of them.
_SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/dev/null", "/proc", "/sys")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _call(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _covers(path: str, inner: str) -> bool:
    return inner == path or inner.startswith(path.rstrip("/") + "/")


def isolate(workspace: str, keep: list[str], hide: list[str]) -> None:
    """Enter a new mount namespace: every mount read-only, `hide` covered by empty tmpfs (with the `keep`
    paths and the workspace under them mounted back), the workspace read-write, nosuid and nodev; then the
    working directory is the workspace again (the old one is on the mount beneath). OSError when a step fails."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    _unshare(libc)
    _call(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    workspace = os.path.realpath(workspace)
    covered = _outermost([h for h in {os.path.realpath(p) for p in hide} if _hideable(h)])
    kept = _outermost([p for p in {os.path.realpath(p) for p in keep} if any(_covers(h, p) for h in covered)
                       and not _covers(workspace, p)])
    clones = [(path, _clone(libc, path)) for path in (*kept, workspace)]  # before anything is covered
    for folder in covered:
        _call(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"mode=755,size=64k"),
              f"tmpfs on {folder}")
    for path, fd in clones:
        _place(libc, path, fd)
    _setattr(libc, "/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    _setattr(libc, workspace, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, MOUNT_ATTR_RDONLY)
    os.chdir(workspace)


def _unshare(libc: ctypes.CDLL) -> None:
    """A user namespace (uid and gid mapped to themselves) with a mount namespace; root without user
    namespaces (switched off here) takes a bare mount namespace."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        if uid != 0:
            _call(-1, "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        _call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        return
    # A process that is not dumpable (a supervisor's child) has its /proc files owned by root: only for these
    # writes is it dumpable.
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
    finally:
        libc.prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)


def _hideable(folder: str) -> bool:
    return folder != "/" and os.path.isdir(folder) and not any(_covers(folder, s) for s in _SYSTEM)


def _outermost(paths: list[str]) -> list[str]:
    return [p for p in sorted(paths) if not any(q != p and _covers(q, p) for q in paths)]


def _clone(libc: ctypes.CDLL, path: str) -> int:
    flags = _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC
    return _call(libc.syscall(ctypes.c_long(_SYS_OPEN_TREE), _AT_FDCWD, path.encode(), ctypes.c_uint(flags)),
                 f"open_tree {path}")


def _place(libc: ctypes.CDLL, path: str, fd: int) -> None:
    """Mount the detached tree fd at path, making the path first on a tmpfs that covered it."""
    try:
        if not os.path.lexists(path):
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.mkdir(path, 0o755)
            else:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        _call(libc.syscall(ctypes.c_long(_SYS_MOVE_MOUNT), fd, b"", _AT_FDCWD, path.encode(),
                           ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {path}")
    finally:
        os.close(fd)


def _setattr(libc: ctypes.CDLL, path: str, attr_set: int, attr_clr: int) -> None:
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    _call(libc.syscall(ctypes.c_long(_SYS_MOUNT_SETATTR), _AT_FDCWD, path.encode(), ctypes.c_uint(_AT_RECURSIVE),
                       ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")
