"""A kept workspace holds no set-user/group-ID file and no device node when its task ends.

The sandbox refuses to make them (seccomp), but one could arrive another way: a Ray node's files brought
back, an archive an unconfined tool unpacked, a backend with no seccomp. Left in `runs/<id>/workspace/`,
a setuid-root copy of a shell hands root to whoever runs it later, and a device node opens a raw disk or
the kernel log. defuse() walks the workspace without following links (directory handles throughout):
set-ID bits are cleared, a device node is removed, and a set-ID file with more than one link is removed
rather than changed (clearing its bits would change the other name, a file outside the workspace), as is one
of another user that the agent's user may not change.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.text import terminal_safe

_SET_ID = stat.S_ISUID | stat.S_ISGID


def defuse(workspace: Path) -> list[str]:
    """Clear or remove what could give powers to whoever uses the workspace later; one line per thing done."""
    done: list[str] = []
    if not os.path.isdir(workspace) or os.path.islink(workspace):
        return done
    for folder, dirs, files, dir_fd in os.fwalk(workspace, follow_symlinks=False):
        rel = os.path.relpath(folder, workspace)
        for name in (*dirs, *files):
            shown = terminal_safe(os.path.normpath(os.path.join(rel, name)), one_line=True)
            try:
                what = _defuse_one(name, dir_fd)
            except OSError as exc:
                what = f"could not clear {exc.strerror or exc}"
            if what:
                done.append(f"{shown}: {what}")
    return done


def _defuse_one(name: str, dir_fd: int) -> str:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        kind = "character" if stat.S_ISCHR(st.st_mode) else "block"
        return f"{kind} device node {os.major(st.st_rdev)}:{os.minor(st.st_rdev)} removed"
    if stat.S_ISLNK(st.st_mode) or not st.st_mode & _SET_ID:
        return ""
    bits = "set-user-ID" if st.st_mode & stat.S_ISUID else "set-group-ID"
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.unlink(name, dir_fd=dir_fd)
        return f"{bits} file with {st.st_nlink} links removed"
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return "changed while cleared; left alone"
        os.fchmod(fd, stat.S_IMODE(now.st_mode) & ~_SET_ID)
    except PermissionError:  # another user's (root's, planted while a normal user's agent ran): not ours to change
        if stat.S_ISDIR(st.st_mode):
            raise
        os.unlink(name, dir_fd=dir_fd)
        return f"{bits} file of another user (uid {st.st_uid}) removed"
    finally:
        os.close(fd)
    return f"{bits} bit cleared (mode {stat.S_IMODE(st.st_mode):o} -> {stat.S_IMODE(st.st_mode) & ~_SET_ID:o})"
