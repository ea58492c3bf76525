"""A kept workspace holds no set-user/group-ID file, no device node and nothing world-writable when its task ends.

The sandbox refuses to make set-ID files and device nodes (seccomp), but one could arrive another way: a Ray
node's files brought back, an archive an unconfined tool unpacked, a backend with no seccomp. Left in
`runs/<id>/workspace/`, a setuid-root copy of a shell hands root to whoever runs it later, and a device node
opens a raw disk or the kernel log. Model code may also leave a folder world-writable (1777, as /tmp is) or a
file others may write: under a path other users can reach, they could put files there for the user to open.
defuse() walks the workspace without following links (directory handles throughout): set-ID bits and write
for others are cleared (with the sticky bit of a world-writable folder), a device node is removed, and a set-ID
file with more than one link is removed rather than changed (clearing its bits would change the other name, a
file outside the workspace), as is one of another user that the agent's user may not change. A folder of the
agent's user that it may not list (made 0300 by model code) is given back u+rx first, so nothing in it hides.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from core.text import terminal_safe

_SET_ID = stat.S_ISUID | stat.S_ISGID
_OWNER_LISTS = stat.S_IRUSR | stat.S_IXUSR
_O_PATH = getattr(os, "O_PATH", 0)  # Linux: a handle on the entry itself, with no permission needed to take it


def defuse(workspace: Path) -> list[str]:
    """Clear or remove what could give powers to whoever uses the workspace later; one line per thing done."""
    done: list[str] = []
    if not os.path.isdir(workspace) or os.path.islink(workspace):
        return done
    parent = os.open(os.path.dirname(os.path.abspath(workspace)), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:  # the workspace folder itself first (model code may chmod its own working folder), then what it holds
        _note(done, "the workspace folder", lambda: _defuse_one(os.path.basename(os.path.abspath(workspace)), parent))
    finally:
        os.close(parent)
    for folder, dirs, files, dir_fd in os.fwalk(workspace, follow_symlinks=False):
        rel = os.path.relpath(folder, workspace)
        for name in (*dirs, *files):
            shown = terminal_safe(os.path.normpath(os.path.join(rel, name)), one_line=True)
            _note(done, shown, lambda: _defuse_one(name, dir_fd))  # noqa: B023 (called at once)
    return done


def _note(done: list[str], shown: str, act: Callable[[], str]) -> None:
    try:
        what = act()
    except OSError as exc:
        what = f"could not clear {exc.strerror or exc}"
    if what:
        done.append(f"{shown}: {what}")


def let_owner_list(name: str, st: os.stat_result, dir_fd: int | None = None) -> bool:
    """Give a folder of this process's user that it may not list or enter (0300, 0600) u+rx back, so the walks
    (this one, the workspace budget) see inside; root lists it anyway. False when nothing was changed."""
    uid = os.geteuid()
    if uid == 0 or st.st_uid != uid or not stat.S_ISDIR(st.st_mode) or st.st_mode & _OWNER_LISTS == _OWNER_LISTS:
        return False
    return _set_mode(name, st, stat.S_IMODE(st.st_mode) | _OWNER_LISTS, dir_fd)


def _set_mode(name: str, st: os.stat_result, mode: int, dir_fd: int | None = None) -> bool:
    """chmod the entry `st` describes, never what a link put in its place names; False when it changed meanwhile.
    Through an O_PATH handle (no read permission needed, a FIFO or device is not opened) where there is one."""
    flags = (_O_PATH or os.O_RDONLY | os.O_NONBLOCK) | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or stat.S_ISLNK(now.st_mode):
            return False
        if _O_PATH:
            os.chmod(f"/proc/self/fd/{fd}", mode)  # fchmod refuses an O_PATH handle; its /proc link is the entry
        else:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return True


def _defuse_one(name: str, dir_fd: int) -> str:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        kind = "character" if stat.S_ISCHR(st.st_mode) else "block"
        return f"{kind} device node {os.major(st.st_rdev)}:{os.minor(st.st_rdev)} removed"
    if stat.S_ISLNK(st.st_mode):
        return ""
    listed = let_owner_list(name, st, dir_fd)
    mode = stat.S_IMODE(st.st_mode) | (_OWNER_LISTS if listed else 0)
    if not mode & (_SET_ID | stat.S_IWOTH):
        return ""
    cleared = [("set-user-ID bit" if mode & stat.S_ISUID else "set-group-ID bit")] if mode & _SET_ID else []
    cleared += ["world-write"] if mode & stat.S_IWOTH else []
    if mode & _SET_ID and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.unlink(name, dir_fd=dir_fd)
        return f"{cleared[0][:-4]} file with {st.st_nlink} links removed"
    new = mode & ~_SET_ID & ~(stat.S_IWOTH | (stat.S_ISVTX if stat.S_ISDIR(st.st_mode) else 0))
    try:
        if not _set_mode(name, st, new, dir_fd):
            return "changed while cleared; left alone"
    except PermissionError:  # another user's (root's, planted while a normal user's agent ran): not ours to change
        if stat.S_ISDIR(st.st_mode) or not mode & _SET_ID:
            raise
        os.unlink(name, dir_fd=dir_fd)
        return f"{cleared[0][:-4]} file of another user (uid {st.st_uid}) removed"
    return f"{' and '.join(cleared)} cleared (mode {mode:o} -> {new:o})"
